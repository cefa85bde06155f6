"""Rebuild HTML from the blocks a pruner kept (HtmlRAG Algorithm 2, by construction).

Instead of deleting blocks from a copy of the DOM, the renderer writes out only what is kept: a
kept leaf block as its HTML, a kept non-leaf block as its own text inside its element's tags,
and every ancestor of something kept. Emptied ancestors therefore never appear, and a generic
wrapper (``div``, ``section``…) left with a single child and no text is not written
(the paper's re-merge of single-nested tags). Tag names are the original ones, always.

Text a browser shows apart stays apart: a kept own text is written with its ``<br>`` children,
and where what was dropped between two written words (text, elements, the line break of an
unwritten wrapper) held white space or a line break, a single space is written in its place
(or, for dropped text without white space, where the two words would otherwise touch). Dropped
text itself is never written.
"""

from __future__ import annotations

import html as html_lib
import re
from collections.abc import Iterable
from typing import Any

from hrefine.html._text import shown_text
from hrefine.html.blocks import BlockForest
from hrefine.html.tags import BLOCK_TAGS, GENERIC_TAGS, WRAPPER_TAGS

__all__ = ["Renderer", "omit_end_tags"]

# Page wrappers: written as their content only (a pruned page is an HTML fragment).
# Elements that end a line of text: no space is needed next to them. The cleaner keeps no other
# empty element but table cells (``<hr>``, ``<wbr>``, alt-less images go), so ``<br>`` is the
# only void element an own text is written with.
_BREAKS = BLOCK_TAGS | {"br"}
# What a dropped piece between two written ones held: text without white space (a space only
# where two words would touch: ``foo<b>x</b>bar``, not ``Alpha<sup>[1]</sup>,``), or white
# space or a line break (a space unless one is there already).
_WEAK = 1
_STRONG = 2

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
        self._shown: dict[Any, str] = {}
        self._gaps: dict[Any, int] = {}

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
        # Each live element's live children: the writer visits these, not every child.
        live: dict[Any, list[Any]] = {}
        for el in alive:
            parent = el.getparent()
            if parent is not None:
                live.setdefault(parent, []).append(el)
        docs = [
            self._write(root, leaf, own, live) if root in alive else ""
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
                            if isinstance(e.tag, str) and (e is not el or e.tag not in WRAPPER_TAGS)
                        )
                        continue
                    live = [c for c in el if c in alive]
                    bare = el.tag in WRAPPER_TAGS or (
                        el.tag in GENERIC_TAGS and el not in own and len(live) == 1
                    )
                    if not bare:
                        seq.append(el)
                    if el in own:  # written with its line breaks
                        live = [c for c in el if c in alive or c.tag == "br"]
                    stack.extend(reversed(live))
            out.append(seq)
        return out

    def _shown_text(self, el: Any) -> str:
        """What a browser shows of ``el`` (tail excluded), a space for each line break."""
        text = self._shown.get(el)
        if text is None:
            text = self._shown[el] = shown_text(el)
        return text

    def _dropped(self, el: Any) -> int:
        """The gap a dropped child element leaves: 0, ``_WEAK`` or ``_STRONG``."""
        gap = self._gaps.get(el)
        if gap is None:
            tag = el.tag
            if tag in _BREAKS:
                gap = _STRONG
            else:
                gap = _gap(self._shown_text(el)) if isinstance(tag, str) else 0
            self._gaps[el] = gap
        return gap

    def _edges(self, el: Any) -> tuple[str, str]:
        """First and last character a kept leaf shows (``" "`` for a line break or space)."""
        if el.tag in _BREAKS:
            return " ", " "
        text = self._shown_text(el)
        return _edge(text[:1]), _edge(text[-1:])

    def _write(self, root: Any, leaf: set[Any], own: set[Any], live: dict[Any, list[Any]]) -> str:
        tree = self.forest.tree
        out: list[str] = []
        # Stack items: an element to write; escaped text; (tag, "" or " " if it breaks a line);
        # a gap left by dropped content (an int).
        stack: list[Any] = [root]
        last = " "  # last character shown so far (" " at a line break)
        gap = 0  # gap pending since then, written as out[gap_at] once the next text is known
        gap_at = 0
        while stack:
            item = stack.pop()
            kind = type(item)  # (exact types: this loop runs for every written piece)
            if kind is int:
                if not gap:
                    gap_at = len(out)
                    out.append("")
                gap = max(gap, item)
                continue
            if kind is str:
                first, end = _edge(item[0]), _edge(item[-1])
            elif kind is tuple:
                item, first = item
                if not first:  # an inline tag: shows nothing
                    out.append(item)
                    continue
                end = first
            elif item in leaf:
                first, end = self._edges(item)
                item = tree.nodes[self._node_of[item]].metadata["html"]
            else:
                stack.extend(reversed(self._pieces(item, item in own, live.get(item, []))))
                continue
            if gap:
                if _spaced(last, first, gap):
                    out[gap_at] = " "
                gap = 0
            out.append(item)
            last = end or last
        return "".join(out).strip()

    def _pieces(self, el: Any, keep_text: bool, shown: list[Any]) -> list[Any]:
        """Stack items of a non-leaf element: its tags, kept text, ``shown`` (its live
        children, in any order), its gaps."""
        # The live children in document order (every ancestor of a block is a node of the
        # tree, in document order): the walk goes from one to the next without visiting the
        # dropped children between them once nothing they hold can change the gap, so the
        # fill's many renders of a page body of 100,000 paragraphs do not each visit them all.
        nodes, node_of = self.forest.tree.nodes, self._node_of
        at = sorted(shown, key=lambda c: nodes[node_of[c]].order)
        bare = el.tag in WRAPPER_TAGS or (el.tag in GENERIC_TAGS and not keep_text and len(at) == 1)
        breaks = el.tag in _BREAKS
        seq: list[Any] = []
        # The gap left by what was dropped since the last item: gaps in a row are one item.
        gap = 0
        if not bare:
            seq.append((self._start_tag(el), " " if breaks else ""))
        elif breaks:  # its line break is not written: its content must not touch the text
            gap = _STRONG
        text = el.text
        child: Any = None  # the child just handled (None: el's own text)
        k = 0  # the next live child is at[k]
        while True:
            if text:
                if keep_text:
                    if gap:
                        seq.append(gap)
                        gap = 0
                    seq.append(html_lib.escape(text, quote=False))
                else:
                    gap = max(gap, _gap(text))
            if gap == _STRONG and not keep_text:
                # Nothing more dropped changes the gap: go straight to the next live child.
                child = at[k] if k < len(at) else None
            else:
                child = (el[0] if len(el) else None) if child is None else child.getnext()
            if child is None:
                break
            live = k < len(at) and child is at[k]
            if live or (keep_text and child.tag == "br"):
                if live:
                    k += 1
                if gap:
                    seq.append(gap)
                    gap = 0
                seq.append(child if live else ("<br>", " "))
            elif gap < _STRONG:  # (past a strong gap, what else was dropped is moot)
                gap = max(gap, self._dropped(child))
            text = child.tail if keep_text or gap < _STRONG else None
        if not bare:
            if gap:
                seq.append(gap)
            seq.append((f"</{el.tag}>", " " if breaks else ""))
        elif breaks or gap:
            seq.append(_STRONG if breaks else gap)
        return seq


def _gap(text: str) -> int:
    """The gap dropped ``text`` leaves between written words."""
    if not text:
        return 0
    return _WEAK if text.isprintable() and " " not in text else _STRONG


def _edge(char: str) -> str:
    """``char``, or ``" "`` for any white space."""
    return " " if char.isspace() else char


def _spaced(before: str, after: str, gap: int) -> bool:
    """Whether a gap between the characters ``before`` and ``after`` is written as a space."""
    if before == " " or after == " " or not before or not after:
        return False
    return gap == _STRONG or (before.isalnum() and after.isalnum())
