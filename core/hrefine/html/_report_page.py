"""Rebuild a cleaned page as safe report markup, every block outlined, in two views.

The report draws each document from parsed elements and never copies the page's markup. It
writes only tag names from a fixed list (anything else becomes a ``div`` or ``span``, and a tag
the browser would move or drop in its context becomes one with a class), no attribute but
validated ``colspan``/``rowspan``, and every text and attribute value escaped. Scripts, styles,
frames, embedded objects and form controls are left out with their content, event-handler
attributes never pass, links lose their targets (an ``http(s)`` address is shown as a tooltip,
any other scheme is dropped) and images become their alt text.

Each block's element carries ``data-b`` (its index in :attr:`PruneResult.blocks
<hrefine.html.PruneResult.blocks>`) and classes for kept or dropped, tint and reason; a block
made of an element's own text (the text beside its child elements) also marks each run of that
text with ``data-o``. A split paragraph is cut again where the pruner cut it, so that each
piece is drawn as a block of its own.

A big page is written in parts of about :data:`CHUNK` elements, cut only between blocks: a part
ends by closing the elements still open and the next one starts by opening them again (without
their block markers), so that each part is well-formed markup on its own and every block lies
whole in one part. The report draws the first part and keeps the others inert in
``<template>`` elements until they are scrolled to.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from copy import deepcopy
from typing import TYPE_CHECKING, Any

from hrefine._report_frame import esc, esc_text
from hrefine.html._load import LIBXML_MAX_DEPTH, parse_document, text_content
from hrefine.html._text import normalize_space
from hrefine.html.paragraphs import split_element
from hrefine.html.reasons import EMPTY, HEADING_ALONE, TRUNCATED
from hrefine.html.tags import BLOCK_TAGS, HEADING_TAGS, JUNK_TAGS, TABLE_SECTION_TAGS

if TYPE_CHECKING:
    from hrefine.html.result import BlockReport

__all__ = ["CHUNK", "PageWriter"]

# Elements left out with everything inside them: what the cleaner removes, and the rest of what
# draws no text of its own or would break the drawn page (math, forms, obsolete raw-text tags).
_DROPPED = JUNK_TAGS | {
    "col",
    "colgroup",
    "embed",
    "form",
    "listing",
    "math",
    "noembed",
    "noframes",
    "picture",
    "plaintext",
    "portal",
    "source",
    "track",
    "xmp",
}
# Tags written under their own name (in a context where the browser keeps them as they are).
_INLINE_SAME = frozenset(
    {
        "b", "i", "u", "s", "em", "strong", "small", "sub", "sup", "mark", "code", "kbd", "samp",
        "var", "abbr", "cite", "dfn", "q", "time", "del", "ins"
    }
)  # fmt: skip
_FLOW_SAME = frozenset(["ul", "ol", "dl", "pre", "blockquote", "figure", "figcaption"])
_TABLE_PARTS = frozenset({"table", "tr", *TABLE_SECTION_TAGS})
_VOID = frozenset(["br", "hr"])
# Written as a div or span with a class, whatever the context.
_RENAMED = {
    "html": ("div", "p-html"),
    "head": ("div", "p-head"),
    "title": ("div", "p-title"),
    "body": ("div", "p-body"),
    "p": ("div", "p-p"),
    "a": ("span", "p-a"),
}
# Dropped blocks whose element is a paragraph-like box get a reason badge after their text.
_BADGED = frozenset({"p-p", "blockquote", *HEADING_TAGS})
# Over budget, the usual reason of a dropped block, gets no class: one string less per block.
_REASONS = {EMPTY: "em", TRUNCATED: "tr", HEADING_ALONE: "ha"}
_SAFE_URL = re.compile(r"^https?://[^\s\x00-\x1f\x7f]+$", re.I)
_SPAN_LIMIT = 1000
_MARKER = re.compile(r' data-b="\d+"')
# Elements per part of a big page (see the module docstring).
CHUNK = 2000
# Written tags that start a line of their own: a part's height is guessed from their count.
_LINE_TAGS = frozenset({"div", "li", "tr", "dt", "dd", "pre", "blockquote", "figcaption"})


class PageWriter:
    """Rebuild one cleaned page as safe report markup with block markers, in two views.

    The full view draws every element; the kept view only what the renderer would write for
    the LLM (kept blocks and their ancestors). The switch hides the full view with
    ``content-visibility: hidden``, which keeps its layout, so turning it back is quick.

    Parameters
    ----------
    cleaned:
        One document's cleaned HTML, the page the blocks' ``element`` indices point into.
    blocks:
        All the result's blocks; ``data-b`` values are indices into it.
    members:
        Indices of the blocks of this document.
    heat:
        Tint level 1-5 of each kept block (darker: higher score).

    chunk:
        Elements per part: each view is cut into parts of about that many written elements
        (see the module docstring); :data:`CHUNK` when None.

    After :meth:`write`, ``placed`` lists the blocks drawn in the full view; ``size`` is the
    page's element count and ``title`` its ``<title>`` text (cut to 120 characters).
    """

    def __init__(
        self,
        cleaned: str,
        blocks: Sequence[BlockReport],
        members: Sequence[int],
        heat: dict[int, int],
        *,
        chunk: int | None = None,
    ) -> None:
        self.chunk = CHUNK if chunk is None else chunk
        self.root = parse_document(cleaned, max_depth=LIBXML_MAX_DEPTH)
        elements = [e for e in self.root.iter() if isinstance(e.tag, str)]
        self.size = len(elements)
        self.blocks = blocks
        self.heat = heat
        self.leaf: dict[Any, list[int]] = {}
        self.own: dict[Any, list[int]] = {}
        for i in members:
            b = blocks[i]
            if b.element is None or not 0 <= b.element < len(elements):
                continue
            el = elements[b.element]
            (self.own if b.own_text else self.leaf).setdefault(el, []).append(i)
        # Elements with a kept block at or below them: the kept view's skeleton.
        self.alive: set[Any] = set()
        for table in (self.leaf, self.own):
            for el, ids in table.items():
                if any(blocks[i].kept for i in ids):
                    cur = el
                    while cur is not None and cur not in self.alive:
                        self.alive.add(cur)
                        cur = cur.getparent()
        self.placed: list[int] = []
        self._cuts: dict[Any, list[Any] | None] = {}  # split paragraph -> its drawn pieces
        title = self.root.find("head/title")
        self.title = normalize_space(text_content(title))[:120] if title is not None else ""
        self.out: list[str] = []
        self.kept_only = False
        # The part being written: elements open (tag and attributes), blocks open, elements
        # and lines written since the last cut.
        self._open: list[tuple[str, str]] = []
        self._in_block = 0
        self._count = 0
        self._lines = 0
        self._parts: list[tuple[str, int]] = []

    def write(self) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
        """The full view's and the kept view's markup, each as parts ``(markup, lines)``:
        one part unless the view has more than ``chunk`` elements; ``lines`` counts the
        part's line-starting elements (a guess at its height). An empty view has no part."""
        views = []
        for kept_only in (False, True):
            self.out, self._parts, self._open = [], [], []
            self._in_block = self._count = self._lines = 0
            self.kept_only = kept_only
            if not kept_only or self.root in self.alive:
                self._element(self.root, "", False, False)
            if self.out:
                self._parts.append(("".join(self.out), self._lines))
            views.append(self._parts)
        return views[0], views[1]

    def _cut(self) -> None:
        """End the part here (closing what is open) and start the next (opening it again)."""
        self.out.extend(f"</{name}>" for name, _ in reversed(self._open))
        self._parts.append(("".join(self.out), self._lines))
        # Opened again: an own-text block's element keeps its outline, not its marker, so that
        # each block is marked once.
        self.out = [f"<{name}{_MARKER.sub('', attrs)}>" for name, attrs in self._open]
        self._count = self._lines = 0

    def _classes(self, i: int) -> list[str]:
        b = self.blocks[i]
        cls = ["kept", f"k{self.heat.get(i, 1)}"] if b.kept else ["drop"]
        if b.reason in _REASONS:
            cls.append(f"r-{_REASONS[b.reason]}")
        return cls

    def _element(self, el: Any, parent: str, in_heading: bool, inherited: bool) -> None:
        """Write ``el``; ``inherited``: it lies inside a kept block's element."""
        tag = el.tag.lower() if isinstance(el.tag, str) else ""
        if not tag or tag in _DROPPED:
            return
        leaf = self.leaf.get(el, ())
        own = self.own.get(el, ())
        kept_here = any(self.blocks[i].kept for i in (*leaf, *own))
        dropped_here = bool(leaf or own) and not kept_here
        if self.kept_only and not (el in self.alive or (inherited and not dropped_here)):
            return
        if self._count >= self.chunk and not self._in_block:
            self._cut()
        out = self.out
        name, cls = self._tag(tag, parent, in_heading)
        classes = [cls] if cls else []
        if len(leaf) > 1:  # the pieces of a split paragraph
            made = self._recut(el, leaf)
            if made is None:
                self._pieces(name, cls, leaf)
            for piece in made or ():
                self._element(piece, parent, in_heading, inherited)
            return
        attrs = ""
        primary = leaf[0] if leaf else (own[0] if own else None)
        if primary is not None:
            if not self.kept_only:
                self.placed.append(primary)
            b = self.blocks[primary]
            classes += ["hb", *self._classes(primary)]
            if not leaf:
                classes.append("own")
            elif not b.kept and (cls or name) in _BADGED:
                classes.append("bdg")  # a reason badge after the text
            attrs = f' data-b="{primary}"'
        if name in ("td", "th"):
            attrs += _spans(el)
        elif tag == "a":
            href = (el.get("href") or "").strip()
            if _SAFE_URL.match(href):
                attrs += f' title="{esc(href)}"'
        if classes:
            attrs = f' class="{" ".join(classes)}"' + attrs
        out.append(f"<{name}{attrs}>")
        self._count += 1
        self._lines += name in _LINE_TAGS or name in HEADING_TAGS
        if tag == "img":
            alt = normalize_space(el.get("alt") or "")
            if alt:
                out.append(f"[image: {esc_text(alt)}]")
        if name in _VOID:
            return
        block = bool(leaf)
        self._in_block += block
        self._open.append((name, attrs))
        inside = any(self.blocks[i].kept for i in leaf) or (inherited and not dropped_here)
        own_id = own[0] if own else None
        if own_id is not None:
            own_cls = " ".join(["ot", *self._classes(own_id)])
            # The kept view writes text the LLM receives: kept own text, or a kept block's.
            text_shown = not self.kept_only or self.blocks[own_id].kept
        else:
            own_cls = ""
            text_shown = not self.kept_only or inside
        if text_shown:
            self._text(el.text, own_id, own_cls)
        heading = in_heading or name in HEADING_TAGS
        for child in el:
            self._element(child, name, heading, inside)
            if text_shown:
                self._text(child.tail, own_id, own_cls)
        self.out.append(f"</{name}>")
        self._open.pop()
        self._in_block -= block

    def _recut(self, el: Any, pieces: Sequence[int]) -> list[Any] | None:
        """Copies of paragraph ``el`` cut where the pruner cut it, one element per piece (its
        links and emphasis inside), each marked as its piece's block; None when no cut
        gives the pieces' texts (they are then drawn as text, see :meth:`_pieces`).

        The pruner asked for as many pieces as the paragraph's tokens over its limit, and
        got fewer where sentence ends were too few: each count from the pieces' number up
        is tried until one gives the same texts."""
        if el in self._cuts:
            return self._cuts[el]
        want = [normalize_space(self.blocks[i].text) for i in pieces]
        made: list[Any] | None = None
        for count in range(len(pieces), 4 * len(pieces) + 1):
            copy = deepcopy(el)
            el.makeelement("div", {}).append(copy)  # a paragraph is replaced in its parent
            cut = split_element(copy, count)
            if cut is None:
                break
            if [normalize_space(text_content(c)) for c in cut] == want:
                made = cut
                break
        for piece, i in zip(made or (), pieces, strict=False):
            self.leaf[piece] = [i]
            if self.blocks[i].kept:
                self.alive.add(piece)
        self._cuts[el] = made
        return made

    def _pieces(self, name: str, cls: str, pieces: Sequence[int]) -> None:
        """A split paragraph whose cut could not be redone: each piece a marked span of its
        text (inline tags not drawn)."""
        attrs = f' class="{cls}"' if cls else ""
        spans = []
        for i in pieces:
            b = self.blocks[i]
            if self.kept_only and not b.kept:
                continue
            if not self.kept_only:
                self.placed.append(i)
            marks = ["hb", *self._classes(i)]
            if not b.kept and (cls or name) in _BADGED:
                marks.append("bdg")
            spans.append(f'<span class="{" ".join(marks)}" data-b="{i}">{esc_text(b.text)}</span>')
        self.out.append(f"<{name}{attrs}>{' '.join(spans)}</{name}>")
        self._count += 1 + len(spans)
        self._lines += 1

    def _text(self, text: str | None, own_id: int | None, own_cls: str) -> None:
        if not text:
            return
        if own_id is not None and text.strip():
            self.out.append(f'<span class="{own_cls}" data-o="{own_id}">{esc_text(text)}</span>')
        else:
            self.out.append(esc_text(text))

    @staticmethod
    def _tag(tag: str, parent: str, in_heading: bool) -> tuple[str, str]:
        """The tag written for ``tag`` under a written ``parent``, and a class if renamed."""
        if tag in _RENAMED:
            return _RENAMED[tag]
        if tag == "img":
            return "span", "p-img"
        if tag in _VOID or tag in _INLINE_SAME or tag in _FLOW_SAME:
            return tag, ""
        if tag in HEADING_TAGS:
            return (tag, "") if not in_heading else ("span", f"p-{tag}")
        if tag == "table":
            return ("table", "") if parent not in _TABLE_PARTS else ("div", "p-table")
        if tag in TABLE_SECTION_TAGS or tag == "caption":
            return (tag, "") if parent == "table" else ("div", f"p-{tag}")
        if tag == "tr":
            return ("tr", "") if parent in ("table", *TABLE_SECTION_TAGS) else ("div", "p-tr")
        if tag in ("td", "th"):
            return (tag, "") if parent == "tr" else ("div", f"p-{tag}")
        if tag == "li":
            return ("li", "") if parent in ("ul", "ol") else ("div", "p-li")
        if tag in ("dt", "dd"):
            return (tag, "") if parent == "dl" else ("div", f"p-{tag}")
        return ("div", "") if tag in BLOCK_TAGS else ("span", "")


def _spans(el: Any) -> str:
    out = ""
    for name in ("colspan", "rowspan"):
        value = (el.get(name) or "").strip()
        if value.isdigit() and 1 < int(value) <= _SPAN_LIMIT:
            out += f' {name}="{int(value)}"'
    return out
