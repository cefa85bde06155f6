"""Turn what a caller passes (str or bytes, any encoding, any breakage) into an lxml tree.

Bytes are decoded by :mod:`hrefine._decode` (which refuses binary files). Before parsing,
the text loses what lxml refuses or libxml2 mishandles: characters XML does not allow (written
or as references such as ``&#1;``), and the ``</body>`` and ``</html>`` end tags of a page with
content after its ``</html>`` (libxml2 drops that content; browsers show it).

libxml2 caps HTML nesting at 255 levels and silently drops everything after the cap, so a page
that reaches the cap is re-parsed from a flattened copy (tags deeper than ``max_depth`` are left
out, their text kept), built by the standard library's tokenizer, which has no depth limit.
It also stops at a text node, attribute value or script over 10,000,000 bytes (an inline
``data:`` image), so a page that meets that limit is parsed again with it lifted.
"""

from __future__ import annotations

import functools
import html as html_lib
import re
from html.parser import HTMLParser
from typing import Any

from hrefine._decode import decode_bytes, refuse_binary_text
from hrefine._optional import require
from hrefine.errors import EmptyInputError, HtmlParseError, InputTypeError
from hrefine.html.tags import BLOCK_TAGS

__all__ = [
    "DEFAULT_MAX_INPUT_BYTES",
    "LIBXML_MAX_DEPTH",
    "check_input_size",
    "decode_bytes",
    "drop_block",
    "drop_tag",
    "drop_tree",
    "parse_document",
    "reaches_depth",
    "text_content",
    "to_text",
]

#: The largest input read by default (64 MiB): a page several times the size of the biggest
#: real ones, which cleans in seconds.
DEFAULT_MAX_INPUT_BYTES = 64 * 1024 * 1024
# libxml2's HTML parser stops nesting (and drops the rest of the page) at this depth.
LIBXML_MAX_DEPTH = 255
# The deepest nesting a cleaned page keeps: some margin below libxml2's limit, so the cleaned
# HTML parses back whole.
_MAX_CAP = LIBXML_MAX_DEPTH - 10

# Characters XML (hence lxml) refuses: C0 controls except tab/newline/CR, DEL, lone surrogates.
_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffe\uffff\ud800-\udfff]")
_ILLEGAL_BYTES = bytes([*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F])
_NONCHARS = ("\ufffe".encode(), "\uffff".encode())
# Character references to those characters (decimal or hex, leading zeros, ";" optional), which
# libxml2 decodes into the tree as they are. &#0; and surrogates it already reads as U+FFFD.
_ILLEGAL_REF = re.compile(
    rb"&#(?:0*(?:[1-8]|1[124-9]|2\d|3[01]|127|6553[45])(?!\d)"
    rb"|[xX]0*(?:[1-8bBcCeEfF]|1[\da-fA-F]|7[fF]|[fF]{3}[eEfF])(?![\da-fA-F]));?"
)
_XML_DECL = re.compile(r"^\s*<\?xml[^>]*\?>", re.I)
# "</html>", and with it "</body>", in any case. Searched in the UTF-8 bytes: a literal prefix
# and one byte a character keep the search at a quarter of a millisecond per MB.
_HTML_END = re.compile(rb"</[hH][tT][mM][lL][\s/]*>")
_PAGE_END = re.compile(rb"</(?:[hH][tT][mM][lL]|[bB][oO][dD][yY])[\s/]*>")
_NON_SPACE = re.compile(rb"\S")
_VOID = frozenset(
    {
        "area", "base", "bgsound", "br", "col", "embed", "hr", "img", "input", "keygen", "link",
        "meta", "param", "source", "track", "wbr"
    }
)  # fmt: skip


def to_text(html: str | bytes, *, max_bytes: int | None = None) -> str:
    """Return ``html`` as a str that lxml accepts (see :func:`parse_document` for what is
    refused and what is raised); ``max_bytes`` bounds the input (None: no bound, as where
    the caller has checked it with :func:`check_input_size`)."""
    return _text_and_utf8(html, max_bytes)[0]


