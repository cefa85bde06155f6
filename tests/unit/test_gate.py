"""ModelGate: passes of one model state share the model; other states and lone passes wait."""

from __future__ import annotations

import functools
import random
import threading
import time
from collections.abc import Callable, Hashable

import pytest
from hrefine.models._gate import UNKNOWN, ModelGate

WAIT = 10.0  # seconds before a test gives up on an event that should come at once


class Model:
    """Stands in for the shared model: records its state and checks every pass against it."""

    def __init__(self) -> None:
        self.state: Hashable = UNKNOWN
        self.switches: list[Hashable] = []
        self.inside: list[tuple[Hashable, bool]] = []
        self.errors: list[str] = []
        self.lock = threading.Lock()

    def switch(self, state: Hashable) -> None:
        with self.lock:
            if self.inside:
                self.errors.append(f"switched to {state!r} with {self.inside} running")
            self.state = state
            self.switches.append(state)

    def enter(self, state: Hashable, alone: bool) -> None:
        with self.lock:
            if self.state != state:
                self.errors.append(f"a pass for {state!r} ran with the model in {self.state!r}")
            if (alone and self.inside) or any(a for _, a in self.inside):
                self.errors.append(f"a lone pass overlapped: {[*self.inside, (state, alone)]}")
            self.inside.append((state, alone))

    def leave(self, state: Hashable, alone: bool) -> None:
        with self.lock:
            self.inside.remove((state, alone))


def start(target: Callable[[], None]) -> threading.Thread:
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread


def test_passes_of_the_same_state_run_side_by_side() -> None:
    model = Model()
    gate = ModelGate(model.switch)
    both_inside = threading.Barrier(2, timeout=WAIT)

    def run() -> None:
        with gate.hold("a"):
            both_inside.wait()  # breaks (and fails the test) unless both are in at once

    threads = [start(run), start(run)]
    for thread in threads:
        thread.join(WAIT)
    assert not both_inside.broken
    assert model.switches == ["a"]  # one switch for both
    assert gate.running == 0


def test_a_pass_of_another_state_waits_for_the_running_ones_then_switches() -> None:
    model = Model()
    gate = ModelGate(model.switch)
    events: list[str] = []
    inside, release = threading.Event(), threading.Event()

    def first() -> None:
        with gate.hold("a"):
            events.append("a in")
            inside.set()
            release.wait(WAIT)
            events.append("a out")

    def second() -> None:
        with gate.hold("b"):
            events.append(f"b in, model in {model.state}")

    one = start(first)
    assert inside.wait(WAIT)
    two = start(second)
    two.join(0.2)
    assert two.is_alive()  # still waiting for the pass of "a"
    assert events == ["a in"]
    release.set()
    one.join(WAIT)
    two.join(WAIT)
    assert events == ["a in", "a out", "b in, model in b"]
    assert model.switches == ["a", "b"]


def test_a_waiting_switch_keeps_later_passes_of_the_current_state_out() -> None:
    gate = ModelGate(lambda state: None)
    order: list[str] = []
    inside, release = threading.Event(), threading.Event()

    def holder() -> None:
        with gate.hold("a"):
            inside.set()
            release.wait(WAIT)
            order.append("a1")

    def run(state: str, label: str) -> Callable[[], None]:
        def body() -> None:
            with gate.hold(state):
                order.append(label)

        return body

    first = start(holder)
    assert inside.wait(WAIT)
    switcher = start(run("b", "b"))
    deadline = time.monotonic() + WAIT
    while gate.waiting < 1 and time.monotonic() < deadline:  # until "b" waits
        time.sleep(0.001)
    assert gate.waiting == 1
    late = start(run("a", "a2"))  # the model is in "a", yet this pass must not jump the queue
    late.join(0.2)
    assert late.is_alive()
    assert order == []
    release.set()
    for thread in (first, switcher, late):
        thread.join(WAIT)
    assert order == ["a1", "b", "a2"]


