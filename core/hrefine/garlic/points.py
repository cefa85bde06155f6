"""Summary points: the bullet lines of a GARLIC summary answer, each with its span in the answer.

The summary prompt (the paper's Table 4) asks for ``*`` bullets, one event per bullet. Models
also write ``-``, ``•``, ``+`` or numbered (``1.``, ``1)``) bullets, a preamble line, or no
bullets at all, so the parser takes:

- every bullet line, marker stripped (an indented line right after a bullet continues it;
  other lines beside bullets, such as "Here is the summary:", are dropped);
- with no bullet line at all, every non-empty line but those ending in a colon (a heading
  such as "Summary:" introduces points; it is not one);
- nothing from an answer whose lines hold no letter or digit (empty or garbled: the caller
  retries it), unless ``any_text`` is set (the no-model writer's answer: its points are its
  inputs' own text, whatever they hold).

A point repeated word for word within one answer is kept once (small models loop). Each point
keeps the character span of its line(s) in the answer, so the attention its tokens paid to the
inputs can be measured by replaying the answer piece by piece.
"""

from __future__ import annotations

import re
from typing import NamedTuple

__all__ = ["Point", "parse_points"]

# A bullet: optional indent, a marker (* - • + or a number of at most three digits with . or )),
# then whitespace. "**Bold**", "-5 degrees" and "2020. The year" are not bullets.
_BULLET = re.compile(r"^[ \t]*(?:[*\-\u2022+]|\d{1,3}[.)])[ \t]+(?=\S)")
_WORD = re.compile(r"[^\W_]")


class Point(NamedTuple):
    """One summary point of an answer.

    start, end:
        Span of the point's line(s) in the answer, marker included: ``answer[start:end]``.
    """

    text: str
    """The point, marker and surrounding whitespace removed, continuation lines joined by one
    space.
    """
    start: int
    end: int


def _lines(answer: str) -> list[tuple[str, int, int]]:
    """``(line, start, end)`` of every line of ``answer`` (without its newline)."""
    out: list[tuple[str, int, int]] = []
    start = 0
    for line in answer.split("\n"):
        out.append((line, start, start + len(line)))
        start += len(line) + 1
    return out


def parse_points(answer: str, *, any_text: bool = False) -> list[Point]:
    """The summary points of ``answer``, in the order written (see the module docstring).

    Parameters
    ----------
    answer:
        The model's answer to the summary prompt.
    any_text:
        Keep a point that holds no letter or digit (only punctuation, emoji or zero-width
        characters) instead of dropping it.

    Returns
    -------
    list[Point]
        The points; empty when the answer is empty or (without ``any_text``) holds no letter
        or digit.
    """
    lines = _lines(answer)
    bullets = any(_BULLET.match(line) for line, _, _ in lines)
    found: list[tuple[list[str], int, int]] = []  # (pieces, start, end) per point
    open_point = False
    for line, start, end in lines:
        marker = _BULLET.match(line) if bullets else None
        if marker:
            found.append(([line[marker.end() :].strip()], start, end))
            open_point = True
        elif bullets and open_point and line[:1] in (" ", "\t") and line.strip():
            pieces, first, _ = found[-1]
            found[-1] = ([*pieces, line.strip()], first, end)  # a wrapped bullet
        elif not bullets and line.strip() and not line.rstrip().endswith(":"):
            found.append(([line.strip()], start, end))
        else:
            open_point = False
    points: list[Point] = []
    seen: set[str] = set()
    for pieces, start, end in found:
        text = " ".join(" ".join(pieces).split())
        if not (text if any_text else _WORD.search(text)) or text in seen:
            continue
        seen.add(text)
        points.append(Point(text, start, end))
    return points
