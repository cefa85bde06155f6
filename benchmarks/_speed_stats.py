"""Spread statistics of :mod:`benchmarks.htmlrag_speed`: percentiles, p10 / median / p90 with
the share under a target, and per-key ratios (pure functions)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["percentile", "ratios", "spread"]


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) of ``values``, interpolated linearly between the two
    nearest ranks (numpy's default method)."""
    from hrefine.errors import ConfigError

    if not values:
        msg = "percentile of no values: pass at least one"
        raise ConfigError(msg)
    if not 0 <= q <= 100:
        msg = f"q must be within 0 and 100, got {q}"
        raise ConfigError(msg)
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def spread(values: Sequence[float | None], target: float | None = None) -> dict[str, Any]:
    """p10 / median / p90 (and min, max, n) of the values that are not None.

    With ``target``, ``under`` counts the values below it and ``share_under`` is their share
    (the questions whose speed-up misses the target).
    """
    xs = [float(v) for v in values if v is not None]
    out: dict[str, Any] = {"n": len(xs)}
    if not xs:
        out.update(p10=None, median=None, p90=None, min=None, max=None)
    else:
        out.update(
            p10=percentile(xs, 10),
            median=percentile(xs, 50),
            p90=percentile(xs, 90),
            min=min(xs),
            max=max(xs),
        )
    if target is not None:
        under = sum(x < target for x in xs)
        out.update(target=target, under=under, share_under=under / len(xs) if xs else None)
    return out


def ratios(numer: dict[str, float | None], denom: dict[str, float | None]) -> dict[str, float]:
    """``numer[k] / denom[k]`` for every key both have, with a positive denominator."""
    out = {}
    for k, a in numer.items():
        b = denom.get(k)
        if a is not None and b is not None and b > 0:
            out[k] = a / b
    return out
