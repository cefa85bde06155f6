"""LangChain document compressors backed by the hrefine core."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hrefine.html import MIN_BUDGET
from hrefine.html.outcome import (
    CLEANED_CACHE_HELP,
    READ_WORDS_HELP,
    SPLIT_PARAGRAPHS_HELP,
    DocumentOutcome,
    aprune_documents,
    build_pruner,
    check_query,
    prune_documents,
    pruner_key,
)
from hrefine.models import Embedder
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


class HtmlRagCompressor(BaseDocumentCompressor):
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

    Parameters
    ----------
    max_tokens:
        Token budget of the pruned HTML (all documents together, or each document; see
        ``prune_together``), counted with ``tokenizer``.
    scorer:
        ``"embedding"`` (default), ``"bm25"``, ``"cross-encoder:<model>"`` or an hrefine
        ``Scorer``.
    embeddings:
        LangChain ``Embeddings`` (or an hrefine ``Embedder``) for the ``"embedding"`` scorer;
        None uses hrefine's embedded all-MiniLM-L6-v2, offline.
    tokenizer:
        What the budget is counted in: None (hrefine's default, Llama-3.2), a Hugging Face or
        tiktoken tokenizer, a ``tokenizer.json`` path, or a ``str -> int`` callable. Pass the
        tokenizer of the LLM that reads the context.
    generative:
        Run the paper's second, generative stage (block tag-path probabilities from a small LM).
    lm:
        The hrefine ``LocalLM`` for the generative stage; None uses the embedded default.
    max_words:
        Largest block, in words.
    boilerplate:
        Remove navigation, footers and similar boilerplate while cleaning.
    omit_end_tags:
        Leave out the end tags HTML makes optional (``</td>``, ``</tr>``, ``</li>``…) where
        they may go: the page parses the same and a table costs about half the tokens.
    lexical_weight:
        Weight of the BM25 match added to a dense scorer's block scores (None: 0.3; 0: off).
    narrow_tables:
        A table bigger than the budget keeps every row of the columns that score best for the
        query (and the rows the query names whole); False keeps whole rows only.
    split_paragraphs:
        True (default): a paragraph over a quarter of the budget is split at sentence ends
        into pieces, so the part that answers is kept where the paragraph ranks; False keeps
        paragraphs whole.
    demote_back_matter:
        Blocks under a "References", "Notes", "External links", "Further reading" or "See also"
        heading rank after every other block (and are not embedded); False scores them like
        the rest.
    read_words:
        Words of each block the embedding (or cross-encoder) reads: its first ones, or the
        window holding most of the query's words when those fall later (45 makes a cold call
        about a fifth faster); None (default) reads whole blocks. BM25 always reads them whole.
    cleaned_cache:
        Pages whose cleaned tree the pruner keeps (default 64, at most 4 million input
        characters in all), so a page pruned again for another query or budget is not cleaned
        again; 0 keeps none.
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
    scorer: Any = Field(
        default="embedding",
        description="'embedding', 'bm25', 'cross-encoder:<model>' or an hrefine Scorer.",
    )
    embeddings: Embeddings | Embedder | None = Field(
        default=None,
        description="Embeddings for the 'embedding' scorer; None: the embedded default model.",
    )
    tokenizer: Any = Field(
        default=None, description="Tokenizer the budget is counted in; None: hrefine's default."
    )
    generative: bool = Field(default=False, description="Run the generative second stage.")
    lm: Any = Field(default=None, description="LocalLM for the generative stage; None: default.")
    max_words: int = Field(default=256, gt=0, description="Largest block, in words.")
    boilerplate: bool = Field(default=True, description="Remove boilerplate while cleaning.")
    omit_end_tags: bool = Field(
        default=True,
        description="Leave out optional end tags (</td>, </li>...): same page, fewer tokens.",
    )
    lexical_weight: float | None = Field(
        default=None,
        ge=0,
        allow_inf_nan=False,
        description="Weight of the BM25 match added to dense block scores; None: 0.3.",
    )
    narrow_tables: bool = Field(
        default=True,
        description="Narrow a table bigger than the budget to its best columns, every row kept.",
    )
    split_paragraphs: bool = Field(default=True, description=SPLIT_PARAGRAPHS_HELP)
    demote_back_matter: bool = Field(
        default=True,
        description="Rank references, notes, external links and 'see also' after the body.",
    )
    read_words: int | None = Field(default=None, ge=1, description=READ_WORDS_HELP)
    cleaned_cache: int = Field(default=64, ge=0, description=CLEANED_CACHE_HELP)
    prune_together: bool = Field(
        default=True,
        description="Prune all documents against one budget (True) or each on its own (False).",
    )

    _pruner: Any = PrivateAttr(default=None)
    _pruner_key: tuple[Any, ...] | None = PrivateAttr(default=None)

    def model_post_init(self, context: Any, /) -> None:
        """Build the core pruner and its token counter now, so that a bad setting (an unknown
        scorer, a tokenizer that is not there) fails at construction."""
        _ = self._get_pruner().counter

    def _get_pruner(self) -> Any:
        """The core ``HtmlPruner`` for the current settings (rebuilt when a setting changed)."""
        key = pruner_key(self, self.embeddings)
        if self._pruner is None or key != self._pruner_key:
            self._pruner = build_pruner(self, to_embedder(self.embeddings))
            self._pruner_key = key
        return self._pruner

    def _finish(
        self, documents: Sequence[Document], outcomes: list[DocumentOutcome]
    ) -> list[Document]:
        counter = self._get_pruner().counter
        counts = counter.count_many([o.html for o in outcomes])
        return outcomes_to_documents(
            documents, outcomes, token_counts=counts, tokenizer=counter.name
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
        check_query(query)
        docs = list(documents)
        if not docs:
            return []
        outcomes = prune_documents(
            self._get_pruner(),
            documents_to_html(docs),
            query,
            self.max_tokens,
            together=self.prune_together,
        )
        return self._finish(docs, outcomes)

    async def acompress_documents(
        self,
        documents: Sequence[Document],
        query: str,
        callbacks: Callbacks | None = None,
    ) -> Sequence[Document]:
        """Async :meth:`compress_documents`, on the core's async path (the loop is not blocked).

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
            Same as :meth:`compress_documents`.
        """
        check_query(query)
        docs = list(documents)
        if not docs:
            return []
        outcomes = await aprune_documents(
            self._get_pruner(),
            documents_to_html(docs),
            query,
            self.max_tokens,
            together=self.prune_together,
        )
        return self._finish(docs, outcomes)
