"""What kind of text a caller passed (HTML, Markdown or plain text), and the HTML of the others.

The pruner works on an HTML tree. Read as HTML, a Markdown table is one paragraph of pipes and
plain text loses its line breaks and lists, so :func:`detect_format` recognises the three
formats from cheap, deterministic signs, and :func:`to_html` writes Markdown and plain text as
the HTML a reader would see (Markdown through ``markdown-it-py``, CommonMark with tables; raw
HTML inside Markdown is shown as text, never run). :func:`markup_fragment` tells when a text is
a piece of HTML cut mid-tag, as a text splitter leaves it.
"""

from __future__ import annotations

import functools
import html as html_lib
import re
from typing import Any, Literal

from hrefine._decode import wide_encoding
from hrefine.errors import ConfigError, InputTypeError
from hrefine.html._load import decode_bytes, to_text
from hrefine.html.tags import BLOCK_TAGS, INLINE_TAGS, JUNK_TAGS, UNSHOWN_TAGS

__all__ = [
    "INPUT_FORMATS",
    "InputFormat",
    "PageInput",
    "as_html",
    "check_input_format",
    "detect_format",
    "markup_fragment",
    "resolve_format",
    "to_html",
]

InputFormat = Literal["html", "markdown", "text"]
#: What a page may be given as: text, or its bytes in any encoding.
PageInput = str | bytes | bytearray | memoryview
#: The values of the ``input_format`` setting.
INPUT_FORMATS: tuple[str, ...] = ("auto", "html", "markdown", "text")

# Detection reads the start of a text: the signs of a format show early, and a 10 MB page is
# told in the time of its first 200,000 characters.
_SAMPLE = 200_000
_HTML_TAGS = (
    BLOCK_TAGS
    | INLINE_TAGS
    | JUNK_TAGS
    | UNSHOWN_TAGS
    | {"img", "br", "hr", "ruby", "rt", "rp", "picture", "abbr", "colgroup", "col", "center"}
)
# A start or end tag; the name may run into junk (NQ's tokenised pages write ``<Th_colspan="2">``).
_TAG = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9]*)(?=[\s/>_])")
_ROOT = re.compile(r"<!doctype\s+html|<html[\s>]|<head[\s>]|<body[\s>]", re.IGNORECASE)
_MD_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+\S", re.MULTILINE)
_MD_FENCE = re.compile(r"^ {0,3}(?:```|~~~)", re.MULTILINE)
_MD_LIST = re.compile(r"^ {0,3}(?:[-*+]|\d{1,9}[.)])[ \t]+\S", re.MULTILINE)
_MD_LINK = re.compile(r"!?\[[^\]\n]{1,300}\]\([^()\[\]\s]{1,1000}(?:\s+\"[^\"\n]*\")?\)")
_MD_TABLE_SEP = re.compile(r"^[ \t]*\|?(?:[ \t]*:?-{3,}:?[ \t]*\|)+(?:[ \t]*:?-{3,}:?[ \t]*)?$")

# Plain text: a line this long is a paragraph of its own (files with one paragraph a line);
# shorter lines in a row are one paragraph, their breaks kept (hard-wrapped prose, verse,
# addresses).
_PARAGRAPH_LINE = 160
_BLANK_LINE = re.compile(r"\n[ \t\f\v]*\n")
_BULLET = re.compile(r"^(?:[-*\u2022])[ \t]+(\S.*)$")
_NUMBERED = re.compile(r"^\d{1,9}[.)][ \t]+(\S.*)$")

# markup_fragment: a fragment's first '>' comes before its first '<' and what precedes it looks
# like the rest of a tag (``ass="x">``, ``td>``, ``"/>``).
_TAG_REST = re.compile(
    r"^/?[A-Za-z][\w:-]*/?$"  # the end of a tag name (``x >`` is a comparison)
    r"|[\w:-]\s*=\s*[\"']"  # an attribute with a quoted value
    r"|[\"']\s*/?$"  # the end of a quoted value
)
_OPEN_TAIL = re.compile(r"^<(!--|/?[A-Za-z][\w:-]*)")
_HEAD_TAGS = 20
_STRAY_CLOSERS = 2


def check_input_format(value: Any) -> None:
    """Raise :class:`~hrefine.errors.ConfigError` unless ``value`` is one of INPUT_FORMATS."""
    if value not in INPUT_FORMATS:
        msg = f"input_format must be one of {', '.join(map(repr, INPUT_FORMATS))}, got {value!r}"
        raise ConfigError(msg)


def _sample(text: PageInput) -> str:
    if isinstance(text, str):
        return text[:_SAMPLE]
    if isinstance(text, (bytes, bytearray, memoryview)):
        data = bytes(text[: 2 * _SAMPLE])
        bom = data[:2] in (b"\xff\xfe", b"\xfe\xff") or data[:4] == b"\x00\x00\xfe\xff"
        if bom or wide_encoding(data[:4096]):
            return decode_bytes(data)[:_SAMPLE]  # UTF-16/32: the tags are not ASCII bytes
        # Tags and Markdown's signs are ASCII in every ASCII-compatible encoding.
        return data.decode("latin-1")[:_SAMPLE]
    msg = f"expected text as str or bytes, got {type(text).__name__}"
    raise InputTypeError(msg)


