"""The scorer layer: one ``score(query, texts)`` interface over embeddings, BM25 and cross-encoders.

Every method ranks its units through a :class:`Scorer`, so a user swaps the ranking model for all
methods in one place.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from hrefine.errors import ConfigError, InputTypeError
from hrefine.models._checked_embed import takes_max_tokens
from hrefine.models.embed import Embedder, get_embedder
from hrefine.models.embedder_protocol import check_max_tokens
from hrefine.models.lexical import BM25Scorer
from hrefine.models.rerank import CrossEncoderScorer, PairScorer, pair_method

__all__ = [
    "SCORER_NAMES",
    "EmbeddingScorer",
    "Scorer",
    "WindowedScorer",
    "base_scorer",
    "canonical_scorer",
    "check_embedder_scorer",
    "check_scorer",
    "get_scorer",
]

#: The scorers named by a word alone (``"cross-encoder:<model>"`` also names its model).
SCORER_NAMES = ("embedding", "bm25")
_CROSS = "cross-encoder"


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
        check_max_tokens(max_tokens)
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
        if self.max_tokens is None or not takes_max_tokens(method):
            return {}
        return {"max_tokens": self.max_tokens}


class WindowedScorer:
    """A scorer that reads every word: a long text is scored in windows, and takes its best.

    A text of more than ``window_words`` words after its first line is cut into consecutive
    windows of ``window_words`` words (the last one joined to the one before it when shorter
    than half a window); each window is scored with the text's first line above it (a block's
    headings, a section's title) and the text takes its best window's score. Texts up to one
    and a half windows long are scored as they are. All windows of one call go to ``scorer``
    in one call. A dense scorer that reads ~128 word pieces of each text would otherwise rank
    a long block by its opening alone, where plain chunk retrieval reads every word.

    Parameters
    ----------
    scorer:
        The scorer of the windows (any :class:`Scorer`).
    window_words:
        Words per window (>= 8).
    """

    def __init__(self, scorer: Scorer, window_words: int) -> None:
        if isinstance(window_words, bool) or not isinstance(window_words, int) or window_words < 8:
            msg = f"window_words must be a whole number >= 8, got {window_words!r}"
            raise ConfigError(msg)
        self.scorer = scorer
        self.window_words = window_words
        self.name = f"{scorer.name}/windows:{window_words}"

    def windows(self, text: str) -> list[str]:
        """The texts ``text`` is scored as (itself when short enough)."""
        head, sep, body = text.partition("\n")
        if not sep or len(head.split()) > self.window_words // 2:
            head, body = "", text
        words = body.split()
        size = self.window_words
        if len(words) <= size + size // 2:
            return [text]
        starts = list(range(0, len(words), size))
        if len(words) - starts[-1] < size // 2:
            starts.pop()  # a short tail joins the window before it
        ends = [*starts[1:], len(words)]
        lead = f"{head}\n" if head else ""
        return [lead + " ".join(words[a:b]) for a, b in zip(starts, ends, strict=True)]

    def score(self, query: str, texts: Sequence[str]) -> np.ndarray:
        """Each text's best window score for ``query``."""
        if not texts:
            return np.zeros(0, dtype=np.float32)
        cut = [self.windows(t) for t in texts]
        flat = [w for ws in cut for w in ws]
        found = np.asarray(self.scorer.score(query, flat), dtype=np.float64)
        out = np.empty(len(texts), dtype=np.float64)
        start = 0
        for k, ws in enumerate(cut):
            out[k] = float(found[start : start + len(ws)].max())
            start += len(ws)
        return out


def base_scorer(scorer: Any) -> Any:
    """The scorer a :class:`WindowedScorer` reads its windows with (any other: itself)."""
    return scorer.scorer if isinstance(scorer, WindowedScorer) else scorer


