"""The per-text vector cache of the embedders (keyed by the text and, for a
:class:`~hrefine.models.embed.SentenceTransformerEmbedder`, the read limit it was embedded
with), and the row normalisation every embedder's output goes through.

The cache is shared by every thread that uses the embedder. Its lock is held for the dict
operations only, never while a model runs, so threads embed side by side; two that miss the
same text both embed it and store the same vector.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from hrefine._encodable import encodable_all
from hrefine.errors import ConfigError, ModelOutputError

__all__ = ["VectorCache", "cache_key", "embed_through_cache", "finite_rows", "normalize_rows"]

# Characters of a text, and of a vector, quoted in an error message.
_QUOTE = 60
_RAW = 300


def cache_key(text: str, tag: bytes) -> bytes:
    """The cache key of ``text`` read with the limit ``tag`` names."""
    data = text.encode("utf-8", "surrogatepass")
    return hashlib.blake2b(data, digest_size=16, person=tag).digest()


class VectorCache:
    """A bounded, thread-safe LRU of text-hash → vector, so repeated blocks and queries are
    embedded once.

    A copy or a pickle is an empty cache of the same size (with a lock of its own).
    """

    def __init__(self, size: int) -> None:
        # The embedders' cache_size setting, checked here for every embedder that keeps one.
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            msg = f"cache_size must be a whole number >= 0, got {size!r}"
            raise ConfigError(msg)
        self.size = size
        self._data: OrderedDict[bytes, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.size,))

    def __len__(self) -> int:
        return len(self._data)

    def get(self, key: bytes) -> np.ndarray | None:
        """The vector of ``key`` (now the most recently used), or None."""
        return self.get_many((key,))[0]

    def get_many(self, keys: Sequence[bytes]) -> list[np.ndarray | None]:
        """The vector of each key, or None where there is none, under one hold of the lock."""
        data = self._data
        out: list[np.ndarray | None] = []
        with self._lock:
            for key in keys:
                vec = data.get(key)
                if vec is not None:
                    data.move_to_end(key)
                out.append(vec)
        return out

    def put(self, key: bytes, vec: np.ndarray) -> None:
        """Keep ``vec`` under ``key``, dropping the least recently used past :attr:`size`."""
        self.put_many(((key, vec),))

    def put_many(self, items: Iterable[tuple[bytes, np.ndarray]]) -> None:
        """:meth:`put` each ``(key, vector)``, under one hold of the lock."""
        if self.size <= 0:
            return
        data = self._data
        with self._lock:
            for key, vec in items:
                data[key] = vec
                data.move_to_end(key)
            while len(data) > self.size:
                data.popitem(last=False)

    def clear(self) -> None:
        """Forget every vector."""
        with self._lock:
            self._data.clear()


def normalize_rows(matrix: np.ndarray) -> np.ndarray:
    """Return ``matrix`` as float32 with unit-length rows (zero rows stay zero)."""
    arr = np.asarray(matrix, dtype=np.float32)
    if arr.ndim == 1:
        arr = arr[None, :]
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    return arr / np.where(norms == 0, 1.0, norms)


def finite_rows(vectors: Any, who: str, texts: Sequence[str] | None = None) -> np.ndarray:
    """``vectors`` as float32, refused when a value is NaN or infinite.

    Such a vector (a float16 overflow, a broken model or client) scores NaN against
    everything, so it would rank nothing and make clustering fail deep inside scikit-learn.
    Every embedder's output goes through this check once: hrefine's own embedders call it on
    what their model returned, and :func:`~hrefine.models.embed.get_embedder` wraps any other
    embedder in one that does.

    Parameters
    ----------
    vectors:
        A ``(n, dim)`` matrix, or one ``(dim,)`` query vector.
    who:
        The embedder's name, for the message.
    texts:
        The texts the rows belong to (None: a query), quoted in the message.

    Raises
    ------
    ModelOutputError
        A value is NaN or infinite (after conversion to float32); ``raw_output`` holds the
        first such vector.
    """
    try:
        with np.errstate(over="ignore"):  # past float32's range: inf, refused below
            arr = np.asarray(vectors, dtype=np.float32)
    except (TypeError, ValueError) as exc:  # ragged rows, text, None in a row
        msg = f"embedder {who} returned {type(vectors).__name__} that is not rows of numbers"
        raise ModelOutputError(msg, raw_output=repr(vectors)[:_RAW]) from exc
    _check_shape(arr, who, texts)
    finite = np.isfinite(arr)
    if finite.all():
        return arr
    if arr.ndim < 2:
        row, which = arr, "the query"
    else:
        i = int(np.flatnonzero(~finite.reshape(len(arr), -1).all(axis=1))[0])
        row = arr[i]
        shown = f" ({texts[i][:_QUOTE]!r})" if texts is not None and i < len(texts) else ""
        which = f"text {i + 1} of {len(arr)}{shown}"
    msg = (
        f"embedder {who} returned NaN or infinite values for {which}; such a vector ranks "
        "nothing. Check the model (a float16 overflow?) or its client"
    )
    raise ModelOutputError(msg, raw_output=np.array2string(row, threshold=16)[:_RAW])


def _check_shape(arr: np.ndarray, who: str, texts: Sequence[str] | None) -> None:
    """One row per text, or one vector for a query: anything else (a row too many, a 3-D
    array) would be scored as other texts, or fail as a numpy error far from its cause."""
    if texts is None:
        fits = arr.size > 0 and (arr.ndim == 1 or (arr.ndim == 2 and len(arr) == 1))
        wanted = "one vector for the query"
    else:
        fits = not texts or (arr.ndim == 2 and len(arr) == len(texts))
        wanted = f"one row for each of the {len(texts)} texts"
    if not fits:
        msg = f"embedder {who} returned an array of shape {arr.shape}; expected {wanted}"
        raise ModelOutputError(msg, raw_output=np.array2string(arr, threshold=16)[:_RAW])


def embed_through_cache(
    cache: VectorCache,
    full: list[str],
    limit: int | None,
    encode: Callable[[list[str]], np.ndarray],
    who: str,
    dimension: Callable[[], int],
) -> np.ndarray:
    """Unit vectors of texts read to ``limit`` word pieces, from ``cache`` where it holds
    them; each distinct missing text is embedded once by ``encode`` (its rows checked finite,
    errors naming ``who``) and stored. ``dimension`` gives the width of an empty result."""
    # The limit in the key (blake2b's 16-byte ``person``): a tokenizer without a limit may
    # report one of 10**30.
    tag = b"" if limit is None else min(limit, 2**63).to_bytes(8, "little")
    # A tokenizer refuses lone surrogates: they become U+FFFD (and share its vectors).
    full = encodable_all(full)
    keys = [cache_key(t, tag) for t in full]
    out = cache.get_many(keys)
    missing = [i for i, v in enumerate(out) if v is None]
    if missing:
        # Embed each distinct missing text once.
        uniq: dict[bytes, int] = {}
        for i in missing:
            uniq.setdefault(keys[i], i)
        order = list(uniq.values())
        asked = [full[i] for i in order]
        fresh = finite_rows(encode(asked), who, asked)
        by_key = {keys[idx]: vec for idx, vec in zip(order, fresh, strict=True)}
        cache.put_many(by_key.items())
        for i in missing:
            out[i] = by_key[keys[i]]
    if not out:
        return np.zeros((0, dimension()), dtype=np.float32)
    return np.vstack([v for v in out if v is not None])
