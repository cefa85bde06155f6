"""Lossless HTML cleaning (HtmlRAG §3.2), plus optional, conservative boilerplate removal.

Cleaning removes what a reader never sees or needs (scripts, styles, comments, hidden elements,
attributes without meaning) and compresses structure (single-child wrappers are merged, empty tags
dropped, whitespace collapsed), while headings, lists, tables with their cell structure, image alt
text and link text stay.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import Any, NamedTuple

from hrefine._optional import require
from hrefine.errors import EmptyInputError
from hrefine.html._load import (
    DEFAULT_MAX_INPUT_BYTES,
    drop_block,
    drop_tag,
    drop_tree,
    parse_document,
)
from hrefine.html._text import cell_span, collapse_space
from hrefine.html._unwrap import crowded, unwrap_leaves
from hrefine.html.boilerplate import remove_boilerplate
from hrefine.html.tags import BLOCK_TAGS, GENERIC_TAGS, HEADING_TAGS, JUNK_TAGS, is_hidden

__all__ = ["DEFAULT_KEEP_ATTRS", "clean_document", "clean_html"]

#: Attributes kept by default: they change what a reader understands of the content. A list's
#: numbering (``start``, ``reversed`` on ``<ol>``, ``value`` on ``<li>``) is kept on lists only.
DEFAULT_KEEP_ATTRS: tuple[str, ...] = (
    "alt",
    "colspan",
    "rowspan",
    "datetime",
    "start",
    "reversed",
    "value",
)
# The attributes that number a list, and the one element each means something on.
_NUMBERING = {"start": "ol", "reversed": "ol", "value": "li"}

# Void elements that libxml2 does not know as void: each swallows what follows it up to its
# parent's end tag (``<embed>text</embed>``), so they are unwrapped, never removed with their
# content. Outside <video>/<audio>/<object> (which go whole) they hold nothing of their own.
_SWALLOWING_VOID = frozenset({"embed", "source", "track", "wbr", "keygen", "bgsound"})
# Inline wrappers that carry no meaning once their attributes are gone (<center> is a block).
_UNWRAP_TAGS = frozenset({"span", "font", "nobr", "bdi", "bdo", "big", "tt", "blink"})
_KEEP_EMPTY = frozenset({"td", "th", "br"})
# Crowded elements (see hrefine.html._unwrap) are looked for on pages of more than this many
# characters or bytes: on smaller ones, long runs of unwrapped text cost little.
_SMALL_PAGE = 256_000
# Attributes seen most on real pages (lower case, as the parser writes them); stripping these in
# C leaves the per-element loop a few percent of the elements it would otherwise visit.
_COMMON_ATTRS = frozenset(
    {
        "align", "alt", "bgcolor", "border", "cellpadding", "cellspacing", "class", "color",
        "colspan", "data-file-height", "data-file-width", "datetime", "dir", "height", "href", "id",
        "lang", "rel", "role", "rowspan", "scope", "src", "srcset", "style", "target", "title",
        "valign", "width"
    }
)  # fmt: skip
# A <p> start tag closes these (libxml2): a <p> inside one would not parse back where it was.
_P_CLOSES = frozenset({"b", "big", "i", "s", "small", "strike", "tt", "u", *HEADING_TAGS})
# ... and these close an open <p> (a few obsolete tags besides the blocks).
_P_BREAKERS = BLOCK_TAGS | {"dir", "listing", "xmp"}

# Natural Questions' tokenised HTML glues a cell's span to its tag name (``<Th_colspan="2">``),
# which a parser reads as an unknown element that its ``</Th>`` does not close.
_GLUED_SPAN = re.compile(r"<(t[hd])_((?:col|row)span=\"?\d+\"?)", re.I)
_GLUED_SPAN_BYTES = re.compile(rb"<(t[hd])_((?:col|row)span=\"?\d+\"?)", re.I)


def clean_html(
    html: str | bytes,
    *,
    boilerplate: bool = True,
    keep_attrs: Sequence[str] = DEFAULT_KEEP_ATTRS,
    max_depth: int | None = None,
    max_input_bytes: int | None = DEFAULT_MAX_INPUT_BYTES,
) -> str:
    """Clean an HTML page for an LLM reader.

    Parameters
    ----------
    html:
        The page, as str or bytes (the encoding is detected: BOM, UTF-8, ``<meta charset>``,
        charset-normalizer). Broken markup is parsed leniently; plain text is wrapped.
    boilerplate:
        Also remove navigation, footers, asides, cookie banners and sidebars (by tag, ARIA role
        and class/id words). Conservative: an element holding more than 40% of the page's text is
        never removed, and nothing is removed when the candidates hold more than half of it.
    keep_attrs:
        Attributes to keep; all others are dropped. ``colspan``/``rowspan`` are kept only when
        not 1; ``start``/``reversed`` only on ``<ol>`` (``start`` when not 1), ``value`` only on
        an ``<li>`` of one, each only with a number. Links (``<a>``) are unwrapped to their
        text unless ``"href"`` is kept.
    max_depth:
        Elements nested deeper are unwrapped (their text is kept); at most 245, because libxml2
        cannot nest deeper than 255 levels. None (the default): as deep as libxml2 nests, and
        a page nested deeper than that is flattened to 245 levels instead of truncated.
    max_input_bytes:
        The largest input read (bytes as given, a str counted in UTF-8; default 64 MiB); None:
        no limit.

    Returns
    -------
    str
        The cleaned page as an HTML document string with the original tag names (but a ``<p>``
        that unwrapping left around a block, which would not parse back, becomes a ``<div>``).

    Raises
    ------
    EmptyInputError
        The input is empty, or the page has no visible text at all.
    HtmlParseError
        The input is over ``max_input_bytes``, is a binary file or binary data (a PDF, an
        image, an archive...), or could not be parsed.
    """
    root = clean_document(
        html,
        boilerplate=boilerplate,
        keep_attrs=keep_attrs,
        max_depth=max_depth,
        max_input_bytes=max_input_bytes,
    )
    return serialize(root)


def serialize(root: Any, *, with_tail: bool = False) -> str:
    """Serialise an lxml element (with its subtree) as HTML."""
    etree = require("lxml.etree", "html")
    return str(etree.tostring(root, encoding="unicode", method="html", with_tail=with_tail))


def clean_document(
    html: str | bytes,
    *,
    boilerplate: bool = True,
    keep_attrs: Sequence[str] = DEFAULT_KEEP_ATTRS,
    max_depth: int | None = None,
    max_input_bytes: int | None = DEFAULT_MAX_INPUT_BYTES,
) -> Any:
    """Like :func:`clean_html`, but return the cleaned lxml ``<html>`` element."""
    root = parse_document(unglue_cell_spans(html), max_depth=max_depth, max_bytes=max_input_bytes)
    keep = frozenset(a.lower() for a in keep_attrs)
    _remove_junk(root)
    if boilerplate:
        remove_boilerplate(root)
    crowd = len(html) > _SMALL_PAGE if isinstance(html, (str, bytes, bytearray)) else True
    _strip_attributes(root, keep, keep_links="href" in keep, crowd=crowd)
    _merge_wrappers(_drop_empty(root, *_normalize_whitespace(root)))
    _fix_paragraphs(root)
    if not _has_visible_text(root):
        msg = "the page has no visible text after removing scripts, styles and hidden elements"
        raise EmptyInputError(msg)
    return root


def unglue_cell_spans(html: Any) -> Any:
    """``html`` with each cell span glued to its tag name written as an attribute again.

    Natural Questions writes ``<Th_colspan="2">``: parsed as is, the cell is an unknown
    element that loses its table role and its span, stays open past its ``</Th>`` and reaches
    the output as an unknown tag. Anything but text or bytes is returned as it is (the parser
    says what it expected).

    >>> unglue_cell_spans('<Tr> <Th_colspan="2"> Production </Th> </Tr>')
    '<Tr> <Th colspan="2"> Production </Th> </Tr>'
    """
    if isinstance(html, str):
        return _GLUED_SPAN.sub(r"<\1 \2", html) if "span=" in html else html
    if isinstance(html, (bytes, bytearray)):
        return _GLUED_SPAN_BYTES.sub(rb"<\1 \2", html) if b"span=" in html else html
    return html


class _Queries(NamedTuple):
    """Compiled XPath queries (``lxml.etree.XPath``) that pick each pass's candidates in C."""

    head_junk: Any
    hiding: tuple[Any, ...]
    sortkeys: Any
    attributed: Any
    bare_img: Any
    row_spans: Any


