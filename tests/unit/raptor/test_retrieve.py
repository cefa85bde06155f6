"""Collapsed-tree and traversal retrieval: exact budgets, top-k per layer, scores and errors."""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pytest
from hrefine.errors import BudgetTooSmallError, ConfigError, InputTypeError
from hrefine.models.lexical import BM25Scorer
from hrefine.raptor import RaptorTree
from raptor_fakes import Summariser


def _scores(tree: RaptorTree, query: str) -> np.ndarray:
    """Each node's cosine plus ``lexical_weight`` of its BM25 match scaled by the best (the
    default fusion)."""
    vectors = tree.tree.embeddings
    assert vectors is not None
    cosine = np.asarray(vectors @ tree.embedder.embed_query(query), dtype=np.float64)
    match = BM25Scorer().score(query, [n.text for n in tree.tree]).astype(np.float64)
    return cosine + tree.options.lexical_weight * match / match.max()


def test_a_rare_word_of_the_query_lifts_the_leaf_that_holds_it(built: RaptorTree) -> None:
    # A word only one leaf holds: the BM25 match carries that leaf past nodes the embedding
    # ranks above it; without the lexical part the ranking is the cosine's alone.
    texts = [built.tree[i].text for i in built.tree.leaves]
    once = [
        w
        for w in {w.strip(".,;:()") for t in texts for w in t.split()}
        if w.isalpha() and len(w) >= 8 and sum(w in t for t in texts) == 1
    ]
    word = sorted(once)[0]
    holder = next(i for i in built.tree.leaves if word in built.tree[i].text)
    query = f"What is said about {word}?"
    fused = [h.id for h in built.retrieve(query, k=None, max_tokens=None)]
    plain = [h.id for h in built.retrieve(query, k=None, max_tokens=None, lexical_weight=0.0)]
    assert fused.index(holder) < plain.index(holder)
    assert fused.index(holder) < 3


def test_summary_rank_below_and_off(built: RaptorTree, qasper_doc: Any) -> None:
    below = built.retrieve(qasper_doc.question, k=None, max_tokens=None, summary_rank="below")
    rank = {h.id: r for r, h in enumerate(below)}
    for h in below:  # every summary comes after the best node it summarises
        if h.kind == "summary":
            assert min(rank[c] for c in built.tree[h.id].children) < rank[h.id]
    off = built.retrieve(qasper_doc.question, k=None, max_tokens=2000, summary_rank="off")
    assert off and all(h.kind == "chunk" for h in off)
    off_traversal = built.retrieve(
        qasper_doc.question, mode="traversal", k=3, max_tokens=None, summary_rank="off"
    )
    assert all(h.kind == "chunk" for h in off_traversal)


@pytest.mark.parametrize("budget", [150, 512, 1024])
def test_collapsed_fills_the_budget_with_the_best_nodes(
    built: RaptorTree, qasper_doc: Any, budget: int
) -> None:
    # summary_rank="free": every layer competes, as _scores ranks them (the default returns
    # leaves only, which matched _scores only while the best node was a leaf).
    hits = built.retrieve(qasper_doc.question, max_tokens=budget, k=None, summary_rank="free")
    used = sum(h.tokens for h in hits)
    assert used <= budget
    # No node left out would still fit into the room that is left.
    room = budget - used
    chosen = {h.id for h in hits}
    assert all(int(n.metadata["hrefine_tokens"]) > room for n in built.tree if n.id not in chosen)
    # Best first; every layer competes (summaries and chunks alike).
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert all(0.0 <= h.relevance <= 1.0 for h in hits)
    best = int(np.argmax(_scores(built, qasper_doc.question)))
    assert hits[0].id == best


def test_the_budget_counts_in_the_trees_tokenizer(built: RaptorTree, qasper_doc: Any) -> None:
    hits = built.retrieve(qasper_doc.question, max_tokens=700, k=None)
    assert sum(built.counter.count(h.text) for h in hits) <= 700


