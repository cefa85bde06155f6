"""The per-text vector cache of a :class:`~hrefine.models.embed.SentenceTransformerEmbedder`,
keyed by the text and the read limit it was embedded with.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict

import numpy as np

__all__ = ["VectorCache", "cache_key"]


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
