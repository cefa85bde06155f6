"""GarlicSearcher: the KV-cached search on SmolLM2, z = Eᵀa by hand, stop rules, prompt-only mode.

The graphs are built by hand (a Tree with chunk leaves, summary points, weighted edges and real
embeddings), wrapped in the three things the searcher reads: ``tree``, ``top_level()`` and
``edge_arrays()``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from hrefine.errors import ConfigError, EmptyInputError, InputTypeError
from hrefine.garlic.options import SEARCH_PROMPT
from hrefine.garlic.search import (
    GarlicSearcher,
    SearchResult,
    _Reader,
    _SessionReader,
    _Verdict,
    candidate_scores,
    parse_yes_no,
    search_prompt,
)
from hrefine.testing import KeywordEmbedder, ScriptedLM
from hrefine.tree import Tree

QUERY = "Where does Mrs. Tabitha Twitchit send her kittens before the tea party?"
LEAVES = [
    "Mrs. Tabitha Twitchit expects fine company for tea.",
    "She dresses Mittens, Tom Kitten and Moppet in clean clothes.",
    "She sends the kittens to the garden to keep them out of the way.",
    "The kittens lose their clothes to the Puddle-Duck family.",
]
POINTS = [
    "Tabitha Twitchit prepares her kittens for a tea party.",
    "The kittens are sent to the garden and lose their clothes.",
]
TOP = "Tabitha Twitchit's kittens spoil her tea party."
# parent -> child weights (each point's weights sum to 1, as GarlicGraph builds them)
EDGES = {
    (4, 0): 0.5,
    (4, 1): 0.3,
    (4, 2): 0.2,
    (5, 1): 0.1,
    (5, 2): 0.6,
    (5, 3): 0.3,
    (6, 4): 0.7,
    (6, 5): 0.3,
}


class HandGraph:
    """The searcher's view of a graph: a tree, its top level and its edges as arrays."""

    def __init__(self, tree: Tree) -> None:
        self.tree = tree

    def top_level(self) -> list[int]:
        top = max(n.level for n in self.tree)
        return self.tree.at_level(top)

    def edge_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        edges = list(self.tree.edges())
        return (
            np.array([p for p, _, _ in edges], dtype=np.int64),
            np.array([c for _, c, _ in edges], dtype=np.int64),
            np.array([w for _, _, w in edges], dtype=np.float64),
        )


def hand_graph(embedder: Any, *, top: bool = True) -> HandGraph:
    """Leaves 0-3, points 4-5 (level 1) and, with ``top``, one level-2 point 6 over them."""
    tree = Tree()
    for i, text in enumerate(LEAVES):
        tree.add_node(text, kind="chunk", level=0, order=i, metadata={"source": 0})
    tree.add_node(POINTS[0], kind="summary", level=1, order=0)
    tree.add_node(POINTS[1], kind="summary", level=1, order=2)
    if top:
        tree.add_node(TOP, kind="summary", level=2, order=0)
    for (parent, child), weight in EDGES.items():
        if parent < len(tree):
            tree.add_edge(parent, child, weight)
    ids = list(range(len(tree)))
    tree.set_embeddings(ids, embedder.embed([tree[i].text for i in ids]))
    return HandGraph(tree)


class ScriptedReader:
    """Injected attention (raw mass to the query per node) and scripted Yes/No answers."""

    def __init__(self, raw: dict[int, float], answers: Sequence[bool], *, positional: bool) -> None:
        self.raw = raw
        self.answers = list(answers)
        self.positional = positional
        self.prefilled_tokens = 0
        self.read: list[int] = []

    def add(self, node_id: int, text: str) -> float:
        self.read.append(node_id)
        return self.raw.get(node_id, 0.0)

    def ask(self) -> _Verdict:
        yes = self.answers.pop(0) if self.answers else False
        return _Verdict(float(yes), float(not yes), 0)

    def fits(self, text: str) -> bool:
        return True


class InjectedSearcher(GarlicSearcher):
    """A searcher whose attention and answers come from a ScriptedReader."""

    def __init__(self, graph: Any, reader: ScriptedReader, **settings: Any) -> None:
        super().__init__(graph, lm=ScriptedLM(["No"], cycle=True), **settings)
        self.reader = reader

    def _open_reader(self, query: str, similarity: np.ndarray) -> _Reader:
        return self.reader


