"""Baselines every method is compared with, under the same token budget and tokenizer.

- :class:`LeadCompressor` (``"lead"``): the start of the document, truncated at a word boundary.
- :class:`ChunkCompressor` with BM25 (``"bm25"``) or embeddings (``"embedding"``): the document
  is cut into chunks of about 128 tokens (:func:`hrefine.chunk.chunks`), each chunk is scored
  against the query, and the best chunks that fit the budget are returned in document order
  (:func:`hrefine.budget.fill`).

HTML documents are converted to plain text first (:func:`hrefine.eval.text.html_to_text`).
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from typing import Any

import numpy as np

from hrefine.budget import TokenCounter, get_counter
from hrefine.chunk import chunks as cut_into_chunks
from hrefine.errors import BudgetTooSmallError, ConfigError, EmptyInputError
from hrefine.eval.text import (
    SEPARATOR,
    fill_budget,
    html_to_text,
    looks_like_html,
    truncate_to_tokens,
)

__all__ = ["ChunkCompressor", "LeadCompressor", "as_plain_text"]


def as_plain_text(document: str) -> str:
    """The visible text of ``document``: HTML is converted, plain text is returned unchanged."""
    return html_to_text(document) if looks_like_html(document) else document


def _key(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "replace"), digest_size=16).digest()


class _LRU:
    """A tiny bounded cache; the runner asks for the same document at several budgets."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._data: OrderedDict[Any, Any] = OrderedDict()

    def get(self, key: Any) -> Any:
        if key in self._data:
            self._data.move_to_end(key)
            return self._data[key]
        return None

    def put(self, key: Any, value: Any) -> None:
        self._data[key] = value
        self._data.move_to_end(key)
        while len(self._data) > self.size:
            self._data.popitem(last=False)


class LeadCompressor:
    """Start-of-document truncation: the longest word-boundary prefix that fits the budget.

    Parameters
    ----------
    tokenizer:
        Anything :func:`hrefine.budget.get_counter` accepts (default: Llama-3.2's tokenizer).
    """

    name = "lead"

    def __init__(self, tokenizer: Any = None) -> None:
        self.counter: TokenCounter = get_counter(tokenizer)
        self._text = _LRU(4)

    def compress(self, document: str, query: str, max_tokens: int) -> str:
        """The first ``max_tokens`` tokens of ``document``'s text (HTML is turned into text
        first; ``query`` is ignored: the baseline is query-blind)."""
        key = _key(document)
        text = self._text.get(key)
        if text is None:
            text = as_plain_text(document).strip()
            self._text.put(key, text)
        if not text:
            msg = "the document has no visible text to compress"
            raise EmptyInputError(msg)
        out = truncate_to_tokens(text, self.counter, max_tokens)
        if not out:
            first = self.counter.count(text.split()[0])
            msg = f"budget of {max_tokens} tokens is smaller than the first word ({first} tokens)"
            raise BudgetTooSmallError(msg, budget=max_tokens, smallest=first)
        return out


class ChunkCompressor:
    """Top-scored chunks that fit the budget, in document order.

    Parameters
    ----------
    scorer:
        ``"bm25"``, ``"embedding"``, ``"cross-encoder:<model>"`` or any object with
        ``score(query, texts)`` (see :func:`hrefine.models.get_scorer`). Resolved on first use.
    tokenizer:
        Anything :func:`hrefine.budget.get_counter` accepts.
    chunk_tokens:
        Target chunk size in tokens.
    embedder:
        Embedder for ``scorer="embedding"`` (default: the embedded all-MiniLM-L6-v2).
    name:
        Report name (default: the scorer spec, e.g. ``"bm25"``).
    """

    def __init__(
        self,
        scorer: Any = "bm25",
        *,
        tokenizer: Any = None,
        chunk_tokens: int = 128,
        embedder: Any = None,
        name: str | None = None,
    ) -> None:
        if chunk_tokens < 1:
            msg = f"chunk_tokens must be >= 1, got {chunk_tokens}"
            raise ConfigError(msg)
        self.counter: TokenCounter = get_counter(tokenizer)
        self.chunk_tokens = chunk_tokens
        self._scorer_spec = scorer
        self._embedder = embedder
        self._scorer: Any = None
        default = scorer if isinstance(scorer, str) else str(getattr(scorer, "name", "chunks"))
        self.name: str = name or default
        self._chunks = _LRU(8)
        self._scores = _LRU(16)

    @property
    def scorer(self) -> Any:
        """The resolved scorer (built on first access)."""
        if self._scorer is None:
            from hrefine.models import get_scorer

            self._scorer = get_scorer(self._scorer_spec, embedder=self._embedder)
        return self._scorer

    def chunks(self, document: str) -> tuple[list[str], list[int]]:
        """The chunks of ``document`` (HTML or plain text) in document order, and their token
        counts (cached per document)."""
        key = _key(document)
        cached = self._chunks.get(key)
        if cached is None:
            cut = cut_into_chunks(as_plain_text(document), self.counter, self.chunk_tokens)
            cached = ([c.text for c in cut], [c.tokens for c in cut])
            self._chunks.put(key, cached)
        return cached  # type: ignore[no-any-return]

    def compress(self, document: str, query: str, max_tokens: int) -> str:
        """The chunks of ``document``'s text (HTML is turned into text first) that score best
        for ``query`` and fit ``max_tokens``, joined in document order."""
        chunks, costs = self.chunks(document)
        if not chunks:
            msg = "the document has no visible text to compress"
            raise EmptyInputError(msg)
        key = (_key(document), query)
        scores = self._scores.get(key)
        if scores is None:
            scores = np.asarray(self.scorer.score(query, chunks), dtype=np.float64)
            self._scores.put(key, scores)
        return fill_budget(
            chunks, scores, self.counter, max_tokens, costs=costs, separator=SEPARATOR
        )
