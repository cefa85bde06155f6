"""One LocalLM shared by threads and adapters, on a tiny random Llama with two LoRA adapters.

Each thread must get exactly what it gets alone: its adapter's generations, its session's
next-token scores and attention, whatever adapter the other threads run at the same time.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hrefine.errors import ConfigError, InputTypeError
from hrefine.models import LocalLM, as_text_generator
from lm_fixture import build_tiny_adapter, build_tiny_lm

for _module in ("torch", "transformers", "peft", "tokenizers"):  # the models extra
    pytest.importorskip(_module)

PROMPTS = ["w1 w2 w3", "w4 w5 w6", "w7 w8 w9"]  # one length each: batching adds no padding
ROUNDS = 12
OPTIONS: dict[str, Any] = {"max_new_tokens": 6}


@dataclass(frozen=True)
class Tiny:
    base: Path
    a: Path
    b: Path


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tiny]:
    import torch

    # Two busy OpenMP threads per pass on a 2-core machine shared with other jobs slow every
    # pass tenfold; one thread per pass keeps the threads of the test interleaving quickly.
    threads = torch.get_num_threads()
    if (os.cpu_count() or 1) <= 2:
        torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("tiny-lm")
    base = build_tiny_lm(root / "base")
    yield Tiny(
        base,
        build_tiny_adapter(base, root / "a", seed=1),
        build_tiny_adapter(base, root / "b", seed=2),
    )
    torch.set_num_threads(threads)


@pytest.fixture
def lm(tiny: Tiny) -> LocalLM:
    """A fresh LocalLM with adapters "a" and "b" loaded and the base model as default."""
    model = LocalLM(str(tiny.base), device="cpu", name="tiny")
    model.load_adapter(str(tiny.a), "a")
    model.load_adapter(str(tiny.b), "b")
    model.set_adapter(None)
    return model


def _in_threads(*targets: Callable[[], None]) -> None:
    """Run each target in its own thread, all starting together; re-raise the first error."""
    errors: list[BaseException] = []
    start = threading.Barrier(len(targets), timeout=30)

    def wrap(target: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                start.wait()
                target()
            except BaseException as exc:  # reported below, not lost in the thread
                errors.append(exc)

        return run

    threads = [threading.Thread(target=wrap(t), daemon=True) for t in targets]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    assert not any(thread.is_alive() for thread in threads), "a thread hung"
    if errors:
        raise errors[0]


def test_two_threads_with_two_adapters_each_get_their_own_adapters_output(lm: LocalLM) -> None:
    alone = {name: lm.generate(PROMPTS, adapter=name, **OPTIONS) for name in ("a", "b", None)}
    assert alone["a"] != alone["b"]
    assert alone["a"] != alone[None] != alone["b"]
    got: dict[str, list[list[str]]] = {"a": [], "b": [], "using b": [], "default": []}

    def explicit(name: str) -> Callable[[], None]:
        def run() -> None:
            for _ in range(ROUNDS):
                got[name].append(lm.generate(PROMPTS, adapter=name, **OPTIONS))

        return run

    def scoped() -> None:
        with lm.using("b"):
            for _ in range(ROUNDS):
                got["using b"].append(lm.generate(PROMPTS, **OPTIONS))

    def default() -> None:
        for _ in range(ROUNDS):
            got["default"].append(lm.generate(PROMPTS, **OPTIONS))

    _in_threads(explicit("a"), explicit("b"), scoped, default)
    assert got["a"] == [alone["a"]] * ROUNDS
    assert got["b"] == [alone["b"]] * ROUNDS
    assert got["using b"] == [alone["b"]] * ROUNDS
    assert got["default"] == [alone[None]] * ROUNDS


def _session_trace(lm: LocalLM, adapter: str | None) -> list[np.ndarray]:
    """Next-token scores after each append, choice probabilities and captured attention."""
    session = lm.session(adapter=adapter)
    trace = []
    for i, piece in enumerate(["w1 w2 w3", " w4 w5", " w6"]):
        session.append(piece, segment=f"part{i}")
        trace.append(session.next_token_logprobs())
    probs = session.choice_probs(["w10", "w11", "w12"])
    trace.append(np.array(list(probs.values())))
    result = session.append(" w7 w8", capture_attention=True)
    assert result.attention is not None
    trace.append(np.array([result.attention[f"part{i}"] for i in range(3)]))
    trace.append(session.next_token_logprobs())
    return trace


def test_a_session_keeps_its_adapters_scores_while_another_thread_uses_another(
    lm: LocalLM,
) -> None:
    expected = _session_trace(lm, "a")
    other = _session_trace(lm, "b")
    assert np.abs(expected[0] - other[0]).max() > 1e-3  # the adapters do differ
    traces: list[list[np.ndarray]] = []
    stop = threading.Event()

    def sessions() -> None:
        try:
            for _ in range(ROUNDS):
                traces.append(_session_trace(lm, "a"))
        finally:
            stop.set()

    def generating() -> None:
        while not stop.is_set():
            lm.generate(PROMPTS[:1], adapter="b", max_new_tokens=3)

    _in_threads(sessions, generating)
    assert len(traces) == ROUNDS
    for trace in traces:
        for got, want in zip(trace, expected, strict=True):
            np.testing.assert_allclose(got, want, atol=1e-5)
    assert lm.model.config._attn_implementation == "sdpa"  # capture put the kernel back


def test_using_is_per_thread_nests_and_yields_to_an_explicit_adapter(lm: LocalLM) -> None:
    seen: dict[str, str | None] = {}

    def other_thread() -> None:
        seen["other"] = lm.resolve_adapter()

    with lm.using("a"):
        assert lm.resolve_adapter() == "a"
        with lm.using(None):
            assert lm.resolve_adapter() is None
            assert lm.resolve_adapter("b") == "b"
        assert lm.resolve_adapter() == "a"
        thread = threading.Thread(target=other_thread)
        thread.start()
        thread.join(30)
        assert lm.session().adapter == "a"
        assert lm.session(adapter="b").adapter == "b"
    assert seen == {"other": None}  # a thread started inside the block is not in it
    assert lm.resolve_adapter() is None
    lm.set_adapter("b")
    assert lm.active_adapter == "b"
    assert lm.resolve_adapter() == "b"
    with lm.using("a"):
        assert lm.active_adapter == "b"  # the default; the block's choice is this thread's own
        assert lm.generate(PROMPTS[:1], **OPTIONS) == lm.generate(
            PROMPTS[:1], adapter="a", **OPTIONS
        )


def test_choice_probs_follow_the_adapter(lm: LocalLM) -> None:
    prompt, choices = "w1 w2 w3", ["w10", "w11"]
    with lm.using("b"):
        scoped = lm.choice_probs(prompt, choices)
    assert scoped == lm.choice_probs(prompt, choices, adapter="b")
    assert scoped != lm.choice_probs(prompt, choices, adapter="a")


def test_unknown_adapters_are_refused_with_the_loaded_names(lm: LocalLM, tiny: Tiny) -> None:
    with pytest.raises(ConfigError, match=r"no adapter named 'c'; loaded: \['a', 'b'\]"):
        lm.generate(PROMPTS, adapter="c")
    with pytest.raises(ConfigError, match="'c'"), lm.using("c"):
        pass
    with pytest.raises(ConfigError, match="'c'"):
        lm.set_adapter("c")
    with pytest.raises(ConfigError, match="'c'"):
        lm.session(adapter="c")
    with pytest.raises(InputTypeError, match="int"):
        lm.generate(PROMPTS, adapter=3)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="already loaded"):
        lm.load_adapter(str(tiny.a), "a")


def test_a_copy_runs_its_own_adapters_outside_the_originals_using_block(lm: LocalLM) -> None:
    import copy

    clone = copy.deepcopy(lm)
    with lm.using("a"):
        assert clone.resolve_adapter() is None  # the block belongs to the original
        assert clone.generate(PROMPTS, **OPTIONS) == lm.generate(PROMPTS, adapter=None, **OPTIONS)
    assert clone.generate(PROMPTS, adapter="b", **OPTIONS) == lm.generate(
        PROMPTS, adapter="b", **OPTIONS
    )


def test_text_generator_over_a_local_lm_makes_one_generate_call_per_batch(
    lm: LocalLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    prompts = [f"w{i} w{i + 1} w{i + 2}" for i in range(5)]
    want = lm.generate(prompts, adapter="a", **OPTIONS)
    calls: list[list[str]] = []
    real = lm.generate

    def counting(batch: str | list[str], **kwargs: Any) -> list[str]:
        calls.append([batch] if isinstance(batch, str) else list(batch))
        return real(batch, **kwargs)

    monkeypatch.setattr(lm, "generate", counting)
    gen = as_text_generator(lm, batch_size=2, generate_options={**OPTIONS, "adapter": "a"})
    assert gen.batch(prompts) == want
    assert calls == [prompts[0:2], prompts[2:4], prompts[4:5]]
    calls.clear()
    assert asyncio.run(gen.abatch(prompts)) == want
    assert sorted(calls) == sorted([prompts[0:2], prompts[2:4], prompts[4:5]])
    calls.clear()
    whole = as_text_generator(lm, generate_options=OPTIONS, timeout=60)
    with lm.using("a"):  # covers the calls, though they run in worker threads
        assert whole.batch(prompts) == want
        assert whole.generate(prompts[0]) == want[0]
        assert asyncio.run(whole.abatch(prompts)) == want
    assert calls == [prompts, [prompts[0]], prompts]