class CapturingSearcher(GarlicSearcher):
    """A searcher that keeps its LMSession reader, to look into the cache afterwards."""

    readers: list[_SessionReader]

    def _open_reader(self, query: str, similarity: np.ndarray) -> _Reader:
        reader = super()._open_reader(query, similarity)
        assert isinstance(reader, _SessionReader)
        self.readers = [*getattr(self, "readers", []), reader]
        return reader


@pytest.fixture(scope="module")
def graph(embedder: Any) -> HandGraph:
    return hand_graph(embedder)


# -- the KV-cached search on the embedded LM ---------------------------------------------------
@pytest.mark.lm
def test_kv_cached_search_matches_recomputing_the_whole_prompt(
    graph: HandGraph, embedder: Any
) -> None:
    from lm_fixture import load_default_lm

    lm = load_default_lm()
    searcher = CapturingSearcher(graph, lm=lm, embedder=embedder)
    result = searcher.search(QUERY, patience=10, max_steps=4)
    assert result.mode == "attention" and len(result.trace) == 5
    suffix = lm.chat_prompt("@@").split("@@")[1]
    suffix_tokens = lm.count_tokens(suffix)
    texts = [v.text for v in result.visited]
    fresh_lengths = []
    for step in result.trace:
        read = [v.text for v in result.visited if v.step <= step.step]
        fresh = lm.session()
        fresh.append(lm.chat_prompt(search_prompt(SEARCH_PROMPT, QUERY, read)))
        probs = fresh.choice_probs(["Yes", "No"])
        assert probs["Yes"] == pytest.approx(step.p_yes, abs=1e-4)
        assert probs["No"] == pytest.approx(step.p_no, abs=1e-4)
        fresh_lengths.append(fresh.length)
        if step.step > 0:  # only the new node's tokens and the end-of-turn suffix
            assert step.new_tokens == lm.count_tokens(texts[len(read) - 1] + "\n") + suffix_tokens
    session = searcher.readers[0].session
    assert fresh.token_ids[: session.length] == session.token_ids  # the same tokens as one text
    assert (
        result.prefilled_tokens
        == session.prefilled_tokens
        == sum(s.new_tokens for s in result.trace)
    )
    assert result.recompute_tokens == sum(fresh_lengths)
    assert result.prefilled_tokens < result.recompute_tokens / 2
    # a_i: attention to the query times the position (query 1, the top node 2, ...)
    assert all(v.attention > 0 for v in result.visited)
    assert [v.step for v in result.visited] == [0, 1, 2, 3, 4]


class SmallWindowSearcher(GarlicSearcher):
    """A searcher whose LM has room for only 60 tokens after the question."""

    def _open_reader(self, query: str, similarity: np.ndarray) -> _Reader:
        reader = super()._open_reader(query, similarity)
        assert isinstance(reader, _SessionReader)
        reader.window = reader.session.length + 60
        self.reader = reader
        return reader


@pytest.mark.lm
def test_the_search_stops_before_the_context_window_overflows(
    graph: HandGraph, embedder: Any
) -> None:
    from lm_fixture import load_default_lm

    lm = load_default_lm()
    searcher = SmallWindowSearcher(graph, lm=lm, embedder=embedder)
    result = searcher.search(QUERY, patience=10)
    assert result.stopped_by == "max_tokens" and "context window" in result.notes[-1]
    assert 1 < len(result.visited) < len(graph.tree)
    suffix = lm.count_tokens(lm.chat_prompt("@@").split("@@")[1])
    assert searcher.reader.session.length + suffix < searcher.reader.window


@pytest.mark.lm
def test_the_same_question_gives_the_same_search(graph: HandGraph, embedder: Any) -> None:
    from lm_fixture import load_default_lm

    lm = load_default_lm()
    runs = []
    for _ in range(2):
        searcher = GarlicSearcher(graph, lm=lm, embedder=embedder)
        runs.append(searcher.search(QUERY, patience=2, max_steps=3))
    first, second = runs
    assert [v.id for v in first.visited] == [v.id for v in second.visited]
    assert [s.p_yes for s in first.trace] == [s.p_yes for s in second.trace]
    assert [v.attention for v in first.visited] == [v.attention for v in second.visited]


