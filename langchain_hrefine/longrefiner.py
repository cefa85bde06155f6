"""A LangChain document compressor backed by LongRefiner (:mod:`hrefine.longrefiner`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hrefine.longrefiner import LongRefiner, LongRefinerOptions
from hrefine.longrefiner.outcome import DocumentOutcome, RefineJob, RefinerSlot
from hrefine.models import Embedder
from hrefine.options import adapter_model
from hrefine.results import ResultOptions
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from pydantic import Field, PrivateAttr

from langchain_hrefine._compressor import JobCompressor
from langchain_hrefine._convert import (
    documents_to_texts,
    refined_to_documents,
    to_embedder,
    to_refiner_llm,
)
from langchain_hrefine._fields import EMBEDDINGS_FOR_SCORER, budget_field, model_field

__all__ = ["LongRefinerCompressor"]

#: The paper's token budget of the refined context.
DEFAULT_BUDGET = 2048

if TYPE_CHECKING:
    _LongRefinerFields = JobCompressor
else:  # one field per LongRefinerOptions setting (its lm, llm, embedder and tokenizer are
    # declared below) and per ResultOptions setting (top_n, keep_input_order, strict)
    _LongRefinerFields = adapter_model(
        adapter_model(JobCompressor, LongRefinerOptions, name="_LongRefinerOptionFields"),
        ResultOptions,
        name="_LongRefinerCompressorFields",
    )


#: The settings of the prompt-only LLM's calls (applied where the adapter wraps it).
_LLM_SETTINGS = ("llm_concurrency", "llm_retries", "llm_timeout")


def _same(value: Any) -> Any:
    return value


class LongRefinerCompressor(_LongRefinerFields):
    """Refine long retrieved documents to a token budget with LongRefiner.

    Each Document's ``page_content`` is a long text (plain text, Markdown or HTML). The query is
    analysed as local or global, each document is split into its sections and paragraphs (from
    its own markup, or by a model), a model may pick the sections that matter, and every
    section and paragraph is scored as ``w_local * local + w_global * global``; the best ones
    that fit ``max_tokens`` are kept, in document order (Jin et al., 2025). All documents
    compete for one budget, as in the paper. With no model given, the model steps are off and
    the embedded embedder alone scores the paragraphs, offline. The returned Documents are new
    objects: the input Documents are untouched.

    The returned Documents are ordered by relevance (best first; a document's kept text stays
    in document order), or in input order with ``keep_input_order=True``. ``top_n`` returns at
    most that many: the most relevant documents, refined again together so that they share the
    whole budget (each keeps something; when one would not, each gets an equal share).

    Every returned Document's ``metadata`` is a copy of its input's metadata plus
    ``relevance_score`` (the document's best kept combined score, in [0, 1]),
    ``hrefine_raw_score``, ``hrefine_method`` (``"longrefiner"``), ``hrefine_tokens`` (tokens of
    the refined text), ``hrefine_budget``, ``hrefine_budget_scope`` (``"shared"`` or
    ``"split"``), ``hrefine_tokenizer``, ``hrefine_structure`` (where the sections came from:
    ``"numbered"``, ``"markdown"``, ``"html"``, ``"headings"``, ``"model"``, ``"paragraphs"``),
    ``hrefine_sections_kept`` (titles of the sections the text comes from),
    ``hrefine_sections_selected`` (the sections the model chose in step 3),
    ``hrefine_query_type`` (``label`` ``"local"``/``"global"``, ``w_local``, ``w_global``,
    ``source``), ``hrefine_dropped_documents`` (input Documents left out: no text, nothing
    within the budget, or below ``top_n``; each reason is logged) and ``hrefine_notes``
    (fallbacks: a model answer that could not be used, a paragraph cut to fit). An input's own
    ``relevance_score`` (from a reranker before this) is kept as ``hrefine_input_score``.

    A Document's ``metadata["title"]``, when it is a string, is the document's title in the
    outline the model reads in step 3.

    Every :class:`~hrefine.longrefiner.LongRefinerOptions` setting but the models is a field of
    the same name, type, default and description: ``structure``, ``query_analysis``,
    ``global_selection``, ``global_weight``, ``scorer``, ``lexical_weight``, ``leaf_tokens``,
    ``min_leaf_tokens``, ``anchor_tokens``, ``window_tokens``, the ``*_adapter`` folders,
    ``cache_dir``, ``separator``, ``llm_concurrency``, ``llm_retries``, ``llm_timeout``,
    ``max_input_chars`` and the prompts. They are checked when the compressor is made (and
    again when a changed field is next used).

    The compressor pickles and deep-copies (the copy builds its refiner again on first use).

    top_n, keep_input_order, strict:
        As :class:`~langchain_hrefine.HtmlRagCompressor` takes them: the most Documents
        returned (``CompressionRetriever(k=...)`` sets it for its calls), input order rather
        than relevance, and ``EmptyInputError`` rather than ``[]`` and a warning when every
        input Document is empty.

    Examples
    --------
    >>> from langchain_core.documents import Document
    >>> compressor = LongRefinerCompressor(max_tokens=1024)
    >>> docs = [Document(page_content=text, metadata={"source": "a.txt"})]  # doctest: +SKIP
    >>> refined = compressor.compress_documents(docs, "When does it expire?")  # doctest: +SKIP
    """

    max_tokens: int = budget_field(
        DEFAULT_BUDGET, "Token budget of the refined text of all documents together."
    )
    """Token budget of all the returned Documents' text together, counted with
    ``tokenizer`` (the paper's 2048 by default).
    """
    embeddings: Embeddings | Embedder | None = model_field(EMBEDDINGS_FOR_SCORER)
    """LangChain ``Embeddings`` (or an hrefine ``Embedder``) for the ``"embedding"`` scorer;
    None uses hrefine's embedded all-MiniLM-L6-v2, offline.
    """
    llm: Any = Field(
        default=None,
        description=(
            "Prompt-only mode: a chat model, LLM, Runnable or str -> str callable asked in "
            "text; None: no model (unless lm is given)."
        ),
    )
    """Prompt-only mode: a LangChain chat model, LLM or Runnable taking a string prompt, or a
    ``str -> str`` callable. Steps 1 and 3 (and step 2 for a document without markup) ask
    it in text and parse its answers. None: no model (unless ``lm`` is given).
    """
    lm: Any = Field(
        default=None,
        description=(
            "A local model for the three steps: a LocalLM, its folder or name, or 'default' "
            "(the embedded SmolLM2); None: no model (unless llm is given)."
        ),
    )
    """A local model for the three steps (choice probabilities for step 1, as in the paper):
    an hrefine ``LocalLM``, its folder or name, or ``"default"`` for the embedded SmolLM2.
    Give ``lm`` or ``llm``, not both.
    """
    tokenizer: Any = model_field("Tokenizer of max_tokens (None: Llama-3.2's).")
    """The reader LLM's tokenizer, in which ``max_tokens`` is counted: a Hugging Face name or
    tokenizer, a ``tokenizer.json`` path, a tiktoken encoding or model name
    (``"cl100k_base"``), a ``tiktoken.Encoding``, a ``str -> int`` callable, or None for
    Llama-3.2's.
    """

    _refiner: RefinerSlot = PrivateAttr(default_factory=RefinerSlot)

    @property
    def refiner(self) -> LongRefiner:
        """The core :class:`~hrefine.longrefiner.LongRefiner` for the current fields (its
        ``structure``, ``analyze`` and ``refine`` are there for inspection)."""
        return self._get_refiner()

    def _get_refiner(self) -> LongRefiner:
        """The core ``LongRefiner`` for the current fields (made again when one changed)."""

        def llm(raw: Any) -> Any:
            return to_refiner_llm(raw, **{n: getattr(self, n) for n in _LLM_SETTINGS})

        return self._refiner.get(
            self,
            {
                "embedder": (self.embeddings, to_embedder),
                "llm": (self.llm, llm),
                "lm": (self.lm, _same),
                "tokenizer": (self.tokenizer, _same),
            },
        )

    def _core(self) -> LongRefiner:
        return self._get_refiner()

    def _job(self, documents: list[Document], query: str) -> RefineJob:
        texts, titles = documents_to_texts(documents)
        return RefineJob.from_fields(self._get_refiner(), texts, titles, query, self)

    def _finish(self, documents: list[Document], outcomes: list[DocumentOutcome]) -> list[Document]:
        order = ResultOptions.of(self).keep_input_order
        return refined_to_documents(documents, outcomes, keep_input_order=order)
