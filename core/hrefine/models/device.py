"""Device, dtype and batch-size choice for the scorer layer.

torch is imported inside the functions, so importing this module stays light.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, TypeVar

from hrefine.errors import ConfigError

if TYPE_CHECKING:
    import torch

__all__ = [
    "batch_size_for",
    "cpu_map",
    "cpu_workers",
    "native_bf16",
    "one_thread_map",
    "pick_device",
    "pick_dtype",
]

_T = TypeVar("_T")
_R = TypeVar("_R")

logger = logging.getLogger(__name__)

_KNOWN_KINDS = ("cpu", "cuda", "mps", "xpu", "npu", "hpu", "meta")


def pick_device(preferred: str | None = None) -> str:
    """Choose the device models run on.

    Parameters
    ----------
    preferred:
        A torch device string (``"cpu"``, ``"cuda"``, ``"cuda:1"``, ``"mps"``) to use as given, or
        ``None`` to take the best one present: CUDA, then Apple MPS, then the CPU.

    Returns
    -------
    str
        The device string, ready for ``torch.device``.

    Raises
    ------
    ConfigError
        When ``preferred`` is not a device string torch knows.
    """
    if preferred is not None:
        kind = preferred.split(":", 1)[0]
        if kind not in _KNOWN_KINDS:
            msg = f"unknown device {preferred!r}; expected one of {', '.join(_KNOWN_KINDS)}"
            raise ConfigError(msg)
        if kind == "cuda":  # torch's own message for this is a bare AssertionError
            import torch

            if not torch.cuda.is_available():
                msg = f"device {preferred!r} was asked for, but torch sees no CUDA device here"
                raise ConfigError(msg)
        logger.info("Using device %s (asked for)", preferred)
        return preferred

    import torch

    if torch.cuda.is_available():
        device = "cuda"
    elif getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        device = "mps"
    else:
        device = "cpu"
    logger.info("Using device %s", device)
    return device


def pick_dtype(device: str) -> torch.dtype:
    """Choose the compute dtype for ``device``.

    Parameters
    ----------
    device:
        A device string as returned by :func:`pick_device`.

    Returns
    -------
    torch.dtype
        ``torch.bfloat16`` on a CUDA device that supports it, else ``torch.float32``.
    """
    import torch

    if device.startswith("cuda") and torch.cuda.is_available() and torch.cuda.is_bf16_supported():
        return torch.bfloat16
    return torch.float32


def native_bf16(device: str) -> bool:
    """Whether ``device`` multiplies bfloat16 matrices in hardware, faster than float32.

    True on a CPU with AVX512-BF16 or AMX (Intel Cooper Lake and Sapphire Rapids on, AMD Zen 4
    on), False on other CPUs, where bfloat16 is emulated and slower than float32, and on other
    devices (whose choice is left to the caller).
    """
    if device.split(":", 1)[0] != "cpu":
        return False
    import torch

    cpu = getattr(torch, "cpu", None)
    checks = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    return any(bool(getattr(cpu, name, lambda: False)()) for name in checks)


def batch_size_for(device: str, default_cpu: int = 8, default_gpu: int = 64) -> int:
    """Return a batch size suited to ``device``.

    Parameters
    ----------
    device:
        A device string as returned by :func:`pick_device`.
    default_cpu:
        Batch size used on the CPU.
    default_gpu:
        Batch size used on any accelerator (CUDA, MPS, ...).

    Returns
    -------
    int
        ``default_cpu`` on the CPU, ``default_gpu`` elsewhere.
    """
    return default_cpu if device.split(":", 1)[0] == "cpu" else default_gpu


def cpu_workers(requested: int | None = None) -> int:
    """Threads that run CPU batches side by side (see :func:`cpu_map`).

    ``requested`` is returned as given; None: 2 when torch may use at least 2 threads, else 1.
    """
    if requested is not None:
        if requested < 1:
            msg = f"cpu_workers must be >= 1 (or None for the default), got {requested}"
            raise ConfigError(msg)
        return requested
    import torch

    return 2 if torch.get_num_threads() >= 2 else 1


def _in_fresh_thread(fn: Callable[[], _R]) -> _R:
    """``fn()`` run in a new, short-lived thread (torch's per-thread state left untouched)."""
    out: list[_R] = []
    t = threading.Thread(target=lambda: out.append(fn()), name="hrefine-cpu-setup")
    t.start()
    t.join()
    return out[0]


class _Pool:
    """Worker threads, each with its share of torch's intra-op threads."""

    def __init__(self, workers: int, threads: int) -> None:
        import torch

        self.pid = os.getpid()
        self.threads = max(1, threads // workers)
        # The count a new thread starts with (torch.set_num_threads in a worker changes it
        # for the whole process; it is put back below). The caller's own count is untouched.
        default = _in_fresh_thread(torch.get_num_threads)
        ready = threading.Barrier(workers + 1)

        def init() -> None:
            _local.worker = True
            try:
                torch.get_num_threads()  # the thread's own lazy set-up, before its count changes
                torch.set_num_threads(self.threads)
                ready.wait(timeout=60)
            except BaseException:
                ready.abort()
                raise

        self.executor = ThreadPoolExecutor(
            max_workers=workers, thread_name_prefix="hrefine-cpu", initializer=init
        )
        try:
            for _ in range(workers):  # starts every thread now, each held at the barrier
                self.executor.submit(int)
            ready.wait(timeout=60)
        except BaseException:
            ready.abort()
            self.executor.shutdown(wait=True, cancel_futures=True)
            raise
        finally:
            _in_fresh_thread(lambda: torch.set_num_threads(default))


_pools: dict[tuple[int, int], _Pool] = {}  # by workers and the caller's thread count
_pools_lock = threading.Lock()
_local = threading.local()  # .worker: this thread is one of a pool's


def cpu_map(fn: Callable[[_T], _R], items: Sequence[_T], workers: int) -> list[_R]:
    """``[fn(x) for x in items]``, run by ``workers`` threads when there are two items or more.

    Each worker thread gives torch an equal share of the caller's intra-op threads, so batches
    of a CPU model run side by side instead of one after another with all threads: on 2 cores,
    two MiniLM batches at a time on one thread each pruned the HtmlRAG benchmark's cold pages
    5-10% faster than one at a time on two threads, as small matrix products split poorly
    over threads. ``fn`` must be safe to call from several threads (a torch forward in
    inference mode is). A call from a worker thread, once the interpreter is shutting down,
    or when the threads cannot start, runs in the calling thread. The threads are shared by
    the process, made again after a fork, and one set is kept per thread count of callers.
    """
    if workers <= 1 or len(items) < 2 or getattr(_local, "worker", False):
        return [fn(x) for x in items]
    import torch

    done = _on_pool((workers, torch.get_num_threads()), fn, items)
    return done if done is not None else [fn(x) for x in items]


def _on_pool(key: tuple[int, int], fn: Callable[[_T], _R], items: Sequence[_T]) -> list[_R] | None:
    """``fn`` over ``items`` on the pool of ``key`` (workers, caller's threads), made when
    missing; None when the interpreter is shutting down or no thread can start."""
    try:
        with _pools_lock:
            pool = _pools.get(key)
            if pool is None or pool.pid != os.getpid():
                pool = _pools[key] = _Pool(*key)
        futures = [pool.executor.submit(fn, x) for x in items]
    except RuntimeError as exc:
        logger.debug("no worker threads for %d items: %s", len(items), exc)
        return None
    return [f.result() for f in futures]


def one_thread_map(fn: Callable[[_T], _R], items: Sequence[_T]) -> list[_R]:
    """``[fn(x) for x in items]`` with every call made on exactly one torch thread.

    As many worker threads run side by side as the caller's torch threads, each with a single
    torch thread of its own, so the thread count changes which worker runs an item and never
    how its numbers are added up (a kernel may split a sum over threads). A caller on one
    thread, or a pool worker, runs the items itself.
    """
    import torch

    threads = torch.get_num_threads()
    if threads <= 1 or getattr(_local, "worker", False):
        return [fn(x) for x in items]
    done = _on_pool((threads, threads), fn, items)
    return done if done is not None else _in_fresh_thread(lambda: _on_one_thread(fn, items))


def _on_one_thread(fn: Callable[[_T], _R], items: Sequence[_T]) -> list[_R]:
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return [fn(x) for x in items]
    finally:
        torch.set_num_threads(before)  # the count new threads start with is the process's
