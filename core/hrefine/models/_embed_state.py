"""What a :class:`~hrefine.models.embed.SentenceTransformerEmbedder` shares between calls and
threads: its per-text vector cache, and turns at the model's read limit.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

__all__ = ["ReadLimits", "VectorCache", "cache_key"]


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


class _Ticket:
    """A pass waiting for its turn (compared by identity)."""

    __slots__ = ("limit",)

    def __init__(self, limit: int | None) -> None:
        self.limit = limit


class ReadLimits:
    """Turns at the model's ``max_seq_length``, which every thread that embeds shares.

    Passes that read with one limit run side by side; a pass with another waits until they are
    done. Passes start in the order they came, except that one joins the running passes when it
    reads with their limit and no pass with another limit came before it (so a pass with
    another limit is never kept waiting by a stream of them). With no pass running, the model is
    back at its own limit.
    """

    def __init__(self) -> None:
        #: The model's own limit (the embedder's ``max_seq_length`` where one was given), set
        #: when the model loads.
        self.own: int | None = None
        self._limit: int | None = None  # the limit of the running passes
        self._cond = threading.Condition()
        self._active = 0  # passes running
        self._queue: list[_Ticket] = []  # passes not started yet, in the order they came

    def __reduce__(self) -> tuple[type[ReadLimits], tuple[()]]:
        # A copy (pickled with its embedder) starts with no model and no pass.
        return ReadLimits, ()

    def attach(self, model: Any) -> None:
        """Take ``model``'s own limit (before any pass runs)."""
        self.own = self._limit = model.max_seq_length

    @contextmanager
    def hold(self, model: Any, limit: int | None) -> Iterator[None]:
        """Run a pass of ``model`` that reads at most ``limit`` word pieces of a text."""
        ticket = _Ticket(limit)
        with self._cond:
            self._queue.append(ticket)
            self._cond.wait_for(lambda: self._may_start(ticket))
            self._queue.remove(ticket)
            if not self._active and limit != self._limit:
                model.max_seq_length = self._limit = limit
            self._active += 1
            if self._queue:  # those behind it with its limit may join now
                self._cond.notify_all()
        try:
            yield
        finally:
            with self._cond:
                self._active -= 1
                if not self._active:
                    if self._limit != self.own:
                        model.max_seq_length = self._limit = self.own
                    self._cond.notify_all()

    def _may_start(self, ticket: _Ticket) -> bool:
        if self._active and ticket.limit != self._limit:
            return False
        for ahead in self._queue:
            if ahead is ticket:
                return True
            if ahead.limit != ticket.limit:
                return False
        return True