def get_scorer(
    spec: Any = "embedding", *, embedder: Any = None, max_tokens: int | None = None
) -> Scorer:
    """Resolve a scorer.

    Parameters
    ----------
    spec:
        ``"embedding"`` (default), ``"bm25"``, ``"cross-encoder:<path or name>"`` (names in any
        case), an object with ``score(query, texts)``, or a cross-encoder object
        (sentence-transformers' ``CrossEncoder``, LangChain's ``HuggingFaceCrossEncoder``:
        wrapped in a :class:`~hrefine.models.rerank.PairScorer`).
    embedder:
        Embedder for ``"embedding"`` (default: the embedded all-MiniLM-L6-v2).
    max_tokens:
        Word pieces each text's embedding reads, for ``"embedding"`` (see
        :class:`EmbeddingScorer`); the other scorers do not use it. None: the embedder's own
        limit.

    Returns
    -------
    Scorer
        The scorer (``spec`` itself when it is a scorer object).

    Raises
    ------
    ConfigError
        An unknown name (the message suggests the nearest one).
    InputTypeError
        An object that neither scores ``(query, texts)`` nor ``(query, text)`` pairs.
    ModelNotFoundError
        A ``"cross-encoder:<name>"`` that is not a folder nor in the Hugging Face cache.
    """
    spec = canonical_scorer(spec)
    if isinstance(spec, str):
        if spec == "embedding":
            return EmbeddingScorer(embedder, max_tokens=max_tokens)
        if spec == "bm25":
            return BM25Scorer()
        return CrossEncoderScorer(spec.split(":", 1)[1])
    if pair_method(spec) is not None:
        return PairScorer(spec)
    return spec  # type: ignore[no-any-return]


def canonical_scorer(spec: Any) -> Any:
    """``spec`` as :func:`get_scorer` reads it: a name in lower case and without surrounding
    blanks (``"BM25"`` -> ``"bm25"``, ``"Cross-Encoder:<model>"`` -> ``"cross-encoder:<model>"``,
    the model's name kept as given), any object as it is. Loads nothing, so settings can be
    checked when they are made.

    Raises
    ------
    ConfigError
        An unknown name (a ValueError), with the nearest valid one when there is one.
    InputTypeError
        An object with neither ``score`` nor ``predict`` (a TypeError).
    """
    if isinstance(spec, str):
        kind, sep, model = spec.strip().partition(":")
        kind = kind.strip().lower()
        if not sep and kind in SCORER_NAMES:
            return kind
        if sep and kind == _CROSS and model.strip():
            return f"{_CROSS}:{model.strip()}"
        msg = f"unknown scorer {spec!r}; use 'embedding', 'bm25' or 'cross-encoder:<model>'"
        hint = _did_you_mean(kind, bool(sep), model.strip())
        raise ConfigError(f"{msg}{hint}")
    if not callable(getattr(spec, "score", None)) and pair_method(spec) is None:
        msg = (
            f"cannot use {type(spec).__name__} as a scorer: it has no score(query, texts); "
            "pass 'embedding', 'bm25', 'cross-encoder:<model>', an object with that method, "
            "or a cross-encoder object (predict(pairs) or score(pairs))"
        )
        raise InputTypeError(msg)
    return spec


def check_scorer(spec: Any) -> None:
    """Raise :class:`~hrefine.errors.ConfigError` (a ValueError: an unknown name) or
    :class:`~hrefine.errors.InputTypeError` (a TypeError: no ``score`` method) for a scorer
    spec :func:`get_scorer` cannot resolve; loads nothing, so settings can be checked up
    front (see :func:`canonical_scorer`)."""
    canonical_scorer(spec)


def check_embedder_scorer(embedder: Any, scorer: Any) -> None:
    """Refuse an embedder given with a scorer that uses none (it would be ignored without a
    word); ``scorer`` as :func:`canonical_scorer` returns it (``"bm25"``, not ``"BM25"``).

    Raises
    ------
    ConfigError
        ``embedder`` is given and ``scorer`` is not ``"embedding"``.
    """
    if embedder is not None and scorer != "embedding":
        shown = scorer if isinstance(scorer, str) else type(scorer).__name__
        msg = (
            f"an embedder was given with scorer={shown!r}, which does not use one; "
            "use scorer='embedding' to score with it, or leave the embedder out"
        )
        raise ConfigError(msg)


def _did_you_mean(kind: str, has_model: bool, model: str) -> str:
    """``"; did you mean '...'?"`` for a misspelt scorer name, or nothing."""
    if kind == _CROSS:  # "cross-encoder", "cross-encoder:" (no model)
        return "; name the model after a colon: 'cross-encoder:<model folder or name>'"
    if has_model:  # "crossencoder:x", "cross_encoder:x": the model part is kept
        if difflib.get_close_matches(kind, [_CROSS], n=1, cutoff=0.6) and model:
            return f"; did you mean '{_CROSS}:{model}'?"
        return ""
    close = difflib.get_close_matches(kind, [*SCORER_NAMES, _CROSS], n=1, cutoff=0.6)
    if not close:
        return ""
    if close[0] == _CROSS:
        return "; did you mean 'cross-encoder:<model>'?"
    return f"; did you mean {close[0]!r}?"
