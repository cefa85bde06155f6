"""Async model calls from a sync method running in a worker thread.

A method's ``a...`` entry point (``HtmlPruner.aprune``) runs its sync body in a worker thread so
the event loop stays free. Models with an async API (LangChain's ``aembed_documents``,
LlamaIndex's ``aget_text_embedding_batch``) should still be awaited on the caller's loop, where
their HTTP client lives: :func:`run_in_worker` records that loop for the worker, and
:func:`call_async` lets a model wrapper in the worker run its coroutine there and wait for it.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

__all__ = ["call_async", "caller_loop", "run_in_worker"]

_T = TypeVar("_T")

_CALLER_LOOP: contextvars.ContextVar[asyncio.AbstractEventLoop | None] = contextvars.ContextVar(
    "hrefine_caller_loop", default=None
)


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
    """Run ``fn(*args)`` in the default executor, with :func:`caller_loop` set to this loop."""
    loop = asyncio.get_running_loop()
    context = contextvars.copy_context()
    context.run(_CALLER_LOOP.set, loop)
    return await loop.run_in_executor(None, functools.partial(context.run, fn, *args))


def call_async(make: Callable[[], Awaitable[_T]], fallback: Callable[[], _T]) -> _T:
    """``await make()`` on the caller's loop when this thread works for an async call (see
    :func:`run_in_worker`), waiting for the result; ``fallback()`` otherwise."""
    loop = caller_loop()
    if loop is None:
        return fallback()

    async def run() -> _T:
        return await make()

    return asyncio.run_coroutine_threadsafe(run(), loop).result()
