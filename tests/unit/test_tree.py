from __future__ import annotations

import pickle
import weakref
from copy import deepcopy

import numpy as np
import pytest
from hrefine import ConfigError, HrefineError, NodeKind, Tree
from hrefine.errors import InputTypeError, TreeError


def _small() -> Tree:
    t = Tree(metadata={"kind": "test"})
    root = t.add_node("root", kind="section")
    a = t.add_node("a", parents=[root], level=1)
    b = t.add_node("b", parents=[root], level=1)
    t.add_node("c", parents=[a, b], weights=[0.25, 0.75], level=2)
    return t


def _links_from_nodes(t: Tree) -> tuple[set[tuple[int, int]], set[tuple[int, int]]]:
    down = {(n.id, c) for n in t for c in n.children}
    up = {(p, n.id) for n in t for p in n.parents}
    return down, up


def test_many_to_many_edges_keep_weights_and_links() -> None:
    t = _small()
    assert t[3].parents == (1, 2)
    assert t.weight(2, 3) == pytest.approx(0.75)
    assert t.roots == [0]
    assert t.leaves == [3]
    assert t.descendants(0) == [1, 2, 3]
    assert t.ancestors(3) == [1, 2, 0]
    assert [n.id for n in t.walk()] == [0, 1, 3, 2]


def test_relinking_updates_weight_without_duplicating_edge() -> None:
    t = _small()
    t.add_edge(1, 3, 0.5)
    assert t[1].children == (3,)
    assert t.weight(1, 3) == 0.5
    t.remove_edge(1, 3)
    assert t[3].parents == (2,)
    with pytest.raises(TreeError, match="no edge 1 -> 3"):
        t.weight(1, 3)


def test_links_are_read_only_outside_the_tree() -> None:
    t = _small()
    node = t[0]
    with pytest.raises(AttributeError):
        node.children.append(3)  # type: ignore[attr-defined]
    with pytest.raises(AttributeError):
        node.parents.append(3)  # type: ignore[attr-defined]
    for name, value in [("order", 7), ("kind", "chunk"), ("level", 3), ("children", [3])]:
        with pytest.raises(AttributeError):
            setattr(node, name, value)
    node.text = "changed"
    node.metadata["tag"] = "p"  # text and metadata stay writable
    assert t[0].text == "changed" and t[0].metadata == {"tag": "p"}
    assert list(t.edges()) == [(0, 1, 1.0), (0, 2, 1.0), (1, 3, 0.25), (2, 3, 0.75)]


def test_edges_and_node_links_agree_after_adds_and_removes() -> None:
    t = _small()
    seen = t[0].children  # a view handed out before the change does not move
    t.add_edge(0, 3, 0.1)
    t.remove_edge(1, 3)
    t.add_edge(1, 3, 0.9)
    t.remove_edge(0, 1)
    edges = {(p, c) for p, c, _ in t.edges()}
    down, up = _links_from_nodes(t)
    assert edges == down == up == {(0, 2), (0, 3), (2, 3), (1, 3)}
    assert seen == (1, 2)
    assert t[0].children == (2, 3)
    assert t[3].parents == (2, 0, 1)  # in link order, like edges()
    assert [c for p, c, _ in t.edges() if p == 0] == list(t[0].children)
    assert t.weight(1, 3) == 0.9
    with pytest.raises(TreeError, match="no edge 0 -> 1"):
        t.remove_edge(0, 1)


def test_cycle_is_refused_when_the_edge_is_added() -> None:
    t = _small()
    with pytest.raises(TreeError, match="cycle"):
        t.add_edge(3, 0)
    with pytest.raises(TreeError, match="cycle"):
        t.add_edge(3, 1)
    assert (3, 0) not in {(p, c) for p, c, _ in t.edges()}
    assert t[3].children == ()
    t.check_acyclic()
    t.add_edge(1, 2)  # sideways is fine: still a DAG
    assert t.descendants(1) == [3, 2]


