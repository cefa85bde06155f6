"""The order a method hands kept nodes on in: the source chunks, then what restates them.

A summary sorts right before its first chunk in document order
(:meth:`hrefine.tree.Tree.sort_by_order`), so it can stand between two kept chunks and split a
paragraph the reader would otherwise get whole. RAPTOR's and GARLIC's outputs put every chunk first.
"""

from __future__ import annotations

from collections.abc import Iterable

from hrefine._node import NodeKind
from hrefine.tree import Tree

__all__ = ["chunks_first"]


def chunks_first(tree: Tree, ids: Iterable[int]) -> list[int]:
    """``ids`` with the chunks in document order first, then every other node (summaries) in
    document order.

    >>> tree = Tree()
    >>> s = tree.add_node("A summary of the second half.", kind="summary", level=1)
    >>> a = tree.add_node("The first half.", kind="chunk", order=0)
    >>> b = tree.add_node("The second half.", kind="chunk", order=1, parents=[s])
    >>> tree.sort_by_order([s, a, b]), chunks_first(tree, [s, a, b])
    ([1, 0, 2], [1, 2, 0])
    """
    ordered = tree.sort_by_order(ids)
    chunk = NodeKind.CHUNK
    return [i for i in ordered if tree[i].kind == chunk] + [
        i for i in ordered if tree[i].kind != chunk
    ]
