"""LlamaIndex node postprocessors backed by the hrefine core."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hrefine.errors import EmptyInputError
from hrefine.html import DEFAULT_BUDGET, MIN_BUDGET, HtmlPruner, HtmlPrunerOptions
from hrefine.html.outcome import (
    DocumentOutcome,
    PruneJob,
    check_query,
)
from hrefine.models import Embedder
from hrefine.options import Rebuilt, adapter_model
from hrefine.results import ResultOptions
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle
from pydantic import ConfigDict, Field, PrivateAttr

from llamaindex_hrefine._convert import (
    complete_state,
    node_list,
    nodes_to_html,
    outcomes_to_nodes,
    to_embedder,
)

__all__ = ["HtmlRagNodePostprocessor"]

if TYPE_CHECKING:
    _HtmlRagFields = BaseNodePostprocessor
else:  # one field per HtmlPrunerOptions setting (its embedder is the ``embed_model`` field)
    # and per ResultOptions setting (top_n, keep_input_order, strict)
    _HtmlRagFields = adapter_model(
        adapter_model(BaseNodePostprocessor, HtmlPrunerOptions, name="_HtmlRagPrunerFields"),
        ResultOptions,
        name="_HtmlRagNodePostprocessorFields",
    )


def _query_of(query_bundle: QueryBundle | None) -> str:
    if query_bundle is None:
        msg = (
            "HtmlRagNodePostprocessor needs the query: call postprocess_nodes(nodes, "
            "query_str=...) or pass a query_bundle (query engines do this for you)"
        )
        raise EmptyInputError(msg)
    return check_query(query_bundle.query_str)


class HtmlRagNodePostprocessor(_HtmlRagFields):
    """Prune the HTML held by retrieved nodes to a token budget with HtmlRAG.

    Each node's content is HTML. The pages are cleaned, split into a block tree, the blocks are
    ranked against the query (embeddings or BM25, then optionally a small generative model) and
    the best blocks that fit ``max_tokens`` are kept, as HTML with the original tags.

    Returns new ``NodeWithScore`` objects holding copies of the input nodes: the inputs are never
    mutated. They come most relevant first (a page's kept blocks stay in page order), or in
    input order with ``keep_input_order=True``; ``top_n`` returns at most that many, like a
    reranker's. Each copy's score is its best kept block's score mapped into [0, 1]
    (:func:`hrefine.results.unit_scores`), so a ``SimilarityPostprocessor`` after it works; the
    raw score is in ``metadata["hrefine_raw_score"]`` and the input score in
    ``metadata["hrefine_input_score"]``. The metadata is a copy plus ``relevance_score``,
    ``hrefine_raw_score``, ``hrefine_tokens``, ``hrefine_budget``, ``hrefine_budget_scope``,
    ``hrefine_tokenizer``, ``hrefine_blocks_kept``, ``hrefine_blocks_total`` and
    ``hrefine_dropped_documents`` (nodes left out: no visible text, no block within the budget,
    or below ``top_n``; each reason is logged). A call whose nodes are all empty returns ``[]``
    and logs a warning (``strict=True`` raises instead). These keys are excluded from the LLM
    and embed views, so they do not count against the budget in the prompt.

    Every :class:`~hrefine.html.HtmlPrunerOptions` setting but ``embedder`` is a field of the
    same name, type, default and description (``scorer``, ``tokenizer``, ``max_words``,
    ``generative``, ``lm``, ``read_words``...), as in ``langchain_hrefine.HtmlRagCompressor``;
    they are checked when the postprocessor is made.

    Attributes
    ----------
    max_tokens:
        Token budget of the pruned HTML (all nodes together, or each node; see
        ``prune_together``).
    embed_model:
        A LlamaIndex ``BaseEmbedding`` or an hrefine ``Embedder`` for the ``"embedding"``
        scorer; None: hrefine's embedded all-MiniLM-L6-v2 (``Settings.embed_model`` is never
        read).
    prune_together:
        All nodes against one budget, as in the paper (True), or each node on its own (False).
        With ``top_n`` set, each of the ``top_n`` most relevant nodes keeps at least one block
        (when one would not, each gets an equal share of the budget: scope ``"split"``).
    top_n:
        Most nodes returned, the most relevant first (None: all that kept something).
    keep_input_order:
        Return the nodes in input order rather than by relevance.
    strict:
        Raise ``EmptyInputError`` when every node is empty; False (default) returns ``[]``.

    Examples
    --------
    >>> from llama_index.core.schema import NodeWithScore, TextNode
    >>> post = HtmlRagNodePostprocessor(max_tokens=512, scorer="bm25")
    >>> nodes = [NodeWithScore(node=TextNode(text="<html>...</html>"), score=0.8)]
    >>> pruned = post.postprocess_nodes(nodes, query_str="who won?")  # doctest: +SKIP
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    max_tokens: int = Field(
        default=DEFAULT_BUDGET,
        ge=MIN_BUDGET,
        strict=True,
        description=(
            f"Token budget of the pruned HTML (all nodes together, or each node; at least "
            f"{MIN_BUDGET})."
        ),
    )
    embed_model: BaseEmbedding | Embedder | None = Field(
        default=None,
        description=(
            "Embed model for the 'embedding' scorer (a LlamaIndex BaseEmbedding or an hrefine "
            "Embedder); None: hrefine's embedded all-MiniLM-L6-v2. Settings.embed_model is "
            "never read."
        ),
    )
    prune_together: bool = Field(
        default=True,
        description=(
            "Prune all nodes against one budget, as in the paper (True), or each node to "
            "max_tokens on its own (False)."
        ),
    )

    _pruner: Rebuilt[HtmlPruner] = PrivateAttr(
        default_factory=lambda: Rebuilt(HtmlPrunerOptions, HtmlPruner)
    )

    def __init__(self, **data: Any) -> None:
        super().__init__(**data)
        # Built now, with its token counter, so that a bad setting fails at construction.
        _ = self._get_pruner().counter
        ResultOptions.of(self)

    def warmup(self) -> HtmlRagNodePostprocessor:
        """Load the models now (the budget tokenizer, the scorer's model, and the LM when
        ``generative``) and run one tiny call, so that the first real call is fast; see
        :meth:`hrefine.html.HtmlPruner.warmup`. Idempotent; returns this component."""
        self._get_pruner().warmup()
        return self

    @classmethod
    def class_name(cls) -> str:
        """Stable name used by LlamaIndex serialisation."""
        return "HtmlRagNodePostprocessor"

    def __getstate__(self) -> dict[str, Any]:
        # Refuses, rather than let the copy be built without its embed model or LM.
        return complete_state(self, super().__getstate__())

    def _get_pruner(self) -> HtmlPruner:
        """The core ``HtmlPruner`` for the current fields (made again when one changed)."""
        return self._pruner.get(self, {"embedder": (self.embed_model, to_embedder)})

    def _finish(
        self, nodes: list[NodeWithScore], outcomes: list[DocumentOutcome]
    ) -> list[NodeWithScore]:
        counter = self._get_pruner().counter
        counts = counter.count_many([o.html for o in outcomes])
        return outcomes_to_nodes(
            nodes,
            outcomes,
            token_counts=counts,
            tokenizer=counter.name,
            keep_input_order=ResultOptions.of(self).keep_input_order,
        )

    def _job(self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None) -> PruneJob:
        pages = nodes_to_html(nodes)
        return PruneJob.from_fields(self._get_pruner(), pages, _query_of(query_bundle), self)

    def _postprocess_nodes(
        self,
        nodes: list[NodeWithScore],
        query_bundle: QueryBundle | None = None,
    ) -> list[NodeWithScore]:
        items = node_list(nodes)
        return self._finish(items, self._job(items, query_bundle).run()) if items else []

    async def _apostprocess_nodes(
        self,
        nodes: list[NodeWithScore],
        query_bundle: QueryBundle | None = None,
    ) -> list[NodeWithScore]:
        items = node_list(nodes)
        return self._finish(items, await self._job(items, query_bundle).arun()) if items else []
