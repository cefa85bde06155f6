"""Granularity-adjustable block tree (HtmlRAG §3.3, Appendix B Algorithm 1).

The DOM is walked breadth first. A node whose content has fewer than ``max_words`` words (or that
has no child elements) becomes one leaf block; a bigger node is expanded: its children are visited
next, and its own direct text (if any) becomes a non-leaf block. Expanded nodes without text of
their own stay in the :class:`~hrefine.tree.Tree` as ``kind="container"`` nodes, so the tree keeps
the DOM's shape between blocks.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import html as html_lib
import itertools
import re
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from hrefine._optional import require
from hrefine.errors import ConfigError
from hrefine.html._load import parse_document, text_content
from hrefine.html._text import count_words, element_text, has_word, normalize_space, own_text
from hrefine.html.clean import clean_document, serialize
from hrefine.html.tags import HEADING_TAGS, WRAPPER_TAGS
from hrefine.tree import Tree

__all__ = ["BlockForest", "build_block_tree", "build_forest", "title_parts"]

_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
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
# Wrappers that are never a block themselves: their children are always visited.
_DOC_STRIDE = 1_000_000_000
# Pages of more elements are built with the garbage collector paused (smaller ones lose more
# to the collection that follows the pause than they gain).
_PAUSE_GC_ELEMENTS = 20_000
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


def build_block_tree(
    html: str | bytes,
    *,
    max_words: int = 256,
    clean: bool = True,
    boilerplate: bool = True,
) -> Tree:
    """Split one HTML page into a tree of blocks of fewer than ``max_words`` words.

    Parameters
    ----------
    html:
        The page (str or bytes).
    max_words:
        Granularity: a DOM subtree with fewer words becomes one block (256 in the paper's
        embedding stage, 128 in its generative stage). CJK characters count as words.
    clean:
        Clean the page first (:func:`~hrefine.html.clean_html`); if false it is only parsed.
    boilerplate:
        Passed to the cleaner.

    Returns
    -------
    Tree
        Nodes in breadth-first order. ``node.text`` is the block's plain text (empty for
        containers); ``node.metadata`` holds ``tag``, ``path`` (tag names from the root),
        ``path_indexed`` (same-tag siblings numbered, ``div2``; for prompts only), ``is_leaf``,
        ``words``, ``html`` (a leaf's HTML, or a non-leaf block's escaped own text), ``doc``
        and ``context`` (nearest headings and table header, used for scoring).
        ``tree.metadata["max_words"]`` records the granularity.
    """
    root = clean_document(html, boilerplate=boilerplate) if clean else parse_document(html)
    return build_forest([root], max_words=max_words).tree


@dataclass
class BlockForest:
    """A block tree over one or more documents, with each node's lxml element.

    Attributes
    ----------
    tree:
        The block tree; node ``i`` belongs to ``elements[i]``.
    elements:
        The DOM element of every tree node.
    roots:
        The ``<html>`` element of each document.
    doc_ids:
        The input-document index of each root (``node.metadata["doc"]`` uses these).
    """

    tree: Tree
    elements: list[Any]
    roots: list[Any]
    doc_ids: list[int]

    def block_ids(self) -> list[int]:
        """Ids of nodes that are blocks (have text), in document order."""
        return self.tree.sort_by_order(n.id for n in self.tree.nodes if n.kind == "block")


def _subtree_words(el: Any) -> int:
    """Words in ``el``'s subtree (its tail excluded), image alt text included."""
    if len(el) == 0 and el.tag != "img":  # most blocks: the XPath call would cost more
        return count_words(el.text or "")
    return count_words(" ".join(_text_and_alts()(el)))


def _words_or_unknown(el: Any) -> int:
    """:func:`_subtree_words`, except -1 (some words) or 0 for a page wrapper with children.

    ``<html>`` and ``<body>`` are always opened, so their count (a pass over the whole page,
    once per wrapper) is never needed; whether they hold a word at all is.
    """
    if el.tag not in WRAPPER_TAGS or len(el) == 0:
        return _subtree_words(el)
    return -1 if _has_word(el) else 0


@functools.lru_cache(maxsize=1)
def _text_and_alts() -> Any:
    # One compiled XPath: every text node and alt attribute below, in document order.
    etree = require("lxml.etree", "html")
    return etree.XPath(".//text() | descendant-or-self::img/@alt", smart_strings=False)


class _Contexts:
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
            is_heading = el.tag in _HEADINGS
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
    for h in root.iter(*_HEADINGS):
        level = _HEADINGS[h.tag]
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
    """:func:`_has_word`, looked up in ``words`` (words counted by the tree's walk) if there."""
    n = words.get(el)
    return _has_word(el) if n is None else n != 0


def _has_word(el: Any) -> bool:
    # Lazily, stopping at the first word: the element may be a whole table.
    if any(map(has_word, el.itertext())):
        return True
    return any(has_word(img.get("alt")) for img in el.iter("img"))


def _indexed_names(children: Sequence[Any]) -> list[str]:
    """Tag names with same-tag siblings numbered from 1 (``div1``, ``div2``), as in the paper."""
    totals: dict[str, int] = {}
    for child in children:
        totals[child.tag] = totals.get(child.tag, 0) + 1
    seen: dict[str, int] = {}
    names: list[str] = []
    for child in children:
        tag = str(child.tag)
        seen[tag] = seen.get(tag, 0) + 1
        # "h2" + "1" would read as "h21": tags ending in a digit get a separator.
        sep = "_" if tag[-1:].isdigit() else ""
        names.append(f"{tag}{sep}{seen[tag]}" if totals[tag] > 1 else tag)
    return names


