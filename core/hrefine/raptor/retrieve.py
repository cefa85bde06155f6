"""Retrieval from a RAPTOR tree: the collapsed tree and tree traversal (the paper's section 3).

Both score nodes by cosine similarity to the query embedding with the BM25 match of the query's
words added (:func:`node_scores`, ``lexical_weight``), and rank summaries by
``summary_rank``. The collapsed tree ranks every
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
from hrefine.models.lexical import BM25Scorer, fuse
from hrefine.results import unit_scores
from hrefine.tree import NodeKind, Tree

__all__ = ["RetrievedNode", "collapsed", "node_scores", "traversal"]


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
        Cosine similarity to the query, plus the weighted BM25 match (``lexical_weight``).
    relevance:
        ``score`` mapped into [0, 1] (divided by ``1 + lexical_weight``, negatives at 0).
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


def node_scores(
    tree: Tree,
    query: str,
    cosine: np.ndarray,
    *,
    lexical_weight: float,
    summary_rank: str,
) -> np.ndarray:
    """Every node's retrieval score: its cosine similarity with the BM25 match added
    (:func:`hrefine.models.lexical.fuse`), and summaries ranked by ``summary_rank``.

    ``"below"`` caps each summary just under the best node it summarises (its children's
    capped scores, layer by layer), so a summary is taken only after the source text it stands
    for; ``"off"`` puts every summary out of reach (-inf: never chosen); ``"free"`` leaves the
    scores as they are.
    """
    scores = np.asarray(cosine, dtype=np.float64)
    if lexical_weight > 0 and len(tree):
        match = BM25Scorer().score(query, [n.text for n in tree])
        scores = fuse(scores, match, lexical_weight)
    if summary_rank == "free":
        return scores
    scores = scores.copy()
    summaries = sorted(
        (n for n in tree if n.kind == NodeKind.SUMMARY), key=lambda n: n.level
    )  # lower layers first: a summary's children are capped before it
    for node in summaries:
        if summary_rank == "off" or not node.children:
            scores[node.id] = -np.inf
            continue
        best = max(float(scores[c]) for c in node.children)
        scores[node.id] = min(float(scores[node.id]), float(np.nextafter(best, -np.inf)))
    return scores


def collapsed(
    scores: np.ndarray, costs: np.ndarray, *, k: int | None, max_tokens: int | None
) -> list[int]:
    """Node ids of the collapsed-tree result, best first (nodes scored -inf never)."""
    usable = np.flatnonzero(np.isfinite(scores))
    if max_tokens is None:
        ranked = usable[np.argsort(-scores[usable], kind="stable")]
        return [int(i) for i in ranked[: len(ranked) if k is None else k]]
    chosen = select(costs, scores, max_tokens, max_units=k, candidates=usable.tolist()).selected
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
    kept = [i for i in kept if np.isfinite(scores[i])]  # summary_rank="off": leaves only
    if max_tokens is None:
        return sorted(kept, key=lambda i: (-scores[i], i))
    chosen = select(costs, scores, max_tokens, candidates=kept).selected
    return sorted(chosen, key=lambda i: (-scores[i], i))


def relevance(scores: Sequence[float], *, extra: float = 0.0) -> list[float]:
    """Node scores (cosine plus up to ``extra`` of BM25 match) mapped into [0, 1]."""
    return [0.0 if v is None else v for v in unit_scores(list(scores), scale="cosine", extra=extra)]
