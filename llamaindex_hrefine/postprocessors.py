"""LlamaIndex node postprocessors backed by the hrefine core."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hrefine.html import DEFAULT_BUDGET, MIN_BUDGET, HtmlPruner, HtmlPrunerOptions
from hrefine.html.outcome import DocumentOutcome, PruneJob, check_query
from hrefine.models import Embedder
from hrefine.options import Rebuilt, adapter_model
from hrefine.results import ResultOptions
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.schema import NodeWithScore, QueryBundle
from pydantic import Field, PrivateAttr

from llamaindex_hrefine._convert import nodes_to_html, outcomes_to_nodes, to_embedder
from llamaindex_hrefine._postprocessor import (
    CorePostprocessor,
    budget_field,
    embed_model_field,
)

__all__ = ["HtmlRagNodePostprocessor"]

if TYPE_CHECKING:
    _HtmlRagFields = CorePostprocessor
else:  # one field per HtmlPrunerOptions setting (its embedder is the ``embed_model`` field)
    # and per ResultOptions setting (top_n, keep_input_order, strict)
    _HtmlRagFields = adapter_model(
        adapter_model(CorePostprocessor, HtmlPrunerOptions, name="_HtmlRagPrunerFields"),
        ResultOptions,
        name="_HtmlRagNodePostprocessorFields",
    )


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

    max_tokens: int = budget_field(
        DEFAULT_BUDGET,
        f"Token budget of the pruned HTML (all nodes together, or each node; at least "
        f"{MIN_BUDGET}).",
        minimum=MIN_BUDGET,
    )
    """Token budget of the pruned HTML (all nodes together, or each node; see
    ``prune_together``).
    """
    embed_model: BaseEmbedding | Embedder | None = embed_model_field()
    """What embeds the query and the blocks for the ``"embedding"`` scorer: a LlamaIndex
    ``BaseEmbedding`` or an hrefine ``Embedder``; None: the embedded all-MiniLM-L6-v2.
    ``Settings.embed_model`` is never read."""
    prune_together: bool = Field(
        default=True,
        description=(
            "Prune all nodes against one budget, as in the paper (True), or each node to "
            "max_tokens on its own (False)."
        ),
    )
    """All nodes against one budget, as in the paper (True), or each node on its own (False).
    With ``top_n`` set, each of the ``top_n`` most relevant nodes keeps at least one block
    (when one would not, each gets an equal share of the budget: scope ``"split"``).
    """

    _pruner: Rebuilt[HtmlPruner] = PrivateAttr(
        default_factory=lambda: Rebuilt(HtmlPrunerOptions, HtmlPruner)
    )

    @classmethod
    def class_name(cls) -> str:
        """Stable name used by LlamaIndex serialisation."""
        return "HtmlRagNodePostprocessor"

    def _get_pruner(self) -> HtmlPruner:
        """The core ``HtmlPruner`` for the current fields (made again when one changed)."""
        return self._pruner.get(self, {"embedder": (self.embed_model, to_embedder)})

    def _core(self) -> HtmlPruner:
        return self._get_pruner()

    def _job(self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None) -> PruneJob:
        pages = nodes_to_html(nodes)
        pruner = self._get_pruner()
        return PruneJob.from_fields(pruner, pages, check_query(self._query_of(query_bundle)), self)

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