# -- positional normalisation and z = Eᵀa, by hand ---------------------------------------------
def test_positional_normalisation_and_z_by_hand(graph: HandGraph) -> None:
    reader = ScriptedReader({6: 0.25, 4: 0.2, 0: 0.05, 1: 0.1}, [], positional=True)
    searcher = InjectedSearcher(graph, reader, embedding_weight=0.0)
    result = searcher.search(QUERY, max_steps=3)
    # a6 = 0.25 * 2 = 0.5 -> z4 = 0.35, z5 = 0.15 (normalised 0.7, 0.3): node 4 first.
    # a4 = 0.2 * 3 = 0.6 -> z0 = 0.3, z1 = 0.18, z2 = 0.12, z3 = 0, z5 = 0.15 (sum 0.75): node 0.
    # a0 = 0.05 * 4 = 0.2 (a leaf spreads nothing): z1 .18, z2 .12, z3 0, z5 .15 -> node 1.
    # a1 = 0.1 * 5 = 0.5.
    assert [v.id for v in result.visited] == [6, 4, 0, 1]
    assert [v.attention for v in result.visited] == pytest.approx([0.5, 0.6, 0.2, 0.5])
    assert [v.score for v in result.visited[1:]] == pytest.approx([0.7, 0.3 / 0.75, 0.18 / 0.45])
    assert result.visited[0].score is None and result.stopped_by == "max_steps"
    assert result.document_order == graph.tree.sort_by_order([6, 4, 0, 1])


def test_embedding_term_is_normalised_over_the_unvisited_nodes(
    graph: HandGraph, embedder: Any
) -> None:
    reader = ScriptedReader({6: 0.25}, [], positional=True)
    searcher = InjectedSearcher(graph, reader, embedding_weight=2.0, embedder=embedder)
    result = searcher.search(QUERY, max_steps=1)
    q = embedder.embed_query(QUERY)
    cos = np.maximum(np.asarray(embedder.embed([graph.tree[i].text for i in range(6)])) @ q, 0)
    z = np.array([0, 0, 0, 0, 0.35, 0.15])
    expected = z / z.sum() + 2.0 * cos / cos.sum()
    picked = result.visited[1]
    assert picked.id == int(np.argmax(expected))
    assert picked.score == pytest.approx(float(expected.max()), abs=1e-5)


def test_candidate_scores_leave_a_zero_vector_at_zero() -> None:
    edges = (np.array([0]), np.array([1]), np.array([1.0]))
    attention = np.zeros(3)  # nothing visited attends to the query: z = 0 everywhere
    scores = candidate_scores(edges, attention, np.array([0.0, 0.2, 0.6]), [1, 2], 1.0)
    assert scores == pytest.approx([0.25, 0.75])
    scores = candidate_scores(edges, np.array([2.0, 0, 0]), np.zeros(3), [1, 2], 1.0)
    assert scores == pytest.approx([1.0, 0.0])


def test_prompt_only_mode_uses_similarity_without_position(graph: HandGraph, embedder: Any) -> None:
    searcher = GarlicSearcher(graph, lm=ScriptedLM(["No"], cycle=True), embedder=embedder)
    result = searcher.search(QUERY, max_steps=2)
    sims = searcher.similarities(QUERY)
    assert result.mode == "prompt"
    assert [v.attention for v in result.visited] == pytest.approx(
        [float(sims[v.id]) for v in result.visited]
    )


# -- stop rules -------------------------------------------------------------------------------
@pytest.mark.parametrize(("patience", "added"), [(1, 1), (2, 3)])
def test_patience_stops_after_p_yes_answers(
    graph: HandGraph, embedder: Any, patience: int, added: int
) -> None:
    llm = ScriptedLM(["No", "Yes", "No", "Yes", "No"])
    searcher = GarlicSearcher(graph, lm=llm, embedder=embedder)
    result = searcher.search(QUERY, patience=patience)
    assert result.stopped_by == "patience"
    assert len(result.visited) == 1 + added
    assert [s.said_yes for s in result.trace] == [False, True, False, True][: added + 1]
    # every step sends the whole first-turn prompt with the nodes read so far
    for k, prompt in enumerate(llm.prompts):
        texts = [v.text for v in result.visited[: k + 1]]
        assert prompt == search_prompt(SEARCH_PROMPT, QUERY, texts)
    assert (
        result.prefilled_tokens
        == result.recompute_tokens
        == sum(s.new_tokens for s in result.trace)
    )


