"""Matching a parsed skeleton back to the document's text (:func:`match_skeleton`): each
paragraph's anchors are found with a forward cursor, whitespace ignored, and whatever no
paragraph claimed goes to the nearest section, so no text is ever lost."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from hrefine.longrefiner._blocks import WS
from hrefine.longrefiner.skeleton_parse import Skeleton
from hrefine.longrefiner.spans import Span, check_cover, fill_gaps, trimmed

__all__ = ["MatchReport", "match_skeleton"]


@dataclass
class MatchReport:
    """How a skeleton matched its text."""

    paragraphs: int = 0
    """Paragraphs the skeleton gave."""
    matched: int = 0
    """Paragraphs whose head was found (in order, after the previous one)."""
    unmatched: int = 0
    """Paragraphs not found (skipped; their text goes to the nearest section)."""
    tails_missed: int = 0
    """Matched paragraphs whose tail was not found (the paragraph ends at its head)."""
    recovered_chars: int = 0
    """Characters of text no paragraph claimed, given to the nearest section."""
    problems: list[str] = field(default_factory=list)
    """The skeleton's problems and the matcher's, one line each."""


class _Compact:
    """The text without whitespace, and where each of its characters is in the text."""

    def __init__(self, text: str, start: int, end: int) -> None:
        self.offsets = [i for i in range(start, end) if not text[i].isspace()]
        self.chars = "".join(text[i] for i in self.offsets)


def _squeeze(s: str) -> str:
    return WS.sub("", s)


def _pieces(anchor: str) -> list[str]:
    """An anchor's words, or its characters when it has no spaces (Chinese, Japanese)."""
    words = anchor.split()
    return words if len(words) > 1 else list(anchor.strip())


_MIN_ANCHOR = 6  # characters: shorter prefixes match too much by chance
_WHOLE_ANCHOR = 8  # words tried at each end of a whole paragraph that is not found as written


def _find_head(c: _Compact, head: str, cursor: int) -> tuple[int, int] | None:
    """Where ``head`` (or its longest prefix that is still specific) starts at or after
    ``cursor``, as compact ``(start, end)``."""
    pieces = _pieces(head)
    full = _squeeze(head)
    # The whole head, then shorter prefixes of at most 2k pieces (a whole paragraph that is
    # not there as written is tried by its ends instead: see match_skeleton).
    sizes = [len(pieces), *range(min(len(pieces) - 1, 2 * _WHOLE_ANCHOR), 0, -1)]
    for n in sizes:
        probe = full if n == len(pieces) else _squeeze("".join(pieces[:n]))
        if len(probe) < min(_MIN_ANCHOR, len(full)):
            break
        at = c.chars.find(probe, cursor)
        if at >= 0:
            return at, at + len(probe)
    # The first word may differ (a token cut in two): try without it.
    if len(pieces) > 2:
        probe = _squeeze("".join(pieces[1:]))
        if len(probe) >= _MIN_ANCHOR:
            at = c.chars.find(probe, cursor)
            if at >= 0:
                return at, at + len(probe)
    return None


def _find_tail(c: _Compact, tail: str, cursor: int, limit: int, *, last: bool) -> int | None:
    """Compact end of ``tail`` (or its longest specific suffix) in ``[cursor, limit)``: the
    last occurrence when ``last`` (``limit`` is then where the next paragraph starts), else
    the first."""
    pieces = _pieces(tail)
    full = _squeeze(tail)
    sizes = [len(pieces), *range(min(len(pieces) - 1, 2 * _WHOLE_ANCHOR), 0, -1)]
    probes = [full if n == len(pieces) else _squeeze("".join(pieces[-n:])) for n in sizes]
    if len(pieces) > 2:  # the last word may differ
        probes.append(_squeeze("".join(pieces[:-1])))
    for probe in probes:
        if len(probe) < min(_MIN_ANCHOR, len(full)):
            continue
        at = c.chars.rfind(probe, cursor, limit) if last else c.chars.find(probe, cursor, limit)
        if at >= 0:
            return at + len(probe)
    return None


# A wiki's "[edit]" link after a heading's text is no part of its title.
_EDIT_LINK = re.compile(r"\s*[\[(]\s*edit\s*[\])]\s*$", re.IGNORECASE)


def _heading_key(line: str) -> str:
    """A heading line or title as compared: no whitespace, edit link or closing ``.``/``:``."""
    return _squeeze(_EDIT_LINK.sub("", line)).rstrip(".:").casefold()


