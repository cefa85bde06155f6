"""Sections from numbered clauses, as contracts and reports number them.

A number opens a section only where the numbering says it should: sections and articles are
the best increasing chains of their numbers over the whole text (a list inside a clause,
numbered the same way, loses to the headings), sub-sections must belong to the section they
are in, and tables of contents and running page headers are passed over. See
:func:`numbered_spans`.
"""

from __future__ import annotations

import bisect
import itertools
import re
from dataclasses import dataclass

from hrefine.longrefiner._blocks import GLUED_NUMBER, WS, clean_title, paragraph_units
from hrefine.longrefiner.spans import Span, fill_gaps, trimmed

__all__ = ["numbered_spans"]

_EXHIBIT_WORDS = r"EXHIBIT|Exhibit|SCHEDULE|Schedule|ANNEX|Annex|APPENDIX|Appendix"
_MARKER = re.compile(
    rf"(?P<exhibit>(?:{_EXHIBIT_WORDS})[ \t]+[A-Z0-9][\w.-]*)"
    r"|(?:ARTICLE|Article)[ \t]+(?P<article>[IVXLC]{1,7}|\d{1,3})\b\.?"
    r"|(?P<roman>[IVXL]{1,6})\.(?=\s)"
    r"|(?:(?:SECTION|Section)[ \t]+)?(?P<number>\d{1,3}(?:\.\d{1,3}){0,4})(?P<dot>\.?)"
    r"(?=\s|(?<=\.)[A-Z][A-Z])"
)
# Where an inline clause may start: after the end of a sentence or clause, on the same line.
_INLINE = re.compile(r"(?<=[.;:!?)\]\"\u201d])[ \t]+(?=[\dSA])")
# A line's start; a page number glued before a clause number ("3 2.  GRANT") is skipped.
_LINE_START = re.compile(
    rf"^[ \t]*(?:\d{{1,3}}[ \t]+(?=\d{{1,3}}\.\s|(?:{_EXHIBIT_WORDS})[ \t]))?(?=\S)", re.MULTILINE
)
# A section's first clause run on after its title without punctuation ("4. Conduct 4.1 LEA").
_LOOSE = re.compile(r"(?<=[A-Za-z])[ \t]+(?=\d)")
_LOOSE_REACH = 120
_LISTING_RUN = 3
_BARE_HEADING = re.compile(
    rf"[ \t]{{2,}}(?!{_EXHIBIT_WORDS.upper()})[A-Z][A-Z ,;&'-]{{2,80}}\.?[ \t]*$"
)
# A title phrase after the number: a few capitalised words up to a full stop or colon.
_TITLE_PHRASE = re.compile(r"([A-Z][^.;:\n]{0,80}?)[.:](?:\s|$)")
_DEFINED_TERM = re.compile(r"([\"\u201c][^\"\u201d\n]{1,60}[\"\u201d])")
_SMALL_WORDS = frozenset(
    {"of", "and", "the", "for", "to", "in", "on", "or", "a", "an", "with", "by", "&", "upon"}
)
_DOT_LEADER = re.compile(r"(?:\.\s?){4,}|_{4,}")
_HEADING_CHARS = 90
_HEADING_WORDS = 12
_ROMAN = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100}


def _roman(s: str) -> int | None:
    total = 0
    prev = 0
    for ch in reversed(s.upper()):
        v = _ROMAN.get(ch)
        if v is None:
            return None
        total = total - v if v < prev else total + v
        prev = max(prev, v)
    return total or None


@dataclass
class _Marker:
    pos: int
    kind: str  # "exhibit", "article" or "number"
    value: tuple[int, ...]
    # An article numbered like the sections ("ARTICLE I" holding 1.1, 1.2): it is section 1.
    merged: bool = False

    @property
    def level(self) -> int:
        if self.kind == "exhibit":
            return -1
        if self.kind == "article":
            return 1 if self.merged else 0
        return len(self.value)

    @property
    def number(self) -> tuple[int, ...] | None:
        """The decimal number this marker stands for, if any."""
        if self.kind == "number" or self.merged:
            return self.value
        return None


