"""LangChain document compressors backed by the hrefine core."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hrefine.html import DEFAULT_BUDGET, MIN_BUDGET, HtmlPruner, HtmlPrunerOptions
from hrefine.html.outcome import DocumentOutcome, PruneJob, check_query
from hrefine.models import Embedder
from hrefine.options import Rebuilt, adapter_model
from hrefine.results import ResultOptions
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from pydantic import Field, PrivateAttr

from langchain_hrefine._compressor import JobCompressor
from langchain_hrefine._convert import documents_to_html, outcomes_to_documents, to_embedder
from langchain_hrefine._fields import EMBEDDINGS_FOR_SCORER, budget_field, model_field

__all__ = ["HtmlRagCompressor"]

if TYPE_CHECKING:
    _HtmlRagFields = JobCompressor
else:  # one field per HtmlPrunerOptions setting (its embedder is the ``embeddings`` field)
    # and per ResultOptions setting (top_n, keep_input_order, strict)
    _HtmlRagFields = adapter_model(
        adapter_model(JobCompressor, HtmlPrunerOptions, name="_HtmlRagPrunerFields"),
        ResultOptions,
        name="_HtmlRagCompressorFields",
    )


class HtmlRagCompressor(_HtmlRagFields):
    """Prune retrieved HTML pages to a token budget with HtmlRAG.

    Each Document's ``page_content`` is HTML. The pages are cleaned, split into a block tree,
    the blocks are ranked against the query (embeddings or BM25, then optionally a small
    generative model) and the best blocks that fit ``max_tokens`` are kept, as HTML with the
    original tags. The returned Documents are new objects: the input Documents are untouched.

    The returned Documents are ordered by relevance (best first; a page's kept blocks stay in
    page order), or in input order with ``keep_input_order=True``. ``top_n`` returns at most
    that many: the most relevant pages, each with at least its best block.

    Every returned Document's ``metadata`` is a copy of its input's metadata plus
    ``relevance_score`` (the best kept block's score mapped into [0, 1]: see
    :func:`hrefine.results.unit_scores`; so a score threshold downstream works),
    ``hrefine_raw_score`` (the pruner's raw score), ``hrefine_tokens`` (tokens of the pruned HTML),
    ``hrefine_budget``, ``hrefine_budget_scope`` (``"shared"``, ``"document"`` or ``"split"``),
    ``hrefine_tokenizer``, ``hrefine_blocks_kept``, ``hrefine_blocks_total`` and
    ``hrefine_dropped_documents``: the number of input Documents left out (no visible text, no
    block within the budget, or below ``top_n``; each reason is logged). An input's own
    ``relevance_score`` (from a reranker before this) is kept as ``hrefine_input_score``. The
    metadata is deep-copied, or copied shallowly where a value cannot be (the hrefine keys are
    added to the copy only).

    The compressor pickles and deep-copies (its pruner's caches start empty in the copy, and a
    loaded embedder is loaded again from its folder on first use).

    Every :class:`~hrefine.html.HtmlPrunerOptions` setting but ``embedder`` is a field of the
    same name, type, default and description: ``scorer``, ``tokenizer`` (pass the reader LLM's
    tokenizer), ``max_words``, ``generative``, ``lm``, ``generative_adapter``, ``fine_max_words``,
    ``stage1_max_tokens``, ``boilerplate``, ``omit_end_tags``, ``lexical_weight``,
    ``narrow_tables``, ``split_paragraphs``, ``demote_back_matter``, ``read_words``,
    ``embed_max_tokens``, ``cleaned_cache``, ``input_format``, ``max_input_bytes``,
    ``neighbour_rows``, ``keep_last_rows``, ``record_tables``. They are checked when the
    compressor is made (and again when a changed field is next used).

    Attributes
    ----------
    top_n:
        Most Documents returned, the most relevant first (None: all that kept something).
        ``CompressionRetriever(k=...)`` sets it for its calls.
    keep_input_order:
        Return the Documents in input order rather than by relevance.
    strict:
        Raise ``EmptyInputError`` when every input Document is empty; False (default) returns
        ``[]`` and logs a warning, so one empty retrieval does not break the chain.

    Examples
    --------
    >>> from langchain_core.documents import Document
    >>> compressor = HtmlRagCompressor(max_tokens=512, scorer="bm25")
    >>> docs = [Document(page_content="<html>...</html>", metadata={"source": "a.html"})]
    >>> pruned = compressor.compress_documents(docs, "who won in 1972?")  # doctest: +SKIP
    """

    max_tokens: int = budget_field(
        DEFAULT_BUDGET,
        f"Token budget of the pruned HTML (at least {MIN_BUDGET}).",
        minimum=MIN_BUDGET,
    )
    """Token budget of the pruned HTML (all documents together, or each document; see
    ``prune_together``), counted with ``tokenizer``.
    """
    embeddings: Embeddings | Embedder | None = model_field(EMBEDDINGS_FOR_SCORER)
    """LangChain ``Embeddings`` (or an hrefine ``Embedder``) for the ``"embedding"`` scorer;
    None uses hrefine's embedded all-MiniLM-L6-v2, offline.
    """
    prune_together: bool = Field(
        default=True,
        description="Prune all documents against one budget (True) or each on its own (False).",
    )
    """True (as in the paper): all documents compete for one budget, and a document with no
    block in the best set is left out (with ``top_n`` set, each of the ``top_n`` most
    relevant keeps at least one block: when one would not, each is pruned to an equal share
    of the budget, ``hrefine_budget_scope="split"``). False: each document is pruned to
    ``max_tokens`` on its own.
    """

    _pruner: Rebuilt[HtmlPruner] = PrivateAttr(
        default_factory=lambda: Rebuilt(HtmlPrunerOptions, HtmlPruner)
    )

    def _get_pruner(self) -> HtmlPruner:
        """The core ``HtmlPruner`` for the current fields (made again when one changed)."""
        return self._pruner.get(self, {"embedder": (self.embeddings, to_embedder)})

    def _core(self) -> HtmlPruner:
        return self._get_pruner()

    def _job(self, documents: list[Document], query: str) -> PruneJob:
        pages = documents_to_html(documents)
        return PruneJob.from_fields(self._get_pruner(), pages, check_query(query), self)

    def _finish(self, documents: list[Document], outcomes: list[DocumentOutcome]) -> list[Document]:
        counter = self._get_pruner().counter
        counts = counter.count_many([o.html for o in outcomes])
        return outcomes_to_documents(
            documents,
            outcomes,
            token_counts=counts,
            tokenizer=counter.name,
            keep_input_order=ResultOptions.of(self).keep_input_order,
        )
