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


def _fresh_thread_count(torch: object) -> int:
    """The torch thread count a newly started thread gets."""
    return device._in_fresh_thread(torch.get_num_threads)  # type: ignore[attr-defined]


def test_cpu_map_workers_split_torch_threads_and_leave_the_counts_as_they_were(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(device, "_pools", {})  # the pool is made in this test
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(4)  # the caller's count, and the default of new threads
        device._in_fresh_thread(lambda: torch.set_num_threads(3))  # the default alone
        assert (torch.get_num_threads(), _fresh_thread_count(torch)) == (4, 3)
        counts = device.cpu_map(lambda _: torch.get_num_threads(), list(range(8)), 2)
        assert set(counts) == {2}  # each worker has half of the caller's 4
        # Neither the caller's count nor the one new threads start with has changed.
        assert torch.get_num_threads() == 4
        assert _fresh_thread_count(torch) == 3
    finally:
        torch.set_num_threads(before)


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
        for threads, share in ((4, 2), (6, 3)):
            torch.set_num_threads(threads)
            counts = device.cpu_map(lambda _: torch.get_num_threads(), list(range(8)), 2)
            assert set(counts) == {share}
    finally:
        torch.set_num_threads(before)


def test_cpu_map_called_from_a_worker_runs_there() -> None:
    # A worker waiting on its own pool could wait for ever: the inner call runs in place.
    def inner(_: int) -> str:
        return threading.current_thread().name

    def outer(_: int) -> tuple[str, set[str]]:
        return threading.current_thread().name, set(device.cpu_map(inner, [1, 2, 3], 2))

    for name, inside in device.cpu_map(outer, [1, 2, 3, 4], 2):
        assert name.startswith("hrefine-cpu")
        assert inside == {name}


def test_cpu_map_runs_in_the_caller_when_no_thread_can_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_threads(*_: object) -> None:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(device, "_pools", {})
    monkeypatch.setattr(device, "_Pool", no_threads)
    names: set[str] = set()

    def square(x: int) -> int:
        names.add(threading.current_thread().name)
        return x * x

    assert device.cpu_map(square, [1, 2, 3], 2) == [1, 4, 9]
    assert names == {threading.current_thread().name}


def test_cpu_workers_default_and_bad_counts() -> None:
    torch = pytest.importorskip("torch")
    assert device.cpu_workers() == (2 if torch.get_num_threads() >= 2 else 1)
    assert device.cpu_workers(3) == 3
    with pytest.raises(HrefineError, match="cpu_workers"):
        device.cpu_workers(0)


def test_native_bf16_is_the_cpus_hardware_support_and_false_elsewhere(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import torch

    assert device.native_bf16("cuda") is False and device.native_bf16("mps") is False
    for avx512_bf16, amx in ((False, False), (True, False), (False, True)):
        monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda v=avx512_bf16: v)
        monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda v=amx: v)
        assert device.native_bf16("cpu") is (avx512_bf16 or amx)
    # A torch without the checks: no native bfloat16 is assumed.
    monkeypatch.delattr(torch.cpu, "_is_avx512_bf16_supported")
    monkeypatch.delattr(torch.cpu, "_is_amx_tile_supported")
    assert device.native_bf16("cpu") is False
