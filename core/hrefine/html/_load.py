"""Turn what a caller passes (str or bytes, any encoding, any breakage) into an lxml tree.

libxml2 caps HTML nesting at 255 levels and silently drops everything after the cap, so a page
that reaches the cap is re-parsed from a flattened copy (tags deeper than ``max_depth`` are left
out, their text kept), built by the standard library's tokenizer, which has no depth limit.
"""

from __future__ import annotations

import codecs
import functools
import html as html_lib
import re
from html.parser import HTMLParser
from typing import Any

from hrefine._optional import require
from hrefine.errors import EmptyInputError, HtmlParseError, InputTypeError

__all__ = [
    "LIBXML_MAX_DEPTH",
    "decode_bytes",
    "drop_tag",
    "drop_tree",
    "parse_document",
    "reaches_depth",
    "text_content",
    "to_text",
]

# libxml2's HTML parser stops nesting (and drops the rest of the page) at this depth.
LIBXML_MAX_DEPTH = 255
# The deepest nesting a cleaned page keeps: some margin below libxml2's limit, so the cleaned
# HTML parses back whole.
_MAX_CAP = LIBXML_MAX_DEPTH - 10

_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_META_CHARSET = re.compile(rb"""<meta[^>]{0,400}?charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.I)
# Characters XML (hence lxml) refuses: C0 controls except tab/newline/CR, DEL, lone surrogates.
_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffe\uffff\ud800-\udfff]")
_ILLEGAL_BYTES = bytes([*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F])
_NONCHARS = ("\ufffe".encode(), "\uffff".encode())
_XML_DECL = re.compile(r"^\s*<\?xml[^>]*\?>", re.I)
# charset-normalizer's names for the code pages read as windows-1252, and how much more chaos
# than the best guess windows-1252 may show and still win.
_WESTERN = frozenset({"cp1252", "latin_1", "iso8859_15"})
_WESTERN_TOLERANCE = 0.05
_VOID = frozenset(
    {
        "area", "base", "bgsound", "br", "col", "embed", "hr", "img", "input", "keygen", "link",
        "meta", "param", "source", "track", "wbr"
    }
)  # fmt: skip


def _lookup(name: str) -> str | None:
    try:
        codec = codecs.lookup(name).name
    except LookupError:
        return None
    # Browsers read latin-1 and ascii labels as windows-1252 (the WHATWG encoding standard).
    return "cp1252" if codec in {"latin-1", "iso8859-1", "ascii"} else codec


def decode_bytes(data: bytes) -> str:
    """Decode HTML bytes: byte-order mark, then strict UTF-8, then ``<meta charset>``, then
    charset-normalizer's guess (windows-1252 when that scores about as well), then windows-1252
    with replacement characters.

    Strict UTF-8 comes before the meta tag because pages often declare latin-1 while serving
    UTF-8, and valid multi-byte UTF-8 is very unlikely to be anything else.
    """
    for bom, name in _BOMS:
        if data.startswith(bom):
            return data[len(bom) :].decode(name, errors="replace")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    match = _META_CHARSET.search(data[:8192])
    if match:
        declared = _lookup(match.group(1).decode("ascii", "ignore"))
        if declared is not None:
            try:
                return data.decode(declared)
            except (UnicodeDecodeError, LookupError):
                pass
    try:
        encoding = _guess_legacy(data[:200_000])
    except ImportError:
        encoding = None
    return data.decode(encoding or "cp1252", errors="replace")


def _guess_legacy(sample: bytes) -> str | None:
    """charset-normalizer's guess for undeclared non-UTF-8 bytes, or None for windows-1252.

    A guess that changes how many ``<`` and ``>`` the bytes hold is wrong: no legacy page hides
    markup inside a multi-byte character, but multi-byte code pages read Latin text that way
    (``résumé</p>`` as three CJK characters and ``/p>``). Windows-1252, the web's usual code page
    and the WHATWG default, wins whenever its chaos is within a tolerance of the best guess's:
    Baltic and Central European code pages score as well or slightly better on Western text.
    """
    from charset_normalizer import from_bytes

    angles = sample.count(b"<") + sample.count(b">")

    def keeps_markup(match: Any) -> bool:
        text = str(match)
        return bool(match.encoding) and text.count("<") + text.count(">") == angles

    candidates = [m for m in from_bytes(sample) if keeps_markup(m)]  # best first
    if not candidates:
        return None
    western = next((m for m in candidates if m.encoding in _WESTERN), None)
    if western is None:  # on short samples the search stops before it tries windows-1252
        western = next(iter(from_bytes(sample, cp_isolation=["cp1252"])), None)
    if western is not None and western.chaos <= candidates[0].chaos + _WESTERN_TOLERANCE:
        return None
    return str(candidates[0].encoding)


def to_text(html: str | bytes) -> str:
    """Return ``html`` as a str that lxml accepts; raise EmptyInputError if nothing is there."""
    return _text_and_utf8(html)[0]


def _text_and_utf8(html: str | bytes) -> tuple[str, bytes]:
    """:func:`to_text`'s str and its UTF-8 bytes (which libxml2 parses faster than a str)."""
    if isinstance(html, (bytes, bytearray, memoryview)):
        text = decode_bytes(bytes(html))
    elif isinstance(html, str):
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
    if not text or text.isspace():  # no copy of the page, as strip() would make
        msg = f"the HTML input is empty ({len(html)} characters or bytes of whitespace)"
        raise EmptyInputError(msg)
    return text, data


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


def parse_document(html: str | bytes, *, max_depth: int | None = None) -> Any:
    """Parse ``html`` leniently into an lxml ``<html>`` element (plain ``lxml.etree``).

    Plain etree elements are used rather than ``lxml.html``'s, whose Python-level class lookup
    costs more than the parse itself on pages with 100,000+ elements.

    Parameters
    ----------
    html:
        The page (str or bytes).
    max_depth:
        Elements nested deeper are unwrapped (their text is kept); at most
        ``LIBXML_MAX_DEPTH - 10``. None: as deep as libxml2 nests, and a page nested deeper
        than that is flattened to ``LIBXML_MAX_DEPTH - 10`` levels instead of truncated.

    Raises
    ------
    EmptyInputError
        The input is empty or whitespace.
    HtmlParseError
        lxml could not build a tree from it.
    """
    etree = require("lxml.etree", "html")
    text, data = _text_and_utf8(html)
    parser = etree.HTMLParser(
        remove_comments=True, remove_pis=True, default_doctype=False, encoding="utf-8"
    )
    cap = _MAX_CAP if max_depth is None else max(1, min(max_depth, _MAX_CAP))
    try:
        root = etree.fromstring(data, parser)
        # libxml2 reports where it stopped nesting, so without a max_depth of the caller's
        # the tree need not be walked to find out (a walk is 5% of cleaning a page).
        if root is not None and (
            _hit_depth_limit(parser.error_log)
            or (max_depth is not None and reaches_depth(root, cap))
        ):
            root = etree.fromstring(flatten_markup(text, cap).encode("utf-8"), parser)
    except (ValueError, TypeError, etree.LxmlError) as exc:
        msg = f"could not parse the input as HTML ({len(text)} characters): {exc}"
        raise HtmlParseError(msg) from exc
    if root is None:
        msg = f"could not parse the input as HTML ({len(text)} characters)"
        raise HtmlParseError(msg)
    return root


def _hit_depth_limit(log: Any) -> bool:
    """Whether a parser's error log says that libxml2 stopped at its nesting limit."""
    etree = require("lxml.etree", "html")
    # libxml2 reports this error even past its cap of 100 reported errors (it stops the parse).
    return any(
        e.type == etree.ErrorTypes.ERR_RESOURCE_LIMIT or "Excessive depth" in e.message for e in log
    )


def text_content(el: Any) -> str:
    """All text inside ``el`` (no tail), as the browser would concatenate it."""
    return "".join(el.itertext())


def drop_tree(el: Any) -> None:
    """Remove ``el`` and everything inside it, keeping its tail text in place."""
    parent = el.getparent()
    if parent is None:
        return
    if el.tail:
        prev = el.getprevious()
        if prev is not None:
            prev.tail = (prev.tail or "") + el.tail
        else:
            parent.text = (parent.text or "") + el.tail
    parent.remove(el)


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
        if prev is not None:
            prev.tail = (prev.tail or "") + el.text
        else:
            parent.text = (parent.text or "") + el.text
    children = list(el)
    for child in children:
        el.addprevious(child)  # the child's tail travels with it
    if el.tail:
        last = children[-1] if children else el.getprevious()
        if last is not None:
            last.tail = (last.tail or "") + el.tail
        else:
            parent.text = (parent.text or "") + el.tail
    parent.remove(el)
