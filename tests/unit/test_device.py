from __future__ import annotations

import threading

import pytest
from hrefine.errors import HrefineError
from hrefine.models import device


def test_cpu_map_keeps_order_and_runs_on_worker_threads() -> None:
    seen: set[str] = set()

    def square(x: int) -> int:
        seen.add(threading.current_thread().name)
        return x * x

    items = list(range(40))
    assert device.cpu_map(square, items, 2) == [x * x for x in items]
    assert seen and all(name.startswith("hrefine-cpu") for name in seen)
    # One item, or one worker: run in the caller's thread.
    seen.clear()
    assert device.cpu_map(square, [3], 2) == [9]
    assert device.cpu_map(square, items, 1) == [x * x for x in items]
    assert seen == {threading.current_thread().name}


def test_cpu_map_workers_split_torch_threads_and_leave_the_callers_count() -> None:
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    counts = device.cpu_map(lambda _: torch.get_num_threads(), list(range(8)), 2)
    assert set(counts) == {max(1, before // 2)}
    assert torch.get_num_threads() == before
    # A thread started afterwards gets the process's count, not a worker's.
    later: list[int] = []
    t = threading.Thread(target=lambda: later.append(torch.get_num_threads()))
    t.start()
    t.join()
    assert later == [before]


def test_cpu_map_errors_reach_the_caller() -> None:
    def fail(x: int) -> int:
        if x == 5:
            raise ValueError("bad item")
        return x

    with pytest.raises(ValueError, match="bad item"):
        device.cpu_map(fail, list(range(10)), 2)


def test_cpu_map_makes_new_threads_after_a_fork(monkeypatch: pytest.MonkeyPatch) -> None:
    # A forked child has the parent's pool object but none of its threads.
    torch = pytest.importorskip("torch")
    device.cpu_map(abs, [-1, -2], 2)
    key = (2, torch.get_num_threads())
    pool = device._pools[key]
    monkeypatch.setattr(device.os, "getpid", lambda: pool.pid + 1)
    assert device.cpu_map(abs, [-1, -2], 2) == [1, 2]
    assert device._pools[key] is not pool


def test_cpu_map_follows_a_changed_torch_thread_count() -> None:
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(4)
        counts = device.cpu_map(lambda _: torch.get_num_threads(), list(range(8)), 2)
        assert set(counts) == {2}
    finally:
        torch.set_num_threads(before)
    assert torch.get_num_threads() == before


def test_cpu_workers_default_and_bad_counts() -> None:
    torch = pytest.importorskip("torch")
    assert device.cpu_workers() == (2 if torch.get_num_threads() >= 2 else 1)
    assert device.cpu_workers(3) == 3
    with pytest.raises(HrefineError, match="cpu_workers"):
        device.cpu_workers(0)
