"""Paragraph runs and titles of plain text, shared by the markup structure sources."""

from __future__ import annotations

import re
from collections.abc import Iterator

from hrefine.longrefiner.spans import trimmed

__all__ = [
    "GLUED_NUMBER",
    "WS",
    "clean_title",
    "has_blank_lines",
    "paragraph_units",
    "text_units",
]

_BLANK_LINE = re.compile(r"\n[ \t\f\v\r]*\n")
_LINE = re.compile(r"[^\n]+")
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
    """Trimmed paragraphs of ``text[start:end]``: blank-line blocks, or lines."""
    stop = len(text) if end is None else end
    if blocks:
        pos = start
        for m in _BLANK_LINE.finditer(text, start, stop):
            cut = trimmed(text, pos, m.start())
            if cut is not None:
                yield cut
            pos = m.end()
        cut = trimmed(text, pos, stop)
        if cut is not None:
            yield cut
    else:
        for m in _LINE.finditer(text, start, stop):
            cut = trimmed(text, m.start(), m.end())
            if cut is not None:
                yield cut


def paragraph_units(text: str) -> list[tuple[int, int]]:
    """Trimmed paragraphs of the whole of ``text``: its blank-line blocks when it has blank
    lines, else its lines."""
    return list(text_units(text, blocks=has_blank_lines(text)))
