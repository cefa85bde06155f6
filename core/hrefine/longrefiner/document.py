"""A structured document: the shared :class:`~hrefine.tree.Tree` built from a structure's spans.

The tree has one ``document`` root, ``section`` nodes (a section or sub-section; the text
before the first section, the lead, is an untitled section flagged ``abstract`` when the
document has other sections) and ``paragraph`` leaves. Every node records the extent of the
document it covers (``metadata["start"]``, ``["end"]``): a paragraph's own text, a section's
heading and everything below it. Extents nest and follow document order, so the text of any
node is ``text[start:end]`` exactly, and the leaves and headings together hold every
non-whitespace character of the document (see :func:`coverage`).

Leaves are sized here, once for every structure source: a paragraph longer than
``leaf_tokens`` is cut at sentence ends (:func:`hrefine.chunk.chunks`), and paragraphs shorter
than ``min_leaf_tokens`` are joined with the next one of the same section.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from hrefine.budget import TokenCounter
from hrefine.chunk import chunks
from hrefine.errors import TreeError
from hrefine.longrefiner.spans import Span, check_cover, trimmed
from hrefine.tree import Tree

__all__ = ["StructuredDocument", "build_document", "check_structure", "coverage", "section_path"]


@dataclasses.dataclass
class StructuredDocument:
    """A document's text and its section tree."""

    text: str
    """The document's plain text (for HTML input: its visible text, blocks on their own lines)."""
    tree: Tree
    """Node 0 is the ``document`` root; below it ``section`` and ``paragraph`` nodes with their
    extents in ``metadata`` (see the module docstring).
    """
    source: str
    """Where the structure came from: ``"html"``, ``"markdown"``, ``"numbered"``,
    ``"headings"``, ``"paragraphs"`` or ``"model"``.
    """
    title: str = ""
    """The document's title (its metadata's, or its first heading's; may be empty)."""
    notes: list[str] = dataclasses.field(default_factory=list)
    """What went wrong and what was done instead (a model's output that could not be parsed,
    a fallback to markup), in order.
    """
    raw_outputs: list[str] = dataclasses.field(default_factory=list)
    """The model's answers, one per window, when the model structured it."""

    def extent(self, node_id: int) -> tuple[int, int]:
        """``(start, end)`` of the document a node covers."""
        meta = self.tree[node_id].metadata
        return int(meta["start"]), int(meta["end"])

    def node_text(self, node_id: int) -> str:
        """The document's text under a node, exactly as written (the root: the whole text)."""
        if node_id == 0:
            return self.text.strip()
        start, end = self.extent(node_id)
        return self.text[start:end]

    def sections(self) -> list[int]:
        """Ids of the section nodes, in document order."""
        return [n.id for n in self.tree if n.kind == "section"]

    def outline(self) -> list[tuple[int, str, int]]:
        """``(node id, title, depth)`` of each titled section, in document order (depth 1: a
        section, 2: a sub-section, …); the lead is left out."""
        return [
            (n.id, str(n.metadata.get("title", "")), int(n.metadata.get("depth", 1)))
            for n in self.tree
            if n.kind == "section" and not n.metadata.get("abstract")
        ]

    def abstract_id(self) -> int | None:
        """The lead section's id, when the document has one."""
        for n in self.tree:
            if n.kind == "section" and n.metadata.get("abstract"):
                return n.id
        return None


