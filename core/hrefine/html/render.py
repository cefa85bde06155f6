"""Rebuild HTML from the blocks a pruner kept (HtmlRAG Algorithm 2, by construction).

Instead of deleting blocks from a copy of the DOM, the renderer writes out only what is kept: a
kept leaf block as its HTML, a kept non-leaf block as its own text inside its element's tags,
and every ancestor of something kept. Emptied ancestors therefore never appear, and a generic
wrapper (``div``, ``section``…) left with a single child and no text is not written
(the paper's re-merge of single-nested tags). Tag names are the original ones, always.
"""

from __future__ import annotations

import html as html_lib
import re
from collections.abc import Iterable
from typing import Any

from hrefine.html._text import GENERIC_TAGS
from hrefine.html.blocks import BlockForest

__all__ = ["Renderer", "omit_end_tags"]

# Page wrappers: written as their content only (a pruned page is an HTML fragment).
_UNWRITTEN = frozenset({"html", "head", "body"})

# End tags HTML lets a writer omit (WHATWG HTML, "Optional tags"), each with what must follow
# it directly for the omission to be allowed: a sibling that closes it implicitly, or the end of
# its parent. A parser rebuilds the same tree, and a table row costs about half the tokens.
# (dt/dd are left alone: libxml2's parser, unlike browsers, nests a <dd> in an open <dd>.)
_FOLLOWERS = {
    "td": r"<t[dh][\s>]|</tr>",
    "th": r"<t[dh][\s>]|</tr>",
    "tr": r"<tr[\s>]|</(?:tbody|thead|tfoot|table)>",
    "li": r"<li[\s>]|</(?:ul|ol|menu)>",
    "thead": r"<t(?:body|foot)[\s>]",
    "tbody": r"<t(?:body|foot)[\s>]|</table>",
    "tfoot": r"</table>",
    # Only starts that close an open <p> in libxml2 as well as in browsers (libxml2 nests the
    # HTML5 sectioning elements in it), and never <table>: a browser in quirks mode, as for a
    # fragment without a doctype, nests a table in an open <p>.
    "p": (
        r"<(?:p|div|ul|ol|dl|h[1-6]|blockquote|pre|hr|address|form|menu|fieldset)[\s>/]"
        r"|</(?:div|td|th|li|dd|section|article|aside|header|footer|blockquote|main|figure"
        r"|form|details|body)>"
    ),
}
_OPTIONAL_END = re.compile(
    "|".join(f"</{tag}>(?=(?:{after}))" for tag, after in _FOLLOWERS.items())
)


def omit_end_tags(html: str) -> str:
    """``html`` without the end tags HTML makes optional where they may go (same parsed tree).

    The same tree for HTML5 parsers (browsers, html5lib) and for libxml2 (lxml). Parsers that
    follow neither, such as Python's ``html.parser``, may nest ``<li>a<li>b``; pass
    ``omit_end_tags=False`` to the pruner for those.

    ``</td>``, ``</th>``, ``</tr>``, ``</li>``, ``</thead>``, ``</tbody>``, ``</tfoot>`` and
    ``</p>`` are dropped only where the element is directly followed by a sibling that closes
    it or by its parent's end tag. Meant for serialised HTML (text escaped); an input with
    ``</`` inside a quoted attribute value is returned unchanged.
    """
    if re.search(r"""=(?:"[^"]*|'[^']*)</""", html):
        return html
    return _OPTIONAL_END.sub("", html)


class Renderer:
    """Writes the HTML of any subset of a forest's blocks, one string per document."""

    def __init__(self, forest: BlockForest) -> None:
        self.forest = forest
        self._node_of = {el: i for i, el in enumerate(forest.elements)}
        self._start: dict[Any, str] = {}

    def _start_tag(self, el: Any) -> str:
        tag = self._start.get(el)
        if tag is None:
            attrs = "".join(
                f' {k}="{html_lib.escape(v, quote=True)}"' for k, v in el.attrib.items()
            )
            tag = f"<{el.tag}{attrs}>"
            self._start[el] = tag
        return tag

    def _split(self, kept: Iterable[int]) -> tuple[set[Any], set[Any], set[Any]]:
        """Elements of kept leaf blocks, of kept own-text blocks, and those plus ancestors."""
        tree = self.forest.tree
        elements = self.forest.elements
        leaf: set[Any] = set()
        own: set[Any] = set()
        for nid in kept:
            node = tree.nodes[nid]
            if node.kind != "block":
                continue
            (leaf if node.metadata["is_leaf"] else own).add(elements[nid])
        alive: set[Any] = set()
        for el in leaf | own:
            cur = el
            while cur is not None and cur not in alive:
                alive.add(cur)
                cur = cur.getparent()
        return leaf, own, alive

    def render(self, kept: Iterable[int]) -> list[str]:
        """HTML of each document with only the ``kept`` node ids (``""`` where none is kept)."""
        leaf, own, alive = self._split(kept)
        docs = [
            self._write(root, leaf, own, alive) if root in alive else ""
            for root in self.forest.roots
        ]
        if self.forest.tree.metadata.get("omit_end_tags"):
            docs = [omit_end_tags(d) for d in docs]
        return docs

    def written(self, kept: Iterable[int]) -> list[list[Any]]:
        """The elements :meth:`render` writes tags for, per document, in document order.

        Parsing a rendered document back gives elements in this order (apart from wrappers the
        parser adds), which is how blocks found in the rendered output are traced back to the
        elements they were written from.
        """
        leaf, own, alive = self._split(kept)
        out: list[list[Any]] = []
        for root in self.forest.roots:
            seq: list[Any] = []
            if root in alive:
                stack = [root]
                while stack:
                    el = stack.pop()
                    if el in leaf:
                        seq.extend(
                            e
                            for e in el.iter()
                            if isinstance(e.tag, str) and (e is not el or e.tag not in _UNWRITTEN)
                        )
                        continue
                    live = [c for c in el if c in alive]
                    bare = el.tag in _UNWRITTEN or (
                        el.tag in GENERIC_TAGS and el not in own and len(live) == 1
                    )
                    if not bare:
                        seq.append(el)
                    stack.extend(reversed(live))
            out.append(seq)
        return out

    def _write(self, root: Any, leaf: set[Any], own: set[Any], alive: set[Any]) -> str:
        tree = self.forest.tree
        out: list[str] = []
        stack: list[Any] = [root]
        while stack:
            item = stack.pop()
            if isinstance(item, str):
                out.append(item)
                continue
            el = item
            if el in leaf:
                out.append(tree.nodes[self._node_of[el]].metadata["html"])
                continue
            keep_text = el in own
            live = [c for c in el if c in alive]
            bare = el.tag in _UNWRITTEN or (
                el.tag in GENERIC_TAGS and not keep_text and len(live) == 1
            )
            seq: list[Any] = []
            if not bare:
                seq.append(self._start_tag(el))
            if keep_text and el.text:
                seq.append(html_lib.escape(el.text, quote=False))
            for child in el:
                if child in alive:
                    seq.append(child)
                if keep_text and child.tail:
                    seq.append(html_lib.escape(child.tail, quote=False))
            if not bare:
                seq.append(f"</{el.tag}>")
            stack.extend(reversed(seq))
        return "".join(out).strip()