def _line_end(text: str, pos: int) -> int:
    end = text.find("\n", pos)
    return len(text) if end < 0 else end


def _titled_words(phrase: str) -> bool:
    words = phrase.split()
    return 0 < len(words) <= 8 and all(
        w[0].isupper() or w[0].isdigit() or w.lower() in _SMALL_WORDS or not w[0].isalpha()
        for w in words
    )


def _is_heading_line(line: str) -> bool:
    """A line that is only a number and a title ("1. DEFINITIONS", "ARTICLE IV  TERM")."""
    flat = WS.sub(" ", line).strip()
    if len(flat) > _HEADING_CHARS or len(flat.split()) > _HEADING_WORDS:
        return False
    if flat.endswith((",", ";")) or _DOT_LEADER.search(flat):
        return False
    m = _MARKER.match(flat)
    rest = flat[m.end() :].strip(" .:-\u2013\u2014") if m is not None else flat
    return not rest or _titled_words(rest.rstrip("."))


def _caps_title(piece: str) -> bool:
    flat = WS.sub(" ", piece).strip().rstrip(".")
    return (
        0 < len(flat.split()) <= 10
        and flat.isupper()
        and not any(c in flat for c in ".;:!?")
        and len(flat) <= _HEADING_CHARS
    )


def _label(marker_text: str) -> str:
    return GLUED_NUMBER.sub(r"\1 ", WS.sub(" ", marker_text).strip())


def _clause_title(marker_text: str, rest: str) -> str:
    """The title of a clause whose line goes on past its heading: its number, plus a short
    title phrase ("2. Term. Unless …" → "2. Term") or a defined term ('1.1 "ASP" means …')."""
    label = _label(marker_text)
    m = _TITLE_PHRASE.match(rest)
    if m is not None and _titled_words(m.group(1)):
        return f"{label} {clean_title(m.group(1))}"
    d = _DEFINED_TERM.match(rest)
    if d is not None:
        return f"{label} {d.group(1)}"
    return label


class _Numbering:
    """The numbering read so far, deciding which sub-section numbers are clauses (the
    sections and articles are chosen beforehand, as chains: see :func:`_chain`)."""

    def __init__(self) -> None:
        self.article: int | None = None
        self.current: tuple[int, ...] = ()

    def accepts(self, value: tuple[int, ...], *, how: str) -> bool:
        """Whether a sub-section number belongs here; ``how`` is where it stands: ``"line"``
        (a line's start), ``"inline"`` (after a sentence's end) or ``"loose"`` (after a
        title without punctuation: only a section's first clause counts)."""
        cur = self.current
        if how == "loose":
            return len(cur) == 1 and value == (*cur, 1)
        parent = value[:-1]
        if cur[: len(parent)] == parent:
            if how == "line":
                return True
            last = cur[len(parent)] if len(cur) > len(parent) else 0
            return value[-1] in (last + 1, last + 2) if last else value[-1] in (1, 2)
        if len(value) == 2 and value[-1] in (0, 1):
            # The first clause of the next section, whose own heading is missing.
            prev = cur[0] if cur else (self.article or 0)
            if how == "line" and prev < value[0] <= prev + 2:
                return True
            return value[0] == prev + 1 or (not cur and value[0] == self.article)
        return False

    def take(self, kind: str, value: tuple[int, ...]) -> None:
        if kind == "exhibit":
            self.article = None
            self.current = ()
        elif kind == "article":
            self.article = value[0]
            self.current = ()
        else:
            self.current = value