def build_document(
    text: str,
    spans: Sequence[Span],
    counter: TokenCounter,
    *,
    source: str,
    leaf_tokens: int,
    min_leaf_tokens: int,
    title: str = "",
    notes: Sequence[str] = (),
    raw_outputs: Sequence[str] = (),
    metadata: dict[str, Any] | None = None,
) -> StructuredDocument:
    """Build the section tree of ``text`` from ``spans``.

    Parameters
    ----------
    text:
        The document's plain text.
    spans:
        Its structure (checked with :func:`~hrefine.longrefiner.spans.check_cover` first).
    counter:
        Counts the tokens that size the leaves.
    source:
        The structure's source (see :class:`StructuredDocument`).
    leaf_tokens, min_leaf_tokens:
        Longest leaf, and the length under which paragraphs are joined with the next.
    title, notes, raw_outputs, metadata:
        Carried onto the result (``metadata`` onto the root node).

    Raises
    ------
    hrefine.errors.TreeError
        The spans do not cover the text exactly.
    """
    check_cover(text, spans)
    tree = Tree()
    root = tree.add_node(
        title, kind="document", order=0, metadata={**(metadata or {}), "start": 0, "end": len(text)}
    )
    has_sections = any(s.path for s in spans)
    stack: list[tuple[tuple[str, ...], int]] = []  # open sections: (path, node id)
    leaves: list[tuple[int, int, int]] = []  # (parent, start, end) before sizing

    def open_path(path: tuple[str, ...], start: int) -> int:
        if not path and not has_sections:
            return root
        key = path if path else ("",)  # the lead is an untitled section of its own
        while stack and stack[-1][0] != key[: len(stack[-1][0])]:
            stack.pop()
        if stack and stack[-1][0] == key:
            return stack[-1][1]
        # Open every missing level of the path (a sub-section may come without its section).
        parent = stack[-1][1] if stack else root
        depth = len(stack[-1][0]) if stack else 0
        levels = [key[: i + 1] for i in range(depth, len(key))]
        for sub in levels:
            lead = sub == ("",)
            node = tree.add_node(
                "",
                kind="section",
                level=len(sub) if not lead else 1,
                order=start,
                parents=[parent],
                metadata={
                    "title": "Abstract" if lead else sub[-1],
                    "depth": 1 if lead else len(sub),
                    "abstract": lead,
                    "start": start,
                    "end": start,
                    "heading": None,
                },
            )
            stack.append((sub, node))
            parent = node
        return parent

    filled: set[int] = set()  # sections that have a heading or a paragraph already
    for s in spans:
        if s.heading and s.path and stack and stack[-1][0] == s.path and stack[-1][1] in filled:
            stack.pop()  # a second section of the same title: a new section, not more of this
        owner = open_path(s.path, s.start)
        filled.add(owner)
        if s.heading and owner != root and not tree[owner].metadata["heading"]:
            node = tree[owner]
            node.text = text[s.start : s.end]
            node.metadata["heading"] = [s.start, s.end]
            continue
        leaves.append((owner, s.start, s.end))

    for owner, start, end in _sized(text, leaves, counter, leaf_tokens, min_leaf_tokens):
        tree.add_node(
            text[start:end],
            kind="paragraph",
            level=0,
            order=start,
            parents=[owner],
            metadata={"start": start, "end": end},
        )
    _set_extents(tree, root)
    return StructuredDocument(
        text, tree, source, title=title, notes=list(notes), raw_outputs=list(raw_outputs)
    )


def _sized(
    text: str,
    leaves: list[tuple[int, int, int]],
    counter: TokenCounter,
    leaf_tokens: int,
    min_leaf_tokens: int,
) -> list[tuple[int, int, int]]:
    """Leaves cut to at most ``leaf_tokens`` and short ones joined with the next of their
    section (never across a section)."""
    costs = counter.count_many([text[a:b] for _, a, b in leaves]) if leaves else []
    cut: list[tuple[int, int, int, int]] = []
    for (owner, start, end), cost in zip(leaves, costs, strict=True):
        if cost <= leaf_tokens:
            cut.append((owner, start, end, cost))
            continue
        for c in chunks(text[start:end], counter, leaf_tokens):
            piece = trimmed(text, start + c.start, start + c.end)
            if piece is not None:
                cut.append((owner, piece[0], piece[1], c.tokens))
    cut = _folded(text, cut, counter)
    out: list[tuple[int, int, int]] = []
    pending: tuple[int, int, int, int] | None = None
    for owner, start, end, cost in cut:
        if pending is not None:
            p_owner, p_start, _, p_cost = pending
            if p_owner == owner and p_cost + cost <= leaf_tokens:
                pending = (owner, p_start, end, counter.count(text[p_start:end]))
                if pending[3] >= min_leaf_tokens:
                    out.append(pending[:3])
                    pending = None
                continue
            out.append(pending[:3])
            pending = None
        if cost < min_leaf_tokens:
            pending = (owner, start, end, cost)
        else:
            out.append((owner, start, end))
    if pending is not None:
        out.append(pending[:3])
    return out


def _folded(
    text: str, cut: list[tuple[int, int, int, int]], counter: TokenCounter
) -> list[tuple[int, int, int, int]]:
    """Pieces without a letter (page numbers, rules of dashes) joined to the piece before them
    in their section (or the one after, when first): alone they say nothing to a scorer, and a
    budget's last tokens would be spent on them."""
    out: list[tuple[int, int, int, int]] = []
    k = 0
    while k < len(cut):
        owner = cut[k][0]
        run = []
        while k < len(cut) and cut[k][0] == owner:
            run.append(cut[k])
            k += 1
        worded = [any(ch.isalpha() for ch in text[a:b]) for _, a, b, _ in run]
        if not any(worded) or all(worded):
            out.extend(run)
            continue
        merged: list[list[int]] = []  # [start, end] of each piece with words
        lead: int | None = None
        for (_, start, end, _), has in zip(run, worded, strict=True):
            if has:
                merged.append([start if lead is None or merged else lead, end])
                lead = None
            elif merged:
                merged[-1][1] = end
            elif lead is None:
                lead = start
        out.extend((owner, a, b, counter.count(text[a:b])) for a, b in merged)
    return out


