"""The first LLM call that fails for good stops the calls still waiting.

``asyncio.gather`` and a thread pool's ``future.result()`` raise the first error and leave the
other calls running: a summariser whose LLM refused one prompt went on paying for every other
prompt, on the async path even after the caller had its error.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import operator
import threading
import time
from typing import Any

import pytest
from hrefine.errors import GenerationError
from hrefine.models._loop import gather_or_cancel, results_or_cancel
from hrefine.models.text_generator import TextGenerator

N = 20


class Counted:
    """An LLM that refuses ``p0`` at once and takes ``delay`` seconds over every other prompt."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.calls: list[str] = []
        self._lock = threading.Lock()

    def __call__(self, prompt: str) -> str:
        with self._lock:
            self.calls.append(prompt)
        if prompt == "p0":
            raise ValueError("quota exceeded")
        time.sleep(self.delay)
        return prompt.upper()

    async def acall(self, prompt: str) -> str:
        self.calls.append(prompt)
        if prompt == "p0":
            raise ValueError("quota exceeded")
        await asyncio.sleep(self.delay)
        return prompt.upper()


PROMPTS = [f"p{i}" for i in range(N)]


def test_sync_batch_makes_no_queued_call_after_a_failure() -> None:
    llm = Counted(0.2)
    gen = TextGenerator(llm, retries=0, max_concurrency=1, timeout=None, name="metered")
    with pytest.raises(GenerationError, match="metered") as err:
        gen.batch(PROMPTS)
    assert isinstance(err.value.__cause__, ValueError)
    # p0 fails; the worker may have taken p1 before the queue was cancelled, never more
    assert llm.calls[0] == "p0" and len(llm.calls) <= 2


def test_sync_batches_of_a_batch_function_stop_too() -> None:
    calls: list[list[str]] = []

    def batch_fn(chunk: list[str]) -> list[str]:
        calls.append(chunk)
        if "p0" in chunk:
            raise ValueError("quota exceeded")
        time.sleep(0.2)
        return [p.upper() for p in chunk]

    gen = TextGenerator(
        lambda p: p, batch_fn=batch_fn, batch_size=2, max_concurrency=2, retries=0, timeout=None
    )
    with pytest.raises(GenerationError):
        gen.batch(PROMPTS)
    assert len(calls) <= 3  # of 10 batches: the failed one, the one beside it, at most one more


async def test_async_batch_cancels_the_rest_and_makes_no_call_after_the_error() -> None:
    llm = Counted(0.05)
    gen = TextGenerator(llm.acall, retries=0, max_concurrency=2, name="metered")
    with pytest.raises(GenerationError, match="metered"):
        await gen.abatch(PROMPTS)
    made = len(llm.calls)
    await asyncio.sleep(0.3)  # before, the other calls went on in the background
    assert len(llm.calls) == made <= 3


async def test_async_batch_of_a_sync_llm_stops_too() -> None:
    llm = Counted(0.05)
    gen = TextGenerator(llm, retries=0, max_concurrency=1, timeout=None)
    with pytest.raises(GenerationError):
        await gen.abatch(PROMPTS)
    made = len(llm.calls)
    await asyncio.sleep(0.3)
    assert len(llm.calls) == made <= 2


async def test_gather_or_cancel_keeps_order_and_raises_the_first_failure_in_input_order() -> None:
    async def value(x: int, delay: float) -> int:
        await asyncio.sleep(delay)
        return x

    assert await gather_or_cancel([value(i, 0.01 * (5 - i)) for i in range(5)]) == list(range(5))
    assert await gather_or_cancel([]) == []

    async def fail(msg: str) -> int:
        raise KeyError(msg)

    with pytest.raises(KeyError, match="first"):
        await gather_or_cancel([value(0, 0), fail("first"), fail("second")])


async def test_cancelling_the_caller_cancels_every_call() -> None:
    started: list[int] = []
    finished: list[int] = []

    async def slow(i: int) -> int:
        started.append(i)
        await asyncio.sleep(0.2)
        finished.append(i)
        return i

    task = asyncio.ensure_future(gather_or_cancel([slow(i) for i in range(4)]))
    await asyncio.sleep(0.02)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.sleep(0.3)
    assert started == [0, 1, 2, 3] and finished == []


def test_results_or_cancel_returns_in_order_or_raises_and_cancels_the_queue() -> None:
    ran: list[int] = []

    def work(i: int) -> int:
        ran.append(i)
        if i == 0:
            raise KeyError("first")
        time.sleep(0.1)
        return i

    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        ok = [pool.submit(operator.mul, i, 2) for i in range(4)]
        assert results_or_cancel(ok) == [0, 2, 4, 6]
        futures: list[Any] = [pool.submit(work, i) for i in range(8)]
        with pytest.raises(KeyError, match="first"):
            results_or_cancel(futures)
    assert len(ran) <= 2 and sum(f.cancelled() for f in futures) >= 6
