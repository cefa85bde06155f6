"""A LlamaIndex node postprocessor backed by LongRefiner (:mod:`hrefine.longrefiner`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hrefine.longrefiner import LongRefiner, LongRefinerOptions
from hrefine.longrefiner.outcome import DocumentOutcome, RefineJob, RefinerSlot
from hrefine.models import Embedder
from hrefine.options import adapter_model
from hrefine.results import ResultOptions
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.schema import NodeWithScore, QueryBundle
from pydantic import Field, PrivateAttr

from llamaindex_hrefine._convert import (
    nodes_to_texts,
    refined_to_nodes,
    to_embedder,
    to_refiner_llm,
)
from llamaindex_hrefine._postprocessor import (
    CorePostprocessor,
    budget_field,
    embed_model_field,
)

__all__ = ["LongRefinerNodePostprocessor"]

#: The paper's token budget of the refined context.
DEFAULT_BUDGET = 2048

if TYPE_CHECKING:
    _LongRefinerFields = CorePostprocessor
else:  # one field per LongRefinerOptions setting (its lm, llm, embedder and tokenizer are
    # declared below) and per ResultOptions setting (top_n, keep_input_order, strict)
    _LongRefinerFields = adapter_model(
        adapter_model(CorePostprocessor, LongRefinerOptions, name="_LongRefinerOptionFields"),
        ResultOptions,
        name="_LongRefinerNodePostprocessorFields",
    )


#: The settings of the prompt-only LLM's calls (applied where the adapter wraps it).
_LLM_SETTINGS = ("llm_concurrency", "llm_retries", "llm_timeout")


def _same(value: Any) -> Any:
    return value


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

    top_n, keep_input_order, strict:
        As :class:`~llamaindex_hrefine.HtmlRagNodePostprocessor` takes them: the most nodes
        returned (None: all that kept something), input order rather than relevance, and
        ``EmptyInputError`` rather than ``[]`` when every node is empty.

    Examples
    --------
    >>> from llama_index.core.schema import NodeWithScore, TextNode
    >>> post = LongRefinerNodePostprocessor(max_tokens=1024)
    >>> nodes = [NodeWithScore(node=TextNode(text=text), score=0.8)]  # doctest: +SKIP
    >>> refined = post.postprocess_nodes(nodes, query_str="When does it expire?")  # doctest: +SKIP
    """

    max_tokens: int = budget_field(
        DEFAULT_BUDGET, "Token budget of the refined text of all nodes together."
    )
    """Token budget of all the returned nodes' text together, counted with ``tokenizer``
    (the paper's 2048 by default).
    """
    embed_model: BaseEmbedding | Embedder | None = embed_model_field()
    """The model of the sections' and paragraphs' embedding scores (LlamaIndex
    ``BaseEmbedding`` or hrefine ``Embedder``; None: the embedded all-MiniLM-L6-v2; never
    ``Settings.embed_model``)."""
    llm: Any = Field(
        default=None,
        description=(
            "Prompt-only mode: a LlamaIndex LLM or str -> str callable asked in text; None: no "
            "model (unless lm is given). Settings.llm is never read."
        ),
    )
    """Prompt-only mode: a LlamaIndex ``LLM`` (called with ``complete``) or a ``str -> str``
    callable, asked in text for steps 1 and 3 (and step 2 for a text without markup).
    ``Settings.llm`` is never read. None: no model (unless ``lm`` is given).
    """
    lm: Any = Field(
        default=None,
        description=(
            "A local model for the three steps: a LocalLM, its folder or name, or 'default' "
            "(the embedded SmolLM2); None: no model (unless llm is given)."
        ),
    )
    """A local model for the three steps: an hrefine ``LocalLM``, its folder or name, or
    ``"default"`` for the embedded SmolLM2. Give ``lm`` or ``llm``, not both.
    """
    tokenizer: Any = Field(
        default=None,
        description="Tokenizer of max_tokens (None: Llama-3.2's).",
    )
    """The reader LLM's tokenizer, in which ``max_tokens`` is counted (a Hugging Face name or
    tokenizer, a tiktoken encoding name, a ``str -> int`` callable...; None: Llama-3.2's).
    """

    _refiner: RefinerSlot = PrivateAttr(default_factory=RefinerSlot)

    @classmethod
    def class_name(cls) -> str:
        """Stable name used by LlamaIndex serialisation."""
        return "LongRefinerNodePostprocessor"

    @property
    def refiner(self) -> LongRefiner:
        """The core :class:`~hrefine.longrefiner.LongRefiner` for the current fields."""
        return self._get_refiner()

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

    def _core(self) -> LongRefiner:
        return self._get_refiner()

    def _job(self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None) -> RefineJob:
        texts, titles = nodes_to_texts(nodes)
        refiner = self._get_refiner()
        return RefineJob.from_fields(refiner, texts, titles, self._query_of(query_bundle), self)

    def _finish(
        self, nodes: list[NodeWithScore], outcomes: list[DocumentOutcome]
    ) -> list[NodeWithScore]:
        order = ResultOptions.of(self).keep_input_order
        return refined_to_nodes(nodes, outcomes, keep_input_order=order)
