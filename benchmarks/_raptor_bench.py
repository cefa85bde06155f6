"""Pure helpers of the RAPTOR speed benchmark, shared by both of its sides (standard library only).

:mod:`benchmarks.raptor_speed` imports this module; ``benchmarks/ref_raptor_runner.py`` loads it
by its file path inside the reference's venv, so the two sides summarise with the very same fake
LLM and summarise their timings the same way.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = [
    "FAKE_SUMMARY_WORDS",
    "busy_seconds",
    "context_marker",
    "fake_summary",
    "layer_waves",
    "quantile",
    "ratio",
    "timing_stats",
]

#: Words the fake LLM returns: short like a real summary (about 100 tokens at most), so that a
#: layer of summaries is always shorter than the texts it summarises and the tree converges.
FAKE_SUMMARY_WORDS = 60


def context_marker(template: str, placeholder: str) -> tuple[str, str]:
    """The text just before and just after ``placeholder`` in a prompt ``template``.

    At most 40 characters each, stripped. The fake LLM reads only between the two, so that its
    "summary" is made of the texts being summarised, not of the prompt's instructions. A side
    is empty when the placeholder opens (or closes) the template, both when it is missing.
    """
    head, found, tail = template.partition(placeholder)
    if not found:
        return "", ""
    return head.strip()[-40:], tail.strip()[:40]


def fake_summary(
    prompt: str, marker: tuple[str, str] = ("", ""), words: int = FAKE_SUMMARY_WORDS
) -> str:
    """An instant stand-in for an LLM's summary: the first ``words`` words of the context.

    Parameters
    ----------
    prompt:
        The prompt the summariser received.
    marker:
        The texts around the template's placeholder (see :func:`context_marker`): the context
        starts after the first occurrence of the first and ends at the last occurrence of the
        second (an empty or absent one: the prompt's start, or its end).
    words:
        How many whitespace-separated words to return.

    Returns
    -------
    str
        The words joined by single spaces (never the whole prompt of a long cluster, which
        would make a tree whose summaries never shrink).
    """
    if words < 1:
        msg = f"words must be at least 1, got {words}"
        raise ValueError(msg)
    head, tail = marker
    found = prompt.find(head) if head else -1
    start = found + len(head) if found >= 0 else 0
    end = prompt.rfind(tail, start) if tail else -1
    body = prompt[start : end if end >= 0 else len(prompt)]
    return " ".join(body.split()[:words])


def quantile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile of ``values`` (linear interpolation between order statistics).

    Raises
    ------
    ValueError
        ``values`` is empty or ``q`` is outside [0, 1].
    """
    if not values:
        msg = "quantile of no values"
        raise ValueError(msg)
    if not 0.0 <= q <= 1.0:
        msg = f"q must be in [0, 1], got {q}"
        raise ValueError(msg)
    ordered = sorted(values)
    pos = q * (len(ordered) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def timing_stats(seconds: Sequence[float]) -> dict[str, float | int | None]:
    """Median, 90th percentile, mean (all in milliseconds) and count of per-call timings.

    An empty sequence gives ``None`` for every statistic (the side could not run the calls).
    """
    if not seconds:
        return {"n": 0, "median_ms": None, "p90_ms": None, "mean_ms": None}
    return {
        "n": len(seconds),
        "median_ms": round(quantile(seconds, 0.5) * 1000, 3),
        "p90_ms": round(quantile(seconds, 0.9) * 1000, 3),
        "mean_ms": round(sum(seconds) / len(seconds) * 1000, 3),
    }


def ratio(reference: float | None, ours: float | None) -> float | None:
    """``reference / ours`` (how many times faster we are), None when either is missing."""
    if reference is None or ours is None or ours <= 0:
        return None
    return round(reference / ours, 2)


def layer_waves(clusters_per_layer: Sequence[int], concurrency: int) -> int:
    """Rounds of LLM calls a build needs when each layer's summaries run ``concurrency`` at a time.

    A layer cannot start before the layer below is summarised, so the rounds add up layer by
    layer: ``sum(ceil(clusters / concurrency))``. Times the latency of one call, this is the
    least wall time the LLM can cost; sequential calls cost ``sum(clusters)`` times it.
    """
    if concurrency < 1:
        msg = f"concurrency must be at least 1, got {concurrency}"
        raise ValueError(msg)
    return sum(math.ceil(c / concurrency) for c in clusters_per_layer if c > 0)


def busy_seconds(intervals: Sequence[tuple[float, float]]) -> float:
    """Seconds during which at least one of the ``(start, end)`` intervals was running.

    The wall time the LLM cost a build: overlapping calls count once, so concurrent calls cost
    about one call's latency per round, sequential ones the sum of theirs.
    """
    total = 0.0
    cur_start: float | None = None
    cur_end = 0.0
    for start, end in sorted(intervals):
        if end < start:
            msg = f"an interval ends before it starts: ({start}, {end})"
            raise ValueError(msg)
        if cur_start is None or start > cur_end:
            if cur_start is not None:
                total += cur_end - cur_start
            cur_start, cur_end = start, end
        else:
            cur_end = max(cur_end, end)
    if cur_start is not None:
        total += cur_end - cur_start
    return total
