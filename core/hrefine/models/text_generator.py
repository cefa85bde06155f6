"""TextGenerator: any LLM as a ``str -> str`` function, sync or async, with limits and retries.

:class:`TextGenerator` wraps a user's callable (or coroutine function) with bounded concurrency,
retries with back-off and per-call timeouts, and raises :class:`~hrefine.errors.GenerationError`
with the cause when every try failed. Given a batch function as well (a local model generates
many prompts in one call), :meth:`TextGenerator.batch` sends prompts in batches instead of one
at a time. :func:`as_text_generator` builds one from a callable or a
:class:`~hrefine.models.local_lm.LocalLM`.

Library code never calls ``asyncio.run``: the async path awaits, and the sync path runs a
coroutine function only when no event loop is running in this thread. Calls that run in worker
threads carry the caller's context variables, so ``with lm.using(adapter):`` covers them.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import inspect
import logging
import threading
import time
import weakref
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from hrefine.errors import ConfigError, GenerationError, HrefineError, InputTypeError
from hrefine.models._loop import CallRunner, gather_or_cancel, results_or_cancel

__all__ = [
    "LLMCallable",
    "TextGenerator",
    "answer_text",
    "as_text_generator",
    "is_async_callable",
]

logger = logging.getLogger(__name__)

BatchFn = Callable[[list[str]], Sequence[str]]


def is_async_callable(fn: object) -> bool:
    """Whether calling ``fn`` returns a coroutine: a coroutine function, or an object whose
    ``__call__`` is one (``inspect.iscoroutinefunction`` says no to such an object)."""
    if inspect.iscoroutinefunction(fn):
        return True
    if not callable(fn) or inspect.isfunction(fn) or inspect.ismethod(fn):
        return False
    return inspect.iscoroutinefunction(type(fn).__call__)


@runtime_checkable
class LLMCallable(Protocol):
    """Anything that turns a prompt into text."""

    def __call__(self, prompt: str) -> str:
        """Return the completion for ``prompt``."""
        ...


class TextGenerator:
    """A prompt → text function with concurrency limits, retries and timeouts.

    Parameters
    ----------
    fn:
        ``str -> str`` or ``async str -> str``.
    afn:
        Optional native async version used by :meth:`agenerate` (when ``fn`` is sync).
    batch_fn:
        Optional ``list[str] -> list[str]`` that generates many prompts in one call (a local
        model's batched ``generate``). With it, :meth:`batch` and :meth:`abatch` make one call per
        ``batch_size`` prompts (``abatch`` in worker threads), each with its own tries and timeout.
    batch_size:
        Prompts per call of ``batch_fn``; ``None`` sends them all in one call.
    max_concurrency:
        Most calls in flight at once (a call carries one prompt, or one batch).
    retries:
        Extra tries after a failure (exceptions in ``retry_on``; hrefine's own errors, which
        describe a bad input or setting, are never retried).
    timeout:
        Seconds per try of one call, from when it starts running (None: no limit). A timed-out
        sync call is abandoned, not stopped (Python cannot kill a thread); later calls never
        wait for its thread.
    backoff:
        First back-off in seconds; doubles each retry.
    retry_on:
        Exception types that count as a failed try.
    name:
        Name for logs and errors; defaults to the callable's.
    """

    def __init__(
        self,
        fn: Callable[[str], str] | Callable[[str], Awaitable[str]],
        *,
        afn: Callable[[str], Awaitable[str]] | None = None,
        batch_fn: BatchFn | None = None,
        batch_size: int | None = None,
        max_concurrency: int = 4,
        retries: int = 2,
        timeout: float | None = 120.0,
        backoff: float = 0.5,
        retry_on: tuple[type[BaseException], ...] = (Exception,),
        name: str | None = None,
    ) -> None:
        _check_settings(max_concurrency, retries, timeout, batch_size)
        self._is_async = is_async_callable(fn)
        self._fn = fn
        self._afn = afn if afn is not None else (fn if self._is_async else None)
        self._batch_fn = batch_fn
        self.batch_size = batch_size
        self.max_concurrency = max_concurrency
        self.retries = retries
        self.timeout = timeout
        self.backoff = backoff
        self.retry_on = retry_on
        self.name = name or getattr(fn, "__name__", type(fn).__name__)
        self._start_limits()

    def _start_limits(self) -> None:
        """The concurrency limit, the sync calls' pool and the per-loop async limits."""
        self._sem = threading.BoundedSemaphore(self.max_concurrency)
        # Threads for sync calls with a timeout: a pool with room for abandoned (timed-out)
        # calls, and a thread of its own for a call that finds every worker held by them.
        self._runner = CallRunner(
            2 * self.max_concurrency, max(16, 4 * self.max_concurrency), f"LLM {self.name}"
        )
        # asyncio semaphores belong to one event loop; keep one per loop.
        self._async_sems: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, asyncio.Semaphore
        ] = weakref.WeakKeyDictionary()

    def __getstate__(self) -> dict[str, Any]:
        # Pickled (or deep-copied) as its callables and settings: the copy has its own limits.
        state = dict(self.__dict__)
        for name in ("_sem", "_runner", "_async_sems"):
            state.pop(name, None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._start_limits()

    # -- sync -----------------------------------------------------------------------------
    def _try_once(self, fn: Callable[[Any], Any], arg: Any, *, is_async: bool) -> Any:
        if is_async:
            try:
                asyncio.get_running_loop()
            except RuntimeError:
                pass
            else:
                msg = (
                    f"the LLM {self.name} is async, and a sync call cannot wait for it inside "
                    "a running event loop: call the component's async method instead (arefine, "
                    "aprune, ainvoke, aretrieve, agenerate), or run the sync call in a thread: "
                    "await asyncio.to_thread(...)"
                )
                raise GenerationError(msg)
            loop = asyncio.new_event_loop()
            try:
                return loop.run_until_complete(asyncio.wait_for(fn(arg), self.timeout))
            except asyncio.TimeoutError as exc:
                msg = f"LLM call to {self.name} timed out after {self.timeout}s"
                raise TimeoutError(msg) from exc
            finally:
                loop.close()
        if self.timeout is None:
            return fn(arg)
        # The call runs on a worker thread so that a timed-out call is abandoned, not awaited;
        # its timeout counts from its start.
        fut, call = self._runner.start(fn, arg)
        try:
            return self._runner.wait(fut, call, self.timeout)
        except concurrent.futures.TimeoutError as exc:
            msg = f"LLM call to {self.name} timed out after {self.timeout}s"
            raise TimeoutError(msg) from exc

    def _call(self, fn: Callable[[Any], Any], arg: Any, *, is_async: bool, what: str) -> Any:
        last: BaseException | None = None
        with self._sem:
            for attempt in range(self.retries + 1):
                try:
                    return self._try_once(fn, arg, is_async=is_async)
                except HrefineError:
                    raise
                except self.retry_on as exc:
                    last = exc
                    if (delay := self._failed(attempt, exc)) is not None:
                        time.sleep(delay)
        raise self._gave_up(last, what) from last

    def _failed(self, attempt: int, exc: BaseException | None) -> float | None:
        """Log try ``attempt``'s failure; seconds to wait before the next (None: no more)."""
        logger.warning("LLM %s failed (try %d): %r", self.name, attempt + 1, exc)
        return self.backoff * 2**attempt if attempt < self.retries else None

    def _gave_up(self, last: BaseException | None, what: str) -> GenerationError:
        msg = f"LLM {self.name} failed after {self.retries + 1} tries{what}: {last!r}"
        return GenerationError(msg)

    def __call__(self, prompt: str) -> str:
        """Generate text for ``prompt`` (retries, timeout, concurrency limit applied)."""
        return self.generate(prompt)

    def generate(self, prompt: str) -> str:
        """Generate text for ``prompt``; raises :class:`GenerationError` after the last try."""
        _check_prompt(prompt)
        return answer_text(
            self._call(self._fn, prompt, is_async=self._is_async, what=""), self.name
        )

    def _chunks(self, prompts: Sequence[str]) -> list[list[str]]:
        items = list(prompts)
        for prompt in items:
            _check_prompt(prompt)
        size = self.batch_size or max(len(items), 1)
        return [items[i : i + size] for i in range(0, len(items), size)]

    def _checked(self, chunk: list[str], out: Sequence[str]) -> list[str]:
        if isinstance(out, (str, bytes)) or not isinstance(out, Sequence):
            msg = (
                f"the batch function of {self.name} returned {type(out).__name__}; it must "
                "return one text per prompt, in order"
            )
            raise GenerationError(msg)
        texts = [answer_text(text, self.name) for text in out]
        if len(texts) != len(chunk):
            msg = (
                f"the batch function of {self.name} returned {len(texts)} texts for "
                f"{len(chunk)} prompts; it must return one text per prompt, in order"
            )
            raise GenerationError(msg)
        return texts

    def _batch_call(self, batch_fn: BatchFn, chunk: list[str]) -> list[str]:
        what = f" on a batch of {len(chunk)} prompts"
        return self._checked(chunk, self._call(batch_fn, chunk, is_async=False, what=what))

    def batch(self, prompts: Sequence[str]) -> list[str]:
        """Generate for many prompts with at most ``max_concurrency`` calls in flight.

        With a ``batch_fn``, one call per ``batch_size`` prompts; otherwise one per prompt.
        The output keeps the input order. The first call that fails for good raises its
        :class:`~hrefine.errors.GenerationError`, and no call still queued is made after it.
        """
        batch_fn = self._batch_fn
        if batch_fn is None:
            items = list(prompts)
            with concurrent.futures.ThreadPoolExecutor(max_workers=self.max_concurrency) as pool:
                futures = [
                    pool.submit(contextvars.copy_context().run, self.generate, p) for p in items
                ]
                return results_or_cancel(futures)
        chunks = self._chunks(prompts)
        if self.max_concurrency == 1 or len(chunks) < 2:
            return [text for chunk in chunks for text in self._batch_call(batch_fn, chunk)]
        with concurrent.futures.ThreadPoolExecutor(max_workers=self.max_concurrency) as pool:
            pending = [
                pool.submit(
                    contextvars.copy_context().run,
                    functools.partial(self._batch_call, batch_fn, chunk),
                )
                for chunk in chunks
            ]
            return [text for out in results_or_cancel(pending) for text in out]

    # -- async ----------------------------------------------------------------------------
    def _loop_semaphore(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        sem = self._async_sems.get(loop)
        if sem is None:
            sem = asyncio.Semaphore(self.max_concurrency)
            self._async_sems[loop] = sem
        return sem

    async def _acall(self, fn: Callable[[Any], Any], arg: Any, *, native: bool, what: str) -> Any:
        last: BaseException | None = None
        async with self._loop_semaphore():
            for attempt in range(self.retries + 1):
                try:
                    return await self._atry_once(fn, arg, native=native)
                except asyncio.TimeoutError as exc:
                    last = TimeoutError(f"LLM call to {self.name} timed out after {self.timeout}s")
                    last.__cause__ = exc
                except HrefineError:
                    raise
                except self.retry_on as exc:
                    last = exc
                if (delay := self._failed(attempt, last)) is not None:
                    await asyncio.sleep(delay)
        raise self._gave_up(last, what) from last

    async def _atry_once(self, fn: Callable[[Any], Any], arg: Any, *, native: bool) -> Any:
        if native:
            return await asyncio.wait_for(fn(arg), timeout=self.timeout)
        # A sync callable: on this generator's threads (not the loop's default executor, which
        # abandoned calls would fill), with the caller's context.
        fut, call = self._runner.start(fn, arg)
        try:
            return await asyncio.wait_for(asyncio.wrap_future(fut), timeout=self.timeout)
        except BaseException:  # timed out or cancelled: the call is left to finish
            self._runner.abandon(fut, call)
            raise

    async def agenerate(self, prompt: str) -> str:
        """Async :meth:`generate`; sync callables run in worker threads of this generator.

        At most ``max_concurrency`` calls of this generator run at once per event loop, across
        every caller.
        """
        _check_prompt(prompt)
        if self._afn is not None:
            return answer_text(
                await self._acall(self._afn, prompt, native=True, what=""), self.name
            )
        return answer_text(await self._acall(self._fn, prompt, native=False, what=""), self.name)

    async def _abatch_call(self, batch_fn: BatchFn, chunk: list[str]) -> list[str]:
        what = f" on a batch of {len(chunk)} prompts"
        return self._checked(chunk, await self._acall(batch_fn, chunk, native=False, what=what))

    async def abatch(self, prompts: Sequence[str]) -> list[str]:
        """Async :meth:`batch`: at most ``max_concurrency`` calls in flight; order kept.

        The first call that fails for good cancels the others (running or waiting for a slot)
        before its error is raised.
        """
        batch_fn = self._batch_fn
        if batch_fn is None:
            return await gather_or_cancel([self.agenerate(p) for p in prompts])
        chunks = self._chunks(prompts)
        outs = await gather_or_cancel([self._abatch_call(batch_fn, chunk) for chunk in chunks])
        return [text for out in outs for text in out]


def _check_settings(
    max_concurrency: int, retries: int, timeout: float | None, batch_size: int | None
) -> None:
    problems = []
    if max_concurrency < 1:
        problems.append(f"max_concurrency must be >= 1, got {max_concurrency}")
    if retries < 0:
        problems.append(f"retries must be >= 0, got {retries}")
    if timeout is not None and timeout <= 0:
        problems.append(f"timeout must be > 0 seconds or None, got {timeout}")
    if batch_size is not None and batch_size < 1:
        problems.append(f"batch_size must be >= 1 or None, got {batch_size}")
    if problems:
        msg = "; ".join(problems)
        raise ConfigError(msg)


def _check_prompt(prompt: object) -> None:
    if not isinstance(prompt, str):
        msg = f"a prompt must be str, got {type(prompt).__name__}"
        raise InputTypeError(msg)


def as_text_generator(
    llm: Any, *, generate_options: Mapping[str, Any] | None = None, **options: Any
) -> TextGenerator:
    """Wrap ``llm`` as a :class:`TextGenerator`.

    Parameters
    ----------
    llm:
        A :class:`TextGenerator` (returned as it is), a
        :class:`~hrefine.models.local_lm.LocalLM` (:meth:`TextGenerator.batch` then makes one
        batched ``generate`` call per batch), or a ``str -> str`` callable (sync or async).
    generate_options:
        For a LocalLM: keyword arguments of every ``generate`` call (``max_new_tokens``,
        ``system``, ``adapter``...). Without ``adapter``, each call runs under the caller's
        :meth:`~hrefine.models.local_lm.LocalLM.using` block, else the LM's default.
    **options:
        :class:`TextGenerator` settings. For a LocalLM they default to one call in flight, no
        retries and no timeout: a batch already fills the model, a local model that failed once
        fails again, and a timed-out batch would keep the device busy.

    Returns
    -------
    TextGenerator
        The wrapped LLM.

    Raises
    ------
    InputTypeError
        When ``llm`` is none of these.
    ConfigError
        When settings are given for an existing TextGenerator, or ``generate_options`` for
        something other than a LocalLM.
    """
    if isinstance(llm, TextGenerator):
        if options or generate_options:
            msg = (
                f"{llm.name} is already a TextGenerator; build a new one to change its settings "
                f"(got {sorted({*options, *(generate_options or {})})})"
            )
            raise ConfigError(msg)
        return llm
    if hasattr(llm, "generate") and hasattr(llm, "session"):
        return _local_text_generator(llm, dict(generate_options or {}), options)
    if generate_options:
        msg = f"generate_options are for a LocalLM; got {type(llm).__name__}"
        raise ConfigError(msg)
    if callable(llm):
        return TextGenerator(llm, **options)
    msg = f"cannot use {type(llm).__name__} as an LLM: pass a str -> str callable or a LocalLM"
    raise InputTypeError(msg)


def answer_text(out: object, name: object) -> str:
    """An LLM's answer as text: the one check of model answers every method makes.

    A str is kept, and so is an object that prints as its text (its class defines
    ``__str__``, as a LlamaIndex ``CompletionResponse`` does). Anything else is refused: None,
    bytes, numbers, a dict, list, tuple or set (structured output such as
    ``{"points": [...]}``), or an object that would print as its repr. Turned into "None",
    "5" or "{'points': [...]}" it would be stored as a summary that looks like any other.

    Raises
    ------
    GenerationError
        ``out`` is not text; the message names the LLM and the type it returned.
    """
    if isinstance(out, str):
        return out
    refused = (bytes, bytearray, int, float, Mapping, list, tuple, set, frozenset)
    if out is None or isinstance(out, refused) or type(out).__str__ is object.__str__:
        msg = f"LLM {name} returned {type(out).__name__}, not text"
        raise GenerationError(msg)
    return str(out)


def _local_text_generator(
    lm: Any, kwargs: dict[str, Any], options: dict[str, Any]
) -> TextGenerator:
    def one(prompt: str) -> str:
        return str(lm.generate(prompt, **kwargs)[0])

    def many(prompts: list[str]) -> list[str]:
        return [str(text) for text in lm.generate(prompts, **kwargs)]

    options.setdefault("max_concurrency", 1)
    options.setdefault("retries", 0)
    options.setdefault("timeout", None)
    options.setdefault("name", getattr(lm, "name", "local-lm"))
    return TextGenerator(one, batch_fn=many, **options)
