"""Device, dtype and batch-size choice for the scorer layer.

torch is imported inside the functions, so importing this module stays light.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from hrefine.errors import HrefineError

if TYPE_CHECKING:
    import torch

__all__ = ["batch_size_for", "pick_device", "pick_dtype"]

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
