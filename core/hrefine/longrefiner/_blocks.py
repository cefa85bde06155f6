"""Paragraph runs and titles of plain text, shared by the markup structure sources."""

from __future__ import annotations

import re
from collections.abc import Iterator

from hrefine.longrefiner.spans import trimmed

__all__ = [
    "GLUED_NUMBER",
    "WS",
    "clean_title",
    "fenced",
    "has_blank_lines",
    "paragraph_units",
    "text_units",
]

_BLANK_LINE = re.compile(r"\n[ \t\f\v\r]*\n")
_NEWLINE = re.compile(r"\n")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$")
WS = re.compile(r"\s+")


GLUED_NUMBER = re.compile(r"^(\d+(?:\.\d+)*\.)(?=[A-Za-z])")


def clean_title(raw: str) -> str:
    """A heading's text as a title: whitespace collapsed, closing ``.``/``:`` dropped, a
    number glued to its title parted from it ("1.DEFINITIONS" → "1. DEFINITIONS")."""
    return GLUED_NUMBER.sub(r"\1 ", WS.sub(" ", raw).strip().rstrip(".:").strip())


def has_blank_lines(text: str) -> bool:
    return _BLANK_LINE.search(text.strip()) is not None


def text_units(
    text: str, start: int = 0, end: int | None = None, *, blocks: bool
) -> Iterator[tuple[int, int]]:
    """Trimmed paragraphs of ``text[start:end]``: blank-line blocks, or lines.

    A fenced code block (```` ``` ```` or ``~~~``) is one paragraph whatever blank lines it
    holds, and so is a Markdown table when paragraphs are lines: cut apart, a later piece
    was code or table rows read with no fence or header, and an earlier one left a fence
    open over the rest of the output.
    """
    stop = len(text) if end is None else end
    whole = _kept_whole(text, start, stop, tables=not blocks)
    k = 0
    pos = start
    for m in (_BLANK_LINE if blocks else _NEWLINE).finditer(text, start, stop):
        while k < len(whole) and whole[k][1] <= m.start():
            k += 1
        if k < len(whole) and whole[k][0] <= m.start():
            continue  # a break inside a fenced block or a table
        cut = trimmed(text, pos, m.start())
        if cut is not None:
            yield cut
        pos = m.end()
    cut = trimmed(text, pos, stop)
    if cut is not None:
        yield cut


def _lines(text: str, start: int, stop: int) -> Iterator[tuple[int, int]]:
    pos = start
    while pos < stop:
        nl = text.find("\n", pos, stop)
        end = stop if nl < 0 else nl
        yield pos, end
        pos = end + 1


def fenced(text: str) -> list[tuple[int, int]]:
    """Sorted ``(start, end)`` extents of the fenced code blocks of ``text`` (an unclosed one
    runs to the end): no heading or paragraph break is read inside one."""
    return _kept_whole(text, 0, len(text), tables=False)


def _kept_whole(text: str, start: int, stop: int, *, tables: bool) -> list[tuple[int, int]]:
    """Sorted ``(start, end)`` extents of the fenced code blocks (an unclosed one runs to
    ``stop``) and, with ``tables``, the Markdown tables (a header row, a delimiter row and the
    rows under it) in ``text[start:stop]``."""
    out: list[tuple[int, int]] = []
    fence: tuple[int, str] | None = None  # where the open fence starts, and its marker
    table: int | None = None
    lines = list(_lines(text, start, stop))
    for i, (a, b) in enumerate(lines):
        line = text[a:b]
        if fence is not None:
            f = _FENCE.match(line)
            if (
                f is not None
                and f.group(1)[0] == fence[1][0]
                and len(f.group(1)) >= len(fence[1])
                and not line[f.end() :].strip()
            ):
                out.append((fence[0], b))
                fence = None
            continue
        if table is not None:
            if line.strip() and "|" in line:
                continue
            out.append((table, lines[i - 1][1]))
            table = None
        f = _FENCE.match(line)
        if f is not None:
            fence = (a, f.group(1))
        elif (
            tables
            and line.lstrip().startswith("|")
            and i + 1 < len(lines)
            and _TABLE_RULE.match(text[lines[i + 1][0] : lines[i + 1][1]])
        ):
            table = a
    if fence is not None:
        out.append((fence[0], stop))
    if table is not None:
        out.append((table, lines[-1][1]))
    return out


def paragraph_units(text: str) -> list[tuple[int, int]]:
    """Trimmed paragraphs of the whole of ``text``: its blank-line blocks when it has blank
    lines, else its lines."""
    return list(text_units(text, blocks=has_blank_lines(text)))