def _candidates(text: str) -> list[tuple[int, str, re.Match[str]]]:
    found: dict[int, tuple[int, str, re.Match[str]]] = {}
    for finder, how in ((_LINE_START, "line"), (_INLINE, "inline"), (_LOOSE, "loose")):
        for w in finder.finditer(text):
            pos = w.end()
            if pos in found:
                continue
            m = _MARKER.match(text, pos)
            if m is None:
                continue
            number = m.group("number")
            if how != "line" and number is None:
                continue
            if how == "loose" and (number is None or "." not in number or m.group(0)[0] == "S"):
                continue
            if number is not None and "." not in number and not m.group("dot"):
                # "5 " is a page number or a quantity, "5." a clause; "11   TERM AND
                # TERMINATION." alone on its line is a heading all the same.
                line = text[m.end() : _line_end(text, pos)]
                if how != "line" or not _BARE_HEADING.match(line):
                    continue
            found[pos] = (pos, how, m)
    return [found[p] for p in sorted(found)]


def _marker_value(m: re.Match[str]) -> tuple[str, tuple[int, ...]] | None:
    if m.group("exhibit") is not None:
        return "exhibit", ()
    if m.group("article") is not None:
        raw = m.group("article")
        v = int(raw) if raw.isdigit() else _roman(raw)
        return None if v is None else ("article", (v,))
    if m.group("roman") is not None:
        v = _roman(m.group("roman"))
        return None if v is None else ("article", (v,))
    nums = tuple(int(p) for p in m.group("number").split("."))
    if len(nums) == 2 and nums[-1] == 0:
        nums = nums[:1]  # "3.0 ORDERS" is section 3
    return "number", nums


def _listing_lines(text: str, units: list[tuple[int, int]]) -> set[int]:
    """Starts of the units in runs of three or more short numbered lines with nothing
    between them: a table of contents, a list of exhibits, a list of short items. None of
    them opens a section."""
    short = []
    for s, e in units:
        m = _MARKER.match(text, s)
        line = text[s:e]
        short.append(
            m is not None and "\n" not in line and len(line) <= 120 and len(line.split()) <= 16
        )
    out: set[int] = set()
    i = 0
    while i < len(units):
        j = i
        while j < len(units) and short[j]:
            j += 1
        if j - i >= _LISTING_RUN:
            out.update(s for s, _ in units[i:j])
        i = j + 1
    return out


@dataclass
class _Candidate:
    pos: int
    how: str
    kind: str
    value: tuple[int, ...]
    match: re.Match[str]
    weight: float


def _chain(cands: list[_Candidate]) -> list[_Candidate]:
    """The best run of numbers going up one at a time (a skipped number costs a little, a
    run that does not start at 1 more), weighing each number by how much it looks like a
    heading: the sections of a contract, not the lists inside them numbered the same way.
    Linear: the best run ending at each value so far is kept."""
    best_at: dict[int, tuple[float, int]] = {}  # value -> (score, index) of the best run
    score = [0.0] * len(cands)
    back = [-1] * len(cands)
    for j, c in enumerate(cands):
        v = c.value[0]
        score[j] = c.weight - (0.0 if v == 1 else 0.5 if v == 2 else 1.5)
        for step, cost in ((1, 0.0), (2, 0.5)):
            prev = best_at.get(v - step)
            if prev is not None and prev[0] + c.weight - cost > score[j]:
                score[j] = prev[0] + c.weight - cost
                back[j] = prev[1]
        if v not in best_at or score[j] > best_at[v][0]:
            best_at[v] = (score[j], j)
    if not cands:
        return []
    j = max(range(len(cands)), key=lambda k: score[k])
    out: list[_Candidate] = []
    while j >= 0:
        out.append(cands[j])
        j = back[j]
    return out[::-1]


def _weight(text: str, pos: int, how: str, match: re.Match[str]) -> float:
    line = text[pos : _line_end(text, pos)]
    weight = 1.0 if how == "line" else 0.6
    if _is_heading_line(line):
        weight += 0.6
    elif _clause_title(match.group(0), text[match.end() : match.end() + 200].lstrip()) != _label(
        match.group(0)
    ):
        weight += 0.4  # a clause with a short title: "4. Services. To facilitate …"
    if match.group(0)[:1] in "AaSs":  # "ARTICLE", "Section": said in words
        weight += 0.4
    return weight


