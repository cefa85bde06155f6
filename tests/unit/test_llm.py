from __future__ import annotations

import asyncio
import threading
import time

import pytest
from hrefine.models.llm import GenerationError, Generator, as_generator


def test_retries_then_succeeds() -> None:
    calls = {"n": 0}

    def flaky(prompt: str) -> str:
        calls["n"] += 1
        if calls["n"] < 3:
            raise ConnectionError("temporary")
        return prompt.upper()

    gen = Generator(flaky, retries=2, backoff=0)
    assert gen("hi") == "HI"
    assert calls["n"] == 3


def test_gives_up_with_clear_error_and_cause() -> None:
    def broken(prompt: str) -> str:
        raise ValueError("bad key")

    gen = Generator(broken, retries=1, backoff=0, name="broken-llm")
    with pytest.raises(GenerationError, match="broken-llm failed after 2 tries") as err:
        gen("x")
    assert isinstance(err.value.__cause__, ValueError)


def test_timeout_raises_generation_error() -> None:
    def slow(prompt: str) -> str:
        time.sleep(1.0)
        return "late"

    gen = Generator(slow, retries=0, timeout=0.05)
    with pytest.raises(GenerationError, match="timed out"):
        gen("x")


def test_batch_bounds_concurrency_and_keeps_order() -> None:
    lock = threading.Lock()
    state = {"now": 0, "peak": 0}

    def work(prompt: str) -> str:
        with lock:
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
        time.sleep(0.02)
        with lock:
            state["now"] -= 1
        return prompt[::-1]

    gen = Generator(work, max_concurrency=2, timeout=None)
    prompts = [f"p{i}" for i in range(8)]
    assert gen.batch(prompts) == [p[::-1] for p in prompts]
    assert state["peak"] <= 2


async def test_async_path_awaits_native_coroutines_with_bounded_concurrency() -> None:
    state = {"now": 0, "peak": 0}

    async def work(prompt: str) -> str:
        state["now"] += 1
        state["peak"] = max(state["peak"], state["now"])
        await asyncio.sleep(0.01)
        state["now"] -= 1
        return prompt + "!"

    gen = Generator(work, max_concurrency=3)
    out = await gen.abatch([str(i) for i in range(9)])
    assert out == [f"{i}!" for i in range(9)]
    assert state["peak"] <= 3
    # a sync call of an async generator inside a running loop is refused, not deadlocked
    with pytest.raises(GenerationError, match="agenerate"):
        gen("x")


async def test_sync_callable_runs_in_executor_on_async_path() -> None:
    gen = as_generator(lambda p: p * 2)
    assert await gen.agenerate("ab") == "abab"


def test_sync_call_of_async_fn_outside_loop_and_type_errors() -> None:
    async def echo(prompt: str) -> str:
        return prompt

    assert Generator(echo)("z") == "z"
    with pytest.raises(TypeError, match="prompt must be str"):
        Generator(echo).generate(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="cannot use"):
        as_generator(42)


def test_sync_timeout_returns_on_time_without_waiting_for_the_call() -> None:
    release, finished = threading.Event(), threading.Event()

    def slow(prompt: str) -> str:
        release.wait(30)  # blocks until the test lets it go (or 30 s)
        finished.set()
        return "late"

    gen = Generator(slow, retries=0, timeout=0.1)
    with pytest.raises(GenerationError, match="timed out"):
        gen("x")
    # The error came while the call was still blocked: the caller did not wait for it.
    assert not finished.is_set()
    release.set()


def test_async_function_on_sync_path_honours_timeout() -> None:
    async def slow(prompt: str) -> str:
        await asyncio.sleep(1.0)
        return "late"

    with pytest.raises(GenerationError, match="timed out"):
        Generator(slow, retries=0, timeout=0.05)("x")


async def test_concurrency_bound_holds_across_separate_agenerate_calls() -> None:
    state = {"now": 0, "peak": 0}

    async def work(prompt: str) -> str:
        state["now"] += 1
        state["peak"] = max(state["peak"], state["now"])
        await asyncio.sleep(0.01)
        state["now"] -= 1
        return prompt

    gen = Generator(work, max_concurrency=2)
    await asyncio.gather(*(gen.agenerate(str(i)) for i in range(8)))
    assert state["peak"] <= 2
