"""Peak resident memory of one call, read from Linux's ``/proc/self`` (standard library only).

Imported by the benchmark and, by its file path, by the reference runner in the reference's
own venv, so both sides measure the same way. Writing ``5`` to ``/proc/self/clear_refs``
resets the process's peak resident size (``VmHWM``) to its current size (Linux 4.0 and later),
so the peak reached during a call is read without sampling and without slowing it. Where this
is not available every function returns None and the benchmark leaves memory out.
"""

from __future__ import annotations

_STATUS = "/proc/self/status"


def _status_kib(field: str) -> int | None:
    try:
        with open(_STATUS, encoding="ascii") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1])  # "VmHWM:   123456 kB"
    except (OSError, ValueError, IndexError):
        return None
    return None


def start() -> int | None:
    """Reset the peak to the current resident size and return that size (KiB), or None."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as fh:
            fh.write("5")
    except OSError:
        return None
    return _status_kib("VmRSS")


def peak_since(before: int | None) -> int | None:
    """KiB the process's resident size rose above ``before`` (from :func:`start`) at its peak."""
    if before is None:
        return None
    peak = _status_kib("VmHWM")
    return None if peak is None else max(0, peak - before)


def resident() -> int | None:
    """The process's resident size now (KiB), or None."""
    return _status_kib("VmRSS")