def test_deep_chain_walks_without_recursion_error() -> None:
    t = Tree()
    prev = t.add_node("0")
    for i in range(1, 20_000):
        prev = t.add_node(str(i), parents=[prev], level=i)
    assert sum(1 for _ in t.walk()) == 20_000
    assert len(t.ancestors(prev)) == 19_999
    assert t[0].order == 19_999  # derived through 20,000 levels without recursion
    assert t.sort_by_order([prev, 0, 5]) == [0, 5, prev]


def test_top_level_is_the_highest_node_level() -> None:
    t = Tree()
    assert t.top_level == 0
    a = t.add_node("a")
    b = t.add_node("b")
    assert t.top_level == 0
    t.add_node("s", kind="summary", level=2, parents=[a, b])
    t.add_node("m", kind="summary", level=1, parents=[b])
    assert t.top_level == 2


def test_node_kinds_are_a_closed_set() -> None:
    t = Tree()
    with pytest.raises(ConfigError, match="unknown node kind 'blok'") as err:
        t.add_node("x", kind="blok")
    for kind in NodeKind:
        assert kind.value in str(err.value)
    with pytest.raises(ConfigError, match="use one of"):
        t.add_node("x", kind=3)  # type: ignore[arg-type]
    assert len(t) == 0  # a refused node is not half-added
    i = t.add_node("x", kind=NodeKind.CHUNK)
    j = t.add_node("y", kind="summary", parents=[i])
    assert t[i].kind is NodeKind.CHUNK and t[j].kind is NodeKind.SUMMARY
    assert t[j].kind == "summary" and f"{t[j].kind}" == "summary" == str(t[j].kind)
    assert t.to_dict()["nodes"][j]["kind"] == "summary"


def test_derived_order_puts_a_summary_right_before_its_first_child() -> None:
    t = Tree()
    leaves = [t.add_node(f"leaf {k}", kind="chunk", order=10 * k) for k in range(4)]
    s = t.add_node("summary of 2 and 3", kind="summary", level=1)
    assert t[s].order == s  # no children yet: its id
    t.add_edge(s, leaves[3])
    t.add_edge(s, leaves[2])
    assert t[s].order == 20 and t[s].order_is_derived
    assert t.sort_by_order(range(len(t))) == [0, 1, s, 2, 3]
    fixed = t.add_node("explicit", kind="summary", level=1, order=99, parents=())
    t.add_edge(fixed, leaves[0])
    assert t[fixed].order == 99 and not t[fixed].order_is_derived
    t.set_order(fixed, None)  # derive it again
    assert t[fixed].order == 0
    t.set_order(s, 5)
    assert t[s].order == 5 and t.sort_by_order([s, 0, 1]) == [0, s, 1]


def test_derived_order_propagates_up_two_levels_and_follows_removals() -> None:
    t = Tree()
    a = t.add_node("a", kind="chunk", order=30)
    b = t.add_node("b", kind="chunk", order=40)
    mid = t.add_node("mid", kind="summary", level=1, parents=[])
    t.add_edge(mid, a)
    t.add_edge(mid, b)
    top = t.add_node("top", kind="summary", level=2)
    t.add_edge(top, mid)
    assert (t[mid].order, t[top].order) == (30, 30)
    early = t.add_node("early", kind="chunk", order=7)
    t.add_edge(mid, early)
    assert (t[mid].order, t[top].order) == (7, 7)
    t.set_order(early, 50)
    assert (t[mid].order, t[top].order) == (30, 30)
    t.remove_edge(mid, a)
    assert (t[mid].order, t[top].order) == (40, 40)
    assert t.sort_by_order([b, mid, top, early]) == [top, mid, b, early]