def build_forest(
    roots: Sequence[Any],
    *,
    max_words: int = 256,
    too_big: Callable[[str, str], bool] | None = None,
    doc_ids: Sequence[int] | None = None,
    split: Callable[[Any], bool] | None = None,
) -> BlockForest:
    """Build one block tree over several parsed documents (Algorithm 1, breadth first).

    Parameters
    ----------
    roots:
        The ``<html>`` element of each document (already cleaned).
    max_words:
        A subtree with fewer words becomes one leaf block.
    too_big:
        Optional check on a would-be leaf block's tag and HTML; when it returns True and the
        element has children, it is expanded like one over ``max_words``. The pruner uses it to
        split blocks that would take too large a share of the token budget.
    doc_ids:
        Input-document index of each root (default: 0, 1, 2…).
    split:
        Optional check on an element: when it returns True and the element has children, it
        is expanded whatever its size (the pruner splits a record table into its rows).
    """
    if max_words < 1:
        msg = f"max_words must be >= 1, got {max_words}"
        raise ConfigError(msg)
    docs = list(range(len(roots))) if doc_ids is None else [int(d) for d in doc_ids]
    if len(docs) != len(roots):
        msg = f"got {len(docs)} document ids for {len(roots)} documents"
        raise ConfigError(msg)
    tree = Tree(metadata={"max_words": max_words, "documents": len(roots)})
    elements: list[Any] = []
    with collector_paused(roots):
        for doc, root in zip(docs, roots, strict=True):
            _add_document(tree, elements, root, doc, max_words, too_big, split)
    return BlockForest(tree=tree, elements=elements, roots=list(roots), doc_ids=docs)


@functools.lru_cache(maxsize=1)
def _element_count() -> Any:
    etree = require("lxml.etree", "html")
    return etree.XPath("count(descendant-or-self::*)")


@contextlib.contextmanager
def collector_paused(roots: Sequence[Any]) -> Iterator[None]:
    """Pause Python's cyclic garbage collector while working on ``roots`` when they hold more
    than ``_PAUSE_GC_ELEMENTS`` elements: a tree of many blocks, its scores and its reports
    allocate millions of objects, none of them garbage, and each full collection walks them
    all (half the time of a 200,000-block tree, a third of pruning 100,000 paragraphs).
    Re-enabled on exit unless it was already paused on entry."""
    # Already paused (the pruner pauses it around the block tree too): nothing to count.
    if not gc.isenabled() or sum(_element_count()(r) for r in roots) <= _PAUSE_GC_ELEMENTS:
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _add_document(
    tree: Tree,
    elements: list[Any],
    root: Any,
    doc: int,
    max_words: int,
    too_big: Callable[[str, str], bool] | None,
    split: Callable[[Any], bool] | None = None,
) -> None:
    wanted: dict[Any, int] = {}
    counted: dict[Any, int] = {}  # children's words, counted when their parent is opened
    # Queue items: (element, its words, parent node id or None, path, indexed path).
    queue: deque[tuple[Any, int, int | None, list[str], list[str]]] = deque(
        [(root, _words_or_unknown(root), None, [str(root.tag)], [str(root.tag)])]
    )
    while queue:
        el, words, parent, path, ipath = queue.popleft()
        leaf_html: str | None = None
        expand = len(el) > 0 and (
            words >= max_words or el.tag in WRAPPER_TAGS or (split is not None and split(el))
        )
        if not expand and len(el) > 0 and too_big is not None:
            leaf_html = serialize_element(el)
            expand = too_big(str(el.tag), leaf_html)
        children: list[tuple[Any, int]] = []
        if expand:  # words of the children are needed only when they are visited
            for c in el:
                if isinstance(c.tag, str):
                    n = counted[c] = _words_or_unknown(c)
                    if n != 0:
                        children.append((c, n))
            expand = bool(children)
        meta: dict[str, Any] = {
            "tag": str(el.tag),
            "path": path,
            "path_indexed": ipath,
            "doc": doc,
            "words": words,
            "context": "",
            "back_matter": False,
        }
        if not expand:
            if words < 0:
                meta["words"] = _subtree_words(el)
            text = element_text(el)
            if el.tag in WRAPPER_TAGS:  # a page of bare text: the block is the body's content
                leaf_html = inner_html(el)
            meta.update(is_leaf=True, html=leaf_html or serialize_element(el))
            kind = "block"
        else:
            text = own_text(el)
            escaped = html_lib.escape(text, quote=False)
            meta.update(is_leaf=False, html=escaped, words=count_words(text))
            kind = "block" if text else "container"
        node = tree.add_node(
            text,
            kind=kind,
            level=len(path) - 1,
            parents=() if parent is None else (parent,),
            metadata=meta,
        )
        elements.append(el)
        wanted[el] = node
        if expand:
            names = _indexed_names([c for c, _ in children])
            for (child, n), itag in zip(children, names, strict=True):
                queue.append((child, n, node, [*path, str(child.tag)], [*ipath, itag]))
    # Document order and scoring context in one pass over the page.
    _Contexts(root).assign(root, wanted, tree, doc * _DOC_STRIDE, counted)


def serialize_element(el: Any) -> str:
    """The HTML of ``el`` and its subtree, without its tail text."""
    return serialize(el, with_tail=False)


def inner_html(el: Any) -> str:
    """The HTML inside ``el`` (its text and children), without its own tags."""
    parts = [html_lib.escape(el.text or "", quote=False)]
    parts.extend(serialize(child, with_tail=True) for child in el)
    return "".join(parts)