def detect_format(text: PageInput) -> InputFormat:
    """Whether ``text`` is HTML, Markdown or plain text, from its first 200,000 characters.

    HTML: a doctype or an ``<html>``, ``<head>`` or ``<body>`` tag, or at least two tags of
    HTML's names (lines with such tags outnumbering the lines of Markdown). Markdown: headings
    (``# ``), a pipe table with its ``|---|`` separator row, fenced code or links
    (``[text](url)``); list items then count as Markdown lines too, but alone they are no sign
    (plain contracts and papers number their clauses). Anything else is text. Deterministic
    and cheap (a few regular expressions, no parse: about 2 ms for a 100 kB page).

    Parameters
    ----------
    text:
        The input, as str or bytes.

    Returns
    -------
    str
        ``"html"``, ``"markdown"`` or ``"text"``.

    Examples
    --------
    >>> detect_format("<p>Hello</p><p>world</p>")
    'html'
    >>> detect_format("| a | b |\\n|---|---|\\n| 1 | 2 |")
    'markdown'
    >>> detect_format("Dear Sir,\\nthank you.")
    'text'
    """
    sample = _sample(text)
    if _ROOT.search(sample):
        return "html"
    tags = 0
    for match in _TAG.finditer(sample):
        if match.group(2).lower() in _HTML_TAGS:
            tags += 1
            if tags == 2:
                break
    md_lines = _markdown_lines(sample)
    if tags >= 2 and (not md_lines or _lines_with_tags(sample) > md_lines):
        return "html"
    return "markdown" if md_lines else "text"


def _lines_with_tags(sample: str) -> int:
    return sum(
        1
        for line in sample.splitlines()
        if any(m.group(2).lower() in _HTML_TAGS for m in _TAG.finditer(line))
    )


def _markdown_lines(sample: str) -> int:
    """How many lines of ``sample`` show Markdown (0: none that count)."""
    lines = sample.splitlines()
    table = 0
    if any(_MD_TABLE_SEP.match(line) and "|" in line for line in lines):
        table = sum(1 for line in lines if "|" in line)
    lists = len(_MD_LIST.findall(sample))
    strong = (
        len(_MD_HEADING.findall(sample))
        + len(_MD_FENCE.findall(sample))
        + len(_MD_LINK.findall(sample))
        + table
    )
    # List items alone are no sign: contracts, papers and stories number their clauses and
    # sections, and as Markdown their line breaks and numbers would be lost.
    return strong + lists if strong else 0


@functools.lru_cache(maxsize=1)
def _markdown() -> Any:
    from markdown_it import MarkdownIt  # a core dependency, imported when first needed

    # CommonMark with GitHub's tables and strikethrough; "html": False shows raw HTML as text.
    return MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])


def to_html(text: str | bytes, fmt: str) -> str:
    """``text`` written as an HTML document, read as format ``fmt``.

    Parameters
    ----------
    text:
        The input, as str or bytes (bytes are decoded as HTML pages are).
    fmt:
        ``"html"`` (returned as is), ``"markdown"`` (CommonMark with pipe tables; raw HTML in it
        is escaped, so it shows as text) or ``"text"``: paragraphs are separated by blank
        lines; inside one, consecutive lines are kept apart by ``<br>`` (a line of 160 or more
        characters is a paragraph of its own), and runs of ``- ``, ``* `` or ``1. `` lines
        become lists (a numbered item keeps its own number, clauses are cited by it, in a
        ``<ul>``: an ``<ol>`` would show it twice).

    Returns
    -------
    str
        An ``<html><body>…</body></html>`` document (or ``text`` itself for ``"html"``).

    Raises
    ------
    ConfigError
        ``fmt`` is not one of ``"html"``, ``"markdown"``, ``"text"``.

    Examples
    --------
    >>> to_html("Roses are red,\\nviolets are blue.", "text")
    '<html><body><p>Roses are red,<br>violets are blue.</p></body></html>'
    """
    if fmt not in {"html", "markdown", "text"}:
        msg = f"fmt must be 'html', 'markdown' or 'text', got {fmt!r}"
        raise ConfigError(msg)
    if fmt == "html" and isinstance(text, str):
        return text
    if isinstance(text, (bytes, bytearray, memoryview)):
        text = decode_bytes(bytes(text))
    elif not isinstance(text, str):
        msg = f"expected text as str or bytes, got {type(text).__name__}"
        raise InputTypeError(msg)
    if fmt == "html":
        return text
    body = _markdown().render(text) if fmt == "markdown" else _text_body(text)
    return f"<html><body>{body}</body></html>"


