"""The per-text vector cache of the embedders (keyed by the text and, for a
:class:`~hrefine.models.embed.SentenceTransformerEmbedder`, the read limit it was embedded
with), and the row normalisation every embedder's output goes through.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict

import numpy as np

__all__ = ["VectorCache", "cache_key", "normalize_rows"]


def cache_key(text: str, tag: bytes) -> bytes:
    """The cache key of ``text`` read with the limit ``tag`` names."""
    data = text.encode("utf-8", "surrogatepass")
    return hashlib.blake2b(data, digest_size=16, person=tag).digest()


class VectorCache:
    """A bounded LRU of text-hash → vector, so repeated blocks and queries are embedded once."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._data: OrderedDict[bytes, np.ndarray] = OrderedDict()

    def __len__(self) -> int:
        return len(self._data)

    def get(self, key: bytes) -> np.ndarray | None:
        vec = self._data.get(key)
        if vec is not None:
            self._data.move_to_end(key)
        return vec

    def put(self, key: bytes, vec: np.ndarray) -> None:
        if self.size <= 0:
            return
        self._data[key] = vec
        self._data.move_to_end(key)
        while len(self._data) > self.size:
            self._data.popitem(last=False)

    def clear(self) -> None:
        """Forget every vector."""
        self._data.clear()


def normalize_rows(matrix: np.ndarray) -> np.ndarray:
    """Return ``matrix`` as float32 with unit-length rows (zero rows stay zero)."""
    arr = np.asarray(matrix, dtype=np.float32)
    if arr.ndim == 1:
        arr = arr[None, :]
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    return arr / np.where(norms == 0, 1.0, norms)
