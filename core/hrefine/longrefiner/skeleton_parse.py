"""Reading the structuring model's output format, leniently (:func:`parse_skeleton`).

The format, its variants and what is repaired are described in
:mod:`hrefine.longrefiner.skeleton`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from hrefine.longrefiner._blocks import WS

__all__ = ["Skeleton", "SkeletonPart", "parse_skeleton"]

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


@dataclass
class SkeletonPart:
    """One section's paragraphs, in output order."""

    path: tuple[str, ...]
    """Titles of the section and those above it, outermost first; ``()`` is the abstract."""
    paragraphs: list[tuple[str, str | None]] = field(default_factory=list)
    """Each paragraph as ``(head, tail)``: the whole paragraph with ``tail=None``, or its
    first and last tokens around the abbreviation mark.
    """


@dataclass
class Skeleton:
    """A parsed structuring output."""

    parts: list[SkeletonPart] = field(default_factory=list)
    """The sections in output order (a section whose paragraphs are interrupted by a
    sub-section appears again after it).
    """
    problems: list[str] = field(default_factory=list)
    """What was repaired or ignored (missing closing tags, text outside any tag, a cut-off
    end, ...), one line each.
    """
    truncated: bool = False
    """The output ended inside a tag or with sections still open."""

    @property
    def paragraph_count(self) -> int:
        """How many paragraphs the output gave."""
        return sum(len(p.paragraphs) for p in self.parts)


def _level(kind: str) -> int:
    """0 for the abstract, 1 for a section, 1 + the number of "sub"s below it."""
    k = kind.lower()
    return 0 if k == "abstract" else 1 + k.count("sub")


def _clean_title(raw: str | None) -> str:
    title = WS.sub(" ", raw or "").strip()
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
        paras = [p for p in (_paragraph(WS.sub(" ", x)) for x in pieces) if p is not None]
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
