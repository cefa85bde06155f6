"""Inserting documents into a built RAPTOR tree, re-summarising only the affected ancestors.

Each new leaf joins the first-layer summary whose children's mean embedding is nearest to it
(the cluster it would most likely have fallen into). If that cluster's text would then pass
``cluster_max_tokens``, the new leaves start a new first-layer node instead, placed under the
same parents. Every node whose children changed is summarised again, layer by layer up to the
roots; nothing else is touched, so the tree is the one a build would give with the new leaves in
those clusters, at the cost of one summary per affected node. A tree with no layers yet (one
short document) grows its layers over all leaves, as a build would.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from hrefine.budget import TokenCounter
from hrefine.raptor.build import (
    SOURCES,
    TOKENS,
    EmbedWork,
    Grower,
    SummariseWork,
    add_summary,
    grow,
    node_sources,
)
from hrefine.raptor.options import RaptorOptions
from hrefine.raptor.summarise import Summariser
from hrefine.tree import NodeKind, Tree

__all__ = ["insert_steps"]


def insert_steps(
    tree: Tree,
    leaves: Sequence[int],
    options: RaptorOptions,
    summariser: Summariser,
    counter: TokenCounter,
) -> Grower:
    """Embed the new ``leaves`` (already in ``tree``, unlinked), place and re-summarise.

    A tree with no layers yet grows them over all its leaves: a build is this insert into a
    tree of leaves only.
    """
    first = [n.id for n in tree if n.kind == NodeKind.SUMMARY and n.level == 1]
    vectors: np.ndarray = yield EmbedWork([tree[i].text for i in leaves])
    tree.set_embeddings(list(leaves), vectors)
    if not first:
        return (yield from grow(tree, tree.leaves, options, summariser, counter))
    stats: dict[str, Any] = {"resummarised": 0, "new_nodes": 0}
    # Per layer: existing nodes whose children change -> their new children; and new groups
    # (new nodes to make) with the parents they go under.
    grown, fresh = _place(tree, first, list(leaves), vectors, options.cluster_max_tokens)
    level = 1
    while grown or fresh:
        redo = sorted(grown)
        texts = [
            [tree[i].text for i in tree.sort_by_order([*tree[p].children, *grown[p]])] for p in redo
        ]
        texts += [[tree[i].text for i in tree.sort_by_order(kids)] for kids, _ in fresh]
        summaries: list[str] = yield SummariseWork(summariser.prompts(texts))
        new_vectors: np.ndarray = yield EmbedWork(summaries)
        counts = counter.count_many(summaries)
        changed: list[int] = []
        for p, text, n in zip(redo, summaries, counts, strict=False):
            for child in grown[p]:
                tree.add_edge(p, child, 1.0)
            node = tree[p]
            node.text = text
            node.metadata[TOKENS] = int(n)
            node.metadata[SOURCES] = sorted(
                {s for c in node.children for s in node_sources(tree, c)}
            )
            changed.append(p)
        made: list[int] = []
        for (kids, parents), text, n in zip(
            fresh, summaries[len(redo) :], counts[len(redo) :], strict=True
        ):
            new_id = add_summary(tree, text, level, n, kids, [1.0] * len(kids))
            for parent in parents:
                tree.add_edge(parent, new_id, 1.0)
            made.append(new_id)
        tree.set_embeddings([*changed, *made], new_vectors)
        stats["resummarised"] += len(changed)
        stats["new_nodes"] += len(made)
        # The next layer: every parent of a node that changed or was made.
        up: dict[int, list[int]] = {p: [] for c in [*changed, *made] for p in tree[c].parents}
        grown, fresh, level = up, [], level + 1
    return stats


def _place(
    tree: Tree, first: list[int], leaves: list[int], vectors: np.ndarray, limit: int
) -> tuple[dict[int, list[int]], list[tuple[list[int], list[int]]]]:
    """Where the new leaves go: the first-layer nodes they join (node -> new children), and
    runs of leaves that start new nodes (with the parents to put them under) because the
    node they are nearest to would pass ``limit`` tokens."""
    all_vectors = tree.embeddings
    assert all_vectors is not None
    centroids = np.stack([all_vectors[list(tree[p].children)].mean(axis=0) for p in first])
    centroids /= np.maximum(np.linalg.norm(centroids, axis=1, keepdims=True), 1e-12)
    nearest = (vectors @ centroids.T).argmax(axis=1)
    joined: dict[int, list[int]] = {}
    for leaf, k in zip(leaves, nearest, strict=True):
        joined.setdefault(first[int(k)], []).append(leaf)
    grown: dict[int, list[int]] = {}
    fresh: list[tuple[list[int], list[int]]] = []
    for p, kids in joined.items():
        used = sum(int(tree[c].metadata[TOKENS]) for c in tree[p].children)
        run: list[int] = []
        run_used = 0
        for leaf in kids:
            n = int(tree[leaf].metadata[TOKENS])
            if used + n <= limit:
                used += n
                grown.setdefault(p, []).append(leaf)
                continue
            if run and run_used + n > limit:
                fresh.append((run, list(tree[p].parents)))
                run, run_used = [], 0
            run.append(leaf)
            run_used += n
        if run:
            fresh.append((run, list(tree[p].parents)))
    return grown, fresh
