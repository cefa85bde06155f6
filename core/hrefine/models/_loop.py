"""Async model calls from a sync method running in a worker thread, and hrefine's worker threads.

A method's ``a...`` entry point (``HtmlPruner.aprune``) runs its sync body in a worker thread so
the event loop stays free. Models with an async API (LangChain's ``aembed_documents``,
LlamaIndex's ``aget_text_embedding_batch``) should still be awaited on the caller's loop, where
their HTTP client lives: :func:`run_in_worker` records that loop for the worker, and
:func:`call_async` lets a model wrapper in the worker run its coroutine there and wait for it.

Such a worker blocks until a coroutine on the loop finishes, and that coroutine often needs the
loop's default executor (LangChain's default ``aembed_documents`` is ``run_in_executor(None,
...)``). The workers therefore come from hrefine's own pool, never from the default executor:
however many calls wait there, the default executor stays free for the coroutines they wait on.

:class:`CallRunner` runs calls that may be abandoned after a timeout (an LLM call that hangs):
each on a free worker of its pool, or on a thread of its own when every worker is held.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import os
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from hrefine.errors import GenerationError

__all__ = [
    "CallRunner",
    "call_async",
    "caller_loop",
    "gather_or_cancel",
    "results_or_cancel",
    "run_in_worker",
    "run_to_end",
    "worker_pool",
]

_T = TypeVar("_T")

_CALLER_LOOP: contextvars.ContextVar[asyncio.AbstractEventLoop | None] = contextvars.ContextVar(
    "hrefine_caller_loop", default=None
)

_POOL_LOCK = threading.Lock()
_POOL: concurrent.futures.ThreadPoolExecutor | None = None


def worker_pool() -> concurrent.futures.ThreadPoolExecutor:
    """hrefine's own pool for sync work run from an async method (made on first use).

    Its workers wait only for coroutines on a running loop that use the default executor or
    none, so they always make progress; calls beyond its size wait in its queue.
    """
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            size = max(8, min(32, (os.cpu_count() or 1) + 4))
            _POOL = concurrent.futures.ThreadPoolExecutor(size, thread_name_prefix="hrefine-async")
        return _POOL


def _forget_pool() -> None:
    global _POOL
    _POOL = None  # a forked child has none of the parent's threads: it makes its own pool


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def caller_loop() -> asyncio.AbstractEventLoop | None:
    """The event loop of the async call this worker thread runs for, or None (a sync call)."""
    loop = _CALLER_LOOP.get()
    if loop is None or loop.is_closed() or not loop.is_running():
        return None
    try:
        if asyncio.get_running_loop() is loop:  # on the loop's own thread: waiting would hang
            return None
    except RuntimeError:  # no loop in this thread: a worker
        pass
    return loop


async def run_in_worker(fn: Callable[..., _T], *args: Any) -> _T:
    """Run ``fn(*args)`` on :func:`worker_pool`, with :func:`caller_loop` set to this loop.

    A cancelled await leaves a started call to finish in its worker.
    """
    loop = asyncio.get_running_loop()
    context = contextvars.copy_context()
    context.run(_CALLER_LOOP.set, loop)
    return await loop.run_in_executor(worker_pool(), functools.partial(context.run, fn, *args))


def call_async(make: Callable[[], Awaitable[_T]], fallback: Callable[[], _T]) -> _T:
    """``await make()`` on the caller's loop when this thread works for an async call (see
    :func:`run_in_worker`), waiting for the result; ``fallback()`` otherwise."""
    loop = caller_loop()
    if loop is None:
        return fallback()

    async def run() -> _T:
        return await make()

    return asyncio.run_coroutine_threadsafe(run(), loop).result()


async def gather_or_cancel(aws: Sequence[Awaitable[_T]]) -> list[_T]:
    """``asyncio.gather(*aws)``, except that the first failure cancels the rest.

    ``asyncio.gather`` raises the first error and leaves the other calls running, so a
    summariser whose LLM refuses one prompt went on paying for the others. Here the calls still
    running or waiting for a slot are cancelled (and awaited) before the error is raised; with
    several failed, the first in input order is raised. Cancelling the caller cancels them all.
    """
    tasks = [asyncio.ensure_future(aw) for aw in aws]
    if not tasks:
        return []
    try:
        _, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    except BaseException:  # the caller was cancelled: so are its calls
        for task in tasks:
            task.cancel()
        raise
    if pending:  # one failed
        for task in pending:
            task.cancel()
        await asyncio.wait(pending)
    # every failure is read (asyncio logs one never read), the first in input order raised
    failures = [e for t in tasks if not t.cancelled() and (e := t.exception()) is not None]
    if failures:
        raise failures[0]
    return [task.result() for task in tasks]


async def run_to_end(aw: Awaitable[_T]) -> _T:
    """``await aw``, run to its end even when the caller is cancelled meanwhile.

    For a commit of several writes that must all land or none (an index's docstore, then its
    struct): the caller's cancellation is raised once ``aw`` has finished, never in between.
    An error of ``aw`` itself is raised as it is.
    """
    task = asyncio.ensure_future(aw)
    cancelled = False
    while not task.done():
        try:
            await asyncio.shield(task)  # an error of ``aw`` itself is raised from here
        except asyncio.CancelledError:  # the caller's, or ``aw`` was cancelled itself
            cancelled = True
    if cancelled:
        raise asyncio.CancelledError
    return task.result()


def results_or_cancel(futures: Sequence[concurrent.futures.Future[_T]]) -> list[_T]:
    """Each future's result in order; the first failure cancels those not started yet.

    The sync twin of :func:`gather_or_cancel`: a call already running in a thread finishes (a
    thread cannot be stopped), but none that is still queued starts after an error.
    """
    done, pending = concurrent.futures.wait(futures, return_when=concurrent.futures.FIRST_EXCEPTION)
    for future in pending:  # some only when one failed
        future.cancel()
    failures = [e for f in futures if f in done and (e := f.exception()) is not None]
    if failures:
        raise failures[0]
    return [future.result() for future in futures]


class _Call:
    """One call handed to a :class:`CallRunner`: its start time and whether it was abandoned."""

    __slots__ = ("abandoned", "started", "started_at")

    def __init__(self) -> None:
        self.started = threading.Event()
        self.started_at = 0.0
        self.abandoned = False


class CallRunner:
    """Runs calls that a timeout may abandon, so that abandoned calls cannot starve later ones.

    A call runs on a free worker of a pool of ``workers`` threads; when every worker is held
    (by calls abandoned after a timeout that are still running), on a thread of its own, until
    ``max_abandoned`` abandoned calls are still running: then :meth:`start` raises
    :class:`~hrefine.errors.GenerationError` saying so. A call's timeout counts from the moment
    it starts running (:meth:`wait`), never from its submission.
    """

    def __init__(self, workers: int, max_abandoned: int, name: str) -> None:
        self._pool = concurrent.futures.ThreadPoolExecutor(workers, thread_name_prefix=name)
        self._workers = workers
        self._max_abandoned = max_abandoned
        self._name = name
        self._lock = threading.Lock()
        self._busy = 0  # pool workers held (running, or about to)
        self.abandoned = 0  # calls abandoned after a timeout and still running

    def start(
        self, fn: Callable[..., Any], *args: Any
    ) -> tuple[concurrent.futures.Future[Any], _Call]:
        """Start ``fn(*args)`` with this thread's context variables; its future and record."""
        call = _Call()
        run = functools.partial(self._run, call, contextvars.copy_context(), fn, args)
        with self._lock:
            pooled = self._busy < self._workers
            if not pooled and self.abandoned >= self._max_abandoned:
                msg = (
                    f"{self.abandoned} calls to {self._name} abandoned after timing out are "
                    "still running; no worker is free"
                )
                raise GenerationError(msg)
            if pooled:
                self._busy += 1
        if pooled:
            future = self._pool.submit(run)
        else:
            future = concurrent.futures.Future()
            threading.Thread(target=_settle, args=(future, run), daemon=True).start()
        future.add_done_callback(functools.partial(self._done, call, pooled))
        return future, call

    @staticmethod
    def _run(call: _Call, context: contextvars.Context, fn: Callable[..., Any], args: Any) -> Any:
        call.started_at = time.monotonic()
        call.started.set()
        return context.run(fn, *args)

    def _done(self, call: _Call, pooled: bool, _future: object) -> None:
        call.started.set()  # a cancelled call never started: its waiter must not wait on
        with self._lock:
            self._busy -= pooled
            if call.abandoned:
                self.abandoned -= 1

    def abandon(self, future: concurrent.futures.Future[Any], call: _Call) -> None:
        """Give up on a call (its timeout passed, or its caller was cancelled)."""
        if future.cancel():  # not started: it never will
            return
        with self._lock:
            if not future.done():
                call.abandoned = True
                self.abandoned += 1

    def wait(self, future: concurrent.futures.Future[Any], call: _Call, timeout: float) -> Any:
        """The call's result, waiting at most ``timeout`` seconds from its start (raises
        :class:`concurrent.futures.TimeoutError` after abandoning it)."""
        call.started.wait()  # at once: calls never queue (see start)
        left = timeout - (time.monotonic() - call.started_at)
        try:
            return future.result(timeout=max(left, 0.0))
        except concurrent.futures.TimeoutError:
            self.abandon(future, call)
            raise


def _settle(future: concurrent.futures.Future[Any], run: Callable[[], Any]) -> None:
    if not future.set_running_or_notify_cancel():
        return
    try:
        result = run()
    except BaseException as exc:
        future.set_exception(exc)
    else:
        future.set_result(result)