@functools.lru_cache(maxsize=1)
def _queries() -> _Queries:
    """The :class:`_Queries`, compiled once."""
    etree = require("lxml.etree", "html")

    return _Queries(
        # Elements that may be hidden (by attribute) and <head> content other than the title;
        # junk tags are found by lxml's tag filter (an XPath name test per tag is far slower).
        head_junk=etree.XPath("descendant::head/*[not(self::title)]"),
        # Attributes that may hide their element, and MediaWiki's sort keys.
        hiding=tuple(
            etree.XPath(f"descendant::*/@{a}") for a in ("hidden", "aria-hidden", "style")
        ),
        sortkeys=etree.XPath("descendant::span[contains(@class, 'sortkey')]"),
        attributed=etree.XPath("descendant::*[@*]"),
        bare_img=etree.XPath("descendant::img[not(@alt)]"),
        row_spans=etree.XPath("descendant::*/@rowspan"),
    )


def _owners(attributes: Any, root: Any) -> list[Any]:
    """The elements owning the attributes that the XPath ``attributes`` selects in ``root``
    (in no useful order; an element once per attribute)."""
    return [value.getparent() for value in attributes(root)]


def _remove_junk(root: Any) -> None:
    etree = require("lxml.etree", "html")
    # First, so that what a swallowing void element holds is judged (and kept) on its own.
    for el in list(root.iter(*_SWALLOWING_VOID)):
        drop_tag(el)
    # Comments and processing instructions the parser kept, and the junk elements.
    doomed = [
        el for el in root.iterdescendants(etree.Comment, etree.ProcessingInstruction, *JUNK_TAGS)
    ]
    queries = _queries()
    doomed.extend(queries.head_junk(root))
    # An element may be doomed twice (two hiding attributes): the second drop finds it gone.
    hiding = [el for query in queries.hiding for el in _owners(query, root)]
    doomed.extend(el for el in [*hiding, *queries.sortkeys(root)] if is_hidden(el))
    for el in doomed:  # an element inside a removed one goes with it; removing it first is harmless
        drop_tree(el)