def _accepted_markers(
    text: str, units: list[tuple[int, int]]
) -> list[tuple[_Marker, re.Match[str]]]:
    """The candidate numbers that read as clauses, in order.

    Articles and sections are the best chains of their numbers over the whole text
    (:func:`_chain`); sub-sections count when they belong to the section they are in.
    """
    skip = _listing_lines(text, units)
    cands: list[_Candidate] = []
    seen_exhibits: set[str] = set()
    for pos, how, m in _candidates(text):
        kv = _marker_value(m)
        if kv is None or pos in skip:
            continue
        kind, value = kv
        line = text[pos : _line_end(text, pos)]
        if how == "line" and _DOT_LEADER.search(line) and len(line) < 200:
            continue  # a line of a table of contents
        if kind == "exhibit":
            name = clean_title(line).casefold()
            if name in seen_exhibits or not _is_heading_line(line):
                seen_exhibits.add(name)  # a running page header, not a heading
                continue
            seen_exhibits.add(name)
        cands.append(_Candidate(pos, how, kind, value, m, _weight(text, pos, how, m)))
    articles = _chain([c for c in cands if c.kind == "article" and c.how == "line"])
    as_sections: set[int] = set()
    if len(articles) >= 2:
        chosen = {c.pos for c in articles}
    else:
        # No run of articles: a lone "I. DEFINITIONS" before "2. …" is section 1.
        articles = []
        sections = _chain(
            [
                c
                for c in cands
                if (c.kind == "number" and len(c.value) == 1)
                or (c.kind == "article" and c.how == "line")
            ]
        )
        chosen = {c.pos for c in sections}
        as_sections = {c.pos for c in sections if c.kind == "article"}
    first = min(chosen, default=len(text))
    state = _Numbering()
    accepted: list[tuple[_Marker, re.Match[str]]] = []
    current_article: _Marker | None = None
    last_pos = -1
    for c in cands:
        if c.kind == "exhibit":
            if c.how != "line" or c.pos < first:
                continue
        elif c.kind == "article" or len(c.value) == 1:
            if c.pos not in chosen and not (
                # Inside articles, clauses are numbered again in each one (unless the
                # article numbers its clauses 1.1, 1.2 as a section does).
                articles
                and c.kind == "number"
                and c.how == "line"
                and c.pos > first
                and not (current_article is not None and current_article.merged)
            ):
                continue
        else:
            if c.how == "loose" and c.pos - last_pos > _LOOSE_REACH:
                continue
            if not state.accepts(c.value, how=c.how):
                continue
        marker = _Marker(c.pos, c.kind, c.value, merged=c.pos in as_sections)
        if accepted and accepted[-1][0].kind == "article" and c.kind == "number":
            prev = accepted[-1][0]
            prev.merged = prev.merged or (len(c.value) > 1 and c.value[0] == prev.value[0])
        if c.kind == "article":
            current_article = marker
        elif c.kind == "exhibit":
            current_article = None
        accepted.append((marker, c.match))
        state.take(c.kind, c.value)
        last_pos = c.pos
    return accepted


