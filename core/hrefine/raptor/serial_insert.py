"""Inserts into a RaptorTree, one at a time.

An insert grows a copy of the tree (:func:`grow`, :func:`agrow`) and swaps it in only when
every summary and embedding succeeded (:func:`publish`), so a failed insert leaves the tree as
it was and a query running meanwhile reads one whole tree. Each tree has one
:class:`InsertLock` (:func:`insert_lock`), held over the whole insert: a second insert waits
for the first and then inserts into the tree the first one made, so no document is lost. A
thread waits blocked; a coroutine waits without blocking the event loop (it polls the lock
between short sleeps, and holds no executor thread meanwhile). An adapter that keeps the tree
in stores of its own holds the lock over the insert and its store writes, and publishes the
tree after writing them (see :mod:`llamaindex_hrefine`).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import threading
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import hrefine.raptor.build as _build
from hrefine.errors import TreeError
from hrefine.raptor.build import Source, as_sources
from hrefine.raptor.insert import insert_steps
from hrefine.tree import Tree

if TYPE_CHECKING:
    from hrefine.raptor.raptor_tree import RaptorTree

__all__ = ["Grown", "InsertLock", "agrow", "grow", "insert_lock", "publish"]

#: Seconds a coroutine first sleeps between tries of a held lock, and at most (doubled each try).
_FIRST_WAIT = 0.001
_LONGEST_WAIT = 0.05
#: Held while a lock is given to a tree that has none, and while an insert swaps in its copy.
_MAKE = threading.Lock()
_SWAP = threading.Lock()


class InsertLock:
    """A lock held over a whole insert: ``with lock:`` in a thread, ``async with lock.held():``
    in a coroutine (which waits without blocking the event loop). Not reentrant. A copy or an
    unpickled one is a new, free lock (a tree's copy inserts on its own)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()

    def __enter__(self) -> InsertLock:
        self._lock.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self._lock.release()

    @contextlib.asynccontextmanager
    async def held(self) -> AsyncIterator[None]:
        """Hold the lock in a coroutine; cancelled while waiting, it holds nothing."""
        wait = _FIRST_WAIT
        while not self._lock.acquire(blocking=False):
            await asyncio.sleep(wait)
            wait = min(2 * wait, _LONGEST_WAIT)
        try:
            yield
        finally:
            self._lock.release()

    def locked(self) -> bool:
        """Whether an insert holds it now."""
        return self._lock.locked()

    def __reduce__(self) -> tuple[type[InsertLock], tuple[()]]:
        return (InsertLock, ())

    def __deepcopy__(self, memo: dict[int, Any]) -> InsertLock:
        return InsertLock()


def insert_lock(raptor: RaptorTree) -> InsertLock:
    """The lock every insert into ``raptor`` holds (made on first use)."""
    lock = raptor.__dict__.get("_insert_lock")
    if lock is None:
        with _MAKE:
            lock = raptor.__dict__.setdefault("_insert_lock", InsertLock())
    assert isinstance(lock, InsertLock)
    return lock


@dataclass(frozen=True)
class Grown:
    """An insert's result, not yet swapped in: the tree it grew from (``base``), the grown copy
    (``work``) and what the insert did (``stats``)."""

    base: Tree
    work: Tree
    stats: dict[str, Any]


def _start(raptor: RaptorTree, docs: Sequence[str | Source]) -> tuple[Tree, Tree, list[int]]:
    sources = as_sources(docs)
    base = raptor.tree
    work = copy.deepcopy(base)  # changed in place, swapped in on success
    known = list(work.metadata.get("sources", []))
    work.metadata["sources"] = [*known, *(s.id for s in sources)]
    leaves = _build.add_leaves(
        work, sources, len(known), raptor.counter, raptor.options.chunk_tokens
    )
    return base, work, leaves


def grow(raptor: RaptorTree, docs: Sequence[str | Source]) -> Grown:
    """``raptor``'s tree with ``docs`` inserted, as a copy (``raptor`` is not changed)."""
    base, work, leaves = _start(raptor, docs)
    summariser = raptor.summariser
    grower = insert_steps(work, leaves, raptor.options, summariser, raptor.counter)
    return Grown(base, work, _build.run(grower, summariser, raptor.embedder))


async def agrow(raptor: RaptorTree, docs: Sequence[str | Source]) -> Grown:
    """:func:`grow` without blocking the event loop (the LLM is awaited; models and
    clustering run in the default executor)."""
    loop = asyncio.get_running_loop()
    base, work, leaves = await loop.run_in_executor(None, _start, raptor, docs)
    summariser = await loop.run_in_executor(None, lambda: raptor.summariser)
    embedder = await loop.run_in_executor(None, lambda: raptor.embedder)
    grower = insert_steps(work, leaves, raptor.options, summariser, raptor.counter)
    return Grown(base, work, await _build.arun(grower, summariser, embedder))


def publish(raptor: RaptorTree, grown: Grown) -> None:
    """Swap ``grown`` in as ``raptor``'s tree and record its stats.

    Raises
    ------
    TreeError
        ``raptor.tree`` was replaced while the insert ran (not by an insert: those wait for
        each other); nothing of this insert is added.
    """
    with _SWAP:
        if raptor.tree is not grown.base:
            # Swapping in would lose whatever replaced the tree.
            msg = (
                "the tree was replaced while this insert ran (raptor.tree was set); nothing "
                "of this insert was added: insert its documents again"
            )
            raise TreeError(msg)
        raptor.tree = grown.work
    inserts = list(raptor.stats.get("inserts", []))
    inserts.append(grown.stats)
    raptor.stats["inserts"] = inserts