def _strip_attributes(
    root: Any, keep: frozenset[str], *, keep_links: bool, crowd: bool = True
) -> None:
    """Drop meaningless attributes, alt-less images and inline wrappers without meaning
    (``crowd``: first unwrap those of elements with many of them, see
    :func:`~hrefine.html._unwrap.unwrap_leaves`)."""
    etree = require("lxml.etree", "html")
    # The common ones go in one pass in C; the loop below sees only what is left.
    etree.strip_attributes(root, *(_COMMON_ATTRS - keep))
    queries = _queries()
    for el in queries.attributed(root):
        attrib = el.attrib
        items = attrib.items()
        if any(name[:1] == "{" for name, _ in items):
            items = _without_braced_names(attrib, items)
        for name, value in items:
            lname = name.lower()
            if (
                lname not in keep
                or (lname in {"colspan", "rowspan"} and value.strip() in {"", "1"})
                or (lname == "alt" and not value.strip())
                or (lname in _NUMBERING and not _numbers(el, lname, value))
            ):
                del attrib[name]
    for el in queries.bare_img(root):
        drop_tree(el)
    # Unwrapped in C; text and tails stay in place, as drop_tag would leave them (as separate
    # text nodes: _normalize_whitespace writes every text back, which joins them again).
    unwrap = (*sorted(_UNWRAP_TAGS), *(() if keep_links else ("a",)))
    for el in crowded(root, unwrap) if crowd else ():
        unwrap_leaves(el, frozenset(unwrap))
    etree.strip_tags(root, *unwrap)


def _numbers(el: Any, name: str, value: str) -> bool:
    """Whether list-numbering attribute ``name`` changes what ``el`` shows: on its own element
    (``start``/``reversed`` on ``<ol>``, ``value`` on ``<li>`` of one), a number (not the
    default 1 for ``start``), or ``reversed`` present."""
    if str(el.tag).lower() != _NUMBERING[name]:
        return False
    if name == "reversed":
        return True
    if name == "value":
        parent = el.getparent()
        if parent is None or str(parent.tag).lower() != "ol":
            return False
    text = value.strip()
    return text.lstrip("-").isdigit() and not (name == "start" and int(text) == 1)