def _headings_before(
    text: str, lo: int, start: int, path: tuple[str, ...], opened: int
) -> list[Span]:
    """The titles of the sections a part opens (``path[opened:]``) written as the last lines
    before its first paragraph, innermost last, as heading spans (a title that is not a
    line of its own is passed over)."""
    out: list[Span] = []
    hi = start
    for depth in range(len(path), opened, -1):
        cut = trimmed(text, lo, hi)
        if cut is None:
            break
        line_start = max(text.rfind("\n", cut[0], cut[1]) + 1, cut[0])
        line = trimmed(text, line_start, cut[1])
        if line is None:
            break
        norm = _heading_key(text[line[0] : line[1]])
        if not norm:
            break
        if norm != _heading_key(path[depth - 1]):
            continue  # a section whose title is not a line of its own ("1.1 …" clauses)
        out.append(Span(line[0], line[1], path[:depth], heading=True))
        hi = line[0]
    return out[::-1]


def match_skeleton(
    text: str, skeleton: Skeleton, *, start: int = 0, end: int | None = None
) -> tuple[list[Span], MatchReport]:
    """Spans of ``text[start:end]`` from a parsed skeleton.

    For each paragraph in order, its head is found at or after the cursor, ignoring
    whitespace (a prefix of its words is tried when the whole head is not there), then its
    tail after the head (a suffix of its words likewise): the span runs from the head's start
    to the tail's end, or is the whole paragraph when the skeleton wrote it whole. Paragraphs
    not found are skipped and counted. Text no paragraph claimed goes to the section before
    it (:func:`~hrefine.longrefiner.spans.fill_gaps`), so the spans always cover the window,
    however broken or cut off the output. A section's title written as the line right before
    its first paragraph becomes that section's heading span.

    Parameters
    ----------
    text:
        The document.
    skeleton:
        The parsed output of the structuring model for this window.
    start, end:
        The window of ``text`` the skeleton describes (default: all of it).

    Returns
    -------
    tuple[list[Span], MatchReport]
        The spans (sorted, disjoint, covering every non-whitespace character of the window)
        and how the matching went.
    """
    stop = len(text) if end is None else min(end, len(text))
    c = _Compact(text, start, stop)
    report = MatchReport(paragraphs=skeleton.paragraph_count, problems=list(skeleton.problems))
    spans: list[Span] = []
    cursor = 0  # compact index
    last_end = start  # text index
    prev_path: tuple[str, ...] = ()
    flat = [
        (part, head, tail, i == 0)
        for part in skeleton.parts
        for i, (head, tail) in enumerate(part.paragraphs)
    ]
    first_pending = False
    for k, (part, head, tail, first) in enumerate(flat):
        first_pending = first_pending or first
        found = _find_head(c, head, cursor)
        if found is None and tail is None:
            # A whole paragraph the model altered: try its first and last words.
            words = _pieces(head)
            if len(words) > 2 * _WHOLE_ANCHOR:
                found = _find_head(c, " ".join(words[:_WHOLE_ANCHOR]), cursor)
                tail = " ".join(words[-_WHOLE_ANCHOR:])
        if found is None:
            report.unmatched += 1
            continue
        h_start, h_end = found
        p_end = h_end
        if tail is not None:
            # The tail ends the paragraph: its last occurrence before the next paragraph's
            # head (an 8-token tail can repeat inside its paragraph), else its first.
            nxt = _find_head(c, flat[k + 1][1], h_end) if k + 1 < len(flat) else None
            got = None if nxt is None else _find_tail(c, tail, h_start, nxt[0], last=True)
            if got is None:
                got = _find_tail(c, tail, h_end, len(c.chars), last=False)
            if got is None:  # the tail may overlap the head in a short paragraph
                got = _find_tail(c, tail, h_start, len(c.chars), last=False)
            if got is None or got < h_end:
                report.tails_missed += 1
            else:
                p_end = got
        s_text, e_text = c.offsets[h_start], c.offsets[p_end - 1] + 1
        if first_pending and part.path:
            opened = 0
            while (
                opened < min(len(prev_path), len(part.path))
                and prev_path[opened] == part.path[opened]
            ):
                opened += 1
            spans.extend(_headings_before(text, last_end, s_text, part.path, opened))
        spans.append(Span(s_text, e_text, part.path))
        report.matched += 1
        first_pending = False
        prev_path = part.path
        cursor = p_end
        last_end = e_text
    # Anything before the window or after it is not ours: fill only inside the window.
    window = [Span(s.start - start, s.end - start, s.path, s.heading) for s in spans]
    filled = fill_gaps(text[start:stop], window)
    covered = sum(s.end - s.start for s in window)
    report.recovered_chars = sum(s.end - s.start for s in filled) - covered
    out = [Span(s.start + start, s.end + start, s.path, s.heading) for s in filled]
    if report.unmatched:
        report.problems.append(f"{report.unmatched} paragraph(s) not found in the text")
    check_cover(text[start:stop], filled)
    return out, report
