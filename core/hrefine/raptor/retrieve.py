"""Retrieval from a RAPTOR tree: the collapsed tree and tree traversal (the paper's section 3).

Both score nodes by cosine similarity to the query embedding with the BM25 match of the query's
words added (:func:`node_scores`, ``lexical_weight``), and rank summaries by
``summary_rank``. The collapsed tree ranks every
node of every layer together; tree traversal keeps the best ``k`` of the roots, then the best
``k`` among the children of those, down to the leaves (each node is visited once, so a DAG with
shared children cannot loop). The candidates are then taken by :func:`pick`: best first, a
node that does not fit is skipped and a smaller one after it still fills the room, so the budget
is met without waste (the paper's pseudocode stops at the first node that does not fit), and no
sentence is returned twice (a summary returns only what the chosen leaves do not). The result
is ordered best first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hrefine.budget import TokenCounter
from hrefine.errors import BudgetTooSmallError
from hrefine.models.lexical import with_match
from hrefine.repeats import sentences as extract_sentences
from hrefine.results import unit_scores
from hrefine.tree import NodeKind, Tree

__all__ = [
    "K_REACHED",
    "NOT_REACHED",
    "NOT_TOP_K",
    "OVER_BUDGET",
    "REPEATED",
    "Picked",
    "RetrievedNode",
    "choose",
    "node_scores",
    "pick",
    "rank_summaries",
    "traversal_candidates",
]


@dataclass(frozen=True)
class RetrievedNode:
    """One node returned by :meth:`~hrefine.raptor.RaptorTree.retrieve`."""

    id: int
    """Node id in the tree."""
    text: str
    """The chunk or summary text. A summary returns only the sentences that the retrieved
    leaves and better-scored summaries do not return already (an extract repeats its
    leaves' sentences).
    """
    score: float
    """Cosine similarity to the query, plus the weighted BM25 match (``lexical_weight``)."""
    relevance: float
    """``score`` mapped into [0, 1] (divided by ``1 + lexical_weight``, negatives at 0)."""
    layer: int
    """0 for a leaf chunk, 1 for a summary of chunks, and so on."""
    kind: str
    """``"chunk"`` or ``"summary"``."""
    sources: tuple[int, ...]
    """Indexes of the input documents the text comes from (a summary: all below it)."""
    tokens: int
    """The length of ``text`` in the tree's tokenizer."""
    metadata: dict[str, Any] = field(default_factory=dict)
    """A leaf: its document's metadata and ``hrefine_source``/``hrefine_start``/
    ``hrefine_end`` (character offsets in that document); a summary:
    ``hrefine_children`` (the ids it summarises) and, when sentences were left out as
    repeats, ``hrefine_repeated_sentences`` (how many).
    """


def node_scores(
    tree: Tree,
    query: str,
    cosine: np.ndarray,
    *,
    lexical_weight: float,
    summary_rank: str,
) -> tuple[np.ndarray, np.ndarray]:
    """Every node's scores: its cosine similarity with the BM25 match added
    (:func:`hrefine.models.lexical.fuse`), which a traversal walks by, and the same with the
    summaries ranked by ``summary_rank`` (:func:`rank_summaries`), which the result is picked
    by."""
    route = with_match(query, [n.text for n in tree], cosine, lexical_weight)
    return route, rank_summaries(tree, route, summary_rank)


def rank_summaries(tree: Tree, scores: np.ndarray, summary_rank: str) -> np.ndarray:
    """``scores`` with the summaries ranked by ``summary_rank`` (a new array).

    ``"below"`` caps each summary just under the best node it summarises (its children's
    capped scores, layer by layer), so a summary is taken only after the source text it stands
    for; ``"off"`` puts every summary out of reach (-inf: never chosen); ``"free"`` leaves the
    scores as they are.
    """
    scores = np.array(scores, dtype=np.float64)
    if summary_rank == "free":
        return scores
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


#: Why a node was left out of a retrieval (:attr:`Picked.reasons`).
OVER_BUDGET = "over_budget"
K_REACHED = "k_reached"
REPEATED = "repeats_returned_text"
NOT_TOP_K = "not_top_k_of_layer"
NOT_REACHED = "not_reached"


@dataclass(frozen=True)
class Picked:
    """The nodes a retrieval returns and why the others were left out (see :func:`pick`)."""

    chosen: list[int]
    """Node ids, best first."""
    texts: dict[int, str]
    """The text each chosen node returns: its own, but for a summary the sentences that the
    chosen leaves or a better summary already return are left out.
    """
    tokens: dict[int, int]
    """The tokens of each chosen node's returned text."""
    repeated: dict[int, int]
    """For a chosen summary shortened that way: how many sentences were left out."""
    reasons: dict[int, str]
    """For a candidate left out: :data:`OVER_BUDGET`, :data:`K_REACHED` or :data:`REPEATED`
    (a summary all of whose sentences are returned already).
    """
    room: dict[int, int]
    """For a node left out as over budget: the tokens left when its turn came."""


def pick(
    tree: Tree,
    scores: np.ndarray,
    costs: np.ndarray,
    counter: TokenCounter,
    *,
    candidates: Sequence[int],
    k: int | None,
    max_tokens: int | None,
    then: Sequence[int] = (),
) -> Picked:
    """The candidates a retrieval returns: best score first (ties by id), each taken while
    ``k`` nodes are not reached and it fits the room left in ``max_tokens`` (one that does not
    fit is skipped and a smaller one after it may still fit), so the budget is met without
    waste. The nodes of ``then`` are tried after every candidate, best first, in the room
    the candidates leave.

    Text is never returned twice. An extract's sentences are its leaves' sentences, so a
    summary is charged, and returns, only the sentences that the leaves chosen (before or
    after it) and the better-scored summaries do not return already; a summary left with none
    is dropped. Measured on every dev document (``benchmarks/raptor_summaries.py``), this
    kept more answers than summaries returned whole on both halves. A tree without summaries
    among the candidates gets exactly :func:`hrefine.budget.select`'s choice.

    Raises
    ------
    BudgetTooSmallError
        ``max_tokens`` is given and no candidate fits it.
    """
    order = [
        i
        for group in (candidates, then)
        for i in sorted(
            (int(j) for j in group if np.isfinite(scores[j])), key=lambda j: (-scores[j], j)
        )
    ]
    chosen: list[int] = []
    held: set[str] = set()  # sentences the chosen leaves return
    parts: dict[int, list[str]] = {}  # a chosen summary: the sentences it returns
    whole: dict[int, list[str]] = {}  # a summary's own sentences
    cost: dict[int, int] = {}
    reasons: dict[int, str] = {}
    room: dict[int, int] = {}
    used = 0

    def charge(node_id: int, kept: list[str]) -> int:
        if len(kept) == len(whole[node_id]):
            return int(costs[node_id])
        return counter.count(" ".join(kept)) if kept else 0

    for i in order:
        if k is not None and len(chosen) >= k:
            reasons[i] = K_REACHED
            continue
        left = None if max_tokens is None else max_tokens - used
        if tree[i].kind == NodeKind.SUMMARY:
            whole[i] = extract_sentences(tree[i].text)
            earlier = {s for j in parts for s in parts[j]}
            kept = [s for s in whole[i] if s not in held and s not in earlier]
            if not kept:
                reasons[i] = REPEATED
                continue
            need = charge(i, kept)
            if left is not None and need > left:
                reasons[i], room[i] = OVER_BUDGET, left
                continue
            chosen.append(i)
            parts[i], cost[i] = kept, need
            used += need
            continue
        own = set(extract_sentences(tree[i].text))
        shorter = {
            j: [s for s in parts[j] if s not in own] for j in parts if own.intersection(parts[j])
        }
        saved = {j: cost[j] - charge(j, kept) for j, kept in shorter.items()}
        need = int(costs[i]) - sum(saved.values())
        if left is not None and need > left:
            reasons[i], room[i] = OVER_BUDGET, left
            continue
        chosen.append(i)
        cost[i] = int(costs[i])
        used += need
        held |= own
        for j, kept in shorter.items():
            cost[j] -= saved[j]
            if kept:
                parts[j] = kept
            else:  # every sentence of it is returned by the leaves now: it adds nothing
                del parts[j]
                chosen.remove(j)
                reasons[j] = REPEATED
    if not chosen and max_tokens is not None and order:
        smallest = int(min(costs[i] for i in order))  # of the nodes this retrieval may return
        msg = (
            f"budget of {max_tokens} tokens is smaller than the smallest node this retrieval "
            f"may return ({smallest} tokens); raise the budget or use smaller chunks"
        )
        raise BudgetTooSmallError(msg, budget=max_tokens, smallest=smallest)
    texts = {i: tree[i].text for i in chosen}
    repeated: dict[int, int] = {}
    for j, kept in parts.items():
        if len(kept) < len(whole[j]):
            texts[j] = " ".join(kept)
            repeated[j] = len(whole[j]) - len(kept)
    return Picked(
        chosen=chosen,
        texts=texts,
        tokens={i: cost[i] for i in chosen},
        repeated=repeated,
        reasons=reasons,
        room=room,
    )


def choose(
    tree: Tree,
    scores: np.ndarray,
    costs: np.ndarray,
    counter: TokenCounter,
    *,
    mode: str,
    k: int | None,
    max_tokens: int | None,
    reasons: dict[int, str] | None = None,
    route: np.ndarray | None = None,
) -> Picked:
    """The result of a retrieval in ``mode``, picked by :func:`pick` (nodes scored -inf never).

    ``"collapsed"``: every node of every layer is a candidate and ``k`` limits the result;
    ``"traversal"``: the nodes :func:`traversal_candidates` keeps are, ``k`` limiting each
    layer (``reasons`` gets why the others were not kept). The walk down the layers follows
    ``route`` (default: ``scores``): given the scores before :func:`rank_summaries`, it still
    reads the summaries when they are ranked out of the result, and the places those
    summaries held go to the leaves, so a leaves-only traversal returns as many nodes as the
    paper's would, all of them leaves under the best summaries. With ``max_tokens``, the room
    those nodes leave is filled with the best nodes the traversal did not keep (as the
    collapsed tree ranks them), up to the most nodes a traversal returns, ``k`` a layer: the
    paper's traversal has no token budget, and without this a short tree's few branches left
    most of a large budget empty.
    """
    if mode == "collapsed":
        return pick(
            tree, scores, costs, counter, candidates=range(len(scores)), k=k, max_tokens=max_tokens
        )
    if route is None:
        kept = traversal_candidates(tree, scores, k, reasons)
    else:
        left_out = {int(i) for i in np.flatnonzero(np.isneginf(scores))}
        kept = traversal_candidates(tree, route, k, reasons, left_out=left_out)
    rest: list[int] = []
    most = None
    if max_tokens is not None:
        taken = set(kept)
        rest = [i for i in range(len(scores)) if i not in taken]
        if k is not None:  # the traversal itself returns at most k a layer
            most = k * (tree.top_level + 1)
    got = pick(
        tree, scores, costs, counter, candidates=kept, k=most, max_tokens=max_tokens, then=rest
    )
    if reasons is not None:
        for i in got.chosen:  # a node the fill took is no longer dropped by the traversal
            reasons.pop(i, None)
    return got


def traversal_candidates(
    tree: Tree,
    scores: np.ndarray,
    k: int | None,
    reasons: dict[int, str] | None = None,
    *,
    left_out: set[int] | frozenset[int] = frozenset(),
) -> list[int]:
    """The nodes tree traversal keeps: the best ``k`` roots, then the best ``k`` of their
    children, down to the leaves (each node visited once). ``reasons``, when given, gets
    :data:`NOT_TOP_K` for each node visited and not kept and :data:`NOT_REACHED` for each
    node never visited.

    ``left_out``: nodes that are walked through but cannot be returned (summaries with
    ``summary_rank="off"``). Each one kept hands its place on to the last layer walked (the
    leaves), which keeps ``k`` plus that many nodes.
    """
    width = k if k is not None else len(scores)
    pool = list(tree.roots)
    seen: set[int] = set()
    kept: list[int] = []
    handed_on = 0  # places of kept nodes that cannot be returned
    while pool:
        pool = [i for i in dict.fromkeys(pool) if i not in seen]
        seen.update(pool)
        ranked = sorted(pool, key=lambda i: (-scores[i], i))
        last = not any(tree[i].children for i in pool)
        here = width + handed_on if last else width
        kept.extend(ranked[:here])
        handed_on += sum(1 for i in ranked[:here] if i in left_out)
        if reasons is not None:
            reasons.update((i, NOT_TOP_K) for i in ranked[here:])
        pool = [c for i in ranked[:here] for c in tree[i].children]
    if reasons is not None:
        reasons.update((n.id, NOT_REACHED) for n in tree if n.id not in seen)
    return kept


def relevance(scores: Sequence[float], *, extra: float = 0.0) -> list[float]:
    """Node scores (cosine plus up to ``extra`` of BM25 match) mapped into [0, 1]."""
    return [0.0 if v is None else v for v in unit_scores(list(scores), scale="cosine", extra=extra)]
