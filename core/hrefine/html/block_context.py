"""The scoring context of HtmlRAG's blocks: the page title, the headings above a block, its
table's header and the label before it, written into each block's ``context`` as the tree is
built, and whether a section is back matter (references, notes, external links...)."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from typing import Any

from hrefine.html._load import text_content
from hrefine.html._text import count_words, has_word, normalize_space
from hrefine.html.tags import HEADING_LEVELS, HEADING_TAGS, WRAPPER_TAGS
from hrefine.tree import Tree

__all__ = ["Contexts", "element_has_word", "title_parts"]

# Scoring context is kept short: the embedder reads only its first few hundred word pieces.
_MAX_CONTEXT_CHARS = 200
# A heading's title in the context is cut here.
_HEADING_CHARS = 120
# A previous sibling with at most this many words may be a label of the element after it.
_LABEL_WORDS = 16
# How many first-child levels up a label is looked for.
_LABEL_STEPS = 4
# Elements never labelled (a term is a label itself) and elements that are never labels:
# headings and table headers are in the context already, a value is not a label.
_NOT_LABELLED = frozenset({"dt", "html", "head", "body", "thead", "caption"})
_NOT_LABELS = HEADING_TAGS | {"head", "thead", "caption", "dd"}
# Section titles of a page's back matter: citations and pointers elsewhere, which support the
# text but rarely answer a question about it. English only; a trailing "[edit]" is ignored.
# Not "Bibliography", "Sources" or "Discography": on many pages those are the content.
_BACK_MATTER = re.compile(
    r"(?:\d+(?:\.\d+)*\.?\s+)?"  # a section number
    r"(?:(?:references?|notes|footnotes?|citations?|external links?|further reading|see also"
    r"|works cited)(?:\s*(?:and|&|,)\s*)?)+[\s:.]*",
    re.IGNORECASE,
)
_EDIT_MARK = re.compile(r"\s*[\[(]\s*edit(?:\s+source)?\s*[\])]\s*$", re.IGNORECASE)


class Contexts:
    """Headings in force and table headers, for the scoring context of each block."""

    def __init__(self, root: Any) -> None:
        self.base = _page_title(root)
        self.tables: dict[Any, tuple[str, Any]] = {}

    def table_header(self, table: Any) -> tuple[str, Any]:
        """Caption and header-row text of ``table``, and the header row element."""
        if table not in self.tables:
            parts: list[str] = []
            caption = table.find("caption")
            if caption is not None:
                parts.append(normalize_space(text_content(caption)))
            header_row = None
            for row in table.iter("tr"):
                cells = [c for c in row if c.tag in {"th", "td"}]
                if cells and all(c.tag == "th" for c in cells):
                    parts.append(" | ".join(normalize_space(text_content(c)) for c in cells))
                    header_row = row
                    break
            # Cut to what a context can hold: it is joined into the context of every cell, and
            # a header of 10,000 columns copied whole into each of 200,000 cells was quadratic.
            header = " ".join(p for p in parts if p)[:_MAX_CONTEXT_CHARS]
            self.tables[table] = (header, header_row)
        return self.tables[table]

    def assign(
        self, root: Any, wanted: dict[Any, int], tree: Tree, offset: int, words: dict[Any, int]
    ) -> None:
        """Set ``order``, ``metadata["context"]`` and ``metadata["back_matter"]`` of the nodes
        in ``wanted``; ``words`` holds the word counts the tree's walk made (for labels).

        The block tree is walked depth first, which is document order; of the DOM between
        blocks only the headings are read (walking every element cost a quarter of building
        the tree).
        """
        chain: list[tuple[int, str, bool]] = []
        heading = self.base
        back = False  # inside a back-matter section (references, external links...)
        headings, first_inside = _headings(root)

        def open_section(h: Any) -> None:
            # A heading closes the sections of its level and below; it belongs to the one it
            # opens, so it is read before the heading's own block is.
            nonlocal back
            level, _, own = headings[h]
            while chain and chain[-1][0] >= level:
                chain.pop()
            back = own or any(b for _, _, b in chain)

        def push_section(h: Any) -> None:
            nonlocal heading
            chain.append(headings[h])
            heading = " > ".join([self.base] * bool(self.base) + [t for _, t, _ in chain])

        def enter(hs: list[Any]) -> None:  # headings that are no block of their own
            for h in hs:
                open_section(h)
                push_section(h)

        # Headings that are not blocks themselves, under the leaf block that holds them or the
        # wordless child (of an opened block) that does, in document order.
        inside: dict[Any, list[Any]] = {}
        for h in headings:
            if h in wanted:
                continue
            below, cur = h, h.getparent()
            while cur not in wanted:
                below, cur = cur, cur.getparent()
            key = cur if tree.nodes[wanted[cur]].metadata["is_leaf"] else below
            inside.setdefault(key, []).append(h)

        index = 0
        # Each level of the walk: its elements, and the nearest <table> above them (a block's
        # ancestors are all blocks or containers, so the walk passes every one).
        stack: list[tuple[Iterator[Any], Any]] = [(iter((root,)), None)]
        while stack:
            children, table = stack[-1]
            el = next(children, None)
            if el is None:
                stack.pop()
                continue
            nid = wanted.get(el)
            if nid is None:  # a child without words: only its headings matter
                enter(inside.get(el, []))
                continue
            is_heading = el.tag in HEADING_LEVELS
            if is_heading:
                open_section(el)
            index += 1
            node = tree.nodes[nid]
            tree.set_order(nid, offset + index)
            # Containers get a context too: a table or list scored as a whole uses it.
            parts = [heading]
            if el.tag != "table" and table is not None:
                header, header_row = self.table_header(table)
                if el is not header_row:
                    parts.append(header)
            parts.append(_label(el, words))
            node.metadata["context"] = " | ".join(p for p in parts if p)[:_MAX_CONTEXT_CHARS]
            in_back = back
            inner = first_inside.get(el)
            if inner is not None and _opens_with(el, inner):
                # A block that opens with a heading (a <section>) is in the section that
                # heading opens, not in the one in force before it.
                lv, _, own_inner = headings[inner]
                in_back = own_inner or any(b for h_lv, _, b in chain if h_lv < lv)
            node.metadata["back_matter"] = in_back
            if is_heading:
                push_section(el)
            if node.metadata["is_leaf"]:
                enter(inside.get(el, []))
            else:
                below = el if el.tag == "table" else table
                stack.append(((c for c in el if isinstance(c.tag, str)), below))


def title_parts(root: Any) -> tuple[str, ...]:
    """What opens the scoring context of (nearly) every block of a page, as written there: its
    ``<title>``, then its ``<h1>`` when it has only one."""
    parts = [_page_title(root)]
    h1s = list(itertools.islice(root.iter("h1"), 2))
    if len(h1s) == 1:
        parts.append(normalize_space(text_content(h1s[0]))[:_HEADING_CHARS])
    return tuple(p for p in parts if p)


def _page_title(root: Any) -> str:
    """The text of a page's ``<title>``, or ""."""
    title = root.find("head/title")
    return normalize_space(text_content(title)) if title is not None else ""


