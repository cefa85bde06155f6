"""No sentence is returned twice: a summary returns only what the chosen leaves do not.

RAPTOR's default summaries are extracts, whose sentences are their leaves' sentences; before
this a leaf and the summary above it could both be returned and the budget paid twice for the
same sentences.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hrefine.budget import get_counter, select
from hrefine.errors import BudgetTooSmallError
from hrefine.raptor import RaptorTree
from hrefine.raptor.extractive import ExtractiveSummariser, sentences
from hrefine.raptor.report import explain
from hrefine.raptor.retrieve import K_REACHED, OVER_BUDGET, REPEATED, choose, pick
from hrefine.tree import NodeKind, Tree

COUNTER = get_counter(None)
LEAVES = [
    "Lake Baikal is in Siberia. It is a rift lake.",
    "Baikal is 1,642 metres deep. It is the deepest lake.",
    "The Baikal seal lives only there. It eats fish.",
]


def _tree(summaries: list[tuple[str, list[int]]]) -> tuple[Tree, np.ndarray]:
    """The three leaves, then each summary over its children; costs in Llama-3.2 tokens."""
    tree = Tree()
    for text in LEAVES:
        tree.add_node(text, kind=NodeKind.CHUNK)
    for text, kids in summaries:
        node = tree.add_node(text, kind=NodeKind.SUMMARY, level=1)
        for c in kids:
            tree.add_edge(node, c)
    costs = np.asarray([COUNTER.count(n.text) for n in tree], dtype=np.int64)
    return tree, costs


def test_a_summary_returns_only_the_sentences_the_chosen_leaves_do_not() -> None:
    tree, costs = _tree([("Lake Baikal is in Siberia. The Baikal seal lives only there.", [0, 2])])
    scores = np.array([0.5, 0.1, 0.2, 0.9])  # the summary first, then leaf 0
    got = pick(tree, scores, costs, COUNTER, candidates=range(4), k=None, max_tokens=None)
    # Leaf 0 holds the summary's first sentence and leaf 2 its second: nothing is left of it.
    assert got.chosen == [0, 2, 1]
    assert got.reasons == {3: REPEATED}
    got = pick(tree, scores, costs, COUNTER, candidates=range(4), k=2, max_tokens=None)
    assert got.chosen == [3, 0]
    assert got.texts[3] == "The Baikal seal lives only there."
    assert got.repeated == {3: 1}
    assert got.tokens[3] == COUNTER.count("The Baikal seal lives only there.")
    assert got.texts[0] == LEAVES[0] and got.tokens[0] == costs[0]


def test_a_summary_all_of_whose_sentences_are_returned_is_dropped_and_frees_k() -> None:
    tree, costs = _tree([("Lake Baikal is in Siberia. The Baikal seal lives only there.", [0, 2])])
    scores = np.array([0.5, 0.1, 0.4, 0.9])
    got = pick(tree, scores, costs, COUNTER, candidates=range(4), k=3, max_tokens=None)
    # The summary came first, then leaves 0 and 2 took its sentences one by one: it was dropped
    # when leaf 2 came, and k had room for leaf 1 because the summary no longer counted.
    assert got.chosen == [0, 2, 1]
    assert got.reasons == {3: REPEATED}
    assert got.texts == {i: LEAVES[i] for i in range(3)}
    got = pick(tree, scores, costs, COUNTER, candidates=range(4), k=2, max_tokens=None)
    assert got.chosen == [3, 0] and got.reasons == {2: K_REACHED, 1: K_REACHED}


def test_a_summary_whose_sentences_were_returned_before_its_turn_is_passed_over() -> None:
    tree, costs = _tree([("Lake Baikal is in Siberia.", [0])])
    scores = np.array([0.9, 0.1, 0.2, 0.5])
    got = pick(tree, scores, costs, COUNTER, candidates=range(4), k=None, max_tokens=None)
    assert 3 not in got.chosen and got.reasons[3] == REPEATED


def test_a_summary_repeats_no_sentence_of_a_better_summary() -> None:
    tree, costs = _tree(
        [
            ("Lake Baikal is in Siberia. Baikal is 1,642 metres deep.", [0, 1]),
            ("Baikal is 1,642 metres deep. The Baikal seal lives only there.", [1, 2]),
        ]
    )
    scores = np.array([0.1, 0.1, 0.1, 0.9, 0.8])
    got = pick(tree, scores, costs, COUNTER, candidates=range(5), k=2, max_tokens=None)
    assert got.chosen == [3, 4]
    assert got.texts[3] == "Lake Baikal is in Siberia. Baikal is 1,642 metres deep."
    assert got.texts[4] == "The Baikal seal lives only there." and got.repeated == {4: 1}


def test_the_tokens_a_leaf_saves_a_summary_make_room_for_the_next_node() -> None:
    summary = "Lake Baikal is in Siberia. It is a rift lake. The Baikal seal lives only there."
    tree, costs = _tree([(summary, [0, 2])])
    scores = np.array([0.8, 0.5, 0.1, 0.9])
    # Summary + leaf 0 cost less than their sum: leaf 0 takes two of the summary's sentences.
    tight = int(
        costs[3] + costs[0] - COUNTER.count("Lake Baikal is in Siberia. It is a rift lake.")
    )
    got = pick(tree, scores, costs, COUNTER, candidates=range(4), k=None, max_tokens=tight)
    assert got.chosen == [3, 0]
    assert sum(got.tokens.values()) <= tight
    # Whole, they would not both have fitted.
    assert costs[3] + costs[0] > tight
    assert got.reasons[1] == OVER_BUDGET and got.room[1] == tight - sum(got.tokens.values())


@pytest.mark.parametrize("seed", range(20))
def test_without_summaries_the_choice_is_budget_selects(seed: int) -> None:
    rng = np.random.default_rng(seed)
    tree = Tree()
    for i in range(12):
        tree.add_node(f"Leaf {i}. " + "word " * int(rng.integers(1, 30)), kind=NodeKind.CHUNK)
    costs = np.asarray([COUNTER.count(n.text) for n in tree], dtype=np.int64)
    scores = np.round(rng.random(12), 1)  # ties, broken by id in both
    budget = int(rng.integers(int(costs.min()), int(costs.sum())))
    k = None if seed % 2 else int(rng.integers(1, 8))
    got = pick(tree, scores, costs, COUNTER, candidates=range(12), k=k, max_tokens=budget)
    ref = select(costs, scores, budget, max_units=k, candidates=list(range(12)))
    assert sorted(got.chosen) == sorted(ref.selected)
    assert got.chosen == sorted(got.chosen, key=lambda i: (-scores[i], i))
    assert got.texts == {i: tree[i].text for i in got.chosen} and got.repeated == {}


def test_a_budget_below_every_node_is_a_clear_error() -> None:
    tree, costs = _tree([])
    with pytest.raises(BudgetTooSmallError, match="smaller than the smallest node"):
        choose(tree, np.ones(3), costs, COUNTER, mode="collapsed", k=None, max_tokens=2)
    # The smallest node named is one this retrieval may return: not a summary it scores -inf
    # (summary_rank "off"), which the message called the smallest unit, below the budget.
    scores = np.ones(3)
    scores[int(np.argmin(costs))] = -np.inf
    budget = int(np.sort(costs)[1]) - 1
    with pytest.raises(BudgetTooSmallError) as caught:
        choose(tree, scores, costs, COUNTER, mode="collapsed", k=None, max_tokens=budget)
    assert caught.value.smallest == budget + 1


def test_traversal_returns_no_sentence_twice() -> None:
    tree, costs = _tree([("Lake Baikal is in Siberia. The Baikal seal lives only there.", [0, 2])])
    scores = np.array([0.5, 0.1, 0.4, 0.9])
    got = choose(tree, scores, costs, COUNTER, mode="traversal", k=2, max_tokens=None)
    # The roots are the summary and leaf 1; the summary's children come next.
    assert got.chosen == [0, 2, 1] and got.reasons == {3: REPEATED}


def _sentences_returned(hits: list[Any]) -> list[str]:
    return [s for h in hits for s in sentences(h.text)]


@pytest.mark.parametrize("budget", [384, 1024, None])
def test_a_tree_of_extracts_returns_each_sentence_once(
    qasper_doc: Any, embedder: Any, budget: int | None
) -> None:
    # The default summariser on a real paper: the extracts repeat their leaves' sentences.
    # Summaries compete with the leaves (the paper's ranking; the default returns leaves only).
    # 384 tokens is the small budget: at 256 this paper's best hits are all leaves, and the
    # check needs a summary among them (the tree is the same on every CPU).
    tree = RaptorTree.build(
        [qasper_doc.document],
        llm=ExtractiveSummariser(max_tokens=100),
        embedder=embedder,
        summary_rank="free",
    )
    hits = tree.retrieve(qasper_doc.question, k=None if budget else 25, max_tokens=budget)
    said = _sentences_returned(hits)
    leaves = {s for h in hits if h.kind == "chunk" for s in sentences(h.text)}
    summary_said = [s for h in hits if h.kind == "summary" for s in sentences(h.text)]
    assert not leaves.intersection(summary_said)
    assert len(summary_said) == len(set(summary_said))
    assert any(h.kind == "summary" for h in hits) and len(said) > 0
    for h in hits:
        assert h.tokens == tree.counter.count(h.text) or "hrefine_repeated_sentences" not in (
            h.metadata
        )
        if "hrefine_repeated_sentences" in h.metadata:
            assert h.kind == "summary" and h.tokens == tree.counter.count(h.text)
    if budget is not None:
        assert sum(h.tokens for h in hits) <= budget
        # The report replays the same choice and says why each summary was left out.
        why = explain(tree, qasper_doc.question, max_tokens=budget, k=None)
        assert why.chosen == [h.id for h in hits]


def test_first_copies_maps_each_repeat_to_its_first_and_never_a_missing_key() -> None:
    from hrefine.repeats import first_copies

    assert first_copies(["a", "b", "a", None, None, "b", "a"]) == {2: 0, 5: 1, 6: 0}
    assert first_copies([]) == {} and first_copies(["x", "y"]) == {}