def test_collapsed_without_budget_returns_k(built: RaptorTree, qasper_doc: Any) -> None:
    hits = built.retrieve(qasper_doc.question, k=3, max_tokens=None, summary_rank="free")
    assert len(hits) == 3
    order = np.argsort(-_scores(built, qasper_doc.question), kind="stable")[:3]
    assert [h.id for h in hits] == [int(i) for i in order]


def test_traversal_keeps_the_most_similar_children_at_each_layer(
    built: RaptorTree, qasper_doc: Any
) -> None:
    # The authors' traversal threshold keeps the least similar nodes; ours keeps the best k.
    scores = _scores(built, qasper_doc.question)
    question = qasper_doc.question
    hits = built.retrieve(question, mode="traversal", k=2, max_tokens=None, summary_rank="free")
    tree = built.tree
    kept = {h.id for h in hits}
    pool = set(tree.roots)
    while pool:
        best = sorted(pool, key=lambda i: -scores[i])[:2]
        assert set(best) <= kept
        pool = {c for i in best for c in tree[i].children}
    assert {h.layer for h in hits} == set(range(built.layers + 1))
    assert len(hits) <= 2 * (built.layers + 1)
    # Leaves only (the default) walks down the same way; the summaries' places go to more
    # leaves of the same branches, so as many nodes come back, all of them leaves.
    leaves = built.retrieve(question, mode="traversal", k=2, max_tokens=None)
    walked = [h.id for h in hits if h.layer == 0]
    assert [h.id for h in leaves][: len(walked)] == sorted(walked, key=lambda i: -scores[i])
    assert {h.layer for h in leaves} == {0} and len(leaves) == len(hits)
    under = {c for h in hits if h.layer == 1 for c in tree[h.id].children}
    assert {h.id for h in leaves} <= under


def test_traversal_with_a_budget_stays_within_it(built: RaptorTree, qasper_doc: Any) -> None:
    hits = built.retrieve(qasper_doc.question, mode="traversal", k=5, max_tokens=400)
    assert 0 < sum(h.tokens for h in hits) <= 400


@pytest.mark.parametrize("summary_rank", ["off", "free"])
def test_traversal_fills_the_room_its_branches_leave_with_the_best_other_nodes(
    built: RaptorTree, qasper_doc: Any, summary_rank: str
) -> None:
    question, budget = qasper_doc.question, 3000
    walked = built.retrieve(
        question, mode="traversal", k=2, max_tokens=None, summary_rank=summary_rank
    )
    hits = built.retrieve(
        question, mode="traversal", k=2, max_tokens=budget, summary_rank=summary_rank
    )
    # The traversal's own nodes come first, as without a budget (they fit in it here).
    assert sum(h.tokens for h in walked) < budget
    assert [h.id for h in hits[: len(walked)]] == [h.id for h in walked]
    # Then the room is used: more nodes, best first among those the traversal did not keep,
    # up to as many as a traversal returns (k a layer) or until nothing left out still fits.
    fill = hits[len(walked) :]
    assert fill and [h.score for h in fill] == sorted((h.score for h in fill), reverse=True)
    used = sum(h.tokens for h in hits)
    assert used <= budget
    most = 2 * (built.layers + 1)
    assert len(walked) < len(hits) <= most
    chosen = {h.id for h in hits}
    others = [n for n in built.tree if n.id not in chosen]
    if summary_rank == "off":
        assert all(h.kind == "chunk" for h in hits)
        others = [n for n in others if n.kind == "chunk"]
        if len(hits) < most:
            assert all(int(n.metadata["hrefine_tokens"]) > budget - used for n in others)
    assert len({h.text for h in hits}) == len(hits)
    # No k: the budget alone bounds the fill.
    unbounded = built.retrieve(
        question, mode="traversal", k=None, max_tokens=budget, summary_rank=summary_rank
    )
    assert sum(h.tokens for h in unbounded) <= budget


def test_results_carry_layer_kind_and_source(built: RaptorTree, qasper_doc: Any) -> None:
    hits = built.retrieve(qasper_doc.question, k=None, max_tokens=2000)
    kinds = {h.kind for h in hits}
    assert kinds <= {"chunk", "summary"}
    for h in hits:
        assert h.sources == (0,)
        if h.kind == "chunk":
            assert h.layer == 0 and "hrefine_start" in h.metadata
        else:
            assert h.layer >= 1 and h.metadata["hrefine_children"]


