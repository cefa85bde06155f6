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

from hrefine.errors import HrefineError

if TYPE_CHECKING:
    import torch

__all__ = ["batch_size_for", "cpu_map", "cpu_workers", "pick_device", "pick_dtype"]

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
    HrefineError
        When ``preferred`` is not a device string torch knows.
    """
    if preferred is not None:
        kind = preferred.split(":", 1)[0]
        if kind not in _KNOWN_KINDS:
            message = f"unknown device {preferred!r}; expected one of {', '.join(_KNOWN_KINDS)}"
            raise HrefineError(message)
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
            msg = f"cpu_workers must be >= 1, got {requested}"
            raise HrefineError(msg)
        return requested
    import torch

    return 2 if torch.get_num_threads() >= 2 else 1


class _Pool:
    """Worker threads, each with its share of torch's intra-op threads."""

    def __init__(self, workers: int, threads: int) -> None:
        import torch

        self.pid = os.getpid()
        self.threads = max(1, threads // workers)
        ready = threading.Barrier(workers + 1)

        def init() -> None:
            torch.get_num_threads()  # the thread's own lazy set-up, before its count changes
            torch.set_num_threads(self.threads)
            ready.wait(timeout=60)

        self.executor = ThreadPoolExecutor(
            max_workers=workers, thread_name_prefix="hrefine-cpu", initializer=init
        )
        try:
            for _ in range(workers):  # starts every thread now, each held at the barrier
                self.executor.submit(int)
            ready.wait(timeout=60)
        finally:
            # torch.set_num_threads also sets the count later threads start with: put back the
            # caller's (the workers keep theirs, their set-up is done).
            torch.set_num_threads(threads)


_pools: dict[tuple[int, int], _Pool] = {}  # by workers and the caller's thread count
_pools_lock = threading.Lock()


def cpu_map(fn: Callable[[_T], _R], items: Sequence[_T], workers: int) -> list[_R]:
    """``[fn(x) for x in items]``, run by ``workers`` threads when there are two items or more.

    Each worker thread gives torch an equal share of the caller's intra-op threads, so batches
    of a CPU model run side by side instead of one after another with all threads: on 2 cores,
    two MiniLM batches at a time on one thread each pruned the HtmlRAG benchmark's cold pages
    5-10% faster than one at a time on two threads, as small matrix products split poorly
    over threads. ``fn`` must be safe to call from several threads (a torch forward in
    inference mode is) and must not call ``cpu_map`` itself. The threads are shared by the
    process, made again after a fork or when the caller's torch thread count has changed.
    """
    if workers <= 1 or len(items) < 2:
        return [fn(x) for x in items]
    import torch

    key = (workers, torch.get_num_threads())
    with _pools_lock:
        pool = _pools.get(key)
        if pool is None or pool.pid != os.getpid():
            pool = _pools[key] = _Pool(*key)
    return list(pool.executor.map(fn, items))
