"""The ``Generator`` protocol: any LLM as a ``str -> str`` callable, sync or async.

:class:`Generator` wraps a user's callable (or coroutine function) with bounded concurrency,
retries with back-off and per-call timeouts, and raises :class:`GenerationError` with the cause
when every try failed. Library code never calls ``asyncio.run``: the async path awaits, and the
sync path runs a coroutine function only when no event loop is running in this thread.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import logging
import threading
import time
import weakref
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from hrefine.errors import GenerationError

__all__ = ["GenerationError", "Generator", "LLMCallable", "as_generator"]

logger = logging.getLogger(__name__)


@runtime_checkable
class LLMCallable(Protocol):
    """Anything that turns a prompt into text."""

    def __call__(self, prompt: str) -> str:
        """Return the completion for ``prompt``."""
        ...


class Generator:
    """A prompt → text function with concurrency limits, retries and timeouts.

    Parameters
    ----------
    fn:
        ``str -> str`` or ``async str -> str``.
    afn:
        Optional native async version used by :meth:`agenerate` (when ``fn`` is sync).
    max_concurrency:
        Most calls in flight at once in :meth:`batch`/:meth:`abatch`.
    retries:
        Extra tries after a failure (exceptions in ``retry_on``).
    timeout:
        Seconds per try (None: no limit).
    backoff:
        First back-off in seconds; doubles each retry.
    """

    def __init__(
        self,
        fn: Callable[[str], str] | Callable[[str], Awaitable[str]],
        *,
        afn: Callable[[str], Awaitable[str]] | None = None,
        max_concurrency: int = 4,
        retries: int = 2,
        timeout: float | None = 120.0,
        backoff: float = 0.5,
        retry_on: tuple[type[BaseException], ...] = (Exception,),
        name: str | None = None,
    ) -> None:
        if max_concurrency < 1:
            msg = f"max_concurrency must be >= 1, got {max_concurrency}"
            raise ValueError(msg)
        self._is_async = inspect.iscoroutinefunction(fn)
        self._fn = fn
        self._afn = afn if afn is not None else (fn if self._is_async else None)
        self.max_concurrency = max_concurrency
        self.retries = retries
        self.timeout = timeout
        self.backoff = backoff
        self.retry_on = retry_on
        self.name = name or getattr(fn, "__name__", type(fn).__name__)
        self._sem = threading.BoundedSemaphore(max_concurrency)
        # Pool for sync calls with a timeout; extra workers absorb abandoned (timed-out) calls.
        self._pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=2 * max_concurrency, thread_name_prefix="hrefine-llm"
        )
        # asyncio semaphores belong to one event loop; keep one per loop.
        self._async_sems: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, asyncio.Semaphore
        ] = weakref.WeakKeyDictionary()

    # -- sync -----------------------------------------------------------------------------
    def _call_once_sync(self, prompt: str) -> str:
        if self._is_async:
            try:
                asyncio.get_running_loop()
            except RuntimeError:
                pass
            else:
                msg = "this generator is async; inside a running event loop use agenerate()"
                raise GenerationError(msg)
            coro_fn: Any = self._fn
            loop = asyncio.new_event_loop()
            try:
                return str(loop.run_until_complete(asyncio.wait_for(coro_fn(prompt), self.timeout)))
            except asyncio.TimeoutError as exc:
                msg = f"LLM call to {self.name} timed out after {self.timeout}s"
                raise TimeoutError(msg) from exc
            finally:
                loop.close()
        if self.timeout is None:
            return str(self._fn(prompt))
        # The call runs on the shared pool so that a timed-out call is abandoned, not awaited:
        # Python cannot kill a thread, but the caller gets its error on time.
        fut = self._pool.submit(self._fn, prompt)
        try:
            return str(fut.result(timeout=self.timeout))
        except concurrent.futures.TimeoutError as exc:
            fut.cancel()
            msg = f"LLM call to {self.name} timed out after {self.timeout}s"
            raise TimeoutError(msg) from exc

    def __call__(self, prompt: str) -> str:
        """Generate text for ``prompt`` (retries, timeout, concurrency limit applied)."""
        return self.generate(prompt)

    def generate(self, prompt: str) -> str:
        """Generate text for ``prompt``; raises :class:`GenerationError` after the last try."""
        _check_prompt(prompt)
        last: BaseException | None = None
        with self._sem:
            for attempt in range(self.retries + 1):
                try:
                    return self._call_once_sync(prompt)
                except self.retry_on as exc:
                    if isinstance(exc, GenerationError):
                        raise
                    last = exc
                    logger.warning("LLM %s failed (try %d): %r", self.name, attempt + 1, exc)
                    if attempt < self.retries:
                        time.sleep(self.backoff * 2**attempt)
        msg = f"LLM {self.name} failed after {self.retries + 1} tries: {last!r}"
        raise GenerationError(msg) from last

    def batch(self, prompts: Sequence[str]) -> list[str]:
        """Generate for many prompts with at most ``max_concurrency`` in flight; order kept."""
        with concurrent.futures.ThreadPoolExecutor(max_workers=self.max_concurrency) as pool:
            return list(pool.map(self.generate, prompts))

    # -- async ----------------------------------------------------------------------------
    async def _acall_once(self, prompt: str) -> str:
        coro: Awaitable[Any]
        if self._afn is not None:
            coro = self._afn(prompt)  # type: ignore[assignment]
        else:
            loop = asyncio.get_running_loop()
            coro = loop.run_in_executor(None, self._fn, prompt)  # type: ignore[arg-type]
        return str(await asyncio.wait_for(coro, timeout=self.timeout))

    def _loop_semaphore(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        sem = self._async_sems.get(loop)
        if sem is None:
            sem = asyncio.Semaphore(self.max_concurrency)
            self._async_sems[loop] = sem
        return sem

    async def agenerate(self, prompt: str) -> str:
        """Async :meth:`generate`; sync callables run in the default executor.

        At most ``max_concurrency`` calls of this generator run at once per event loop, across
        every caller.
        """
        _check_prompt(prompt)
        last: BaseException | None = None
        sem = self._loop_semaphore()
        async with sem:
            for attempt in range(self.retries + 1):
                try:
                    return await self._acall_once(prompt)
                except asyncio.TimeoutError as exc:
                    last = TimeoutError(f"LLM call to {self.name} timed out after {self.timeout}s")
                    last.__cause__ = exc
                except self.retry_on as exc:
                    last = exc
                logger.warning("LLM %s failed (try %d): %r", self.name, attempt + 1, last)
                if attempt < self.retries:
                    await asyncio.sleep(self.backoff * 2**attempt)
        msg = f"LLM {self.name} failed after {self.retries + 1} tries: {last!r}"
        raise GenerationError(msg) from last

    async def abatch(self, prompts: Sequence[str]) -> list[str]:
        """Async :meth:`batch`: at most ``max_concurrency`` calls in flight; order kept."""
        return list(await asyncio.gather(*(self.agenerate(p) for p in prompts)))


def _check_prompt(prompt: object) -> None:
    if not isinstance(prompt, str):
        msg = f"a prompt must be str, got {type(prompt).__name__}"
        raise TypeError(msg)


def as_generator(llm: Any, **options: Any) -> Generator:
    """Wrap ``llm`` (a Generator, a ``str -> str`` callable, or a ``LocalLM``) as a Generator."""
    if isinstance(llm, Generator):
        return llm
    if hasattr(llm, "generate") and hasattr(llm, "session"):
        local = llm

        def _local(prompt: str) -> str:
            return str(local.generate(prompt)[0])

        options.setdefault("max_concurrency", 1)
        return Generator(_local, name=getattr(llm, "name", "local-lm"), **options)
    if callable(llm):
        return Generator(llm, **options)
    msg = f"cannot use {type(llm).__name__} as an LLM: pass a str -> str callable"
    raise TypeError(msg)