def test_a_model_that_never_says_yes_stops_at_max_steps(graph: HandGraph, embedder: Any) -> None:
    searcher = GarlicSearcher(graph, lm=ScriptedLM(["No"], cycle=True), embedder=embedder)
    result = searcher.search(QUERY, max_steps=2)
    assert result.stopped_by == "max_steps" and len(result.visited) == 3
    assert not result.said_yes


def test_a_model_that_never_says_yes_stops_at_max_tokens(graph: HandGraph, embedder: Any) -> None:
    searcher = GarlicSearcher(graph, lm=ScriptedLM(["No"], cycle=True), embedder=embedder)
    free = searcher.search(QUERY, max_steps=2)
    costs = [searcher.counter.count(v.text) for v in free.visited]
    limit = costs[0] + costs[1] + costs[2] - 1  # the second added node no longer fits
    result = searcher.search(QUERY, max_tokens=limit)
    assert result.stopped_by == "max_tokens"
    assert [v.id for v in result.visited] == [v.id for v in free.visited[:2]]
    assert sum(searcher.counter.count(v.text) for v in result.visited) <= limit
    assert not any("top level" in n for n in result.notes)
    # A limit below the top level: it is still read whole, and the notes say so.
    small = searcher.search(QUERY, max_tokens=costs[0] - 1)
    assert small.stopped_by == "max_tokens" and [v.id for v in small.visited] == [
        free.visited[0].id
    ]
    assert any(f"holds {costs[0]} tokens, over {costs[0] - 1}" in n for n in small.notes)


def test_fill_reads_on_past_yes_until_the_next_leaf_would_not_fit(
    graph: HandGraph, embedder: Any
) -> None:
    llm = ScriptedLM(["Yes"], cycle=True)
    searcher = GarlicSearcher(graph, lm=llm, embedder=embedder)
    free = GarlicSearcher(graph, lm=ScriptedLM(["No"], cycle=True), embedder=embedder).search(QUERY)
    count = searcher.counter.count
    read_leaves = [v for v in free.visited if v.level == 0]
    fill = count(read_leaves[0].text) + count(read_leaves[1].text)  # exactly two leaves
    result = searcher.search(QUERY, fill_tokens=fill)
    assert result.stopped_by == "filled"
    assert all(s.said_yes for s in result.trace)  # every Yes was recorded, none stopped it
    leaves = [v.id for v in result.visited if v.level == 0]
    assert leaves == [v.id for v in read_leaves[:2]]  # the same walk, cut at the fill
    assert [v.id for v in result.visited] == [v.id for v in free.visited[: len(result.visited)]]
    assert any("read on past" in note for note in result.notes)
    # without fill the first Yes (after the top level) stops it
    assert searcher.search(QUERY).stopped_by == "patience"
    with pytest.raises(ConfigError):
        searcher.search(QUERY, fill_tokens=0)


def test_fill_passes_over_a_leaf_that_does_not_fit_for_a_shorter_one(
    graph: HandGraph, embedder: Any
) -> None:
    # As chunk retrieval passes a chunk that does not fit: the room left goes to a shorter
    # leaf further down the walk, not to nothing.
    searcher = GarlicSearcher(graph, lm=ScriptedLM(["No"], cycle=True), embedder=embedder)
    count = searcher.counter.count
    order = [v for v in searcher.search(QUERY).visited if v.level == 0]
    (first, second, third), later = order[:3], order[3:]
    short = min(later, key=lambda v: count(v.text))
    assert count(short.text) < count(third.text)  # the data has one to pass over
    fill = count(first.text) + count(second.text) + count(short.text)
    result = searcher.search(QUERY, fill_tokens=fill)
    leaves = [v.id for v in result.visited if v.level == 0]
    assert leaves == [first.id, second.id, short.id]
    assert third.id not in {v.id for v in result.visited}  # passed over unread
    # no leaf is left to fill with: the walk ends when the next leaf no longer fits, or when
    # only summary points were left to read
    assert result.stopped_by in {"filled", "exhausted"}


