"""Retrieval from a RAPTOR tree: the collapsed tree and tree traversal (the paper's section 3).

Both score nodes by cosine similarity to the query embedding. The collapsed tree ranks every
node of every layer together; tree traversal keeps the best ``k`` of the roots, then the best
``k`` among the children of those, down to the leaves (each node is visited once, so a DAG with
shared children cannot loop). With a token budget, the chosen nodes go through
:func:`hrefine.budget.select`: best first, a node that does not fit is skipped and a smaller one
after it still fills the room, so the budget is met without waste (the paper's pseudocode stops
at the first node that does not fit). The result is ordered best first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hrefine.budget import select
from hrefine.results import unit_scores
from hrefine.tree import Tree

__all__ = ["RetrievedNode", "collapsed", "traversal"]


@dataclass(frozen=True)
class RetrievedNode:
    """One node returned by :meth:`~hrefine.raptor.RaptorTree.retrieve`.

    Attributes
    ----------
    id:
        Node id in the tree.
    text:
        The chunk or summary text.
    score:
        Cosine similarity to the query.
    relevance:
        ``score`` mapped into [0, 1] (negative similarities at 0).
    layer:
        0 for a leaf chunk, 1 for a summary of chunks, and so on.
    kind:
        ``"chunk"`` or ``"summary"``.
    sources:
        Indexes of the input documents the text comes from (a summary: all below it).
    tokens:
        Its length in the tree's tokenizer.
    metadata:
        A leaf: its document's metadata and ``hrefine_source``/``hrefine_start``/
        ``hrefine_end`` (character offsets in that document); a summary:
        ``hrefine_children`` (the ids it summarises).
    """

    id: int
    text: str
    score: float
    relevance: float
    layer: int
    kind: str
    sources: tuple[int, ...]
    tokens: int
    metadata: dict[str, Any] = field(default_factory=dict)


def collapsed(
    scores: np.ndarray, costs: np.ndarray, *, k: int | None, max_tokens: int | None
) -> list[int]:
    """Node ids of the collapsed-tree result, best first."""
    if max_tokens is None:
        ranked = np.argsort(-scores, kind="stable")
        return [int(i) for i in ranked[: len(ranked) if k is None else k]]
    chosen = select(costs, scores, max_tokens, max_units=k).selected
    return sorted(chosen, key=lambda i: (-scores[i], i))


def traversal(
    tree: Tree,
    scores: np.ndarray,
    costs: np.ndarray,
    *,
    k: int | None,
    max_tokens: int | None,
) -> list[int]:
    """Node ids of the tree-traversal result (top ``k`` per layer), best first."""
    width = k if k is not None else len(scores)
    pool = list(tree.roots)
    seen: set[int] = set()
    kept: list[int] = []
    while pool:
        pool = [i for i in dict.fromkeys(pool) if i not in seen]
        seen.update(pool)
        best = sorted(pool, key=lambda i: (-scores[i], i))[:width]
        kept.extend(best)
        pool = [c for i in best for c in tree[i].children]
    if max_tokens is None:
        return sorted(kept, key=lambda i: (-scores[i], i))
    chosen = select(costs, scores, max_tokens, candidates=kept).selected
    return sorted(chosen, key=lambda i: (-scores[i], i))


def relevance(scores: Sequence[float]) -> list[float]:
    """Cosine similarities mapped into [0, 1]."""
    return [0.0 if v is None else v for v in unit_scores(list(scores), scale="cosine")]
