"""Cutting a long document into windows of at most ``window_tokens`` tokens for the
structuring model: at blank lines, else at line ends, else at sentence ends, else anywhere."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable

from hrefine.errors import ConfigError

__all__ = ["windows"]

_BREAKS = (
    re.compile(r"\n[ \t\f\v\r]*\n\s*"),  # blank lines
    re.compile(r"\n\s*"),  # lines
    re.compile(r"(?<=[.!?\u3002\uff01\uff1f])[\"'\u201d\u2019)\]]*\s*"),  # sentence ends
)


def _split(text: str, start: int, end: int, level: int) -> list[tuple[int, int]]:
    """``[start, end)`` cut after each break of the given kind (pieces keep their tails)."""
    cuts = [m.end() for m in _BREAKS[level].finditer(text, start, end) if start < m.end() < end]
    bounds = [start, *cuts, end]
    return [(a, b) for a, b in itertools.pairwise(bounds) if a < b]


def windows(
    text: str, count_tokens: Callable[[str], int], window_tokens: int
) -> list[tuple[int, int]]:
    """Cut a long document into consecutive windows of at most ``window_tokens`` tokens.

    Windows end at paragraph boundaries: a blank line when one fits, else a line break, else
    a sentence's end, else a hard cut (the longest prefix that fits; a single character
    over the limit is a window of its own). Together they cover the text: the first starts
    at 0, each starts where the one before ends, the last ends at ``len(text)``.

    Parameters
    ----------
    text:
        The document.
    count_tokens:
        ``str -> int``, the model's token count.
    window_tokens:
        The most tokens a window may hold (at least 1).

    Returns
    -------
    list[tuple[int, int]]
        ``(start, end)`` character offsets.

    Raises
    ------
    ConfigError
        ``window_tokens`` is below 1.
    """
    if window_tokens < 1:
        msg = f"window_tokens must be at least 1, got {window_tokens}"
        raise ConfigError(msg)
    if not text:
        return [(0, 0)]

    def pieces(a: int, b: int, level: int) -> list[tuple[int, int]]:
        if count_tokens(text[a:b]) <= window_tokens:
            return [(a, b)]
        if level == len(_BREAKS):
            # A hard cut: the longest prefix that fits (at least one character).
            lo, hi = a + 1, b
            while lo < hi:
                mid = (lo + hi + 1) // 2
                if count_tokens(text[a:mid]) <= window_tokens:
                    lo = mid
                else:
                    hi = mid - 1
            return [(a, lo), *pieces(lo, b, level)] if lo < b else [(a, b)]
        out: list[tuple[int, int]] = []
        for x, y in _split(text, a, b, level):
            out.extend(pieces(x, y, level + 1))
        return out

    result: list[tuple[int, int]] = []
    cur_start: int | None = None
    cur_end = 0
    for a, b in pieces(0, len(text), 0):
        if cur_start is not None and count_tokens(text[cur_start:b]) <= window_tokens:
            cur_end = b
            continue
        if cur_start is not None:
            result.append((cur_start, cur_end))
        cur_start, cur_end = a, b
    if cur_start is not None:
        result.append((cur_start, cur_end))
    return result