def numbered_spans(text: str) -> list[Span] | None:
    """Sections from numbered clauses, as contracts and reports number them.

    Recognised numbers: ``1.`` (a section), ``1.1``/``1.1.``/``2.3.4`` (sub-sections nested by
    depth), ``3.0`` (section 3), ``Section 5.``, ``11   TERM`` (a bare number before a title
    in capitals, alone on its line), ``ARTICLE IV``/``Article 3``/``IV.`` (articles, above
    the decimal numbers unless an article numbers its clauses ``4.1``, ``4.2``: then it is
    section 4) and ``EXHIBIT``/``SCHEDULE``/``ANNEX`` headings after the body (each starts
    its own numbering; one repeated as a running page header is text).

    A number counts at the start of a line, or after the end of a sentence on the same line
    (clauses run together on one line are cut there). Sections and articles are the best
    runs of their numbers going up one (or two) at a time over the whole text, weighing each
    by how much it looks like a heading, so a list numbered like the sections inside one of
    them, or a stray "5." in a sentence, stays text; a sub-section must belong to the section
    it is in. A table of contents (three or more short numbered lines in a row, or lines with
    dot leaders) stays text.

    A line that is only a number and a short title ("1. DEFINITIONS", "ARTICLE I  TERM") is a
    heading span. A clause that goes on after its number ('1.1 "ASP" means …', "2. Term.
    Unless …") is a paragraph of its own section, titled by its number plus its short title
    or defined term when it has one ("2. Term", '1.1 "ASP"'). Clauses run together on one line
    are cut at their numbers; other paragraphs are as :func:`paragraph_spans` finds them.

    None when the text has fewer than two top-level numbers in order or its numbering starts
    past 2 (a story's "3." and "4."): see :mod:`~hrefine.longrefiner.markup` for what the
    plain-text sources return.
    """
    units = paragraph_units(text)
    accepted = _accepted_markers(text, units)
    tops = [a for a, _ in accepted if a.kind == "article" or len(a.value) == 1]
    if len({(a.kind, a.value[0]) for a in tops}) < 2 or tops[0].value[0] > 2:
        return None  # no numbering, or one that starts in the middle (a story's "3.", "4.")
    cuts = {a.pos: (a, m) for a, m in accepted}
    cut_positions = sorted(cuts)
    spans: list[Span] = []
    stack: list[tuple[_Marker, str]] = []
    bare: int | None = None  # the last span, when it is a heading with a number but no title
    for u_start, u_end in units:
        # The unit, cut at the clause numbers inside it.
        lo = bisect.bisect_left(cut_positions, u_start)
        hi = bisect.bisect_left(cut_positions, u_end)
        bounds = [u_start, *(p for p in cut_positions[lo:hi] if p > u_start), u_end]
        for a, b in itertools.pairwise(bounds):
            piece = trimmed(text, a, b)
            if piece is None:
                continue
            p_start, p_end = piece
            hit = cuts.get(p_start)
            if hit is None:
                if bare is not None and _caps_title(text[p_start:p_end]):
                    # "Article I." then "DEFINITIONS" on the next line: one heading.
                    top, old_title = stack[-1]
                    stack[-1] = (top, f"{old_title} {clean_title(text[p_start:p_end])}")
                    path = tuple(t for _, t in stack)
                    spans[bare] = Span(spans[bare].start, p_end, path, heading=True)
                else:
                    spans.append(Span(p_start, p_end, tuple(t for _, t in stack)))
                bare = None
                continue
            bare = None
            marker, m = hit
            first_end = min(_line_end(text, p_start), p_end)
            line = text[p_start:first_end]
            heading = _is_heading_line(line)
            title = (
                clean_title(line)
                if heading
                else _clause_title(m.group(0), text[m.end() : p_end].lstrip())
            )
            number = marker.number
            while stack and (
                stack[-1][0].level >= marker.level
                or (
                    number is not None
                    and (above := stack[-1][0].number) is not None
                    and number[: len(above)] != above
                )
            ):
                stack.pop()
            stack.append((marker, title))
            path = tuple(t for _, t in stack)
            if heading:
                head = trimmed(text, p_start, first_end)
                assert head is not None
                spans.append(Span(head[0], head[1], path, heading=True))
                rest = trimmed(text, first_end, p_end)
                if rest is not None:
                    spans.append(Span(rest[0], rest[1], path))
                elif not line[m.end() - p_start :].strip(" \t.:-"):
                    bare = len(spans) - 1
            else:
                spans.append(Span(p_start, p_end, path))
    return fill_gaps(text, spans)