def check_input_size(html: Any, max_bytes: int | None) -> None:
    """Raise :class:`HtmlParseError` if ``html`` is larger than ``max_bytes`` (bytes as
    given, a str as UTF-8); anything else, and ``max_bytes=None``, pass.

    Cheap for a str: its UTF-8 size is only computed when its length alone does not settle it.
    """
    if max_bytes is None:
        return
    if isinstance(html, memoryview):
        size, unit = html.nbytes, "bytes"
    elif isinstance(html, (bytes, bytearray)):
        size, unit = len(html), "bytes"
    elif isinstance(html, str):
        # One to four UTF-8 bytes a character.
        if len(html) > max_bytes:
            size, unit = len(html), "characters"
        elif 4 * len(html) <= max_bytes:
            return
        else:
            size, unit = len(html.encode("utf-8", "surrogatepass")), "bytes in UTF-8"
    else:
        return
    if size > max_bytes:
        msg = (
            f"the input is {size:,} {unit}, over the limit of max_input_bytes={max_bytes:,} "
            "bytes; raise max_input_bytes (None: no limit) or pass the page in parts"
        )
        raise HtmlParseError(msg)


def _text_and_utf8(html: str | bytes, max_bytes: int | None) -> tuple[str, bytes]:
    """:func:`to_text`'s str and its UTF-8 bytes (which libxml2 parses faster than a str)."""
    check_input_size(html, max_bytes)
    if isinstance(html, (bytes, bytearray, memoryview)):
        text = decode_bytes(bytes(html))
    elif isinstance(html, str):
        refuse_binary_text(html)
        text = html
    else:
        msg = f"expected HTML as str or bytes, got {type(html).__name__}"
        raise InputTypeError(msg)
    text = _XML_DECL.sub("", text, count=1)
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: the regex removes them with the rest
        text = _ILLEGAL.sub("", text)
        data = text.encode("utf-8")
    else:
        # The refused characters, removed from the bytes: C0 control bytes never occur inside a
        # multi-byte sequence, and U+FFFE/U+FFFF have fixed encodings. Much faster than the regex.
        kept = data.translate(None, _ILLEGAL_BYTES)
        # Looked for in the str: a page without characters past U+00FF is not even searched.
        if "\ufffe" in text or "\uffff" in text:
            kept = kept.replace(_NONCHARS[0], b"").replace(_NONCHARS[1], b"")
        if len(kept) != len(data):
            data, text = kept, kept.decode("utf-8")
    # What is removed is ASCII, so the bytes stay valid UTF-8.
    fixed = _reopen_after_html(data)
    fixed = _ILLEGAL_REF.sub(b"", fixed)  # the same object when there is nothing to remove
    if len(fixed) != len(data):
        data, text = fixed, fixed.decode("utf-8")
    if not text or text.isspace():  # no copy of the page, as strip() would make
        msg = f"the HTML input is empty ({len(html)} characters or bytes of whitespace)"
        raise EmptyInputError(msg)
    return text, data


def _reopen_after_html(data: bytes) -> bytes:
    """``data`` without its ``</body>`` and ``</html>`` end tags if anything but white space
    follows its first ``</html>`` (two pages in one, a template's stray end tag).

    libxml2 drops everything after ``</html>``; a browser reads it on into the body, as it
    does when neither end tag is there.
    """
    end = _HTML_END.search(data)
    if end is None or _NON_SPACE.search(data, end.end()) is None:
        return data
    return _PAGE_END.sub(b"", data)


