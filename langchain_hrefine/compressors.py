"""LangChain document compressors backed by the hrefine core."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hrefine.html import MIN_BUDGET, HtmlPruner, HtmlPrunerOptions
from hrefine.html.outcome import (
    DocumentOutcome,
    PruneJob,
    check_query,
)
from hrefine.models import Embedder
from hrefine.options import Rebuilt, adapter_model
from langchain_core.callbacks import Callbacks
from langchain_core.documents import BaseDocumentCompressor, Document
from langchain_core.embeddings import Embeddings
from pydantic import ConfigDict, Field, PrivateAttr

from langchain_hrefine._convert import (
    documents_to_html,
    outcomes_to_documents,
    to_embedder,
)

__all__ = ["HtmlRagCompressor"]

if TYPE_CHECKING:
    _HtmlRagFields = BaseDocumentCompressor
else:  # one field per HtmlPrunerOptions setting (its embedder is the ``embeddings`` field)
    _HtmlRagFields = adapter_model(
        BaseDocumentCompressor, HtmlPrunerOptions, name="_HtmlRagCompressorFields"
    )


class HtmlRagCompressor(_HtmlRagFields):
    """Prune retrieved HTML pages to a token budget with HtmlRAG.

    Each Document's ``page_content`` is HTML. The pages are cleaned, split into a block tree,
    the blocks are ranked against the query (embeddings or BM25, then optionally a small
    generative model) and the best blocks that fit ``max_tokens`` are kept, as HTML with the
    original tags. The returned Documents are new objects: the input Documents are untouched.

    Every returned Document's ``metadata`` is a copy of its input's metadata plus
    ``relevance_score`` (best kept block score), ``hrefine_tokens`` (tokens of the pruned HTML),
    ``hrefine_budget``, ``hrefine_budget_scope`` (``"shared"`` or ``"document"``),
    ``hrefine_tokenizer``, ``hrefine_blocks_kept``, ``hrefine_blocks_total`` and
    ``hrefine_dropped_documents``: the number of input Documents left out because none of their
    blocks made the budget. An input's own ``relevance_score`` (from a reranker before this) is
    kept as ``hrefine_input_score``. The metadata is deep-copied, or copied shallowly where a
    value cannot be (the hrefine keys are added to the copy only).

    The compressor pickles and deep-copies (its pruner's caches start empty in the copy, and a
    loaded embedder is loaded again from its folder on first use).

    Every :class:`~hrefine.html.HtmlPrunerOptions` setting but ``embedder`` is a field of the
    same name, type, default and description: ``scorer``, ``tokenizer`` (pass the reader LLM's
    tokenizer), ``max_words``, ``generative``, ``lm``, ``fine_max_words``,
    ``stage1_max_tokens``, ``boilerplate``, ``omit_end_tags``, ``lexical_weight``,
    ``narrow_tables``, ``split_paragraphs``, ``demote_back_matter``, ``read_words``,
    ``embed_max_tokens``, ``cleaned_cache``. They are checked when the compressor is made (and
    again when a changed field is next used).

    Attributes
    ----------
    max_tokens:
        Token budget of the pruned HTML (all documents together, or each document; see
        ``prune_together``), counted with ``tokenizer``.
    embeddings:
        LangChain ``Embeddings`` (or an hrefine ``Embedder``) for the ``"embedding"`` scorer;
        None uses hrefine's embedded all-MiniLM-L6-v2, offline.
    prune_together:
        True (as in the paper): all documents compete for one budget, and a document with no
        block in the best set is left out. False: each document is pruned to ``max_tokens`` on
        its own.

    Examples
    --------
    >>> from langchain_core.documents import Document
    >>> compressor = HtmlRagCompressor(max_tokens=512, scorer="bm25")
    >>> docs = [Document(page_content="<html>...</html>", metadata={"source": "a.html"})]
    >>> pruned = compressor.compress_documents(docs, "who won in 1972?")  # doctest: +SKIP
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    max_tokens: int = Field(
        default=2048,
        ge=MIN_BUDGET,
        strict=True,
        description=f"Token budget of the pruned HTML (at least {MIN_BUDGET}).",
    )
    embeddings: Embeddings | Embedder | None = Field(
        default=None,
        description="Embeddings for the 'embedding' scorer; None: the embedded default model.",
    )
    prune_together: bool = Field(
        default=True,
        description="Prune all documents against one budget (True) or each on its own (False).",
    )

    _pruner: Rebuilt[HtmlPruner] = PrivateAttr(
        default_factory=lambda: Rebuilt(HtmlPrunerOptions, HtmlPruner)
    )

    def model_post_init(self, context: Any, /) -> None:
        """Build the core pruner and its token counter now, so that a bad setting (an unknown
        scorer, a tokenizer that is not there) fails at construction."""
        _ = self._get_pruner().counter

    def _get_pruner(self) -> HtmlPruner:
        """The core ``HtmlPruner`` for the current fields (made again when one changed)."""
        return self._pruner.get(self, {"embedder": (self.embeddings, to_embedder)})

    def _finish(
        self, documents: Sequence[Document], outcomes: list[DocumentOutcome]
    ) -> list[Document]:
        counter = self._get_pruner().counter
        counts = counter.count_many([o.html for o in outcomes])
        return outcomes_to_documents(
            documents, outcomes, token_counts=counts, tokenizer=counter.name
        )

    def _job(self, documents: Sequence[Document], query: str) -> PruneJob:
        return PruneJob(
            self._get_pruner(),
            documents_to_html(documents),
            check_query(query),
            self.max_tokens,
            together=self.prune_together,
        )

    def compress_documents(
        self,
        documents: Sequence[Document],
        query: str,
        callbacks: Callbacks | None = None,
    ) -> Sequence[Document]:
        """Prune the HTML of ``documents`` to the budget, keeping what is relevant to ``query``.

        Parameters
        ----------
        documents:
            Documents whose ``page_content`` is HTML.
        query:
            The question the context is for.
        callbacks:
            Accepted for the LangChain interface; pruning makes no LangChain model calls.

        Returns
        -------
        Sequence[Document]
            New Documents with pruned HTML and the metadata described in the class docstring, in
            input order; documents with nothing kept are left out and counted in each output's
            ``hrefine_dropped_documents``.
        """
        docs = list(documents)
        job = self._job(docs, query)
        return self._finish(docs, job.run()) if docs else []

    async def acompress_documents(
        self,
        documents: Sequence[Document],
        query: str,
        callbacks: Callbacks | None = None,
    ) -> Sequence[Document]:
        """:meth:`compress_documents` on the core's async path (the event loop is not blocked);
        same parameters and result."""
        docs = list(documents)
        job = self._job(docs, query)
        return self._finish(docs, await job.arun()) if docs else []
