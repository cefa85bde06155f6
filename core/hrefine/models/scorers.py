"""The scorer layer: one ``score(query, texts)`` interface over embeddings, BM25 and cross-encoders.

Every method ranks its units through a :class:`Scorer`, so a user swaps the ranking model for all
methods in one place.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from hrefine.errors import ConfigError
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
    """Cosine similarity between the query embedding and each text's embedding."""

    def __init__(self, embedder: Embedder | None = None) -> None:
        self.embedder = get_embedder(embedder)
        self.name = f"embedding:{self.embedder.name}"

    def score(self, query: str, texts: Sequence[str]) -> np.ndarray:
        """Cosine similarity of each text to ``query``."""
        if not texts:
            return np.zeros(0, dtype=np.float32)
        both = getattr(self.embedder, "embed_query_and_documents", None)
        if callable(both):  # one model pass for a new query and the texts
            q, docs = both(query, list(texts))
        else:
            q = self.embedder.embed_query(query)
            docs = self.embedder.embed(list(texts))
        return np.asarray(docs @ q, dtype=np.float32)


def get_scorer(spec: Any = "embedding", *, embedder: Any = None) -> Scorer:
    """Resolve a scorer.

    Parameters
    ----------
    spec:
        ``"embedding"`` (default), ``"bm25"``, ``"cross-encoder:<path or name>"``, or any object
        with ``score(query, texts)``.
    embedder:
        Embedder for ``"embedding"`` (default: the embedded all-MiniLM-L6-v2).
    """
    check_scorer(spec)
    if isinstance(spec, str):
        if spec == "embedding":
            return EmbeddingScorer(embedder)
        if spec == "bm25":
            return BM25Scorer()
        return CrossEncoderScorer(spec.split(":", 1)[1])
    return spec  # type: ignore[no-any-return]


def check_scorer(spec: Any) -> None:
    """Raise :class:`~hrefine.errors.ConfigError` (a ValueError: an unknown name) or TypeError
    (no ``score`` method) for a scorer spec :func:`get_scorer` cannot resolve; loads nothing,
    so settings can be checked up front."""
    if isinstance(spec, str):
        if spec in ("embedding", "bm25") or (
            spec.startswith("cross-encoder:") and spec.split(":", 1)[1].strip()
        ):
            return
        msg = f"unknown scorer {spec!r}; use 'embedding', 'bm25' or 'cross-encoder:<model>'"
        raise ConfigError(msg)
    if not callable(getattr(spec, "score", None)):
        msg = f"cannot use {type(spec).__name__} as a scorer: it has no score(query, texts)"
        raise TypeError(msg)
