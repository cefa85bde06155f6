"""The scorer layer: one ``score(query, texts)`` interface over embeddings, BM25 and cross-encoders.

Every method ranks its units through a :class:`Scorer`, so a user swaps the ranking model for all
methods in one place.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from hrefine.errors import ConfigError, InputTypeError
from hrefine.models.embed import Embedder, get_embedder
from hrefine.models.lexical import BM25Scorer
from hrefine.models.rerank import CrossEncoderScorer

__all__ = ["EmbeddingScorer", "Scorer", "check_scorer", "get_scorer"]


@runtime_checkable
class Scorer(Protocol):
    """Scores texts for a query; higher is more relevant."""

    name: str

    def score(self, query: str, texts: Sequence[str]) -> np.ndarray:
        """One float per text."""
        ...


class EmbeddingScorer:
    """Cosine similarity between the query embedding and each text's embedding.

    Parameters
    ----------
    embedder:
        Anything :func:`~hrefine.models.embed.get_embedder` takes (None: the embedded
        all-MiniLM-L6-v2).
    max_tokens:
        Word pieces read of the query and of each text, passed to an embedder whose methods
        take ``max_tokens`` (hrefine's own); any other embedder reads its texts as it always
        does (in full, or to its own limit). None: the embedder's own limit.
    """

    def __init__(self, embedder: Embedder | None = None, *, max_tokens: int | None = None) -> None:
        if max_tokens is not None and (
            isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1
        ):
            msg = f"max_tokens must be a whole number >= 1 or None, got {max_tokens!r}"
            raise ConfigError(msg)
        self.embedder = get_embedder(embedder)
        self.max_tokens = max_tokens
        self.name = f"embedding:{self.embedder.name}"

    def score(self, query: str, texts: Sequence[str]) -> np.ndarray:
        """Cosine similarity of each text to ``query``."""
        if not texts:
            return np.zeros(0, dtype=np.float32)
        emb = self.embedder
        both = getattr(emb, "embed_query_and_documents", None)
        if callable(both):  # one model pass for a new query and the texts
            q, docs = both(query, list(texts), **self._limit(both))
        else:
            q = emb.embed_query(query, **self._limit(emb.embed_query))
            docs = emb.embed(list(texts), **self._limit(emb.embed))
        return np.asarray(docs @ q, dtype=np.float32)

    def _limit(self, method: Callable[..., Any]) -> dict[str, int]:
        """``{"max_tokens": ...}`` for a method that takes it and a set limit, else nothing."""
        if self.max_tokens is None or not _takes_max_tokens(method):
            return {}
        return {"max_tokens": self.max_tokens}


def _takes_max_tokens(method: Callable[..., Any]) -> bool:
    """Whether ``method`` has a keyword parameter ``max_tokens`` (a ``**kwargs`` is not one)."""
    try:
        param = inspect.signature(method).parameters.get("max_tokens")
    except (TypeError, ValueError):  # no signature to read (some builtins)
        return False
    return param is not None and param.kind in (param.KEYWORD_ONLY, param.POSITIONAL_OR_KEYWORD)


def get_scorer(
    spec: Any = "embedding", *, embedder: Any = None, max_tokens: int | None = None
) -> Scorer:
    """Resolve a scorer.

    Parameters
    ----------
    spec:
        ``"embedding"`` (default), ``"bm25"``, ``"cross-encoder:<path or name>"``, or any object
        with ``score(query, texts)``.
    embedder:
        Embedder for ``"embedding"`` (default: the embedded all-MiniLM-L6-v2).
    max_tokens:
        Word pieces each text's embedding reads, for ``"embedding"`` (see
        :class:`EmbeddingScorer`); the other scorers do not use it. None: the embedder's own
        limit.

    Returns
    -------
    Scorer
        The scorer (``spec`` itself when it is an object).
    """
    check_scorer(spec)
    if isinstance(spec, str):
        if spec == "embedding":
            return EmbeddingScorer(embedder, max_tokens=max_tokens)
        if spec == "bm25":
            return BM25Scorer()
        return CrossEncoderScorer(spec.split(":", 1)[1])
    return spec  # type: ignore[no-any-return]


def check_scorer(spec: Any) -> None:
    """Raise :class:`~hrefine.errors.ConfigError` (a ValueError: an unknown name) or
    :class:`~hrefine.errors.InputTypeError` (a TypeError: no ``score`` method) for a scorer
    spec :func:`get_scorer` cannot resolve; loads nothing, so settings can be checked up
    front."""
    if isinstance(spec, str):
        if spec in ("embedding", "bm25") or (
            spec.startswith("cross-encoder:") and spec.split(":", 1)[1].strip()
        ):
            return
        msg = f"unknown scorer {spec!r}; use 'embedding', 'bm25' or 'cross-encoder:<model>'"
        raise ConfigError(msg)
    if not callable(getattr(spec, "score", None)):
        msg = (
            f"cannot use {type(spec).__name__} as a scorer: it has no score(query, texts); "
            "pass 'embedding', 'bm25', 'cross-encoder:<model>' or an object with that method"
        )
        raise InputTypeError(msg)
