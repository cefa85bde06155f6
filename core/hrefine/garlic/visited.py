"""What the framework adapters return for a GARLIC search: each node read, with its metadata.

Both adapters (LangChain Documents, LlamaIndex nodes) describe a visited node the same way, so
the description is made here, once: :func:`visited_with_metadata`.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hrefine.budget import TokenCounter, select
from hrefine.garlic.extractive import COPIES
from hrefine.garlic.search_result import SearchResult, VisitedNode
from hrefine.repeats import repeats
from hrefine.results import copy_metadata
from hrefine.tree import NodeKind, Tree
from hrefine.tree_order import chunks_first

__all__ = [
    "METADATA_KEYS",
    "REPEATS_CHUNKS",
    "Described",
    "Fitted",
    "fit",
    "fit_to_budget",
    "relevance",
    "source_indexes",
    "visited_with_metadata",
]

#: The keys :func:`visited_with_metadata` adds (beside ``relevance_score``); adapters hide them
#: from an LLM's view of the text.
METADATA_KEYS = (
    "hrefine_raw_score",
    "hrefine_level",
    "hrefine_kind",
    "hrefine_node_id",
    "hrefine_step",
    "hrefine_attention",
    "hrefine_p_yes",
    "hrefine_said_yes",
    "hrefine_tokens",
    "hrefine_sources",
    "hrefine_start",
    "hrefine_end",
    "hrefine_children",
    "hrefine_search",
)
# Keys of the graph's own nodes that mean nothing outside it (hrefine_sources says the same).
_GRAPH_ONLY = ("hrefine_source", "hrefine_source_id", "hrefine_batch", COPIES)


@dataclass(frozen=True)
class Described:
    """One visited node and what an adapter returns for it."""

    node: VisitedNode
    """The core's record of the visit."""
    kind: str
    """``"chunk"`` or ``"summary"``."""
    relevance: float
    """Its relevance in [0, 1] (:func:`relevance`)."""
    metadata: dict[str, Any]
    """A copy of the node's metadata (a chunk's holds its document's) plus the keys of
    :data:`METADATA_KEYS` and ``relevance_score``.
    """
    sources: list[str | int]
    """The ids of the documents under it (their indexes where no id was given)."""


def relevance(visited: VisitedNode) -> float:
    """A visited node's relevance in [0, 1]: its query similarity (cosine, negatives at 0).

    As the RAPTOR retrievers' scores, it is comparable across nodes, kinds and queries, so a
    threshold keeps a source chunk as well as a summary point. The search score (``z_n +
    embedding_weight * s_n``) is not: it is shared out among one step's candidates, and the
    top-level nodes, read by every search, have none.
    """
    value = float(visited.similarity)
    return min(1.0, max(0.0, value)) if value == value else 0.0


def source_indexes(tree: Tree, node_id: int) -> list[int]:
    """The indexes of the documents a node's text comes from, sorted: a chunk's own; a summary
    point's, those of the nodes it summarises: the inputs it copies where the no-model LM
    wrote it (:data:`~hrefine.garlic.extractive.COPIES`: it knows which), else every input of
    its batch (its edges), down to the chunks."""
    found: set[int] = set()
    seen = {node_id}
    stack = [node_id]
    while stack:
        node = tree[stack.pop()]
        if node.kind == NodeKind.CHUNK:
            found.add(int(node.metadata["hrefine_source"]))
            continue
        copies = node.metadata.get(COPIES)
        for child in node.children if copies is None else copies:
            if child not in seen:
                seen.add(int(child))
                stack.append(int(child))
    return sorted(found)


def visited_with_metadata(
    result: SearchResult, tree: Tree, ids: Sequence[int] | None = None
) -> list[Described]:
    """Describe the nodes a search read: the chunks in document order, then the summary points
    in document order (:func:`hrefine.tree_order.chunks_first`).

    The metadata of each is a copy of the node's (a chunk's holds its document's metadata and
    ``hrefine_start``/``hrefine_end``, its character span in the document) plus
    ``relevance_score`` (:func:`relevance`), ``hrefine_raw_score`` (the search score; None for a
    top-level node), ``hrefine_level`` (0 for a chunk), ``hrefine_kind``, ``hrefine_node_id``,
    ``hrefine_step`` (0 for the top level, ``k`` for the node read at step ``k``),
    ``hrefine_attention`` (its ``a_i``), ``hrefine_p_yes`` (P(Yes) asked right after it was
    read), ``hrefine_said_yes``, ``hrefine_tokens``, ``hrefine_sources`` (the ids of the
    documents under it, their indexes where none was given), ``hrefine_children`` (a summary
    point's inputs, node ids) and ``hrefine_search``: the search's ``mode``, ``stopped_by``,
    ``steps``, ``said_yes_at`` (the steps answered Yes), ``prefilled_tokens`` and
    ``recompute_tokens``.

    Parameters
    ----------
    result:
        The search's result.
    tree:
        The graph's node tree.
    ids:
        The visited ids to describe (default: all); kept in that order.
    """
    source_ids = list(tree.metadata.get("sources", []))
    said_yes = {s.step: s.said_yes for s in result.trace}
    search = {
        "mode": result.mode,
        "stopped_by": result.stopped_by,
        "steps": len(result.trace) - 1,
        "said_yes_at": [s.step for s in result.trace if s.said_yes],
        "prefilled_tokens": int(result.prefilled_tokens),
        "recompute_tokens": int(result.recompute_tokens),
    }
    by_id = {v.id: v for v in result.visited}
    out: list[Described] = []
    for node_id in chunks_first(tree, result.document_order if ids is None else ids):
        visited = by_id[node_id]
        node = tree[node_id]
        meta = copy_metadata(visited.metadata)  # shallow where a value (a lock) cannot be copied
        indexes = source_indexes(tree, node_id)
        if node.kind != NodeKind.CHUNK:
            meta["hrefine_children"] = tree.sort_by_order(node.children)
        for key in _GRAPH_ONLY:
            meta.pop(key, None)
        sources = [_source_id(i, source_ids) for i in indexes]
        score = relevance(visited)
        meta.update(
            {
                "relevance_score": score,
                "hrefine_raw_score": None if visited.score is None else float(visited.score),
                "hrefine_level": int(visited.level),
                "hrefine_kind": str(node.kind.value),
                "hrefine_node_id": int(node_id),
                "hrefine_step": int(visited.step),
                "hrefine_attention": float(visited.attention),
                "hrefine_p_yes": float(visited.p_yes),
                "hrefine_said_yes": bool(said_yes.get(visited.step, False)),
                "hrefine_sources": list(sources),
                "hrefine_search": copy.deepcopy(search),
            }
        )
        out.append(Described(visited, str(node.kind.value), score, meta, sources))
    return out