def resolve_format(doc: Any, input_format: str) -> str:
    """The format ``doc`` is read in under the setting ``input_format``: the setting itself, or
    the detected format for ``"auto"``. Anything but str or bytes is called HTML, so that the
    cleaner says what it expected."""
    if input_format != "auto":
        return input_format
    return detect_format(doc) if isinstance(doc, (str, bytes, bytearray, memoryview)) else "html"


def as_html(doc: Any, fmt: str) -> Any:
    """``doc`` as the HTML cleaner takes it: as is when ``fmt`` is ``"html"``, else written as
    HTML by :func:`to_html` (an empty input raises EmptyInputError, as an empty page does)."""
    return doc if fmt == "html" else to_html(to_text(doc), fmt)


def _text_body(text: str) -> str:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    parts: list[str] = []
    for block in _BLANK_LINE.split(text):
        lines = [line.strip() for line in block.split("\n")]
        parts.extend(_block_html([line for line in lines if line]))
    return "".join(parts)


def _block_html(lines: list[str]) -> list[str]:
    """The HTML of one blank-line separated block: paragraphs and lists, in order."""
    out: list[str] = []
    run: list[str] = []  # short lines of one paragraph
    items: list[str] = []
    kind = ""  # the open list's kind: "-" (bullets) or "1" (numbered)

    def flush_run() -> None:
        if run:
            out.append("<p>" + "<br>".join(html_lib.escape(x, quote=False) for x in run) + "</p>")
            run.clear()

    def flush_list() -> None:
        nonlocal kind
        if items:
            lis = "".join(f"<li>{html_lib.escape(x, quote=False)}</li>" for x in items)
            # Numbered items keep their numbers as text, so neither list numbers them again.
            out.append(f"<ul>{lis}</ul>")
            items.clear()
        kind = ""

    for line in lines:
        bullet, numbered = _BULLET.match(line), _NUMBERED.match(line)
        item = bullet or numbered
        if item is not None:
            flush_run()
            tag = "-" if bullet else "1"
            if kind != tag:
                flush_list()
                kind = tag
            items.append(item.group(1) if bullet else line)
            continue
        flush_list()
        if len(line) >= _PARAGRAPH_LINE:
            flush_run()
            run.append(line)
            flush_run()
        else:
            run.append(line)
    flush_run()
    flush_list()
    return out


def markup_fragment(text: str) -> str | None:
    """Why ``text`` looks like a piece of an HTML page cut mid-tag, or None when it does not.

    A text splitter that knows nothing of HTML (LlamaIndex's ``SentenceSplitter``, LangChain's
    ``RecursiveCharacterTextSplitter``) cuts pages anywhere: a piece may start inside a tag or
    an attribute, end in an unclosed ``<tag ...``, or open with end tags whose start tags were
    left in the piece before. Text without HTML tags is never a fragment.

    Parameters
    ----------
    text:
        The text of one node or document.

    Returns
    -------
    str or None
        A short reason (for a log message), or None.

    Examples
    --------
    >>> markup_fragment('ass="infobox">Born 1950</td></tr>')
    'it starts inside a tag: \\'ass="infobox">\\''
    >>> markup_fragment("<p>A whole paragraph.</p>") is None
    True
    """
    tags = [
        (m.start(), m.end(), m.group(1) == "/", m.group(2).lower())
        for m in _TAG.finditer(text)
        if m.group(2).lower() in _HTML_TAGS
    ]
    if not tags:
        return None
    first_close, first_open = text.find(">"), text.find("<")
    if 0 <= first_close < (first_open if first_open >= 0 else len(text)):
        head = text[:first_close].lstrip()
        if len(head) <= 300 and _TAG_REST.search(head):
            return f"it starts inside a tag: {text[: first_close + 1].lstrip()[:60]!r}"
    last_open = text.rfind("<")
    if last_open > text.rfind(">"):
        tail = text[last_open:]
        name = _OPEN_TAIL.match(tail)
        if name and (
            name.group(1) == "!--" or name.group(1).lstrip("/").lower() in _HTML_TAGS or "=" in tail
        ):
            return f"it ends inside a tag: {tail[:60]!r}"
    if not _ROOT.search(text[:2000]):
        stray = _stray_closers(tags[:_HEAD_TAGS])
        if len(stray) >= _STRAY_CLOSERS:
            return f"it opens with end tags whose start tags are not in it: {', '.join(stray)}"
    return None


def _stray_closers(tags: list[tuple[int, int, bool, str]]) -> list[str]:
    """The end tags among ``tags`` that close no open start tag before them."""
    stack: list[str] = []
    stray: list[str] = []
    for _start, _end, closing, name in tags:
        if not closing:
            if name not in {"br", "hr", "img", "wbr", "col", "meta", "link", "input"}:
                stack.append(name)
        elif name in stack:
            while stack and stack.pop() != name:
                pass
        else:
            stray.append(f"</{name}>")
    return stray
