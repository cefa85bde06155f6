"""One hierarchical graph type shared by every method.

HTML block trees, document sections, RAPTOR summary layers and GARLIC's many-to-many summary
graph are all a :class:`Tree`: a directed acyclic graph of :class:`Node` objects with weighted
parent→child edges. Node ids are dense integers (their index in ``Tree.nodes``), so embeddings are
held as one ``(n_nodes, dim)`` array whose row ``i`` belongs to node ``i``.

Only the tree changes its structure: a node's ``children``, ``parents``, ``kind``, ``level`` and
``order`` are read-only, so the links and the edge weights cannot drift apart, and the graph
stays acyclic (an edge that would close a cycle is refused).

Document order: a node added without ``order=`` takes its order from its children (the
earliest of theirs, so a summary sorts right before its first child) and its id while it has
none. Derived orders are recomputed lazily, on the first read after the edges below changed.

Traversals are iterative, so a tree 10,000 levels deep never hits Python's recursion limit.
"""

from __future__ import annotations

import weakref
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from hrefine._node import Node, NodeKind, as_kind
from hrefine._tree_values import as_order, as_weight
from hrefine._vectors import VectorRows
from hrefine.errors import TreeError

__all__ = ["Node", "NodeKind", "Tree"]


class Tree:
    """A weighted DAG of :class:`Node` objects with an optional embedding matrix.

    Parameters
    ----------
    metadata:
        Tree-level metadata (method, options, source); saved by :mod:`hrefine.persist`.
    """

    def __init__(self, metadata: dict[str, Any] | None = None) -> None:
        self._nodes: list[Node] = []
        self.metadata: dict[str, Any] = dict(metadata or {})
        self._weights: dict[tuple[int, int], float] = {}
        self._vectors: VectorRows | None = None
        self._ref = weakref.ref(self)  # shared by all its nodes (see Node.order)

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state["_ref"]  # weak references do not pickle
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._ref = weakref.ref(self)
        for node in self._nodes:
            node._tree_ref = self._ref

    # -- building -------------------------------------------------------------------------
    def add_node(
        self,
        text: str,
        *,
        kind: NodeKind | str = NodeKind.BLOCK,
        level: int = 0,
        order: int | None = None,
        parents: Sequence[int] = (),
        weights: Sequence[float] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> int:
        """Append a node, link it under ``parents`` and return its id.

        Parameters
        ----------
        text:
            The node's own text.
        kind:
            A :class:`NodeKind` or its string value.
        level:
            Height or depth, as the method defines it.
        order:
            Explicit document order; None derives it from the children (see :class:`Tree`).
        parents, weights:
            Parents to link the node under, and the weight of each edge (default 1.0).
        metadata:
            Provenance; copied.

        Raises
        ------
        ConfigError
            ``kind`` is not a node kind.
        TreeError
            A parent is not in the tree, or ``weights`` does not match ``parents``.
        """
        # Everything is checked before the node is appended, so a failed call adds nothing.
        node_kind = as_kind(kind)
        node_id = len(self._nodes)
        ids = [p if type(p) is int and 0 <= p < node_id else self._check_id(p) for p in parents]
        if weights is None:
            ws = [1.0] * len(ids)
        elif len(weights) != len(ids):
            msg = f"got {len(weights)} weights for {len(ids)} parents; pass one per parent"
            raise TreeError(msg)
        else:
            ws = [as_weight(w, p, node_id) for p, w in zip(ids, weights, strict=True)]
        if order is not None and type(order) is not int:
            order = as_order(order)
        self._nodes.append(
            Node(self._ref, node_id, text, node_kind, level, order, dict(metadata or {}))
        )
        # A new node has no children, so no edge to it can close a cycle.
        weights_of = self._weights
        for parent, w in zip(ids, ws, strict=True):
            key = (parent, node_id)
            if key not in weights_of:
                self._link(parent, node_id)
            weights_of[key] = w
        return node_id

    def add_edge(self, parent: int, child: int, weight: float = 1.0) -> None:
        """Link ``parent`` → ``child`` with ``weight`` (re-linking updates the weight).

        Raises
        ------
        TreeError
            An id is not in the tree, the edge is a self-loop or would close a cycle, or the
            weight is not a finite number.
        """
        parent = self._check_id(parent)
        child = self._check_id(child)
        w = as_weight(weight, parent, child)
        key = (parent, child)
        if key in self._weights:
            self._weights[key] = w
            return
        if parent == child:
            msg = f"a node cannot be its own child (node {parent}); link two different nodes"
            raise TreeError(msg)
        if self._reaches(child, parent):
            msg = (
                f"edge {parent} -> {child} would close a cycle: {parent} already lies below "
                f"{child}; link the nodes the other way round"
            )
            raise TreeError(msg)
        self._link(parent, child)
        self._weights[key] = w

    def remove_edge(self, parent: int, child: int) -> None:
        """Unlink ``parent`` → ``child``.

        Raises
        ------
        TreeError
            There is no such edge.
        """
        key = (parent, child)
        if key not in self._weights:
            msg = f"no edge {parent!r} -> {child!r} to remove; see Tree.edges() for the edges"
            raise TreeError(msg)
        del self._weights[key]
        up, down = self._nodes[parent], self._nodes[child]
        up._children.remove(child)
        up._children_view = None
        down._parents.remove(parent)
        down._parents_view = None
        self._mark_stale(parent)

    def set_order(self, node_id: int, order: int | None) -> None:
        """Fix the document order of ``node_id``, or derive it again from its children (None).

        Raises
        ------
        TreeError
            ``node_id`` is not in the tree.
        InputTypeError
            ``order`` is not an integer or None.
        """
        nodes = self._nodes
        if not (type(node_id) is int and 0 <= node_id < len(nodes)):  # HTML calls this per node
            node_id = self._check_id(node_id)
        node = nodes[node_id]
        if order is None:
            node._derived = True
            self._mark_stale(node_id)
            return
        node._order = order if type(order) is int else as_order(order)
        node._tie = 0
        node._derived = node._stale = False
        for parent in node._parents:
            up = nodes[parent]
            if up._derived and not up._stale:
                self._mark_stale(parent)

    # -- reading --------------------------------------------------------------------------
    @property
    def nodes(self) -> Sequence[Node]:
        """All nodes; ``nodes[i].id == i``. Add nodes with :meth:`add_node`."""
        return self._nodes

    def __len__(self) -> int:
        return len(self._nodes)

    def __iter__(self) -> Iterator[Node]:
        return iter(self._nodes)

    def __getitem__(self, node_id: int) -> Node:
        return self._nodes[self._check_id(node_id)]

    def weight(self, parent: int, child: int) -> float:
        """Weight of the edge ``parent`` → ``child``."""
        try:
            return self._weights[(parent, child)]
        except KeyError:
            msg = f"no edge {parent} -> {child}; see Tree.edges() for the edges"
            raise TreeError(msg) from None

    def edges(self) -> Iterator[tuple[int, int, float]]:
        """Yield ``(parent, child, weight)`` for every edge, in insertion order."""
        for (parent, child), w in self._weights.items():
            yield parent, child, w

    @property
    def roots(self) -> list[int]:
        """Ids of nodes without parents, in document order."""
        return self.sort_by_order(n._id for n in self._nodes if not n._parents)

    @property
    def leaves(self) -> list[int]:
        """Ids of nodes without children, in document order."""
        return self.sort_by_order(n._id for n in self._nodes if not n._children)

    @property
    def top_level(self) -> int:
        """The highest node level (0 for an empty tree or one of leaves only)."""
        return max((n._level for n in self._nodes), default=0)

    def at_level(self, level: int) -> list[int]:
        """Ids of nodes at ``level``, in document order."""
        return self.sort_by_order(n._id for n in self._nodes if n._level == level)

    def descendants(self, node_id: int) -> list[int]:
        """Ids reachable below ``node_id`` (each once), breadth first."""
        return self._closure(node_id, down=True)

    def ancestors(self, node_id: int) -> list[int]:
        """Ids reachable above ``node_id`` (each once), nearest first."""
        return self._closure(node_id, down=False)

    def walk(self, start: Iterable[int] | None = None) -> Iterator[Node]:
        """Depth-first pre-order walk from ``start`` (default: the roots), each node once."""
        stack = list(reversed(list(self.roots if start is None else start)))
        seen: set[int] = set()
        while stack:
            nid = stack.pop()
            if nid in seen:
                continue
            seen.add(nid)
            node = self._nodes[nid]
            yield node
            stack.extend(reversed(node._children))

    def sort_by_order(self, ids: Iterable[int]) -> list[int]:
        """Return ``ids`` sorted into document order.

        The key is ``(order, id)``, except that a node with a derived order sorts right before
        the child it took its order from (a summary before its first chunk).
        """
        return sorted(ids, key=self._order_key)

    def check_acyclic(self) -> None:
        """Raise :class:`TreeError` if the graph has a cycle (Kahn's algorithm).

        :meth:`add_edge` refuses cycles, so this holds for every tree built through the API.
        """
        indegree = [len(n._parents) for n in self._nodes]
        queue = deque(i for i, d in enumerate(indegree) if d == 0)
        visited = 0
        while queue:
            nid = queue.popleft()
            visited += 1
            for child in self._nodes[nid]._children:
                indegree[child] -= 1
                if indegree[child] == 0:
                    queue.append(child)
        if visited != len(self._nodes):
            msg = f"the graph has a cycle: {len(self._nodes) - visited} nodes lie on or below one"
            raise TreeError(msg)

    # -- embeddings -----------------------------------------------------------------------
    @property
    def embeddings(self) -> np.ndarray | None:
        """The read-only ``(n_nodes, dim)`` float32 matrix, or None before any was set.

        Row ``i`` is node ``i``'s vector; rows of nodes never embedded are zero (see
        :attr:`embedding_mask`). The matrix grows with the tree: nodes added after
        :meth:`set_embeddings` get zero rows. It is a view: read it again after changes.
        """
        if self._vectors is None:
            return None
        return self._vectors.matrix(len(self._nodes))

    @property
    def embedding_mask(self) -> np.ndarray:
        """Read-only ``(n_nodes,)`` booleans: True where a node's embedding was set."""
        if self._vectors is None:
            mask = np.zeros(len(self._nodes), dtype=bool)
            mask.flags.writeable = False
            return mask
        return self._vectors.mask(len(self._nodes))

    def has_embedding(self, node_id: int) -> bool:
        """Whether :meth:`set_embeddings` stored a vector for ``node_id``."""
        self._check_id(node_id)
        return self._vectors is not None and self._vectors.is_set(node_id)

    def set_embeddings(self, ids: Sequence[int], vectors: np.ndarray) -> None:
        """Store ``vectors[k]`` as the embedding of node ``ids[k]``.

        Raises
        ------
        TreeError
            An id is not in the tree, ``vectors`` is not one row per id, its size differs
            from the vectors already stored, or a value is NaN or infinite.
        """
        rows = np.asarray(ids, dtype=np.int64).reshape(-1)
        bad = rows[(rows < 0) | (rows >= len(self._nodes))]
        if bad.size:
            msg = f"node id {int(bad[0])} is not in this tree of {len(self._nodes)} nodes"
            raise TreeError(msg)
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[0] != rows.size:
            msg = f"expected {rows.size} vectors as a 2-D array, got shape {vectors.shape}"
            raise TreeError(msg)
        if self._vectors is None:
            self._vectors = VectorRows.empty(vectors.shape[1], len(self._nodes))
        self._vectors.set(rows, vectors, len(self._nodes))

    # -- serialisation (see hrefine.persist) ----------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form of the graph (embeddings excluded; persist saves them as .npy)."""
        return {
            "metadata": self.metadata,
            "nodes": [
                {
                    "text": n.text,
                    "kind": n._kind.value,
                    "level": n._level,
                    "order": n.order,
                    "order_derived": n._derived,
                    "metadata": n.metadata,
                }
                for n in self._nodes
            ],
            "edges": [[p, c, w] for p, c, w in self.edges()],
        }

    @classmethod
    def from_dict(
        cls,
        data: dict[str, Any],
        embeddings: np.ndarray | None = None,
        embedding_mask: np.ndarray | None = None,
    ) -> Tree:
        """Rebuild a tree from :meth:`to_dict` output.

        Parameters
        ----------
        data:
            :meth:`to_dict` output. A node without ``order_derived`` keeps its ``order``
            (format 1); one without ``order`` derives it.
        embeddings, embedding_mask:
            The ``(n_nodes, dim)`` matrix and which rows are set (default: all of them).

        Raises
        ------
        TreeError
            The data is malformed or the arrays do not fit its nodes.
        """
        try:
            tree = cls(metadata=dict(data.get("metadata", {})))
            for raw in data["nodes"]:
                derived = bool(raw.get("order_derived", "order" not in raw))
                tree.add_node(
                    str(raw["text"]),
                    kind=str(raw.get("kind", NodeKind.BLOCK.value)),
                    level=int(raw.get("level", 0)),
                    order=None if derived else int(raw["order"]),
                    metadata=dict(raw.get("metadata", {})),
                )
            for parent, child, w in data["edges"]:
                tree.add_edge(int(parent), int(child), float(w))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            msg = f"malformed tree data: {exc!r}; pass the output of Tree.to_dict()"
            raise TreeError(msg) from exc
        if embeddings is not None:
            tree._vectors = VectorRows.checked(embeddings, embedding_mask, len(tree._nodes))
        elif embedding_mask is not None and embedding_mask.any():
            msg = "an embedding mask with set rows came without the embeddings it describes"
            raise TreeError(msg)
        return tree

    # -- helpers --------------------------------------------------------------------------
    def _order_key(self, node_id: int) -> tuple[int, int, int]:
        node = self._nodes[node_id]
        return (node.order, node._tie, node_id)

    def _link(self, parent: int, child: int) -> None:
        """Add the links of a new edge (ids, self-loops and cycles already checked)."""
        up, down = self._nodes[parent], self._nodes[child]
        up._children.append(child)
        up._children_view = None
        down._parents.append(parent)
        down._parents_view = None
        if up._derived and not up._stale:
            self._mark_stale(parent)

    def _mark_stale(self, node_id: int) -> None:
        # Invariant: a stale node's derived parents are stale too, so the climb stops at the
        # first node already stale and adding an edge costs O(1) amortised.
        nodes = self._nodes
        stack = [node_id]
        while stack:
            node = nodes[stack.pop()]
            if node._derived and not node._stale:
                node._stale = True
                stack.extend(node._parents)

    def _refresh_order(self, node_id: int) -> None:
        # Post-order over the stale nodes below node_id (stale children have stale parents,
        # so no fresh node hides a stale one that it derives from).
        nodes = self._nodes
        stack = [node_id]
        while stack:
            node = nodes[stack[-1]]
            if not node._stale:
                stack.pop()
                continue
            pending = [c for c in node._children if nodes[c]._stale]
            if pending:
                stack.extend(pending)
                continue
            stack.pop()
            if node._children:
                order, tie = min((nodes[c]._order, nodes[c]._tie) for c in node._children)
                node._order, node._tie = order, tie - 1
            else:
                node._order, node._tie = node._id, 0
            node._stale = False

    def _reaches(self, start: int, target: int) -> bool:
        """Whether ``target`` is ``start`` or lies below it."""
        if start == target:
            return True
        nodes = self._nodes
        if not nodes[start]._children or not nodes[target]._parents:
            return False  # the usual case when building top-down or bottom-up
        seen = {start}
        stack = [start]
        while stack:
            for child in nodes[stack.pop()]._children:
                if child == target:
                    return True
                if child not in seen:
                    seen.add(child)
                    stack.append(child)
        return False

    def _closure(self, node_id: int, *, down: bool) -> list[int]:
        self._check_id(node_id)
        nodes = self._nodes
        first = nodes[node_id]._children if down else nodes[node_id]._parents
        seen: set[int] = set()
        out: list[int] = []
        queue = deque(first)
        while queue:
            nid = queue.popleft()
            if nid in seen:
                continue
            seen.add(nid)
            out.append(nid)
            queue.extend(nodes[nid]._children if down else nodes[nid]._parents)
        return out

    def _check_id(self, node_id: int) -> int:
        """``node_id`` as a plain int; raises :class:`TreeError` if it names no node."""
        if type(node_id) is int and 0 <= node_id < len(self._nodes):
            return node_id  # the common case, kept cheap: building calls this per edge
        if (
            isinstance(node_id, int | np.integer)
            and not isinstance(node_id, bool)
            and 0 <= node_id < len(self._nodes)
        ):
            return int(node_id)
        msg = f"node id {node_id!r} is not in this tree of {len(self._nodes)} nodes"
        raise TreeError(msg)
