"""Granularity-adjustable block tree (HtmlRAG §3.3, Appendix B Algorithm 1).

The DOM is walked breadth first. A node whose content has fewer than ``max_words`` words (or that
has no child elements, or only inline ones: a paragraph with its links and emphasis) becomes one
leaf block; a bigger node is expanded: its children are visited next, and its own direct text (if
any) becomes a non-leaf block. Expanded nodes without text of
their own stay in the :class:`~hrefine.tree.Tree` as ``kind="container"`` nodes, so the tree keeps
the DOM's shape between blocks.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import html as html_lib
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from hrefine._optional import require
from hrefine.errors import ConfigError
from hrefine.html._load import parse_document
from hrefine.html._text import count_words, element_text, own_text
from hrefine.html.block_context import Contexts, element_has_word, title_parts
from hrefine.html.clean import clean_document, serialize
from hrefine.html.tags import INLINE_TAGS, WRAPPER_TAGS
from hrefine.tree import Tree

# title_parts lives in block_context; it is imported from here too.
__all__ = ["BlockForest", "build_block_tree", "build_forest", "title_parts"]

# Wrappers that are never a block themselves: their children are always visited.
_DOC_STRIDE = 1_000_000_000
# Pages of more elements are built with the garbage collector paused (smaller ones lose more
# to the collection that follows the pause than they gain).
_PAUSE_GC_ELEMENTS = 20_000


def build_block_tree(
    html: str | bytes, *, max_words: int = 256, clean: bool = True, boilerplate: bool = True
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
    """A block tree over one or more documents, with each node's lxml element."""

    tree: Tree
    """The block tree; node ``i`` belongs to ``elements[i]``."""
    elements: list[Any]
    """The DOM element of every tree node."""
    roots: list[Any]
    """The ``<html>`` element of each document."""
    doc_ids: list[int]
    """The input-document index of each root (``node.metadata["doc"]`` uses these)."""

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
    return -1 if element_has_word(el) else 0


@functools.lru_cache(maxsize=1)
def _text_and_alts() -> Any:
    # One compiled XPath: every text node and alt attribute below, in document order.
    etree = require("lxml.etree", "html")
    return etree.XPath(".//text() | descendant-or-self::img/@alt", smart_strings=False)


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
        element has children, not all of them inline, it is expanded like one over
        ``max_words``. The pruner uses it to split blocks that would take too large a share of
        the token budget.
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
        if not expand and len(el) > 0 and too_big is not None and not runs_inline(el):
            leaf_html = serialize_element(el)
            expand = too_big(str(el.tag), leaf_html)
        elif expand and runs_inline(el):
            # Text with links and emphasis in it is one block however big: opened, it would read
            # as its text with holes where the inline elements were, and those as blocks of
            # their own. A long one is cut at sentence ends before (split_long_paragraphs).
            expand = False
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
    Contexts(root).assign(root, wanted, tree, doc * _DOC_STRIDE, counted)


def runs_inline(el: Any) -> bool:
    """Whether everything inside ``el`` is inline (:data:`~hrefine.html.tags.INLINE_TAGS`):
    its text runs in lines, which cutting at its children would tear apart."""
    return all(not isinstance(d.tag, str) or d.tag in INLINE_TAGS for d in el.iterdescendants())


def serialize_element(el: Any) -> str:
    """The HTML of ``el`` and its subtree, without its tail text."""
    return serialize(el, with_tail=False)


def inner_html(el: Any) -> str:
    """The HTML inside ``el`` (its text and children), without its own tags."""
    parts = [html_lib.escape(el.text or "", quote=False)]
    parts.extend(serialize(child, with_tail=True) for child in el)
    return "".join(parts)
