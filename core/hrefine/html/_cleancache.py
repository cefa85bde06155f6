"""The cleaned pages a pruner has seen, so pruning one page again does not clean it again.

A RAG app prunes the same retrieved page for several questions, and a caller may try several
budgets: cleaning and writing the cleaned HTML was about a fifth of such a call once the block
vectors were cached. The cache holds each page's cleaned tree and its HTML, keyed by a hash of
the input and the cleaning settings, and hands out a copy of the tree (the pruner narrows
tables in place). A cleaned tree took three to six times its input's size in memory on the
benchmark's pages, so the default bound of 4 million input characters holds 12 to 25 MB.
"""

from __future__ import annotations

import copy
import hashlib
import threading
from collections import OrderedDict
from typing import Any

__all__ = ["CleanedCache"]


class CleanedCache:
    """A thread-safe LRU of cleaned pages, bounded by count and by the inputs' total size.

    Parameters
    ----------
    max_pages:
        Pages kept (0 keeps none).
    max_chars:
        Largest total length of the kept pages' inputs (characters or bytes); a page longer
        than this on its own is not kept.
    """

    def __init__(self, max_pages: int = 64, max_chars: int = 4_000_000) -> None:
        self.max_pages = max_pages
        self.max_chars = max_chars
        self._data: OrderedDict[bytes, tuple[Any, str, int]] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, int]:
        # A copy or a pickle starts empty: the trees are a cache, and a lock does not copy.
        return {"max_pages": self.max_pages, "max_chars": self.max_chars}

    def __setstate__(self, state: dict[str, int]) -> None:
        self.__init__(**state)  # type: ignore[misc]

    @staticmethod
    def key(doc: str | bytes, *settings: object) -> bytes:
        """The cache key of ``doc`` cleaned with ``settings`` (str and bytes keyed apart: bytes
        are decoded by the cleaner's own encoding detection)."""
        h = hashlib.blake2b(digest_size=16)
        h.update(repr(settings).encode())
        if isinstance(doc, str):
            h.update(b"s")
            h.update(doc.encode("utf-8", "surrogatepass"))
        else:
            h.update(b"b")
            h.update(bytes(doc))
        return h.digest()

    def get(self, key: bytes) -> tuple[Any, str] | None:
        """A copy of the cleaned tree and its HTML, or None."""
        with self._lock:
            hit = self._data.get(key)
            if hit is None:
                return None
            self._data.move_to_end(key)
        root, html, _ = hit
        return copy.deepcopy(root), html

    def put(self, key: bytes, doc: str | bytes, root: Any, html: str) -> None:
        """Keep a copy of ``root`` (cleaned from ``doc``) and its HTML."""
        size = len(doc)
        if self.max_pages <= 0 or size > self.max_chars:
            return
        kept = copy.deepcopy(root)
        with self._lock:
            old = self._data.pop(key, None)
            if old is not None:
                self._chars -= old[2]
            self._data[key] = (kept, html, size)
            self._chars += size
            while len(self._data) > self.max_pages or self._chars > self.max_chars:
                _, (_, _, n) = self._data.popitem(last=False)
                self._chars -= n

    def clear(self) -> None:
        """Forget every page."""
        with self._lock:
            self._data.clear()
            self._chars = 0
