"""A public test kit: deterministic fakes for the models hrefine takes.

Tests (ours and our users') need models that are fast, offline and predictable, and whose ranking
still means something. :class:`KeywordEmbedder` implements the :class:`~hrefine.models.Embedder`
protocol with hashed bag-of-words vectors, so a text that shares words with the query scores
higher. :class:`ScriptedLM` is a ``str -> str`` callable (sync and async) that replays scripted
answers and records every prompt; wrap it with :func:`hrefine.models.as_text_generator`.

Nothing here imports a framework or loads a model.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from hrefine.errors import ConfigError, GenerationError, InputTypeError

__all__ = ["DEFAULT_STOPWORDS", "KeywordEmbedder", "ScriptedLM", "keyword_tokens"]

#: Words that carry no topic; :class:`KeywordEmbedder` ignores them by default.
# fmt: off
DEFAULT_STOPWORDS: frozenset[str] = frozenset((
    "a", "an", "and", "are", "as", "at", "be", "by", "did", "do", "does", "for", "from", "had",
    "has", "have", "how", "i", "in", "is", "it", "its", "of", "on", "or", "that", "the", "their",
    "there", "these", "this", "to", "was", "were", "what", "when", "where", "which", "who", "whom",
    "why", "will", "with", "you", "your",
))
# fmt: on

_WORD_RE = re.compile(r"[^\W_]+", re.UNICODE)


def keyword_tokens(text: str, stopwords: Iterable[str] = DEFAULT_STOPWORDS) -> list[str]:
    """Lower-cased words of ``text`` (letters and digits), stopwords removed.

    Parameters
    ----------
    text:
        Any text; HTML tags count as words too, so strip them first if that matters.
    stopwords:
        Words to leave out.

    Returns
    -------
    list[str]
        The words in order of appearance.
    """
    stop = stopwords if isinstance(stopwords, (set, frozenset)) else frozenset(stopwords)
    return [w for w in (m.group(0).casefold() for m in _WORD_RE.finditer(text)) if w not in stop]


class KeywordEmbedder:
    """A deterministic bag-of-words :class:`~hrefine.models.Embedder`.

    Each word is hashed (blake2b, so the result is the same in every process) into one of ``dim``
    buckets; a text's vector counts its words per bucket and is L2-normalised. With ``keywords``
    given, the vector has one dimension per keyword instead (no hash collisions), and other words
    are ignored. A text with no counted word embeds as the zero vector (similarity 0 to anything).

    Parameters
    ----------
    dim:
        Number of hash buckets (ignored when ``keywords`` is given).
    keywords:
        Optional fixed vocabulary, one dimension each, matched case-insensitively.
    stopwords:
        Words never counted.
    name:
        Name reported by the embedder.

    Attributes
    ----------
    calls:
        Number of :meth:`embed` and :meth:`embed_query` calls so far.
    texts_embedded:
        Number of texts embedded so far (documents and queries).

    Examples
    --------
    >>> emb = KeywordEmbedder(dim=64)
    >>> docs = emb.embed(["gold medal winners", "weather in june"])
    >>> scores = docs @ emb.embed_query("who won the gold medal")
    >>> bool(scores[0] > scores[1])
    True
    """

    def __init__(
        self,
        dim: int = 256,
        *,
        keywords: Sequence[str] | None = None,
        stopwords: Iterable[str] = DEFAULT_STOPWORDS,
        name: str = "keyword",
    ) -> None:
        if keywords is not None:
            vocab = [k.casefold() for k in keywords]
            if not vocab:
                msg = "keywords is empty; pass at least one keyword or leave it None"
                raise ConfigError(msg)
            self._index: dict[str, int] | None = {w: i for i, w in enumerate(dict.fromkeys(vocab))}
            dim = len(self._index)
        else:
            if dim < 1:
                msg = f"dim must be >= 1, got {dim}"
                raise ConfigError(msg)
            self._index = None
        self.dim = dim
        self.name = name
        self._stopwords = frozenset(w.casefold() for w in stopwords)
        self._lock = threading.Lock()
        self.calls = 0
        self.texts_embedded = 0

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        del state["_lock"]  # a copy counts its own calls, under its own lock
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state, _lock=threading.Lock())

    def _bucket(self, word: str) -> int | None:
        if self._index is not None:
            return self._index.get(word)
        digest = hashlib.blake2b(word.encode("utf-8", "surrogatepass"), digest_size=8).digest()
        return int.from_bytes(digest, "little") % self.dim

    def _vector(self, text: str) -> np.ndarray:
        vec = np.zeros(self.dim, dtype=np.float32)
        for word in keyword_tokens(text, self._stopwords):
            bucket = self._bucket(word)
            if bucket is not None:
                vec[bucket] += 1.0
        norm = float(np.linalg.norm(vec))
        return vec / norm if norm > 0 else vec

    def _count(self, n: int) -> None:
        with self._lock:
            self.calls += 1
            self.texts_embedded += n

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed documents.

        Parameters
        ----------
        texts:
            The texts (a sequence, not one string).

        Returns
        -------
        numpy.ndarray
            ``(len(texts), dim)`` float32 rows of unit length (or zero).
        """
        if isinstance(texts, str):
            msg = "embed() takes a sequence of texts; use embed_query() for one string"
            raise InputTypeError(msg)
        self._count(len(texts))
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.vstack([self._vector(t) for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one query.

        Parameters
        ----------
        text:
            The query.

        Returns
        -------
        numpy.ndarray
            A ``(dim,)`` float32 vector of unit length (or zero).
        """
        if not isinstance(text, str):
            msg = f"embed_query() takes one string, got {type(text).__name__}"
            raise InputTypeError(msg)
        self._count(1)
        return self._vector(text)


class ScriptedLM:
    """A fake LLM: a ``str -> str`` callable that replays scripted answers and records prompts.

    Parameters
    ----------
    responses:
        Answers returned in order. A callable ``prompt -> str`` computes each answer instead.
    cycle:
        With a list of responses: start again from the first one when they run out (otherwise a
        call past the end raises :class:`IndexError`).

    Attributes
    ----------
    prompts:
        Every prompt received, in call order.

    Examples
    --------
    >>> lm = ScriptedLM(["first", "second"])
    >>> lm("a"), lm("b")
    ('first', 'second')
    >>> lm.prompts
    ['a', 'b']
    """

    def __init__(
        self,
        responses: Sequence[str] | Callable[[str], str] = ("",),
        *,
        cycle: bool = False,
    ) -> None:
        if callable(responses):
            self._fn: Callable[[str], str] | None = responses
            self._responses: list[str] = []
        else:
            self._fn = None
            self._responses = [str(r) for r in responses]
            if not self._responses:
                msg = "responses is empty; give at least one answer or a callable"
                raise ConfigError(msg)
        self.cycle = cycle
        self.prompts: list[str] = []
        self._lock = threading.Lock()

    def __call__(self, prompt: str) -> str:
        """Return the next scripted answer for ``prompt`` and record the prompt."""
        with self._lock:
            index = len(self.prompts)
            self.prompts.append(prompt)
        if self._fn is not None:
            return self._fn(prompt)
        if index >= len(self._responses):
            if not self.cycle:
                msg = (
                    f"ScriptedLM got call {index + 1} but holds {len(self._responses)} "
                    "responses; pass more responses or cycle=True"
                )
                raise GenerationError(msg)
            index %= len(self._responses)
        return self._responses[index]

    async def acall(self, prompt: str) -> str:
        """Async version of :meth:`__call__` (answers from the same script)."""
        return self(prompt)