def test_fit_to_budget_keeps_leaves_before_summaries_in_reading_order(
    graph: HandGraph, embedder: Any
) -> None:
    from hrefine.garlic.visited import fit_to_budget

    searcher = GarlicSearcher(graph, lm=ScriptedLM(["No"], cycle=True), embedder=embedder)
    result = searcher.search(QUERY)
    count = searcher.counter.count
    leaves = [v for v in result.visited if v.level == 0]
    points = [v for v in result.visited if v.level > 0]
    budget = count(leaves[0].text) + count(leaves[1].text) + count(points[0].text)
    kept = fit_to_budget(result, budget, searcher.counter)
    # the two leaves read first, then the summary point read first; document order
    expected = {leaves[0].id, leaves[1].id, points[0].id}
    assert set(kept) == expected
    assert kept == graph.tree.sort_by_order(expected)
    # with separators counted the same budget holds one node fewer
    sep = fit_to_budget(result, budget, searcher.counter, separator="\n\n")
    assert set(sep) == {leaves[0].id, leaves[1].id}
    assert fit_to_budget(result, 1, searcher.counter) == []


def test_an_exhausted_graph_stops(graph: HandGraph, embedder: Any) -> None:
    searcher = GarlicSearcher(graph, lm=ScriptedLM(["No"], cycle=True), embedder=embedder)
    result = searcher.search(QUERY)
    assert result.stopped_by == "exhausted"
    assert sorted(v.id for v in result.visited) == list(range(len(graph.tree)))
    assert result.texts_in_document_order() == [
        graph.tree[i].text for i in graph.tree.sort_by_order(range(len(graph.tree)))
    ]


def test_prompt_only_search_is_deterministic(graph: HandGraph, embedder: Any) -> None:
    runs: list[SearchResult] = []
    for _ in range(2):
        llm = ScriptedLM(["No", "No", "Yes"])
        runs.append(GarlicSearcher(graph, lm=llm, embedder=embedder).search(QUERY))
    assert [v.id for v in runs[0].visited] == [v.id for v in runs[1].visited]
    assert [v.score for v in runs[0].visited] == [v.score for v in runs[1].visited]


# -- reading Yes/No from text -----------------------------------------------------------------
@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("Yes", True),
        ("yes.", True),
        ("**Yes**", True),
        ('"Yes", it can.', True),
        ("No, because the text says nothing about it.", False),
        ("no", False),
        ("  NO.", False),
        ("Maybe", None),
        ("I think yes", None),
        ("Yesterday", None),
        ("1. Yes", None),
        ("", None),
    ],
)
def test_parse_yes_no(reply: str, expected: bool | None) -> None:
    assert parse_yes_no(reply) is expected


def test_an_unreadable_reply_counts_as_no_and_is_noted(graph: HandGraph, embedder: Any) -> None:
    llm = ScriptedLM(["Perhaps.", "yes."])
    result = GarlicSearcher(graph, lm=llm, embedder=embedder).search(QUERY)
    assert [s.said_yes for s in result.trace] == [False, True]
    assert [s.answer for s in result.trace] == ["Perhaps.", "yes."]
    assert len(result.notes) == 1 and "Perhaps." in result.notes[0]


# -- bad input --------------------------------------------------------------------------------
def test_bad_queries_and_settings_are_refused(graph: HandGraph, embedder: Any) -> None:
    searcher = GarlicSearcher(graph, lm=ScriptedLM(["No"], cycle=True), embedder=embedder)
    with pytest.raises(EmptyInputError, match="query is empty"):
        searcher.search("  ")
    with pytest.raises(InputTypeError, match="query must be a string"):
        searcher.search(3)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="patience"):
        searcher.search(QUERY, patience=0)
    with pytest.raises(InputTypeError, match="lacks top_level, edge_arrays"):
        GarlicSearcher(object.__new__(_TreeOnly), lm=ScriptedLM(["No"]))
    other = GarlicSearcher(graph, lm=ScriptedLM(["No"]), embedder=KeywordEmbedder(dim=16))
    with pytest.raises(ConfigError, match="embedder the graph was built with"):
        other.search(QUERY)


class _TreeOnly:
    tree = Tree()