class _Flattener(HTMLParser):
    """Re-serialise HTML with every tag nested deeper than ``limit`` left out (text kept)."""

    def __init__(self, limit: int) -> None:
        super().__init__(convert_charrefs=True)
        self.limit = limit
        self.out: list[str] = []
        self.stack: list[tuple[str, bool]] = []  # (tag, emitted)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        emit = len(self.stack) < self.limit
        if emit:
            parts = [tag] + [
                f'{k}="{html_lib.escape(v or "", quote=True)}"'
                for k, v in attrs
                if k.isidentifier()
            ]
            # Void tags self-closed: libxml2 does not know <wbr>, <embed>, <source>... as void
            # and would nest everything after them again, but it honours "/>".
            self.out.append("<" + " ".join(parts) + ("/>" if tag in _VOID else ">"))
        else:
            self.out.append(" ")
        if tag not in _VOID:
            self.stack.append((tag, emit))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in _VOID and self.stack and self.stack[-1][0] == tag:
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        # Close up to the matching open tag; a stray end tag is ignored, as browsers do.
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i][0] == tag:
                for name, emitted in reversed(self.stack[i:]):
                    self.out.append(f"</{name}>" if emitted else " ")
                del self.stack[i:]
                return

    def handle_data(self, data: str) -> None:
        self.out.append(html_lib.escape(data, quote=False))

    def result(self) -> str:
        self.close()
        closing = [f"</{name}>" for name, emitted in reversed(self.stack) if emitted]
        return "".join(self.out + closing)


def flatten_markup(text: str, limit: int) -> str:
    """Rewrite ``text`` so that no element is nested deeper than ``limit`` levels."""
    parser = _Flattener(limit)
    parser.feed(text)
    return parser.result()


def reaches_depth(root: Any, depth: int) -> bool:
    """Whether any element lies ``depth`` or more levels below ``root`` (evaluated in C)."""
    return bool(_depth_query(depth)(root))


@functools.lru_cache(maxsize=8)
def _depth_query(depth: int) -> Any:
    # A path of depth + 1 child steps from the document root: one pass over the levels, where
    # counting every element's ancestors costs the depth once per element.
    etree = require("lxml.etree", "html")
    return etree.XPath("boolean(/" + "/*" * (depth + 1) + ")")


def parse_document(
    html: str | bytes,
    *,
    max_depth: int | None = None,
    max_bytes: int | None = DEFAULT_MAX_INPUT_BYTES,
) -> Any:
    """Parse ``html`` leniently into an lxml ``<html>`` element (plain ``lxml.etree``).

    Plain etree elements are used rather than ``lxml.html``'s, whose Python-level class lookup
    costs more than the parse itself on pages with 100,000+ elements. Characters XML refuses
    are dropped (also when written as references, ``&#1;``), content after ``</html>`` is kept,
    and a text node, attribute value or script over libxml2's 10,000,000-byte limit is read
    whole.

    Parameters
    ----------
    html:
        The page (str or bytes; bytes are decoded as :func:`hrefine._decode.decode_page`
        says).
    max_depth:
        Elements nested deeper are unwrapped (their text is kept); at most
        ``LIBXML_MAX_DEPTH - 10``. None: as deep as libxml2 nests, and a page nested deeper
        than that is flattened to ``LIBXML_MAX_DEPTH - 10`` levels instead of truncated.
    max_bytes:
        The largest input read (bytes as given, a str counted in UTF-8); None: no limit.

    Raises
    ------
    EmptyInputError
        The input is empty or whitespace.
    InputTypeError
        The input is neither str nor bytes.
    HtmlParseError
        The input is over ``max_bytes``, is a binary file or binary data (a PDF, an image, an
        archive...), or lxml could not build a tree from it.
    """
    etree = require("lxml.etree", "html")
    text, data = _text_and_utf8(html, max_bytes)
    cap = _MAX_CAP if max_depth is None else max(1, min(max_depth, _MAX_CAP))
    try:
        root, limits = _parse(data, huge=False)
        huge = "size" in limits
        if huge:
            # Lifting the size limit (XML_PARSE_HUGE) also lifts the nesting limit to 2048
            # levels: the tree is checked for depth below.
            root, limits = _parse(data, huge=True)
        # libxml2 reports where it stopped nesting, so without a max_depth of the caller's
        # the tree need not be walked to find out (a walk is 5% of cleaning a page).
        if root is not None and (
            "depth" in limits or ((max_depth is not None or huge) and reaches_depth(root, cap))
        ):
            flat = flatten_markup(text, cap).encode("utf-8")
            root, limits = _parse(flat, huge=huge)
            if "size" in limits:  # the nesting limit stopped the first parse before this one
                root, limits = _parse(flat, huge=True)
    except (ValueError, TypeError, etree.LxmlError) as exc:
        msg = f"could not parse the input as HTML ({len(text)} characters): {exc}"
        raise HtmlParseError(msg) from exc
    if root is None:
        msg = f"could not parse the input as HTML ({len(text)} characters)"
        raise HtmlParseError(msg)
    return root


