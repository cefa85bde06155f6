"""chunks_first: the chunks of a selection in document order, then its summaries; a summary
never stands between two chunks (where document order puts it, right before its first one)."""

from __future__ import annotations

from hrefine.tree import Tree
from hrefine.tree_order import chunks_first


def test_a_summary_goes_after_every_chunk() -> None:
    tree = Tree()
    top = tree.add_node("Both halves, summarised.", kind="summary", level=2)
    second = tree.add_node("The second half, summarised.", kind="summary", level=1, parents=[top])
    first = tree.add_node("The first half.", kind="chunk", order=0, parents=[top])
    later = tree.add_node("The second half.", kind="chunk", order=1, parents=[second])
    ids = [later, second, top, first]
    # document order puts each summary right before the chunk it took its order from
    assert tree.sort_by_order(ids) == [top, first, second, later]
    assert chunks_first(tree, ids) == [first, later, top, second]
    assert chunks_first(tree, [second, later]) == [later, second]
    assert chunks_first(tree, []) == []