def _without_braced_names(attrib: Any, items: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Remove the attributes whose names start with "{" (``<img {x}alt="s">``): lxml reads
    such a name as ``{namespace}local`` and can neither find nor remove it by name, so the
    element's attributes are cleared and the others set again. Returns the others."""
    attrib.clear()
    kept: list[tuple[str, str]] = []
    for name, value in items:
        if name[:1] == "{":
            continue
        try:
            attrib[name] = value
        except ValueError:  # a name XML refuses ("@click", "(x)"): dropped, as it would be
            continue
        kept.append((name, value))
    return kept


def _normalize_whitespace(root: Any) -> tuple[list[Any], set[Any]]:
    """Collapse white space (``pre`` and ``textarea`` kept as written) and drop the white
    space that only lays out blocks.

    Returns the elements in document order and the set of those with text, a tail or alt text
    inside (for :func:`_drop_empty`, read in the same pass).
    """
    keep_ws = {el for pre in root.iter("pre", "textarea") for el in pre.iter()}
    elements: list[Any] = []
    has_text: set[Any] = set()
    for el in root.iter():
        tag = el.tag
        text = el.text
        tail = el.tail
        if not (keep_ws and el in keep_ws):
            # Written back even when unchanged: the write also joins the text nodes an
            # unwrapped tag left apart ("92" "FS"), which XPath would read as two words.
            if text:
                text = collapse_space(text)
                if text == " " and (tag in BLOCK_TAGS or (len(el) and el[0].tag in BLOCK_TAGS)):
                    text = None
                el.text = text
            if tail:
                tail = collapse_space(tail)
                if tail == " ":
                    if tag in BLOCK_TAGS:
                        tail = None
                    else:
                        nxt = el.getnext()
                        if (nxt is not None and nxt.tag in BLOCK_TAGS) or (
                            nxt is None and el.getparent().tag in BLOCK_TAGS
                        ):
                            tail = None
                el.tail = tail
        if not isinstance(tag, str):
            continue
        elements.append(el)
        # Mark upwards from each text: an element has text if one lies anywhere inside it.
        if (text and not text.isspace()) or (tag == "img" and "alt" in el.attrib):
            cur = el
        elif tail and not tail.isspace():
            cur = el.getparent()
        else:
            continue
        while cur is not None and cur not in has_text:
            has_text.add(cur)
            cur = cur.getparent()
    return elements, has_text


def _has_text(s: str | None) -> bool:
    return bool(s and not s.isspace())


def _spanned_rows(root: Any) -> set[Any]:
    """Rows that a cell of an earlier row in the same row group reaches down into (rowspan)."""
    groups = {
        cell.getparent().getparent()
        for cell in _owners(_queries().row_spans, root)
        if cell.tag in ("td", "th") and cell.getparent().tag == "tr"
    }
    spanned: set[Any] = set()
    for group in groups:
        if group is None:
            continue
        rows = [r for r in group if r.tag == "tr"]
        reach = -1  # index of the last row that a rowspan seen so far covers
        for i, row in enumerate(rows):
            if i <= reach:
                spanned.add(row)
            for cell in row:
                if cell.tag in ("td", "th"):
                    reach = max(reach, i + cell_span(cell, "rowspan", len(rows)) - 1)
    return spanned


def _drop_empty(root: Any, elements: list[Any], has_text: set[Any]) -> list[Any]:
    """Remove the elements of ``elements`` (document order) that are not in ``has_text``,
    except the empty cells, line breaks and rows that keep a table's or a line's shape; return
    the elements left, in document order."""
    # An empty row inside a rowspan still counts for it: without it the next rows shift.
    spanned = _spanned_rows(root)
    dropped: set[Any] = set()
    for el in elements[1:]:
        # An element with text has a parent with text, which is never dropped.
        if el in has_text or el.tag == "body":
            continue
        parent = el.getparent()
        if parent in dropped:
            dropped.add(el)
            continue
        if el.tag in _KEEP_EMPTY and parent in has_text:
            continue  # an empty cell keeps its row's columns aligned; a <br> its line break
        if el in spanned:
            continue
        drop_block(el)
        dropped.add(el)
    return [el for el in elements if el not in dropped] if dropped else elements


def _merge_wrappers(elements: list[Any]) -> None:
    """Merge single-child wrappers; ``elements`` are the page's elements in document order."""
    # Of a wrapper and its only child, the one that stays must be a block if either was: a
    # block's edges set its text apart (``<div><b>Lions</b></div><div><b>Tigers</b></div>``
    # must not become "LionsTigers").
    for el in reversed(elements):  # bottom-up, so chains of wrappers collapse
        if len(el) != 1 or _has_text(el.text):
            continue
        child = el[0]
        if _has_text(child.tail):
            continue
        el_block, child_block = el.tag in BLOCK_TAGS, child.tag in BLOCK_TAGS
        if child.tag in GENERIC_TAGS and not child.attrib and (el_block or not child_block):
            drop_tag(child)
        elif (
            el.tag in GENERIC_TAGS
            and not el.attrib
            and el.getparent() is not None
            and (child_block or not el_block)
        ):
            drop_tag(el)


def _fix_paragraphs(root: Any) -> None:
    """Make each <p> that unwrapping left around a block, or inside a tag that a <p> start tag
    closes, a <div>: as written, it would not parse back (``<p>Intro <div>Alpha</div> outro</p>``
    reads as an empty paragraph, the div and a stray ``</p>``).
    """
    for p in list(root.iter("p")):  # a Python loop: a third of an XPath query's time here
        parent = p.getparent()
        if (parent is not None and parent.tag in _P_CLOSES) or (
            len(p) and any(child.tag in _P_BREAKERS for child in p)
        ):
            p.tag = "div"


def _has_visible_text(root: Any) -> bool:
    if any(s and not s.isspace() for s in root.itertext()):
        return True
    return any(img.get("alt") for img in root.iter("img"))
