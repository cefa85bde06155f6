from __future__ import annotations

import numpy as np
import pytest
from hrefine import HrefineError, Tree


def _small() -> Tree:
    t = Tree(metadata={"kind": "test"})
    root = t.add_node("root", kind="section")
    a = t.add_node("a", parents=[root], level=1)
    b = t.add_node("b", parents=[root], level=1)
    t.add_node("c", parents=[a, b], weights=[0.25, 0.75], level=2)
    return t


def test_many_to_many_edges_keep_weights_and_links() -> None:
    t = _small()
    assert t[3].parents == [1, 2]
    assert t.weight(2, 3) == pytest.approx(0.75)
    assert t.roots == [0]
    assert t.leaves == [3]
    assert t.descendants(0) == [1, 2, 3]
    assert t.ancestors(3) == [1, 2, 0]
    assert [n.id for n in t.walk()] == [0, 1, 3, 2]


def test_relinking_updates_weight_without_duplicating_edge() -> None:
    t = _small()
    t.add_edge(1, 3, 0.5)
    assert t[1].children == [3]
    assert t.weight(1, 3) == 0.5
    t.remove_edge(1, 3)
    assert t[3].parents == [2]


def test_cycle_is_detected() -> None:
    t = _small()
    t.add_edge(3, 0)
    with pytest.raises(HrefineError, match="cycle"):
        t.check_acyclic()


def test_deep_chain_walks_without_recursion_error() -> None:
    t = Tree()
    prev = t.add_node("0")
    for i in range(1, 20_000):
        prev = t.add_node(str(i), parents=[prev], level=i)
    assert sum(1 for _ in t.walk()) == 20_000
    assert len(t.ancestors(prev)) == 19_999


def test_embeddings_held_as_one_matrix_row_per_node() -> None:
    t = _small()
    t.set_embeddings([0, 3], np.ones((2, 4)))
    emb = t.embeddings
    assert emb is not None and emb.shape == (4, 4)
    assert emb[3].sum() == 4 and emb[1].sum() == 0
    with pytest.raises(HrefineError):
        t.set_embeddings([1], np.ones((1, 5)))


def test_bad_ids_and_self_loops_raise() -> None:
    t = _small()
    with pytest.raises(HrefineError, match="not in this tree"):
        t[99]
    with pytest.raises(HrefineError, match="own child"):
        t.add_edge(1, 1)


def test_round_trip_through_dict() -> None:
    t = _small()
    back = Tree.from_dict(t.to_dict())
    assert back.to_dict() == t.to_dict()
    with pytest.raises(HrefineError, match="malformed"):
        Tree.from_dict({"nodes": [{"no_text": 1}], "edges": []})