def _reference_keys(t: Tree, explicit: dict[int, int]) -> dict[int, tuple[int, int]]:
    """(order, tie) of every node, recomputed from scratch (children have lower depth)."""
    keys: dict[int, tuple[int, int]] = {}

    def key(i: int) -> tuple[int, int]:
        if i not in keys:
            if i in explicit:
                keys[i] = (explicit[i], 0)
            elif not t[i].children:
                keys[i] = (i, 0)
            else:
                order, tie = min(key(c) for c in t[i].children)
                keys[i] = (order, tie - 1)
        return keys[i]

    for i in range(len(t)):
        key(i)
    return keys


def test_derived_orders_match_a_full_recompute_under_random_edits() -> None:
    rng = np.random.default_rng(7)
    t = Tree()
    explicit: dict[int, int] = {}
    for step in range(600):
        op = rng.integers(0, 5) if len(t) > 2 else 0
        if op == 0:
            order = int(rng.integers(0, 50)) if rng.random() < 0.4 else None
            i = t.add_node(str(step), order=order)
            if order is not None:
                explicit[i] = order
        elif op in (1, 2):
            p, c = (int(x) for x in rng.integers(0, len(t), 2))
            try:
                t.add_edge(p, c, float(rng.random()))
            except TreeError:
                assert p == c or c in t.ancestors(p)
        elif op == 3:
            edges = list(t.edges())
            if edges:
                p, c, _ = edges[int(rng.integers(0, len(edges)))]
                t.remove_edge(p, c)
        else:
            i = int(rng.integers(0, len(t)))
            if rng.random() < 0.5:
                explicit[i] = int(rng.integers(0, 50))
                t.set_order(i, explicit[i])
            else:
                explicit.pop(i, None)
                t.set_order(i, None)
        if step % 7 == 0:  # read in between, so cached orders must be kept right
            ref = _reference_keys(t, explicit)
            assert [t[i].order for i in range(len(t))] == [ref[i][0] for i in range(len(t))]
    t.check_acyclic()
    ref = _reference_keys(t, explicit)
    assert [n.order for n in t] == [ref[i][0] for i in range(len(t))]
    assert t.sort_by_order(range(len(t))) == sorted(range(len(t)), key=lambda i: (*ref[i], i))
    assert all(t[i].order_is_derived == (i not in explicit) for i in range(len(t)))


def test_embeddings_grow_with_the_nodes_and_record_which_rows_are_set() -> None:
    t = Tree()
    leaves = [t.add_node(f"leaf {k}", kind="chunk") for k in range(2)]
    assert t.embeddings is None and t.embedding_mask.tolist() == [False, False]
    t.set_embeddings(leaves, np.ones((2, 4)))
    s = t.add_node("summary", kind="summary", level=1, parents=[])
    emb = t.embeddings
    assert emb is not None and emb.shape == (3, 4) and emb.dtype == np.float32
    assert emb[s].sum() == 0 and emb[0].sum() == 4
    assert t.embedding_mask.tolist() == [True, True, False]
    assert t.has_embedding(0) and not t.has_embedding(s)
    with pytest.raises(ValueError, match="read-only"):
        emb[s] = 1.0  # rows are set through set_embeddings, which keeps the mask right
    t.set_embeddings([s], np.full((1, 4), 2.0))
    assert t.has_embedding(s) and t.embeddings is not None and t.embeddings[s].sum() == 8
    for _ in range(100):  # one at a time: the matrix grows by doubling, rows stay put
        t.set_embeddings([t.add_node("x", kind="chunk")], np.full((1, 4), 3.0))
    assert t.embeddings is not None and t.embeddings.shape == (103, 4)
    assert t.embeddings[0].sum() == 4 and bool(t.embedding_mask.all())


def test_set_embeddings_rejects_what_does_not_fit() -> None:
    t = _small()
    t.set_embeddings([0, 3], np.ones((2, 4)))
    with pytest.raises(TreeError, match="size 4"):
        t.set_embeddings([1], np.ones((1, 5)))
    with pytest.raises(TreeError, match="expected 2 vectors"):
        t.set_embeddings([1, 2], np.ones((3, 4)))
    with pytest.raises(TreeError, match="node id 9 is not in this tree"):
        t.set_embeddings([1, 9], np.ones((2, 4)))
    assert t.embedding_mask.tolist() == [True, False, False, True]  # nothing half-set