def test_a_budget_below_every_node_is_a_clear_error(embedder: Any) -> None:
    tree = RaptorTree.build(
        ["A sentence of quite a few words, long enough to cost a dozen tokens."],
        llm=Summariser(),
        embedder=embedder,
    )
    with pytest.raises(BudgetTooSmallError, match="smaller than the smallest"):
        tree.retrieve("anything", max_tokens=3, k=None)


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"mode": "sideways"}, ConfigError),
        ({"k": 0}, ConfigError),
        ({"max_tokens": -5}, ConfigError),
        ({"k": "3"}, InputTypeError),
    ],
)
def test_bad_query_settings(built: RaptorTree, kwargs: dict[str, Any], error: type) -> None:
    with pytest.raises(error):
        built.retrieve("q", **kwargs)


def test_a_non_string_query_is_a_type_error(built: RaptorTree) -> None:
    with pytest.raises(InputTypeError):
        built.retrieve(None)  # type: ignore[arg-type]


def test_aretrieve_matches_retrieve(built: RaptorTree, qasper_doc: Any) -> None:
    async def main() -> list[Any]:
        return await built.aretrieve(qasper_doc.question, mode="traversal", k=3)

    assert asyncio.run(main()) == built.retrieve(qasper_doc.question, mode="traversal", k=3)


def test_a_query_sees_one_tree_while_an_insert_swaps_it_in(
    built: RaptorTree, qasper_doc: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An insert finishing between the query's reads (scores, then token costs, then texts)
    # made them disagree: ConfigError('got 39 scores for 41 units'). The query now reads the
    # tree once; the swap lands before the next query.
    import copy

    from hrefine.tree import Tree

    expected = [h.id for h in built.retrieve(qasper_doc.question, k=None, max_tokens=500)]
    grown = RaptorTree.from_tree(
        copy.deepcopy(built.tree), built.options, llm=Summariser(), embedder=built.embedder
    )
    grown.insert(["A later note on Brazilian Portuguese tweets and their annotators."])
    original_tree, bigger = built.tree, grown.tree
    assert len(bigger) > len(original_tree)
    scores = RaptorTree._scores

    def swap_after_scoring(self: RaptorTree, vector: Any, tree: Tree | None = None) -> Any:
        out = scores(self, vector, tree)
        self.tree = bigger  # what _insert_finish does, mid-query
        return out

    monkeypatch.setattr(RaptorTree, "_scores", swap_after_scoring)
    try:
        hits = built.retrieve(qasper_doc.question, k=None, max_tokens=500)
        assert [h.id for h in hits] == expected
        assert len(built.tree) == len(bigger)  # the next query sees the new tree
    finally:
        built.tree = original_tree


def test_summaries_left_out_hand_their_places_to_the_leaves() -> None:
    from hrefine.raptor.retrieve import traversal_candidates
    from hrefine.tree import NodeKind, Tree

    tree = Tree()
    for i in range(6):
        tree.add_node(f"leaf {i}", kind=NodeKind.CHUNK)
    for kids in ([0, 1, 2], [3, 4, 5]):
        node = tree.add_node("a summary", kind=NodeKind.SUMMARY, level=1)
        for c in kids:
            tree.add_edge(node, c)
    scores = np.array([0.9, 0.8, 0.7, 0.95, 0.1, 0.2, 0.5, 0.4])
    # k=1: summary 6 (the better root), then its best leaf.
    assert traversal_candidates(tree, scores, 1) == [6, 0]
    # The summary cannot be returned: its place goes to the next leaf of its branch.
    reasons: dict[int, str] = {}
    assert traversal_candidates(tree, scores, 1, reasons, left_out={6, 7}) == [6, 0, 1]
    assert reasons == {7: "not_top_k_of_layer", 2: "not_top_k_of_layer", 3: "not_reached",
                       4: "not_reached", 5: "not_reached"}  # fmt: skip