def _parse(data: bytes, *, huge: bool) -> tuple[Any, frozenset[str]]:
    """The root libxml2 parses from ``data`` and the limits it stopped at (see _limits_hit);
    ``huge`` lifts its size limits."""
    etree = require("lxml.etree", "html")
    parser = etree.HTMLParser(
        remove_comments=True,
        remove_pis=True,
        default_doctype=False,
        encoding="utf-8",
        huge_tree=huge,
    )
    root = etree.fromstring(data, parser)
    return root, _limits_hit(parser.error_log)


def _limits_hit(log: Any) -> frozenset[str]:
    """Which of libxml2's limits a parser's error log says it stopped at: ``"depth"`` (its
    nesting limit) and ``"size"`` (its limit on a text node, an attribute value, a name)."""
    etree = require("lxml.etree", "html")
    # libxml2 reports these errors even past its cap of 100 reported errors (they stop the
    # parse).
    hit: set[str] = set()
    for e in log:
        if "Excessive depth" in e.message:
            hit.add("depth")
        elif e.type == etree.ErrorTypes.ERR_RESOURCE_LIMIT:
            hit.add("size")
    return frozenset(hit)


def text_content(el: Any) -> str:
    """All text inside ``el`` (no tail), as the browser would concatenate it."""
    return "".join(el.itertext())


def drop_tree(el: Any) -> None:
    """Remove ``el`` and everything inside it, keeping its tail text in place."""
    parent = el.getparent()
    if parent is None:
        return
    if el.tail:
        _append_after(el.getprevious(), parent, el.tail)
    parent.remove(el)


def _append_after(prev: Any, parent: Any, text: str) -> None:
    """Append ``text`` where it reads after ``prev`` (its tail), or, with no ``prev``, to the
    ``parent``'s text (what comes before its first child)."""
    if prev is not None:
        prev.tail = (prev.tail or "") + text
    else:
        parent.text = (parent.text or "") + text


def drop_tag(el: Any) -> None:
    """Replace ``el`` by its content (text and children), keeping its tail.

    Children are moved with ``addprevious`` (constant time each), never located by index, so
    unwrapping thousands of siblings stays linear.
    """
    parent = el.getparent()
    if parent is None:
        return
    prev = el.getprevious()
    if el.text:
        _append_after(prev, parent, el.text)
    children = list(el)
    for child in children:
        el.addprevious(child)  # the child's tail travels with it
    if el.tail:
        _append_after(children[-1] if children else el.getprevious(), parent, el.tail)
    parent.remove(el)


def drop_block(el: Any) -> None:
    """Remove ``el`` with its content; a block between inline text leaves a space, as its line
    break did (``<a>Home</a><ul></ul><a>World</a>`` reads "Home World", not "HomeWorld").
    """
    if el.tag in BLOCK_TAGS and _joins_text(el):
        el.tail = " " + (el.tail or "")
    drop_tree(el)


def _joins_text(el: Any) -> bool:
    """Whether removing ``el`` would bring the inline content on its two sides together."""
    tail = el.tail
    if tail:
        if tail[0].isspace():
            return False
    else:
        nxt = el.getnext()
        if nxt is None or nxt.tag in BLOCK_TAGS:
            return False
    prev = el.getprevious()
    if prev is None:
        before = el.getparent().text
        return bool(before) and not before[-1].isspace()
    if prev.tail:
        return not prev.tail[-1].isspace()
    return prev.tag not in BLOCK_TAGS
