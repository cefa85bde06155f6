"""Spans: the one shape every structure source returns, and the checks that nothing is lost.

A structure source (the document's own markup, or a model's skeleton matched back to the text)
maps a document's text to :class:`Span` objects: each span is a run of the text with the titles
of the sections that hold it. Spans are sorted, do not overlap, start and end on non-whitespace,
and together cover every non-whitespace character of the text (:func:`check_cover`), so the
tree built from them (:mod:`hrefine.longrefiner.document`) holds all of the document's text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from hrefine.errors import TreeError

__all__ = ["Span", "check_cover", "fill_gaps", "trimmed", "uncovered"]


class Span(NamedTuple):
    """A run of a document's text and where it sits in the document's sections.

    Attributes
    ----------
    start, end:
        Character offsets into the text (``text[start:end]``), on non-whitespace at both ends.
    path:
        Titles of the enclosing sections, outermost first; ``()`` is text before any section
        (the lead, which the published format calls the abstract).
    heading:
        The span is the heading line of the section ``path`` names (its title as written).
    """

    start: int
    end: int
    path: tuple[str, ...] = ()
    heading: bool = False


def trimmed(text: str, start: int, end: int) -> tuple[int, int] | None:
    """``(start, end)`` narrowed to drop whitespace at both ends; None when only whitespace."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if start < end else None


def uncovered(text: str, spans: Sequence[Span]) -> list[tuple[int, int]]:
    """Runs of non-whitespace text that no span covers, as trimmed ``(start, end)`` pairs.

    ``spans`` must be sorted and disjoint. A run between two spans is returned whole (its inner
    whitespace included), so one gap is one piece of text.
    """
    gaps: list[tuple[int, int]] = []
    pos = 0
    for s in [*spans, Span(len(text), len(text))]:
        if s.start > pos:
            cut = trimmed(text, pos, s.start)
            if cut is not None:
                gaps.append(cut)
        pos = max(pos, s.end)
    return gaps


def fill_gaps(text: str, spans: Sequence[Span]) -> list[Span]:
    """``spans`` plus a span for every uncovered run of text, in the nearest section.

    A run gets the path of the span before it (so text a model skipped stays in the section it
    was read in), or of the span after it when it comes first. Headings are never extended: a
    run after a heading is a paragraph of that heading's section.
    """
    ordered = sorted(spans)
    gaps = uncovered(text, ordered)
    if not gaps:
        return ordered
    out: list[Span] = []
    k = 0
    for g_start, g_end in gaps:
        while k < len(ordered) and ordered[k].start < g_start:
            out.append(ordered[k])
            k += 1
        before = out[-1] if out else None
        after = ordered[k] if k < len(ordered) else None
        path = before.path if before is not None else (after.path if after is not None else ())
        out.append(Span(g_start, g_end, path, False))
    out.extend(ordered[k:])
    return out


def check_cover(text: str, spans: Sequence[Span]) -> None:
    """Raise :class:`~hrefine.errors.TreeError` unless ``spans`` are sorted, disjoint, trimmed
    and cover every non-whitespace character of ``text``."""
    pos = 0
    for s in spans:
        if not (0 <= s.start < s.end <= len(text)):
            msg = f"span {s.start}:{s.end} is empty or outside the text (length {len(text)})"
            raise TreeError(msg)
        if s.start < pos:
            msg = f"span {s.start}:{s.end} overlaps or precedes the span before it (ends {pos})"
            raise TreeError(msg)
        if text[s.start].isspace() or text[s.end - 1].isspace():
            msg = f"span {s.start}:{s.end} starts or ends on whitespace"
            raise TreeError(msg)
        pos = s.end
    gaps = uncovered(text, spans)
    if gaps:
        start, end = gaps[0]
        msg = (
            f"{len(gaps)} run(s) of text are in no span, the first at {start}:{end}: "
            f"{text[start:end][:60]!r}"
        )
        raise TreeError(msg)
