"""A document's structure from its own markup: HTML headings, Markdown headings, numbered
clauses, plain-text title lines, or just its paragraphs.

Each source maps the text to :class:`~hrefine.longrefiner.spans.Span` objects that cover every
non-whitespace character (:func:`~hrefine.longrefiner.spans.check_cover`): a heading line is a
span of its own with the path of the section it opens, and each paragraph is one span, never
split or merged (the tree builder sizes the leaves). No model is involved; every function is
pure and deterministic.

The plain-text sources (:func:`paragraph_spans`, :func:`markdown_spans`,
:func:`heading_line_spans` and :func:`~hrefine.longrefiner.numbered.numbered_spans`) take the
text and return its spans in order, or None when the text does not have their kind of
structure (each says when); :func:`paragraph_spans` always finds some.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable
from typing import Any

from hrefine.longrefiner._blocks import (
    WS,
    clean_title,
    fenced,
    has_blank_lines,
    paragraph_units,
    text_units,
)
from hrefine.longrefiner.numbered import numbered_spans
from hrefine.longrefiner.spans import Span, fill_gaps, trimmed

__all__ = [
    "MARKUP_SOURCES",
    "heading_line_spans",
    "html_spans",
    "markdown_spans",
    "markup_spans",
    "numbered_spans",
    "paragraph_spans",
]

#: The values :func:`markup_spans` reports as its source.
MARKUP_SOURCES = ("html", "markdown", "numbered", "headings", "paragraphs")


def paragraph_spans(text: str) -> list[Span]:
    """The paragraphs of ``text``, in no section: one span a paragraph, all with the path
    ``()``.

    A paragraph is a block between blank lines when the text has blank lines (hard-wrapped
    prose such as QuALITY's stories keeps its line breaks inside the paragraph), else a line
    (one paragraph a line, as in Qasper's papers).
    """
    return [Span(s, e) for s, e in paragraph_units(text)]


# --- Markdown ------------------------------------------------------------------------------

_ATX = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$|^ {0,3}(#{1,6})[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")


def markdown_spans(text: str) -> list[Span] | None:
    """Sections from Markdown headings: ATX (``#`` … ``######``) and setext (``===``/``---``
    underlines), nested by level; the text between headings is split into paragraphs as
    :func:`paragraph_spans` does. Lines inside fenced code are never headings. None when the
    text has no Markdown heading.
    """
    lines: list[tuple[int, int]] = []
    pos = 0
    for line in text.split("\n"):
        lines.append((pos, pos + len(line)))
        pos += len(line) + 1
    headings: list[tuple[int, int, int, str]] = []  # start, end, level, title
    code = fenced(text)
    k = 0
    prev_blank = True
    for i, (s, e) in enumerate(lines):
        line = text[s:e]
        while k < len(code) and code[k][1] < s:
            k += 1
        if k < len(code) and code[k][0] <= s:  # a line of fenced code (its fences included)
            prev_blank = False
            continue
        m = _ATX.match(line)
        if m is not None:
            level = len(m.group(1) or m.group(3))
            title = clean_title(m.group(2) or "")
            if title:
                headings.append((s, e, level, title))
            prev_blank = False
            continue
        if line.strip() and prev_blank and i + 1 < len(lines):
            u = _SETEXT.match(text[lines[i + 1][0] : lines[i + 1][1]])
            if u is not None and len(line.strip()) <= 200 and not line.startswith("    "):
                headings.append(
                    (s, lines[i + 1][1], 1 if u.group(1)[0] == "=" else 2, clean_title(line))
                )
        prev_blank = not line.strip()
    # A setext underline's line is part of its heading: drop headings that start inside one.
    kept: list[tuple[int, int, int, str]] = []
    for h in headings:
        if kept and h[0] < kept[-1][1]:
            continue
        kept.append(h)
    if not kept:
        return None
    blocks = has_blank_lines(text)
    spans: list[Span] = []
    stack: list[tuple[int, str]] = []
    pos = 0
    for s, e, level, title in kept:
        path = tuple(t for _, t in stack)
        spans.extend(Span(a, b, path) for a, b in text_units(text, pos, s, blocks=blocks))
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, title))
        cut = trimmed(text, s, e)
        if cut is not None:
            spans.append(Span(cut[0], cut[1], tuple(t for _, t in stack), heading=True))
        pos = e
    path = tuple(t for _, t in stack)
    spans.extend(Span(a, b, path) for a, b in text_units(text, pos, blocks=blocks))
    return spans


# --- Plain-text title lines ----------------------------------------------------------------

_END_PUNCT = ".,;:!?\"'\u201d)]"
_HEADING_LINE_CHARS = 100
_HEADING_LINE_WORDS = 12
_BODY_WORDS = 8
# A section may not hold more than this share of the text: titles bunched at the top (a
# story's title, byline and illustrator) are not the document's sections.
_MAX_SECTION_SHARE = 0.6


def _title_like(line: str) -> bool:
    flat = line.strip()
    if "\n" in flat or not flat or len(flat) > _HEADING_LINE_CHARS:
        return False
    words = flat.split()
    if len(words) > _HEADING_LINE_WORDS or flat[-1] in _END_PUNCT:
        return False
    if len(words) == 1 and any(c.isdigit() for c in flat):
        return False  # a placeholder on its own line ("DISPLAYFORM0"), not a title
    return (flat[0].isupper() or flat[0].isdigit()) and any(c.isalpha() for c in flat)


def heading_line_spans(text: str) -> list[Span] | None:
    """Sections from plain-text title lines, as in papers flattened to text ("Introduction",
    "Related Work"): a short line (at most 12 words and 100 characters) that starts with a
    capital or a digit, does not end in punctuation, and is followed by a body paragraph (at
    least twice its length and 8 words, ending a sentence), possibly after more title lines.
    A lone word with digits ("DISPLAYFORM0", Qasper's placeholder for an equation) is not a
    title. Sections are flat: plain text does not say which title is below which.

    None when fewer than two title lines are found or they are bunched (one section would
    hold more than 60% of the text).
    """
    units = paragraph_units(text)
    title_like = [_title_like(text[s:e]) for s, e in units]
    heads: list[int] = []
    for i, (s, e) in enumerate(units):
        if not title_like[i]:
            continue
        j = i + 1
        while j < len(units) and title_like[j]:
            j += 1
        if j == len(units):
            continue
        body = text[units[j][0] : units[j][1]].strip()
        if (
            len(body) >= 2 * (e - s)
            and len(body.split()) >= _BODY_WORDS
            and body[-1] in ".!?\"'\u201d)]"
        ):
            heads.append(i)
    if len(heads) < 2:
        return None
    total = sum(e - s for s, e in units)
    bounds = [units[h][0] for h in heads] + [len(text)]
    sizes = [units[heads[0]][0]] + [b - a for a, b in itertools.pairwise(bounds)]
    if max(sizes) > _MAX_SECTION_SHARE * max(total, 1):
        return None
    head_set = set(heads)
    spans: list[Span] = []
    path: tuple[str, ...] = ()
    for i, (s, e) in enumerate(units):
        if i in head_set:
            path = (clean_title(text[s:e]),)
            spans.append(Span(s, e, path, heading=True))
        else:
            spans.append(Span(s, e, path))
    return spans


# --- HTML ----------------------------------------------------------------------------------

_HEADING_TAGS = {f"h{i}": i for i in range(1, 7)}
_EDIT_LINK = re.compile(r"\s*[\[(]\s*edit\s*[\])]\s*$", re.IGNORECASE)


class _HtmlText:
    """Walks a cleaned tree and writes its visible text, one block a line, with spans."""

    def __init__(self, blocks: frozenset[str]) -> None:
        self.blocks = blocks
        self.parts: list[str] = []
        self.length = 0
        self.spans: list[Span] = []
        self.stack: list[tuple[int, str]] = []
        self.line: list[str] = []

    def _emit(
        self, raw: str, *, heading_level: int | None = None, keep_space: bool = False
    ) -> None:
        flat = _pre_text(raw) if keep_space else WS.sub(" ", raw).strip()
        if not flat:
            return
        if heading_level is not None:
            while self.stack and self.stack[-1][0] >= heading_level:
                self.stack.pop()
            # Wikipedia's "[edit]" links are part of the heading's text, not of its title.
            self.stack.append((heading_level, _EDIT_LINK.sub("", flat) or flat))
        if self.parts:
            self.parts.append("\n")
            self.length += 1
        start = self.length
        self.parts.append(flat)
        self.length += len(flat)
        path = tuple(t for _, t in self.stack)
        self.spans.append(Span(start, self.length, path, heading=heading_level is not None))

    def flush(self) -> None:
        if self.line:
            self._emit("".join(self.line))
            self.line = []

    def lines(self) -> list[str]:
        """The blocks written so far, one string each."""
        return [p for p in self.parts if p != "\n"]

    def _cell(self, cell: Any) -> str:
        # A cell is read with the page's own block rules, so a list, <br> or paragraphs in it
        # do not glue their words; its blocks are joined on the row's one line.
        sub = _HtmlText(self.blocks)
        sub.walk(cell)
        sub.flush()
        return _join_cell_lines(WS.sub(" ", line) for line in sub.lines())

    def walk(self, el: Any) -> None:
        tag = el.tag.lower() if isinstance(el.tag, str) else ""
        if tag in _HEADING_TAGS:
            self.flush()
            self._emit("".join(el.itertext()), heading_level=_HEADING_TAGS[tag])
        elif tag == "tr" and el.find(".//table") is None:
            self.flush()
            cells = [self._cell(c) for c in el if isinstance(c.tag, str)]
            self._emit(" | ".join(c for c in cells if c))
        elif tag == "pre":
            # Preformatted text is read as laid out: its line breaks and indentation matter.
            self.flush()
            self._emit("".join(el.itertext()), keep_space=True)
        elif tag == "img":
            # An image shows as its alt text, as the HTML cleaner keeps it (none: nothing).
            alt = (el.get("alt") or "").strip()
            if alt:
                self.line.append(f" {alt} ")
        elif tag in ("script", "style", "head", "template", "noscript"):
            pass
        else:
            block = tag in self.blocks
            if block:
                self.flush()
            if el.text:
                self.line.append(el.text)
            for child in el:
                self.walk(child)
                if child.tail:
                    self.line.append(child.tail)
            if block:
                self.flush()


def _pre_text(raw: str) -> str:
    """``<pre>`` text as laid out, less blank lines around it and the first line's indent (a
    block starts on a character); whitespace inside is kept."""
    lines = raw.rstrip().split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    return "\n".join(lines).strip()


def _join_cell_lines(lines: Iterable[str]) -> str:
    """A cell's blocks on one line: ``"; "`` between them, a space after a block that already
    ends in ``,``, ``;`` or ``:``."""
    out = ""
    for line in lines:
        line = line.strip()
        if not line:
            continue
        if out:
            out += " " if out[-1] in ",;:" else "; "
        out += line
    return out


def html_spans(html: str) -> tuple[str, list[Span]]:
    """The visible text of an HTML page and its sections from ``<h1>``–``<h6>``.

    The page is cleaned first (:func:`hrefine.html.clean.clean_document`: scripts, styles,
    hidden elements and boilerplate such as navigation removed, Natural Questions' glued cell
    spans repaired). Its text is written one block a line: paragraphs, list items, table rows
    (cells joined by ``" | "``, the blocks inside a cell by ``"; "``; a row holding a nested
    table is read as its blocks), whitespace collapsed but inside ``<pre>``, which keeps its
    lines and indentation; an image reads as its ``alt`` text. Headings open sections nested
    by level, titled by their text without Wikipedia's "[edit]" link.

    Parameters
    ----------
    html:
        The page.

    Returns
    -------
    tuple[str, list[Span]]
        The text and its spans: one a block, the heading lines with ``heading=True``.

    Raises
    ------
    EmptyInputError
        The page has no visible text.
    HtmlParseError
        The page could not be parsed.
    """
    from hrefine.html.clean import clean_document
    from hrefine.html.tags import BLOCK_TAGS

    root = clean_document(html)
    writer = _HtmlText(BLOCK_TAGS | {"br"})
    writer.walk(root)
    writer.flush()
    return "".join(writer.parts), writer.spans


# --- Choosing a source ---------------------------------------------------------------------


def _sections(spans: list[Span]) -> int:
    return len({s.path for s in spans if s.path})


def markup_spans(text: str, *, input_format: str = "auto") -> tuple[str, list[Span], str]:
    """A document's text and spans from the best structure its markup has.

    HTML (as :func:`hrefine.html.formats.detect_format` tells it, or ``input_format="html"``)
    is read by :func:`html_spans`, which returns the page's visible text. Markdown by
    :func:`markdown_spans`. Plain text (and Markdown without headings) tries
    :func:`numbered_spans` and :func:`heading_line_spans`: the one that opens more sections
    wins (ties go to the numbering: a contract's capitalised lines are not its structure),
    and a text with neither is split into :func:`paragraph_spans`.

    Parameters
    ----------
    text:
        The document.
    input_format:
        ``"auto"``, ``"html"``, ``"markdown"`` or ``"text"``.

    Returns
    -------
    tuple[str, list[Span], str]
        The text the spans index (the page's visible text for HTML, else ``text`` itself),
        the spans (covering it: :func:`~hrefine.longrefiner.spans.check_cover` passes), and
        the source: ``"html"``, ``"markdown"``, ``"numbered"``, ``"headings"`` or
        ``"paragraphs"``.

    Raises
    ------
    ConfigError
        ``input_format`` is not one of the values above.
    """
    from hrefine.html.formats import check_input_format, detect_format

    check_input_format(input_format)
    fmt = detect_format(text) if input_format == "auto" else input_format
    if fmt == "html":
        plain, spans = html_spans(text)
        return plain, fill_gaps(plain, spans), "html"
    if fmt == "markdown":
        md = markdown_spans(text)
        if md is not None:
            return text, fill_gaps(text, md), "markdown"
    numbered = numbered_spans(text)
    headed = heading_line_spans(text)
    if numbered is not None and (headed is None or _sections(numbered) >= _sections(headed)):
        return text, numbered, "numbered"
    if headed is not None:
        return text, fill_gaps(text, headed), "headings"
    return text, fill_gaps(text, paragraph_spans(text)), "paragraphs"