def test_a_lone_pass_runs_with_nothing_beside_it_even_of_its_own_state() -> None:
    model = Model()
    gate = ModelGate(model.switch)
    inside, release = threading.Event(), threading.Event()
    order: list[str] = []

    def lone() -> None:
        with gate.hold("a", alone=True):
            inside.set()
            release.wait(WAIT)
            order.append("lone")

    def ordinary() -> None:
        with gate.hold("a"):
            order.append("ordinary")

    one = start(lone)
    assert inside.wait(WAIT)
    two = start(ordinary)
    two.join(0.2)
    assert two.is_alive()
    release.set()
    one.join(WAIT)
    two.join(WAIT)
    assert order == ["lone", "ordinary"]


def test_an_error_inside_a_pass_releases_the_gate() -> None:
    gate = ModelGate(lambda state: None)
    with pytest.raises(RuntimeError, match="boom"), gate.hold("a", alone=True):
        raise RuntimeError("boom")
    assert gate.running == 0
    done = threading.Event()

    def other() -> None:
        with gate.hold("b"):
            done.set()

    start(other).join(WAIT)
    assert done.is_set()


def test_a_failed_switch_leaves_the_state_unknown_and_the_next_pass_switches_again() -> None:
    calls: list[Hashable] = []

    def switch(state: Hashable) -> None:
        calls.append(state)
        if len(calls) == 2:
            raise OSError("adapter weights gone")

    gate = ModelGate(switch)
    with gate.hold("a"):
        pass
    with pytest.raises(OSError, match="gone"), gate.hold("b"):
        pytest.fail("the pass must not run when its switch failed")
    assert gate.state is UNKNOWN
    assert gate.running == 0
    with gate.hold("a"):
        pass
    assert calls == ["a", "b", "a"]


def test_exclusive_waits_for_running_passes_and_forgets_the_state() -> None:
    calls: list[Hashable] = []
    gate = ModelGate(calls.append, state=None)
    inside, release = threading.Event(), threading.Event()
    order: list[str] = []

    def ordinary() -> None:
        with gate.hold(None):
            inside.set()
            release.wait(WAIT)
            order.append("pass")

    def change() -> None:
        with gate.exclusive():
            order.append("change")

    one = start(ordinary)
    assert inside.wait(WAIT)
    two = start(change)
    two.join(0.2)
    assert two.is_alive()
    release.set()
    one.join(WAIT)
    two.join(WAIT)
    assert order == ["pass", "change"]
    assert calls == []  # the model started in None: no switch until the change
    with gate.hold(None):
        pass
    assert calls == [None]  # the model changed under exclusive(): put it in None again


def test_many_threads_and_states_never_see_the_wrong_state_and_all_finish() -> None:
    model = Model()
    gate = ModelGate(model.switch)
    states = ["a", "b", None]
    done = [0]
    count = threading.Lock()

    def worker(seed: int) -> None:
        rng = random.Random(seed)
        for _ in range(60):
            state, alone = rng.choice(states), rng.random() < 0.1
            with gate.hold(state, alone=alone):
                model.enter(state, alone)
                time.sleep(rng.random() * 0.001)
                model.leave(state, alone)
        with count:
            done[0] += 1

    threads = [start(functools.partial(worker, seed)) for seed in range(6)]
    for thread in threads:
        thread.join(60)
    assert done[0] == len(threads)  # nobody starved or deadlocked
    assert model.errors == []
    assert len(model.switches) > len(states)  # the threads did interleave across states
    assert gate.running == 0


def test_a_rest_state_is_taken_again_once_no_pass_runs_or_waits() -> None:
    calls: list[object] = []
    gate = ModelGate(calls.append, state=256, rest=256)
    with gate.hold(128), gate.hold(128):  # two passes of one state: one switch
        assert gate.state == 128 and calls == [128]
    assert gate.state == 256 and calls == [128, 256]  # back at rest once none runs
    with gate.hold(256):  # already there: no switch
        pass
    assert calls == [128, 256]
