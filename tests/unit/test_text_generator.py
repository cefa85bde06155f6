"""TextGenerator: retries, timeouts, bounded concurrency, batches and the caller's context."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
from collections.abc import Sequence

import pytest
from hrefine.errors import ConfigError, GenerationError, InputTypeError
from hrefine.models.text_generator import TextGenerator, as_text_generator


def test_retries_then_succeeds() -> None:
    calls = {"n": 0}

    def flaky(prompt: str) -> str:
        calls["n"] += 1
        if calls["n"] < 3:
            raise ConnectionError("temporary")
        return prompt.upper()

    gen = TextGenerator(flaky, retries=2, backoff=0)
    assert gen("hi") == "HI"
    assert calls["n"] == 3


def test_gives_up_with_clear_error_and_cause() -> None:
    def broken(prompt: str) -> str:
        raise ValueError("bad key")

    gen = TextGenerator(broken, retries=1, backoff=0, name="broken-llm")
    with pytest.raises(GenerationError, match="broken-llm failed after 2 tries") as err:
        gen("x")
    assert isinstance(err.value.__cause__, ValueError)


def test_timeout_raises_generation_error() -> None:
    def slow(prompt: str) -> str:
        time.sleep(1.0)
        return "late"

    gen = TextGenerator(slow, retries=0, timeout=0.05)
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

    gen = TextGenerator(work, max_concurrency=2, timeout=None)
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

    gen = TextGenerator(work, max_concurrency=3)
    out = await gen.abatch([str(i) for i in range(9)])
    assert out == [f"{i}!" for i in range(9)]
    assert state["peak"] <= 3
    # a sync call of an async generator inside a running loop is refused, not deadlocked
    with pytest.raises(GenerationError, match="agenerate"):
        gen("x")


async def test_sync_callable_runs_in_executor_on_async_path() -> None:
    gen = as_text_generator(lambda p: p * 2)
    assert await gen.agenerate("ab") == "abab"


def test_sync_call_of_async_fn_outside_loop_and_type_errors() -> None:
    async def echo(prompt: str) -> str:
        return prompt

    assert TextGenerator(echo)("z") == "z"
    with pytest.raises(InputTypeError, match="prompt must be str"):
        TextGenerator(echo).generate(3)  # type: ignore[arg-type]
    with pytest.raises(InputTypeError, match="cannot use"):
        as_text_generator(42)


def test_sync_timeout_returns_on_time_without_waiting_for_the_call() -> None:
    release, finished = threading.Event(), threading.Event()

    def slow(prompt: str) -> str:
        release.wait(30)  # blocks until the test lets it go (or 30 s)
        finished.set()
        return "late"

    gen = TextGenerator(slow, retries=0, timeout=0.1)
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
        TextGenerator(slow, retries=0, timeout=0.05)("x")


async def test_concurrency_bound_holds_across_separate_agenerate_calls() -> None:
    state = {"now": 0, "peak": 0}

    async def work(prompt: str) -> str:
        state["now"] += 1
        state["peak"] = max(state["peak"], state["now"])
        await asyncio.sleep(0.01)
        state["now"] -= 1
        return prompt

    gen = TextGenerator(work, max_concurrency=2)
    await asyncio.gather(*(gen.agenerate(str(i)) for i in range(8)))
    assert state["peak"] <= 2


class FakeLocalLM:
    """Looks like a LocalLM to as_text_generator: a batched ``generate`` and a ``session``."""

    name = "fake-local"

    def __init__(self, fail_first: int = 0) -> None:
        self.calls: list[list[str]] = []
        self.kwargs: list[dict[str, object]] = []
        self.fail_first = fail_first

    def generate(self, prompts: str | Sequence[str], **kwargs: object) -> list[str]:
        batch = [prompts] if isinstance(prompts, str) else list(prompts)
        self.calls.append(batch)
        self.kwargs.append(kwargs)
        if len(self.calls) <= self.fail_first:
            raise RuntimeError("out of memory")
        return [p.upper() for p in batch]

    def session(self) -> None:
        """Never called here."""


def test_a_local_lm_generates_in_batches_of_batch_size_and_keeps_order() -> None:
    lm = FakeLocalLM()
    gen = as_text_generator(lm, batch_size=3, generate_options={"max_new_tokens": 5})
    prompts = [f"p{i}" for i in range(7)]
    assert gen.batch(prompts) == [p.upper() for p in prompts]
    assert lm.calls == [prompts[0:3], prompts[3:6], prompts[6:7]]
    assert lm.kwargs == [{"max_new_tokens": 5}] * 3
    assert gen.name == "fake-local"
    assert gen.generate("one") == "ONE"
    assert lm.calls[-1] == ["one"]


async def test_abatch_of_a_local_lm_sends_whole_batches_to_an_executor() -> None:
    lm = FakeLocalLM()
    gen = as_text_generator(lm)  # no batch_size: every prompt in one call
    prompts = [f"q{i}" for i in range(5)]
    assert await gen.abatch(prompts) == [p.upper() for p in prompts]
    assert lm.calls == [prompts]
    assert await gen.abatch([]) == []
    assert gen.batch([]) == []
    assert len(lm.calls) == 1


def test_local_defaults_do_not_retry_and_settings_can_ask_for_it() -> None:
    with pytest.raises(GenerationError, match="after 1 tries on a batch of 2 prompts") as err:
        as_text_generator(FakeLocalLM(fail_first=1)).batch(["a", "b"])
    assert isinstance(err.value.__cause__, RuntimeError)
    lm = FakeLocalLM(fail_first=1)
    gen = as_text_generator(lm, retries=1, backoff=0)
    assert gen.batch(["a", "b"]) == ["A", "B"]
    assert lm.calls == [["a", "b"], ["a", "b"]]  # the whole batch was tried again


def test_a_batch_function_must_return_one_text_per_prompt() -> None:
    gen = TextGenerator(str.upper, batch_fn=lambda ps: ps[:1], retries=3, backoff=0)
    with pytest.raises(GenerationError, match="returned 1 texts for 2 prompts"):
        gen.batch(["a", "b"])


def test_hrefine_errors_are_not_retried() -> None:
    calls = {"n": 0}

    def refuses(prompt: str) -> str:
        calls["n"] += 1
        raise ConfigError("max_new_tokens must be at least 1, got 0")

    with pytest.raises(ConfigError, match="max_new_tokens"):
        TextGenerator(refuses, retries=3, backoff=0)("x")
    assert calls["n"] == 1


def test_batches_run_concurrently_up_to_max_concurrency() -> None:
    lock = threading.Lock()
    state = {"now": 0, "peak": 0}

    def work(prompts: list[str]) -> list[str]:
        with lock:
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
        time.sleep(0.03)
        with lock:
            state["now"] -= 1
        return [p[::-1] for p in prompts]

    gen = TextGenerator(str, batch_fn=work, batch_size=2, max_concurrency=2, timeout=None)
    prompts = [f"ab{i}" for i in range(9)]
    assert gen.batch(prompts) == [p[::-1] for p in prompts]
    assert state["peak"] == 2


def test_calls_in_worker_threads_see_the_callers_context_variables() -> None:
    var: contextvars.ContextVar[str] = contextvars.ContextVar("test_var", default="unset")

    def read(prompt: str) -> str:
        return f"{prompt}:{var.get()}"

    token = var.set("caller")
    try:
        with_timeout = TextGenerator(read, timeout=10)  # runs each try in its pool
        assert with_timeout("a") == "a:caller"
        assert TextGenerator(read, timeout=None, max_concurrency=2).batch(["b", "c"]) == [
            "b:caller",
            "c:caller",
        ]
        assert asyncio.run(TextGenerator(read).agenerate("d")) == "d:caller"
    finally:
        var.reset(token)


def test_bad_settings_and_options_are_refused() -> None:
    with pytest.raises(ConfigError, match="max_concurrency must be >= 1, got 0"):
        TextGenerator(str, max_concurrency=0)
    with pytest.raises(ConfigError, match="batch_size"):
        TextGenerator(str, batch_size=0)
    with pytest.raises(ConfigError, match="timeout"):
        TextGenerator(str, timeout=0)
    gen = TextGenerator(str)
    assert as_text_generator(gen) is gen
    with pytest.raises(ConfigError, match="already a TextGenerator"):
        as_text_generator(gen, retries=5)
    with pytest.raises(ConfigError, match="generate_options are for a LocalLM"):
        as_text_generator(str.upper, generate_options={"max_new_tokens": 3})