def _headings(root: Any) -> tuple[dict[Any, tuple[int, str, bool]], dict[Any, Any]]:
    """Each heading's (level, title, whether it opens back matter), and for each element
    holding a heading below it, its first such heading (one walk up per heading)."""
    info: dict[Any, tuple[int, str, bool]] = {}
    first: dict[Any, Any] = {}
    for h in root.iter(*HEADING_LEVELS):
        level = HEADING_LEVELS[h.tag]
        title = normalize_space(text_content(h))[:_HEADING_CHARS]
        # An <h1> is the page's title: a page called "Notes" is content.
        info[h] = (level, title, level > 1 and _is_back_matter(title))
        for anc in h.iterancestors():
            if anc in first:
                break
            first[anc] = h
    return info, first


def _opens_with(el: Any, inner: Any) -> bool:
    """Whether no text of ``el`` comes before its descendant ``inner``."""
    for d in el.iter():
        if d is inner:
            return True
        if (d.text and not d.text.isspace()) or (d is not el and d.tail and not d.tail.isspace()):
            return False
    return False


def _is_back_matter(title: str) -> bool:
    """Whether a heading names a back-matter section ("References", "See also [edit]"...)."""
    return bool(_BACK_MATTER.fullmatch(_EDIT_MARK.sub("", title)))


def _label(el: Any, words: dict[Any, int]) -> str:
    """Text of a short element just before ``el`` that names it, or "".

    A label and its value often sit in neighbouring elements (``<dt>``/``<dd>``, a one-line list
    or paragraph before the list or table it introduces, a row header cell): scored alone, the
    value misses the words of the question that the label holds. The label is the nearest
    previous sibling with text of ``el`` (or of the ancestors ``el`` opens as their first
    child, as long as no text comes first) when it is another kind of element, not a heading or
    part of a table header (already in the context), and at most ``_LABEL_WORDS`` words.
    """
    if el.tag in _NOT_LABELLED:
        return ""
    cur = el
    for _ in range(_LABEL_STEPS):
        prev = cur.getprevious()
        while prev is not None and isinstance(prev.tag, str) and not _worded(prev, words):
            prev = prev.getprevious()  # an empty <br> or image between them
        if prev is not None:
            tag = prev.tag
            if not isinstance(tag, str) or tag == cur.tag or tag in _NOT_LABELS:
                return ""
            if prev.tail and prev.tail.strip():
                return ""  # text between them: the label is not directly before
            return _short_text(prev)
        parent = cur.getparent()
        if parent is None or parent.tag in WRAPPER_TAGS or (parent.text or "").strip():
            return ""
        cur = parent
    return ""


def _short_text(el: Any) -> str:
    """The text of ``el`` when it has at most ``_LABEL_WORDS`` words, else "" (stops early)."""
    parts: list[str] = []
    words = 0
    for text in el.itertext():
        words += count_words(text)
        if words > _LABEL_WORDS:
            return ""
        parts.append(text)
    return normalize_space(" ".join(parts))


def _worded(el: Any, words: dict[Any, int]) -> bool:
    """:func:`element_has_word`, looked up in ``words`` (words counted by the tree's walk) if
    there."""
    n = words.get(el)
    return element_has_word(el) if n is None else n != 0


def element_has_word(el: Any) -> bool:
    """Whether ``el`` holds a word, in its text or an image's alt text."""
    # Lazily, stopping at the first word: the element may be a whole table.
    if any(map(has_word, el.itertext())):
        return True
    return any(has_word(img.get("alt")) for img in el.iter("img"))