#: Why :func:`fit` leaves out a summary point that fits: a returned chunk holds its every
#: sentence (the no-model LM's points are their inputs' first sentences).
REPEATS_CHUNKS = "repeats returned chunks"


@dataclass(frozen=True)
class Fitted:
    """What a compressor returns of a search (:func:`fit`)."""

    kept: list[int]
    """Visited node ids, in document order."""
    dropped: dict[int, str]
    """Visited summary points left out though budget was left, by id: why
    (:data:`REPEATS_CHUNKS`)."""
    notes: list[str]
    """What was left out and why, in words (empty when nothing was)."""


def fit(result: SearchResult, budget: int, counter: TokenCounter, separator: str = "") -> Fitted:
    """The visited ids a compressor returns: whole nodes within ``budget`` tokens, no sentence
    twice.

    Leaf chunks come first (they are the source text; a summary point only restates it), each
    kind in the order the search read it (the search's own ranking); the kept ids are returned
    in document order. Nodes are counted one by one, each with one ``separator`` but the first.
    A summary point whose every sentence a returned chunk holds (:func:`hrefine.repeats.repeats`)
    is left out, and the room it leaves goes to the next nodes as if it had never been read (the
    chunks are chosen before any point, so they stay the same); :attr:`Fitted.dropped` and
    :attr:`Fitted.notes` say which. The search itself is unchanged.

    Parameters
    ----------
    result:
        The search's result.
    budget:
        Most tokens of the kept nodes' texts.
    counter:
        The budget's token counter.
    separator:
        What the caller joins the kept texts with (its tokens are counted between nodes).
    """
    visited = result.visited
    gap = counter.count(separator) if separator else 0
    costs = [c + gap for c in counter.count_many([v.text for v in visited])]
    n = len(visited)
    # a leaf read at any step outranks every summary point; within a kind, read earlier wins
    scores = [float(n - i) + (n if v.level == 0 else 0) for i, v in enumerate(visited)]
    order = {node_id: k for k, node_id in enumerate(result.document_order)}
    positions = [order[v.id] for v in visited]

    def choose(candidates: list[int]) -> list[int]:
        picked = select(
            costs, scores, budget + gap, order=positions, candidates=candidates, allow_empty=True
        )
        return list(picked.selected)

    every = list(range(n))
    chosen = choose(every)
    chunks = [visited[i].text for i in chosen if visited[i].level == 0]
    repeated = {i for i in every if visited[i].level > 0 and repeats(visited[i].text, chunks)}
    ids = sorted(visited[i].id for i in repeated.intersection(chosen))
    if not ids:
        return Fitted([visited[i].id for i in chosen], {}, [])
    chosen = choose([i for i in every if i not in repeated])
    notes = [
        f"left out {len(ids)} summary point(s) that repeat returned chunks (every sentence is "
        f"in a returned chunk): node ids {ids}"
    ]
    return Fitted([visited[i].id for i in chosen], dict.fromkeys(ids, REPEATS_CHUNKS), notes)


def fit_to_budget(
    result: SearchResult, budget: int, counter: TokenCounter, separator: str = ""
) -> list[int]:
    """The visited ids a compressor returns (:func:`fit`'s :attr:`Fitted.kept`): whole nodes
    within ``budget`` tokens, chunks first, a summary point that repeats returned chunks left
    out; node ids in document order, empty when not one node fits."""
    return fit(result, budget, counter, separator).kept


def _source_id(index: int, source_ids: Sequence[Any]) -> str | int:
    """The id the caller gave source ``index``, else the index itself."""
    given = source_ids[index] if 0 <= index < len(source_ids) else None
    return index if given is None else str(given)
