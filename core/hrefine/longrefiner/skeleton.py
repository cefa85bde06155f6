"""The structuring model's output format: parse it leniently, match it back to the text, and
write it from spans.

The authors' structuring adapter writes a document as
``<abstract>P<br>P</abstract><section: T>P<br>P<sub-section: T2>P</sub-section: T2></section: T>``
where each paragraph ``P`` is either the whole paragraph or its first k=8 tokens, ``...`` and
its last 8 tokens. Real outputs differ: ``<skip>`` or ``<...>`` instead of ``...``, quoted titles
(``<sub-section: "T">``; the official parser accepted only those), ``<subsection: T>``, missing
closing tags, newlines instead of ``<br>``, and output cut off mid-tag. :func:`parse_skeleton`
accepts all of them and notes what it repaired; :func:`match_skeleton` finds each paragraph's
anchors in the text with a forward cursor, ignoring whitespace (anchors that cross a line
break match, text without spaces such as Chinese too), and gives whatever no paragraph
claimed to the nearest section, so no text is ever lost.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from hrefine.errors import ConfigError
from hrefine.longrefiner.spans import Span, check_cover, fill_gaps, trimmed

__all__ = [
    "MatchReport",
    "Skeleton",
    "SkeletonPart",
    "abbreviate",
    "match_skeleton",
    "parse_skeleton",
    "skeleton_from_spans",
    "windows",
]

# An opening or closing tag: abstract, section, sub-section (any number of "sub"s, with or
# without hyphens), its title after a colon, quoted or not.
_TAG = re.compile(
    r"<\s*(?P<close>/)?\s*(?P<kind>abstract|(?:sub[-_ ]?)*section)\s*"
    r"(?::\s*(?P<title>[^<>]*?))?\s*>",
    re.IGNORECASE,
)
_BR = re.compile(r"<\s*br\s*/?\s*>", re.IGNORECASE)
_SKIP = re.compile(r"<\s*skip\s*/?\s*>|<\s*(?:\.\.\.|\u2026)\s*>", re.IGNORECASE)
_ELLIPSIS = re.compile(r"\.\.\.|\u2026")
# The start of a tag the output was cut off in ("<sub-sec", "</section: Ti"); a "<" in
# prose ("x < 5") is not one.
_OPEN_TAIL = re.compile(r"<\s*/?\s*(?:[A-Za-z]|\.\.)[^<>\n]{0,300}$")
_QUOTES = "\"'\u201c\u201d\u2018\u2019`"
_WS = re.compile(r"\s+")


@dataclass
class SkeletonPart:
    """One section's paragraphs, in output order.

    Attributes
    ----------
    path:
        Titles of the section and those above it, outermost first; ``()`` is the abstract.
    paragraphs:
        Each paragraph as ``(head, tail)``: the whole paragraph with ``tail=None``, or its
        first and last tokens around the abbreviation mark.
    """

    path: tuple[str, ...]
    paragraphs: list[tuple[str, str | None]] = field(default_factory=list)


@dataclass
class Skeleton:
    """A parsed structuring output.

    Attributes
    ----------
    parts:
        The sections in output order (a section whose paragraphs are interrupted by a
        sub-section appears again after it).
    problems:
        What was repaired or ignored (missing closing tags, text outside any tag, a cut-off
        end, ...), one line each.
    truncated:
        The output ended inside a tag or with sections still open.
    """

    parts: list[SkeletonPart] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    truncated: bool = False

    @property
    def paragraph_count(self) -> int:
        """How many paragraphs the output gave."""
        return sum(len(p.paragraphs) for p in self.parts)


@dataclass
class MatchReport:
    """How a skeleton matched its text.

    Attributes
    ----------
    paragraphs:
        Paragraphs the skeleton gave.
    matched:
        Paragraphs whose head was found (in order, after the previous one).
    unmatched:
        Paragraphs not found (skipped; their text goes to the nearest section).
    tails_missed:
        Matched paragraphs whose tail was not found (the paragraph ends at its head).
    recovered_chars:
        Characters of text no paragraph claimed, given to the nearest section.
    problems:
        The skeleton's problems and the matcher's, one line each.
    """

    paragraphs: int = 0
    matched: int = 0
    unmatched: int = 0
    tails_missed: int = 0
    recovered_chars: int = 0
    problems: list[str] = field(default_factory=list)


def _level(kind: str) -> int:
    """0 for the abstract, 1 for a section, 1 + the number of "sub"s below it."""
    k = kind.lower()
    return 0 if k == "abstract" else 1 + k.count("sub")


def _clean_title(raw: str | None) -> str:
    title = _WS.sub(" ", raw or "").strip()
    if len(title) >= 2 and title[0] in _QUOTES and title[-1] in _QUOTES:
        title = title[1:-1].strip()
    return title


def _paragraph(raw: str) -> tuple[str, str | None] | None:
    """A paragraph as ``(head, tail)``; the abbreviation mark nearest the middle splits it
    (a whole paragraph may hold a ``...`` of its own)."""
    text = raw.strip()
    if not text:
        return None
    marks = list(_SKIP.finditer(text)) or list(_ELLIPSIS.finditer(text))
    if not marks:
        return text, None
    mid = len(text) / 2
    m = min(marks, key=lambda x: abs((x.start() + x.end()) / 2 - mid))
    head, tail = text[: m.start()].strip(), text[m.end() :].strip()
    if not head:
        return (tail, None) if tail else None
    return head, (tail or None)


def parse_skeleton(output: str) -> Skeleton:
    """Read a structuring model's output, repairing what real outputs get wrong.

    Accepts quoted and unquoted titles, ``<sub-section:``/``<subsection:``, ``...``,
    ``<skip>`` and ``<...>`` as the abbreviation mark, ``<br>`` or newlines between
    paragraphs, missing or stray closing tags, text outside any tag (kept in the abstract or
    the last section) and output cut off mid-tag. Never raises: garbage gives an empty
    skeleton with its problems noted.

    Parameters
    ----------
    output:
        The model's text.

    Returns
    -------
    Skeleton
        The sections and their abbreviated paragraphs, in output order.
    """
    sk = Skeleton()
    if not isinstance(output, str):
        sk.problems.append(f"expected the output as str, got {type(output).__name__}")
        return sk
    text = output
    tail_tag = _OPEN_TAIL.search(text)
    if tail_tag is not None and _TAG.match(text, tail_tag.start()) is None:
        sk.truncated = True
        sk.problems.append(f"the output ends inside a tag: {tail_tag.group(0)[:40]!r}")
        text = text[: tail_tag.start()]
    by_br = _BR.search(text) is not None
    stack: list[tuple[int, str]] = []  # (level, title); level 0 is the abstract
    seen_tag = False

    def add_text(chunk: str) -> None:
        pieces = _BR.split(chunk) if by_br else chunk.split("\n")
        paras = [p for p in (_paragraph(_WS.sub(" ", x)) for x in pieces) if p is not None]
        if not paras:
            return
        if not stack and seen_tag:
            sk.problems.append("text outside any section was read as the abstract")
        path = tuple(t for lvl, t in stack if lvl > 0)
        if sk.parts and sk.parts[-1].path == path:
            sk.parts[-1].paragraphs.extend(paras)
        else:
            sk.parts.append(SkeletonPart(path, paras))

    pos = 0
    for m in _TAG.finditer(text):
        add_text(text[pos : m.start()])
        pos = m.end()
        seen_tag = True
        level = _level(m.group("kind"))
        if m.group("close"):
            if not any(lvl == level for lvl, _ in stack):
                sk.problems.append(f"a closing tag with nothing open: {m.group(0)[:60]!r}")
                continue
            while stack and stack[-1][0] != level:
                sk.problems.append(f"missing closing tag for {stack[-1][1] or 'abstract'!r}")
                stack.pop()
            stack.pop()
            continue
        title = _clean_title(m.group("title"))
        if level > 0 and not title:
            sk.problems.append(f"a section without a title: {m.group(0)[:60]!r}")
            title = f"Section {sum(1 for p in sk.parts if p.path) + 1}"
        while stack and (stack[-1][0] >= level or (level == 1 and stack[-1][0] == 0)):
            if stack[-1][0] != 0:
                sk.problems.append(f"missing closing tag for {stack[-1][1]!r}")
            stack.pop()
        if level > 1 and not any(lvl >= 1 for lvl, _ in stack):
            sk.problems.append(f"a sub-section outside any section: {title!r}")
        stack.append((level, title))
    add_text(text[pos:])
    if any(lvl > 0 for lvl, _ in stack):
        sk.truncated = True
        sk.problems.append(f"{sum(1 for lvl, _ in stack if lvl > 0)} section(s) never closed")
    if not seen_tag and not sk.parts:
        sk.problems.append("no sections or paragraphs found in the output")
    elif not seen_tag:
        sk.problems.append("no section tags in the output: all of it read as the abstract")
    return sk


# --- Matching --------------------------------------------------------------------------------


class _Compact:
    """The text without whitespace, and where each of its characters is in the text."""

    def __init__(self, text: str, start: int, end: int) -> None:
        self.offsets = [i for i in range(start, end) if not text[i].isspace()]
        self.chars = "".join(text[i] for i in self.offsets)


def _squeeze(s: str) -> str:
    return _WS.sub("", s)


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


# --- Writing the format ---------------------------------------------------------------------


def abbreviate(
    paragraph: str,
    encode: Callable[[str], list[int]],
    decode: Callable[[list[int]], str],
    k: int = 8,
) -> str:
    """A paragraph as the structuring model writes it: whole when it has at most ``2k``
    tokens, else its first ``k`` tokens, ``...`` and its last ``k`` tokens. Line breaks
    become spaces (a line break separates paragraphs in a lenient read).

    Parameters
    ----------
    paragraph:
        The paragraph's text.
    encode, decode:
        The tokenizer: ``str -> list[int]`` and back (a Hugging Face tokenizer's
        ``encode(..., add_special_tokens=False)`` and ``decode``).
    k:
        Tokens kept at each end (the paper's 8).

    Returns
    -------
    str
        The paragraph or its abbreviation.
    """
    ids = encode(paragraph)
    if len(ids) <= 2 * k:
        out = paragraph
    else:
        out = f"{decode(ids[:k]).rstrip()}...{decode(ids[-k:]).lstrip()}"
    return _WS.sub(" ", out).strip()


def _tag(level: int) -> str:
    return "sub-" * (level - 1) + "section"


def skeleton_from_spans(
    text: str,
    spans: Sequence[Span],
    encode: Callable[[str], list[int]],
    decode: Callable[[list[int]], str],
    k: int = 8,
) -> str:
    """Write spans in the structuring model's format (its training target).

    Spans with the path ``()`` form the ``<abstract>``; each path level opens a
    ``<section: T>``, ``<sub-section: T>``, and deeper levels ``<sub-sub-section: T>`` (the
    published format has two levels; :func:`parse_skeleton` reads any number). Heading spans
    are left out (their title is in the tag); paragraphs are joined by ``<br>`` and
    abbreviated by :func:`abbreviate`.

    Parameters
    ----------
    text:
        The document.
    spans:
        Its spans (sorted, as a structure source returns them).
    encode, decode, k:
        As for :func:`abbreviate`.

    Returns
    -------
    str
        The skeleton.
    """
    out: list[str] = []
    open_path: tuple[str, ...] = ()
    in_abstract = False
    need_br = False
    for s in spans:
        if s.heading and s.path:
            continue
        path = s.path
        if path != open_path or (not path and not in_abstract):
            if in_abstract and path:
                out.append("</abstract>")
                in_abstract = False
            common = 0
            while common < min(len(path), len(open_path)) and path[common] == open_path[common]:
                common += 1
            for level in range(len(open_path), common, -1):
                out.append(f"</{_tag(level)}: {open_path[level - 1]}>")
            for level in range(common + 1, len(path) + 1):
                out.append(f"<{_tag(level)}: {path[level - 1]}>")
            if not path and not in_abstract:
                out.append("<abstract>")
                in_abstract = True
            open_path = path
            need_br = False
        if need_br:
            out.append("<br>")
        out.append(abbreviate(text[s.start : s.end], encode, decode, k))
        need_br = True
    if in_abstract:
        out.append("</abstract>")
    for level in range(len(open_path), 0, -1):
        out.append(f"</{_tag(level)}: {open_path[level - 1]}>")
    return "".join(out)


# --- Windows ----------------------------------------------------------------------------------

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
