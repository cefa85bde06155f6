"""Where each block lies in the cleaned documents, for reports (:class:`BlockReport.element`).

A block's position is the index of its element among its cleaned document's elements in
document order. Stage-1 blocks are elements of the cleaned documents themselves. Stage-2 blocks
are elements of the stage-1 output parsed again; they are traced back through the order in which
the renderer wrote the stage-1 elements (:meth:`Renderer.written`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hrefine.html.blocks import BlockForest
from hrefine.html.tags import WRAPPER_TAGS

__all__ = ["document_order", "positions", "traced_positions"]

# How far ahead a stage-2 element is looked for when the two orders do not line up exactly.
_LOOKAHEAD = 64


def document_order(root: Any) -> dict[Any, int]:
    """Index of every element under (and including) ``root`` in document order."""
    return {el: k for k, el in enumerate(e for e in root.iter() if isinstance(e.tag, str))}


def positions(forest: BlockForest, index: dict[Any, int] | None = None) -> dict[int, int]:
    """Node id → element index in its own document, for a forest built on cleaned documents.

    ``index`` (element → index, from :func:`document_order`) gives the indexes as they were
    before the documents were changed in place (by column projection); default: as they are.
    """
    if index is None:
        index = {}
        for root in forest.roots:
            index.update(document_order(root))
    return {nid: index[el] for nid, el in enumerate(forest.elements) if el in index}


def traced_positions(
    forest: BlockForest,
    sources: Sequence[Sequence[Any]],
    source_roots: Sequence[Any],
    source_index: dict[Any, int] | None = None,
) -> dict[int, int]:
    """Node id → element index in the cleaned document, for a forest built on rendered output.

    Parameters
    ----------
    forest:
        The forest over the parsed rendered documents.
    sources:
        For each of ``forest.roots``, the cleaned elements the renderer wrote, in order.
    source_roots:
        For each of ``forest.roots``, the cleaned document's ``<html>`` element.
    source_index:
        Element indexes of the cleaned documents as :func:`positions` takes them (default:
        computed from ``source_roots``).
    """
    mapped: dict[Any, Any] = {}
    index: dict[Any, int] = {} if source_index is None else source_index
    for root, written, source in zip(forest.roots, sources, source_roots, strict=True):
        if source_index is None:
            index.update(document_order(source))
        for tag in WRAPPER_TAGS:
            here = root if root.tag == tag else root.find(tag)
            there = source if source.tag == tag else source.find(tag)
            if here is not None and there is not None:
                mapped[here] = there
        parsed = [e for e in root.iter() if isinstance(e.tag, str) and e.tag not in WRAPPER_TAGS]
        mapped.update(_align(parsed, list(written)))
    out: dict[int, int] = {}
    for nid, el in enumerate(forest.elements):
        src = mapped.get(el)
        if src is not None and src in index:
            out[nid] = index[src]
    return out


def _align(parsed: list[Any], written: list[Any]) -> dict[Any, Any]:
    """Pair parsed elements with the written ones they came from (same order, same tags)."""
    if len(parsed) == len(written) and all(
        a.tag == b.tag for a, b in zip(parsed, written, strict=True)
    ):
        return dict(zip(parsed, written, strict=True))
    # The parser added or moved something (an implied <p> around leading text, say): match
    # greedily on tag and text within a short window, leaving unmatched elements out.
    out: dict[Any, Any] = {}
    pos = 0
    for el in parsed:
        for k in range(pos, min(pos + _LOOKAHEAD, len(written))):
            cand = written[k]
            if cand.tag == el.tag and _same_text(cand.text, el.text):
                out[el] = cand
                pos = k + 1
                break
    return out


def _same_text(a: str | None, b: str | None) -> bool:
    return (a or "").strip() == (b or "").strip() or not (b or "").strip()
