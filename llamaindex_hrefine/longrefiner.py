"""A LlamaIndex node postprocessor backed by LongRefiner (:mod:`hrefine.longrefiner`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hrefine.errors import EmptyInputError
from hrefine.longrefiner import LongRefiner, LongRefinerOptions
from hrefine.longrefiner.outcome import DocumentOutcome, RefineJob, RefinerSlot
from hrefine.models import Embedder
from hrefine.options import adapter_model
from hrefine.results import ResultOptions
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle
from pydantic import ConfigDict, Field, PrivateAttr

from llamaindex_hrefine._convert import (
    complete_state,
    node_list,
    nodes_to_texts,
    refined_to_nodes,
    to_embedder,
    to_refiner_llm,
)

__all__ = ["LongRefinerNodePostprocessor"]

#: The paper's token budget of the refined context.
DEFAULT_BUDGET = 2048

if TYPE_CHECKING:
    _LongRefinerFields = BaseNodePostprocessor
else:  # one field per LongRefinerOptions setting (its lm, llm, embedder and tokenizer are
    # declared below) and per ResultOptions setting (top_n, keep_input_order, strict)
    _LongRefinerFields = adapter_model(
        adapter_model(BaseNodePostprocessor, LongRefinerOptions, name="_LongRefinerOptionFields"),
        ResultOptions,
        name="_LongRefinerNodePostprocessorFields",
    )


#: The settings of the prompt-only LLM's calls (applied where the adapter wraps it).
_LLM_SETTINGS = ("llm_concurrency", "llm_retries", "llm_timeout")


def _same(value: Any) -> Any:
    return value


def _query_of(query_bundle: QueryBundle | None) -> str:
    if query_bundle is None:
        msg = (
            "LongRefinerNodePostprocessor needs the query: call postprocess_nodes(nodes, "
            "query_str=...) or pass a query_bundle (query engines do this for you)"
        )
        raise EmptyInputError(msg)
    return query_bundle.query_str


class LongRefinerNodePostprocessor(_LongRefinerFields):
    """Refine the long texts held by retrieved nodes to a token budget with LongRefiner.

    Each node's content is a long text (plain text, Markdown or HTML). The query is analysed as
    local or global, each text is split into its sections and paragraphs (from its own markup,
    or by a model), a model may pick the sections that matter, and every section and paragraph
    is scored as ``w_local * local + w_global * global``; the best ones that fit ``max_tokens``
    are kept, in document order (Jin et al., 2025). All nodes compete for one budget, as in the
    paper. With no model given, the model steps are off and the embedded embedder alone scores
    the paragraphs, offline.

    Returns new ``NodeWithScore`` objects holding copies of the input nodes: the inputs are
    never mutated. They come most relevant first (a node's kept text stays in document order),
    or in input order with ``keep_input_order=True``; ``top_n`` returns at most that many, like
    a reranker's. Each copy's score is its best kept combined score, in [0, 1], so a
    ``SimilarityPostprocessor`` after it works; the input score is in
    ``metadata["hrefine_input_score"]``. The metadata is a copy plus the keys
    ``langchain_hrefine.LongRefinerCompressor`` documents (``relevance_score``,
    ``hrefine_raw_score``, ``hrefine_tokens``, ``hrefine_budget``, ``hrefine_tokenizer``,
    ``hrefine_structure``, ``hrefine_sections_kept``, ``hrefine_sections_selected``,
    ``hrefine_query_type``, ``hrefine_dropped_documents``, ``hrefine_notes``...), hidden from
    the LLM and embed views so they do not count against the budget in the prompt. A node's
    ``metadata["title"]``, when it is a string, is its title in step 3's outline. A call whose
    nodes are all empty returns ``[]`` and logs a warning (``strict=True`` raises instead).

    Every :class:`~hrefine.longrefiner.LongRefinerOptions` setting but the models is a field of
    the same name, type, default and description (``structure``, ``query_analysis``,
    ``global_selection``, ``global_weight``, ``scorer``, ``leaf_tokens``...), as in
    ``langchain_hrefine.LongRefinerCompressor``; they are checked when the postprocessor is
    made.

    Attributes
    ----------
    max_tokens:
        Token budget of all the returned nodes' text together, counted with ``tokenizer``
        (the paper's 2048 by default).
    embed_model:
        A LlamaIndex ``BaseEmbedding`` or an hrefine ``Embedder`` for the ``"embedding"``
        scorer; None: hrefine's embedded all-MiniLM-L6-v2 (``Settings.embed_model`` is never
        read).
    llm:
        Prompt-only mode: a LlamaIndex ``LLM`` (called with ``complete``) or a ``str -> str``
        callable, asked in text for steps 1 and 3 (and step 2 for a text without markup).
        ``Settings.llm`` is never read. None: no model (unless ``lm`` is given).
    lm:
        A local model for the three steps: an hrefine ``LocalLM``, its folder or name, or
        ``"default"`` for the embedded SmolLM2. Give ``lm`` or ``llm``, not both.
    tokenizer:
        The reader LLM's tokenizer, in which ``max_tokens`` is counted (a Hugging Face name or
        tokenizer, a tiktoken encoding name, a ``str -> int`` callable...; None: Llama-3.2's).
    top_n:
        Most nodes returned, the most relevant first (None: all that kept something).
    keep_input_order:
        Return the nodes in input order rather than by relevance.
    strict:
        Raise ``EmptyInputError`` when every node is empty; False (default) returns ``[]``.

    Examples
    --------
    >>> from llama_index.core.schema import NodeWithScore, TextNode
    >>> post = LongRefinerNodePostprocessor(max_tokens=1024)
    >>> nodes = [NodeWithScore(node=TextNode(text=text), score=0.8)]  # doctest: +SKIP
    >>> refined = post.postprocess_nodes(nodes, query_str="When does it expire?")  # doctest: +SKIP
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    max_tokens: int = Field(
        default=DEFAULT_BUDGET,
        ge=1,
        strict=True,
        description="Token budget of the refined text of all nodes together.",
    )
    embed_model: BaseEmbedding | Embedder | None = Field(
        default=None,
        description=(
            "Embed model for the 'embedding' scorer (a LlamaIndex BaseEmbedding or an hrefine "
            "Embedder); None: hrefine's embedded all-MiniLM-L6-v2. Settings.embed_model is "
            "never read."
        ),
    )
    llm: Any = Field(
        default=None,
        description=(
            "Prompt-only mode: a LlamaIndex LLM or str -> str callable asked in text; None: no "
            "model (unless lm is given). Settings.llm is never read."
        ),
    )
    lm: Any = Field(
        default=None,
        description=(
            "A local model for the three steps: a LocalLM, its folder or name, or 'default' "
            "(the embedded SmolLM2); None: no model (unless llm is given)."
        ),
    )
    tokenizer: Any = Field(
        default=None,
        description="Tokenizer of max_tokens (None: Llama-3.2's).",
    )

    _refiner: RefinerSlot = PrivateAttr(default_factory=RefinerSlot)

    def __init__(self, **data: Any) -> None:
        super().__init__(**data)
        # Built now, with its token counter, so that a bad setting fails at construction.
        _ = self._get_refiner().counter
        ResultOptions.of(self)

    @classmethod
    def class_name(cls) -> str:
        """Stable name used by LlamaIndex serialisation."""
        return "LongRefinerNodePostprocessor"

    def __getstate__(self) -> dict[str, Any]:
        # Refuses, rather than let the copy be built without its embed model or LLM.
        return complete_state(self, super().__getstate__())

    @property
    def refiner(self) -> LongRefiner:
        """The core :class:`~hrefine.longrefiner.LongRefiner` for the current fields."""
        return self._get_refiner()

    def warmup(self) -> LongRefinerNodePostprocessor:
        """Load the models now (the budget tokenizer, the scorer's model, and the LM when
        given) and run one tiny refinement, so that the first real call is fast; see
        :meth:`hrefine.longrefiner.LongRefiner.warmup`. Returns this component."""
        self._get_refiner().warmup()
        return self

    def _get_refiner(self) -> LongRefiner:
        """The core ``LongRefiner`` for the current fields (made again when one changed)."""

        def llm(raw: Any) -> Any:
            return to_refiner_llm(raw, **{n: getattr(self, n) for n in _LLM_SETTINGS})

        return self._refiner.get(
            self,
            {
                "embedder": (self.embed_model, to_embedder),
                "llm": (self.llm, llm),
                "lm": (self.lm, _same),
                "tokenizer": (self.tokenizer, _same),
            },
        )

    def _job(self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None) -> RefineJob:
        texts, titles = nodes_to_texts(nodes)
        return RefineJob.from_fields(
            self._get_refiner(), texts, titles, _query_of(query_bundle), self
        )

    def _finish(
        self, nodes: list[NodeWithScore], outcomes: list[DocumentOutcome]
    ) -> list[NodeWithScore]:
        order = ResultOptions.of(self).keep_input_order
        return refined_to_nodes(nodes, outcomes, keep_input_order=order)

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
