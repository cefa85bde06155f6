"""The nodes of a :class:`~hrefine.tree.Tree` and the closed set of their kinds.

A node's links, kind, level and order are read-only: only its tree changes them, so the links
and the edge weights (held by the tree) never drift apart. ``text`` and ``metadata`` stay
plain attributes.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from typing import TYPE_CHECKING, Any

from hrefine.errors import ConfigError, TreeError

if TYPE_CHECKING:
    from hrefine.tree import Tree

TreeRef = Callable[[], "Tree | None"]

__all__ = ["Node", "NodeKind", "as_kind"]


class NodeKind(str, Enum):
    """What a node is; compares equal to its string value (``NodeKind.BLOCK == "block"``)."""

    BLOCK = "block"
    """HTML: an element with text, kept or dropped whole."""
    CONTAINER = "container"
    """HTML: an element without text of its own that holds blocks."""
    DOCUMENT = "document"
    """LongRefiner: a whole input document."""
    SECTION = "section"
    """LongRefiner: a titled section of a document."""
    PARAGRAPH = "paragraph"
    """LongRefiner: a paragraph of a section."""
    CHUNK = "chunk"
    """RAPTOR/GARLIC: a leaf chunk of the input text."""
    SUMMARY = "summary"
    """RAPTOR/GARLIC: a summary of its children (GARLIC's information points too)."""

    def __str__(self) -> str:
        # f-strings and str() give "block", as for a plain string, on every Python version.
        return str(self.value)


_KINDS: dict[str, NodeKind] = {k.value: k for k in NodeKind}


def as_kind(kind: object) -> NodeKind:
    """``kind`` as a :class:`NodeKind`; raises :class:`ConfigError` naming the valid ones."""
    found = _KINDS.get(kind) if isinstance(kind, str) else None
    if found is None:
        msg = f"unknown node kind {kind!r}; use one of: {', '.join(_KINDS)}"
        raise ConfigError(msg)
    return found


class Node:
    """A unit of text in a :class:`~hrefine.tree.Tree`, made by ``Tree.add_node``.

    ``text`` and ``metadata`` are plain attributes; the rest is read-only and changes only
    through the tree (``Tree.add_edge``, ``Tree.remove_edge``, ``Tree.set_order``).

    Attributes
    ----------
    text:
        The node's own text (a block's HTML text, a section body, a summary).
    metadata:
        Free-form provenance (tag path, source document, section title…).
    """

    __slots__ = (
        "_children",
        "_children_view",
        "_derived",
        "_id",
        "_kind",
        "_level",
        "_order",
        "_parents",
        "_parents_view",
        "_stale",
        "_tie",
        "_tree_ref",
        "metadata",
        "text",
    )

    def __init__(
        self,
        tree_ref: TreeRef,
        node_id: int,
        text: str,
        kind: NodeKind,
        level: int,
        order: int | None,
        metadata: dict[str, Any],
    ) -> None:
        # A weak reference: a strong one would make every tree a reference cycle, freed only
        # by the garbage collector (which then took twice as long while building HTML trees).
        self._tree_ref = tree_ref
        self._id = node_id
        self.text = text
        self._kind = kind
        self._level = level
        self._derived = order is None
        self._order = node_id if order is None else order
        # Among equal orders, a derived node sorts before the child it took its order from.
        self._tie = 0
        self._stale = False
        self._children: list[int] = []
        self._parents: list[int] = []
        # Tuple copies handed out by the properties, rebuilt after the lists change.
        self._children_view: tuple[int, ...] | None = ()
        self._parents_view: tuple[int, ...] | None = ()
        self.metadata = metadata

    @property
    def id(self) -> int:
        """Dense index of the node in its tree."""
        return self._id

    @property
    def kind(self) -> NodeKind:
        """What the node is (a :class:`NodeKind`; equal to its string value)."""
        return self._kind

    @property
    def level(self) -> int:
        """Height or depth, as the method defines it (RAPTOR: 0 for leaves; HTML: depth)."""
        return self._level

    @property
    def order(self) -> int:
        """Position in document order; selections are returned sorted by it."""
        if self._stale:
            tree = self._tree_ref()
            if tree is None:
                msg = (
                    f"node {self._id}'s tree no longer exists, so its derived order cannot be "
                    f"recomputed; keep a reference to the Tree while using its nodes"
                )
                raise TreeError(msg)
            tree._refresh_order(self._id)
        return self._order

    @property
    def order_is_derived(self) -> bool:
        """True if ``order`` comes from the children (no explicit order was given)."""
        return self._derived

    @property
    def children(self) -> tuple[int, ...]:
        """Ids of the children, in the order they were linked."""
        view = self._children_view
        return view if view is not None else self._copy_links()[0]

    @property
    def parents(self) -> tuple[int, ...]:
        """Ids of the parents, in the order they were linked."""
        view = self._parents_view
        return view if view is not None else self._copy_links()[1]

    def _copy_links(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """Tuple copies of both link lists, kept until a list changes again."""
        self._children_view = children = tuple(self._children)
        self._parents_view = parents = tuple(self._parents)
        return children, parents

    def __getstate__(self) -> tuple[Any, ...]:
        # Pickling and deepcopy: everything but the weak reference, which the tree's
        # __setstate__ sets again.
        return tuple(getattr(self, name) for name in _STATE)

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        for name, value in zip(_STATE, state, strict=True):
            setattr(self, name, value)
        self._tree_ref = _no_tree

    def __repr__(self) -> str:
        text = self.text if len(self.text) <= 40 else self.text[:39] + "…"
        return (
            f"Node(id={self._id}, kind={self._kind.value!r}, level={self._level}, "
            f"order={self._order}, text={text!r})"
        )


_STATE = tuple(name for name in Node.__slots__ if name != "_tree_ref")


def _no_tree() -> Tree | None:
    return None
