"""One hierarchical graph type shared by every method.

HTML block trees, document sections, RAPTOR summary layers and GARLIC's many-to-many summary
graph are all a :class:`Tree`: a directed acyclic graph of :class:`Node` objects with weighted
parent→child edges. Node ids are dense integers (their index in ``Tree.nodes``), so embeddings are
held as one ``(n_nodes, dim)`` array whose row ``i`` belongs to node ``i``.

Traversals are iterative, so a tree 10,000 levels deep never hits Python's recursion limit.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hrefine.errors import HrefineError

__all__ = ["Node", "Tree"]


@dataclass(kw_only=True)
class Node:
    """A unit of text in a :class:`Tree`.

    Attributes
    ----------
    id:
        Dense index of the node in its tree.
    text:
        The node's own text (a block's HTML text, a section body, a summary).
    kind:
        What the node is: ``"block"``, ``"section"``, ``"paragraph"``, ``"chunk"``, ``"summary"``…
    level:
        Height or depth, as the method defines it (RAPTOR: 0 for leaves; HTML: depth).
    order:
        Position in document order; selections are returned sorted by it.
    children, parents:
        Ids of linked nodes, in order. Edge weights live in the tree (``Tree.weight``).
    metadata:
        Free-form provenance (tag path, source document, section title…).
    """

    id: int
    text: str
    kind: str = "block"
    level: int = 0
    order: int = 0
    children: list[int] = field(default_factory=list)
    parents: list[int] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)


class Tree:
    """A weighted DAG of :class:`Node` objects with an optional embedding matrix.

    Parameters
    ----------
    metadata:
        Tree-level metadata (method, options, source); saved by :mod:`hrefine.persist`.
    """

    def __init__(self, metadata: dict[str, Any] | None = None) -> None:
        self.nodes: list[Node] = []
        self.metadata: dict[str, Any] = dict(metadata or {})
        self._weights: dict[tuple[int, int], float] = {}
        self._embeddings: np.ndarray | None = None

    # -- building -------------------------------------------------------------------------
    def add_node(
        self,
        text: str,
        *,
        kind: str = "block",
        level: int = 0,
        order: int | None = None,
        parents: Sequence[int] = (),
        weights: Sequence[float] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> int:
        """Append a node, link it under ``parents`` and return its id."""
        node_id = len(self.nodes)
        node = Node(
            id=node_id,
            text=text,
            kind=kind,
            level=level,
            order=node_id if order is None else order,
            metadata=dict(metadata or {}),
        )
        self.nodes.append(node)
        if weights is not None and len(weights) != len(parents):
            msg = f"got {len(weights)} weights for {len(parents)} parents"
            raise HrefineError(msg)
        for i, parent in enumerate(parents):
            self.add_edge(parent, node_id, 1.0 if weights is None else float(weights[i]))
        return node_id

    def add_edge(self, parent: int, child: int, weight: float = 1.0) -> None:
        """Link ``parent`` → ``child`` with ``weight`` (re-linking updates the weight)."""
        self._check_id(parent)
        self._check_id(child)
        if parent == child:
            msg = f"a node cannot be its own child (node {parent})"
            raise HrefineError(msg)
        key = (parent, child)
        if key not in self._weights:
            self.nodes[parent].children.append(child)
            self.nodes[child].parents.append(parent)
        self._weights[key] = float(weight)

    def remove_edge(self, parent: int, child: int) -> None:
        """Unlink ``parent`` → ``child``."""
        key = (parent, child)
        if key not in self._weights:
            msg = f"no edge {parent} -> {child}"
            raise HrefineError(msg)
        del self._weights[key]
        self.nodes[parent].children.remove(child)
        self.nodes[child].parents.remove(parent)

    # -- reading --------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.nodes)

    def __iter__(self) -> Iterator[Node]:
        return iter(self.nodes)

    def __getitem__(self, node_id: int) -> Node:
        self._check_id(node_id)
        return self.nodes[node_id]

    def weight(self, parent: int, child: int) -> float:
        """Weight of the edge ``parent`` → ``child``."""
        try:
            return self._weights[(parent, child)]
        except KeyError:
            msg = f"no edge {parent} -> {child}"
            raise HrefineError(msg) from None

    def edges(self) -> Iterator[tuple[int, int, float]]:
        """Yield ``(parent, child, weight)`` for every edge, in insertion order."""
        for (parent, child), w in self._weights.items():
            yield parent, child, w

    @property
    def roots(self) -> list[int]:
        """Ids of nodes without parents, in document order."""
        return sorted((n.id for n in self.nodes if not n.parents), key=self._order_key)

    @property
    def leaves(self) -> list[int]:
        """Ids of nodes without children, in document order."""
        return sorted((n.id for n in self.nodes if not n.children), key=self._order_key)

    def at_level(self, level: int) -> list[int]:
        """Ids of nodes at ``level``, in document order."""
        return sorted((n.id for n in self.nodes if n.level == level), key=self._order_key)

    def descendants(self, node_id: int) -> list[int]:
        """Ids reachable below ``node_id`` (each once), breadth first."""
        self._check_id(node_id)
        seen: set[int] = set()
        out: list[int] = []
        queue = deque(self.nodes[node_id].children)
        while queue:
            nid = queue.popleft()
            if nid in seen:
                continue
            seen.add(nid)
            out.append(nid)
            queue.extend(self.nodes[nid].children)
        return out

    def ancestors(self, node_id: int) -> list[int]:
        """Ids reachable above ``node_id`` (each once), nearest first."""
        self._check_id(node_id)
        seen: set[int] = set()
        out: list[int] = []
        queue = deque(self.nodes[node_id].parents)
        while queue:
            nid = queue.popleft()
            if nid in seen:
                continue
            seen.add(nid)
            out.append(nid)
            queue.extend(self.nodes[nid].parents)
        return out

    def walk(self, start: Iterable[int] | None = None) -> Iterator[Node]:
        """Depth-first pre-order walk from ``start`` (default: the roots), each node once."""
        stack = list(reversed(list(self.roots if start is None else start)))
        seen: set[int] = set()
        while stack:
            nid = stack.pop()
            if nid in seen:
                continue
            seen.add(nid)
            node = self.nodes[nid]
            yield node
            stack.extend(reversed(node.children))

    def sort_by_order(self, ids: Iterable[int]) -> list[int]:
        """Return ``ids`` sorted into document order."""
        return sorted(ids, key=self._order_key)

    def check_acyclic(self) -> None:
        """Raise :class:`HrefineError` if the graph has a cycle (Kahn's algorithm)."""
        indegree = [len(n.parents) for n in self.nodes]
        queue = deque(i for i, d in enumerate(indegree) if d == 0)
        visited = 0
        while queue:
            nid = queue.popleft()
            visited += 1
            for child in self.nodes[nid].children:
                indegree[child] -= 1
                if indegree[child] == 0:
                    queue.append(child)
        if visited != len(self.nodes):
            msg = f"the graph has a cycle: {len(self.nodes) - visited} nodes lie on or below one"
            raise HrefineError(msg)

    # -- embeddings -----------------------------------------------------------------------
    @property
    def embeddings(self) -> np.ndarray | None:
        """The ``(n_nodes, dim)`` embedding matrix, or None before any was set."""
        return self._embeddings

    def set_embeddings(self, ids: Sequence[int], vectors: np.ndarray) -> None:
        """Store ``vectors[i]`` as the embedding of node ``ids[i]`` (rows of absent nodes are 0)."""
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[0] != len(ids):
            msg = f"expected {len(ids)} vectors as a 2-D array, got shape {vectors.shape}"
            raise HrefineError(msg)
        dim = vectors.shape[1]
        if self._embeddings is None or self._embeddings.shape[1] != dim:
            if self._embeddings is not None and self._embeddings.shape[1] != dim:
                msg = f"embedding size {dim} differs from the tree's {self._embeddings.shape[1]}"
                raise HrefineError(msg)
            self._embeddings = np.zeros((len(self.nodes), dim), dtype=np.float32)
        if self._embeddings.shape[0] < len(self.nodes):
            pad = np.zeros((len(self.nodes) - self._embeddings.shape[0], dim), dtype=np.float32)
            self._embeddings = np.vstack([self._embeddings, pad])
        for nid in ids:
            self._check_id(nid)
        self._embeddings[np.asarray(ids, dtype=np.int64)] = vectors

    # -- serialisation (see hrefine.persist) ----------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form of the graph (embeddings excluded; persist saves them as .npy)."""
        return {
            "metadata": self.metadata,
            "nodes": [
                {
                    "text": n.text,
                    "kind": n.kind,
                    "level": n.level,
                    "order": n.order,
                    "metadata": n.metadata,
                }
                for n in self.nodes
            ],
            "edges": [[p, c, w] for p, c, w in self.edges()],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any], embeddings: np.ndarray | None = None) -> Tree:
        """Rebuild a tree from :meth:`to_dict` output; raises :class:`HrefineError` if malformed."""
        try:
            tree = cls(metadata=dict(data.get("metadata", {})))
            for raw in data["nodes"]:
                tree.add_node(
                    str(raw["text"]),
                    kind=str(raw.get("kind", "block")),
                    level=int(raw.get("level", 0)),
                    order=int(raw["order"]) if "order" in raw else None,
                    metadata=dict(raw.get("metadata", {})),
                )
            for parent, child, w in data["edges"]:
                tree.add_edge(int(parent), int(child), float(w))
        except (KeyError, TypeError, ValueError) as exc:
            msg = f"malformed tree data: {exc!r}"
            raise HrefineError(msg) from exc
        if embeddings is not None:
            if embeddings.ndim != 2 or embeddings.shape[0] != len(tree.nodes):
                msg = f"embeddings of shape {embeddings.shape} do not fit {len(tree.nodes)} nodes"
                raise HrefineError(msg)
            tree._embeddings = np.asarray(embeddings, dtype=np.float32)
        return tree

    # -- helpers --------------------------------------------------------------------------
    def _order_key(self, node_id: int) -> tuple[int, int]:
        return (self.nodes[node_id].order, node_id)

    def _check_id(self, node_id: int) -> None:
        if not 0 <= node_id < len(self.nodes):
            msg = f"node id {node_id} is not in this tree of {len(self.nodes)} nodes"
            raise HrefineError(msg)
