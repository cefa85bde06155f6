"""The shape a RAPTOR tree read from storage must have (:func:`check_raptor_shape`): nodes,
every one embedded and counted, leaves with a source and no children, summaries of
something, and lists where insert and retrieval read lists."""

from __future__ import annotations

import numpy as np

from hrefine._saved import is_count
from hrefine.errors import PersistenceError
from hrefine.raptor.build import SOURCE, SOURCES, TOKENS
from hrefine.tree import NodeKind, Tree

__all__ = ["check_raptor_shape", "is_pairs"]


def check_raptor_shape(tree: Tree, path: object) -> None:
    """Raise PersistenceError unless ``tree`` has the shape of a RAPTOR tree."""
    problems: list[str] = []
    if len(tree) == 0:
        problems.append("it has no nodes")
    if not isinstance(tree.metadata.get("sources", []), list):
        problems.append("its list of sources is not a list")
    if not _is_counts(tree.metadata.get("empty_sources", [])):
        problems.append("its empty sources are not a list of source indexes")
    if not is_pairs(tree.metadata.get("repeated_sources", [])):
        problems.append("its repeated sources are not pairs of source indexes")
    mask = tree.embedding_mask if len(tree) else np.zeros(0, dtype=bool)
    if len(tree) and (tree.embeddings is None or not bool(np.all(mask))):
        problems.append("some nodes have no embedding")
    for node in tree:
        meta = node.metadata
        if not is_count(meta.get(TOKENS)):
            problems.append(f"node {node.id} has no token count")
        elif node.kind == NodeKind.CHUNK and (node.children or not is_count(meta.get(SOURCE))):
            problems.append(f"leaf {node.id} has children or no source")
        elif node.kind == NodeKind.SUMMARY and not node.children:
            problems.append(f"summary {node.id} summarises nothing")
        elif node.kind == NodeKind.SUMMARY and not _is_counts(meta.get(SOURCES, [])):
            problems.append(f"summary {node.id} has sources that are not source indexes")
        elif node.kind not in (NodeKind.CHUNK, NodeKind.SUMMARY):
            problems.append(f"node {node.id} is a {node.kind}, not a chunk or summary")
        if problems:
            break
    if problems:
        msg = f"{path} is not a valid RAPTOR tree: {problems[0]}"
        raise PersistenceError(msg)


def _is_counts(value: object) -> bool:
    """Whether ``value`` is a list of source indexes (whole numbers from 0)."""
    return isinstance(value, list) and all(is_count(v) for v in value)


def is_pairs(value: object) -> bool:
    """Whether ``value`` is a list of ``[index, index of the first]`` source pairs (a later
    source repeating an earlier one)."""
    return isinstance(value, list) and all(
        isinstance(p, list) and len(p) == 2 and _is_counts(p) and p[1] < p[0] for p in value
    )