def test_bad_ids_self_loops_and_weights_raise_tree_errors() -> None:
    t = _small()
    with pytest.raises(TreeError, match="not in this tree"):
        t[99]
    with pytest.raises(TreeError, match="own child"):
        t.add_edge(1, 1)
    with pytest.raises(TreeError, match="not in this tree"):
        t.add_node("orphan", parents=[42])
    with pytest.raises(TreeError, match="2 weights for 1 parents"):
        t.add_node("d", parents=[0], weights=[0.5, 0.5])
    with pytest.raises(TreeError, match="finite"):
        t.add_node("d", parents=[0], weights=[float("nan")])
    with pytest.raises(TreeError, match="finite"):
        t.add_edge(0, 3, float("inf"))
    with pytest.raises(InputTypeError, match="integer"):
        t.set_order(0, "3")  # type: ignore[arg-type]
    assert len(t) == 4  # the refused nodes were not added
    # Every one is also an HrefineError and the built-in it refines.
    with pytest.raises(HrefineError):
        t.set_order(99, 1)
    with pytest.raises(ValueError):
        t.remove_edge(3, 0)
    assert t.add_node("np ids work", parents=[np.int64(0)]) == 4  # type: ignore[list-item]
    assert t[4].parents == (0,) and type(t[4].parents[0]) is int


def test_round_trip_through_dict_keeps_derived_orders() -> None:
    t = _small()
    t.set_order(3, 50)
    back = Tree.from_dict(t.to_dict())
    assert back.to_dict() == t.to_dict()
    assert [n.order_is_derived for n in back] == [True, True, True, False]
    assert back[0].order == 50
    back.set_order(3, 60)  # derived orders stay derived after a load
    assert back[0].order == 60
    with pytest.raises(TreeError, match="malformed"):
        Tree.from_dict({"nodes": [{"no_text": 1}], "edges": []})
    with pytest.raises(TreeError, match="malformed"):
        Tree.from_dict({"nodes": [{"text": "a", "kind": "nope"}], "edges": []})
    with pytest.raises(TreeError, match="malformed"):
        Tree.from_dict({"nodes": [{"text": "a"}, {"text": "b"}], "edges": [[0, 1, 1], [1, 0, 1]]})


def test_pickle_and_deepcopy_give_independent_trees() -> None:
    t = Tree()
    prev = t.add_node("0", kind="chunk")
    for i in range(1, 5_000):  # deep: copying must not recurse node by node
        prev = t.add_node(str(i), kind="chunk", parents=[prev])
    t.set_embeddings([0, prev], np.ones((2, 3)))
    for copy in (pickle.loads(pickle.dumps(t)), deepcopy(t)):
        assert copy.to_dict() == t.to_dict()
        assert copy.embedding_mask.tolist() == t.embedding_mask.tolist()
        copy.set_order(prev, -1)  # derived orders of the copy follow the copy's edits
        assert copy[0].order == -1 and t[0].order == prev
        copy.add_edge(0, copy.add_node("new", kind="summary"))
        assert len(t) == 5_000 and t[0].children == (1,)


def test_weak_link_to_the_tree_keeps_it_free_of_reference_cycles() -> None:
    t = _small()
    probe = weakref.ref(t)
    node = t[0]
    assert node.order == 3
    del t
    assert probe() is None  # freed at once, without waiting for the garbage collector
    assert node.text == "root" and node.children == (1, 2)
    t2 = _small()
    leaf = t2[1]
    t2.set_order(3, 9)  # leaf 1's derived order is now stale
    del t2
    with pytest.raises(TreeError, match="keep a reference to the Tree"):
        _ = leaf.order