def _set_extents(tree: Tree, root: int) -> None:
    """Give every section the extent of its heading and everything below it (post-order)."""
    for node in reversed(tree.nodes):
        if node.kind != "section":
            continue
        starts, ends = [], []
        if node.metadata["heading"]:
            starts.append(node.metadata["heading"][0])
            ends.append(node.metadata["heading"][1])
        for c in node.children:
            meta = tree[c].metadata
            starts.append(int(meta["start"]))
            ends.append(int(meta["end"]))
        if starts:
            node.metadata["start"], node.metadata["end"] = min(starts), max(ends)
        tree.set_order(node.id, int(node.metadata["start"]))


def section_path(doc: StructuredDocument, node_id: int) -> list[str]:
    """Titles of the sections from the top down to ``node_id`` (itself included), each
    section's first parent followed."""
    tree = doc.tree
    titles: list[str] = []
    node = tree[node_id]
    while True:
        if node.kind == "section":
            titles.append(str(node.metadata.get("title", "")))
        if not node.parents:
            break
        node = tree[node.parents[0]]
    return titles[::-1]


def coverage(doc: StructuredDocument) -> float:
    """Share of the document's non-whitespace characters held by its leaves and headings (1.0
    when nothing is lost)."""
    total = sum(1 for ch in doc.text if not ch.isspace())
    if not total:
        return 1.0
    held = 0
    for n in doc.tree:
        meta = n.metadata
        pieces: list[tuple[int, int]] = []
        if n.kind == "paragraph":
            pieces.append((int(meta["start"]), int(meta["end"])))
        elif n.kind == "section" and meta.get("heading"):
            pieces.append((int(meta["heading"][0]), int(meta["heading"][1])))
        held += sum(1 for a, b in pieces for ch in doc.text[a:b] if not ch.isspace())
    return held / total


def check_structure(doc: StructuredDocument) -> None:
    """Check that ``doc``'s tree is one :func:`build_document` could have built from its text.

    Node 0 is the ``document`` root; every other node is a ``section`` or a ``paragraph`` with
    one parent; extents are whole numbers inside the text; a paragraph's text is its extent's
    text, and paragraphs and headings are sorted, disjoint, trimmed and hold every
    non-whitespace character of the text (:func:`~hrefine.longrefiner.spans.check_cover`). A
    tree read from a cache is untrusted: a forged extent would drop text silently.

    Raises
    ------
    hrefine.errors.TreeError
        The first rule the tree breaks.
    """
    text, tree = doc.text, doc.tree
    if not len(tree) or tree[0].kind != "document" or tree[0].parents:
        msg = "node 0 is not a document root"
        raise TreeError(msg)
    pieces: list[Span] = []
    for node in tree:
        meta = node.metadata
        extent = _extent(meta.get("start"), meta.get("end"), text)
        if extent is None:
            msg = f"node {node.id} has the extent {meta.get('start')!r}:{meta.get('end')!r}"
            raise TreeError(msg)
        if node.id == 0:
            continue
        if node.kind not in ("section", "paragraph") or len(node.parents) != 1:
            msg = f"node {node.id} is a {node.kind} with {len(node.parents)} parents"
            raise TreeError(msg)
        if node.kind == "paragraph":
            if node.children or node.text != text[extent[0] : extent[1]]:
                msg = f"paragraph {node.id} has children or a text that is not its extent's"
                raise TreeError(msg)
            pieces.append(Span(*extent))
            continue
        heading = meta.get("heading")
        if heading:
            found = None
            if isinstance(heading, list) and len(heading) == 2:
                found = _extent(heading[0], heading[1], text)
            if found is None:
                msg = f"section {node.id} has the heading extent {heading!r}"
                raise TreeError(msg)
            pieces.append(Span(*found, (), True))
    check_cover(text, sorted(pieces))


def _extent(start: object, end: object, text: str) -> tuple[int, int] | None:
    """``(start, end)`` when both are whole numbers (not bools) with
    ``0 <= start <= end <= len(text)``; None otherwise."""
    if type(start) is not int or type(end) is not int or not 0 <= start <= end <= len(text):
        return None
    return start, end
