from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from hrefine import BudgetTooSmallError, ConfigError, EmptyInputError, select
from hrefine.budget import (
    CallableCounter,
    EncodeCounter,
    MemoCounter,
    RegexCounter,
    default_counter,
    fill,
    get_counter,
)
from hrefine.errors import InputTypeError, ModelNotFoundError
from hypothesis import given, settings
from hypothesis import strategies as st

units = st.lists(
    st.tuples(st.integers(min_value=0, max_value=60), st.floats(-1, 1, allow_nan=False)),
    min_size=1,
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(units=units, budget=st.integers(min_value=0, max_value=400), sep=st.integers(0, 3))
def test_selection_never_over_maximal_and_in_document_order(
    units: list[tuple[int, float]], budget: int, sep: int
) -> None:
    costs = [c for c, _ in units]
    scores = [s for _, s in units]
    order = list(reversed(range(len(units))))  # document order differs from ids
    sel = select(costs, scores, budget, order=order, separator_cost=sep, allow_empty=True)
    used = sum(costs[i] + sep for i in sel.selected)
    assert used == sel.used <= budget
    # maximal: nothing left out would fit into the room that is left
    room = budget - used
    assert all(costs[i] + sep > room for i in sel.dropped)
    # every unit is either selected or dropped with a reason
    assert set(sel.selected) | set(sel.dropped) == set(range(len(units)))
    # document order kept
    positions = [order[i] for i in sel.selected]
    assert positions == sorted(positions)


@settings(max_examples=200, deadline=None)
@given(units=units, budget=st.integers(min_value=0, max_value=200))
def test_best_unit_that_fits_is_always_selected(
    units: list[tuple[int, float]], budget: int
) -> None:
    costs = [c for c, _ in units]
    scores = [s for _, s in units]
    fitting = [i for i in range(len(units)) if costs[i] <= budget]
    sel = select(costs, scores, budget, allow_empty=True)
    if fitting:
        best = max(scores[i] for i in fitting)
        assert any(scores[i] == best for i in sel.selected)


def test_parent_that_does_not_fit_expands_into_children() -> None:
    # unit 0 is a section of 100 tokens with paragraphs 1..3
    costs = [100, 30, 30, 50]
    scores = [0.9, 0.2, 0.8, 0.5]
    sel = select(costs, scores, 70, children={0: [1, 2, 3]})
    assert sel.dropped[0] == "expanded_into_children"
    assert sel.selected == [1, 2]
    assert sel.used == 60


def test_chosen_parent_covers_its_children() -> None:
    sel = select([50, 20, 30], [0.9, 0.5, 0.4], 60, children={0: [1, 2]})
    assert sel.selected == [0]
    assert 1 not in sel.dropped and 2 not in sel.dropped


def test_budget_smaller_than_every_unit_raises_clear_error() -> None:
    with pytest.raises(BudgetTooSmallError, match="smaller than the smallest unit") as err:
        select([10, 20], [1.0, 0.5], 5)
    assert err.value.smallest == 10 and err.value.budget == 5


def test_nan_scores_rank_last_and_max_units_limits() -> None:
    sel = select([1, 1, 1], [np.nan, 0.1, 0.2], 10, max_units=2)
    assert sel.selected == [1, 2]
    assert sel.dropped == {0: "max_units_reached"}


def test_mismatched_lengths_and_negative_budget_are_rejected() -> None:
    with pytest.raises(Exception, match="scores"):
        select([1, 2], [0.1], 5)
    with pytest.raises(ValueError, match="budget"):
        select([1], [0.1], -1)


def test_fractional_costs_round_up_and_what_is_not_a_cost_is_refused() -> None:
    # Was: costs cut down to whole tokens, so two of 2.9 "used" 4 of a budget of 5.
    sel = select([2.9, 2.9], [1.0, 0.5], 5)
    assert sel.selected == [0] and sel.used == 3 and sel.dropped == {1: "over_budget"}
    with pytest.raises(InputTypeError, match="token costs must be numbers"):
        select(["3", "2"], [1.0, 1.0], 5)
    with pytest.raises(ConfigError, match="finite"):
        select([1.0, float("inf")], [1.0, 1.0], 5)
    with pytest.raises(InputTypeError, match="budget must be a whole number"):
        select([1, 2], [1.0, 1.0], True)
    # Was a BudgetTooSmallError saying a unit of 1 token did not fit 5.
    with pytest.raises(ConfigError, match="max_units must be at least 1"):
        select([1, 2], [1.0, 1.0], 5, max_units=0)


def test_default_counter_is_llama_tokenizer_and_counts_cjk_per_character() -> None:
    counter = default_counter()
    assert counter.name == "llama-3.2"
    assert counter.count("") == 0
    assert counter.count("Hello world") == 2
    # CJK: a BPE tokenizer gives roughly one token per character or two
    assert 5 <= counter.count("東京都は日本の首都です") <= 15
    assert counter.count_many(["a b", "c"]) == [counter.count("a b"), counter.count("c")]


def test_regex_counter_counts_cjk_characters_not_whitespace_runs() -> None:
    counter = RegexCounter()
    assert counter.count("東京都は日本の首都です") == 11
    assert counter.count("Hello, world! 1,000") == 7


def test_get_counter_accepts_callables_encoders_and_names() -> None:
    assert get_counter(lambda s: len(s)).count("abcd") == 4
    # A float count is rounded up (a budget is never passed); garbage is refused, not cut.
    quarter = get_counter(lambda s: len(s) / 4)
    assert quarter.count("abcde") == 2 and quarter.count_many(["ab", "abcdefgh"]) == [1, 2]
    assert get_counter(lambda s: np.int64(3)).count("x") == 3
    for bad in (-1, float("nan"), "3", True, None):
        with pytest.raises(InputTypeError, match="must return a number >= 0"):
            get_counter(lambda s, bad=bad: bad).count("x")


def test_a_folder_without_a_tokenizer_is_named_as_a_folder(tmp_path: Path) -> None:
    # Was "is neither a file, a folder, ..." for what is a folder.
    with pytest.raises(ModelNotFoundError, match="holds no tokenizer"):
        get_counter(str(tmp_path))
    assert isinstance(get_counter("regex"), RegexCounter)

    class Enc:
        def encode(self, text: str) -> list[int]:
            return list(range(len(text.split())))

    assert isinstance(get_counter(Enc()), EncodeCounter)
    assert get_counter(Enc()).count("a b c") == 3
    with pytest.raises(TypeError, match="cannot count tokens"):
        get_counter(3.5)
    with pytest.raises(FileNotFoundError):
        get_counter("/no/such/tokenizer.json")


def test_memo_counter_counts_each_text_once_and_stays_bounded() -> None:
    calls: list[str] = []

    def words(text: str) -> int:
        calls.append(text)
        return len(text.split())

    memo = MemoCounter(CallableCounter(words, name="words"), max_chars=20, capacity_chars=30)
    assert memo.name == "words"
    assert memo.count_many(["a b", "c", "a b"]) == [2, 1, 2]
    assert memo.count("a b") == 2 and memo.count("c") == 1
    assert calls == ["a b", "c", "a b"]  # the repeat inside the first batch, then none
    long_text = "x " * 20  # over max_chars: counted every time, never kept
    assert memo.count(long_text) == memo.count(long_text) == 20
    assert calls.count(long_text) == 2
    for k in range(10):  # 10 texts of 6 characters: only the newest fit in 30 characters
        memo.count(f"word{k:02d}")
    assert sum(len(t) for t in memo._seen) <= 30
    assert "a b" not in memo._seen and "word09" in memo._seen
    assert get_counter(memo) is memo
    from hrefine.html import HtmlPruner

    assert HtmlPruner(tokenizer=memo).counter is memo  # wrapped once, not twice
    assert isinstance(HtmlPruner(tokenizer="regex").counter, MemoCounter)


def test_a_tokenizer_that_truncates_or_pads_is_counted_in_full() -> None:
    # The embedded MiniLM's tokenizer.json truncates and pads to 128 word pieces: a budget
    # counted with it as given would see every long text as 128 tokens.
    from hrefine.models.embed import default_embedder_path
    from tokenizers import Tokenizer

    path = default_embedder_path() / "tokenizer.json"
    given = Tokenizer.from_file(str(path))
    assert given.truncation is not None and given.padding is not None
    text = " ".join(f"word{i} and more" for i in range(200))
    full = Tokenizer.from_file(str(path))
    full.no_truncation()
    full.no_padding()
    expected = len(full.encode(text, add_special_tokens=False).ids)
    assert expected > 500
    for counter in (get_counter(given), get_counter(str(path))):
        assert counter.count(text) == expected
        assert counter.count_many([text, "short"])[0] == expected
    assert given.truncation is not None  # the caller's tokenizer is left as it was
    assert len(given.encode(text).ids) == 128


def test_counters_pickle_and_copy_as_their_settings() -> None:
    import copy
    import pickle

    memo = MemoCounter(RegexCounter(), max_chars=50, capacity_chars=100)
    memo.count_many(["a b", "c d e"])
    for twin in (pickle.loads(pickle.dumps(memo)), copy.deepcopy(memo)):
        assert isinstance(twin, MemoCounter) and twin.name == "regex"
        assert (twin.max_chars, twin.capacity_chars) == (50, 100)
        assert twin._seen == {} and twin.count("a b c") == 3
        assert twin._lock is not memo._lock


# --------------------------------------------------------------------------- the measured fill


def _measure(costs: list[int], overhead: int, pen: list[int]) -> Callable[..., tuple[str, int]]:
    """A fake render: the kept ids, counted as their costs plus a fixed overhead (enclosing
    markup) and a per-unit penalty (tokens the estimate misses), so no unit adds less than its
    cost."""

    def measure(kept: frozenset[int]) -> tuple[str, int]:
        if not kept:
            return "", 0
        return ",".join(map(str, sorted(kept))), overhead + sum(costs[i] + pen[i] for i in kept)

    return measure


fill_units = st.lists(
    st.tuples(
        st.integers(min_value=0, max_value=40),
        st.floats(-1, 1, allow_nan=False),
        st.integers(min_value=0, max_value=3),
    ),
    min_size=1,
    max_size=25,
)


@settings(max_examples=300, deadline=None)
@given(
    units=fill_units,
    budget=st.integers(min_value=0, max_value=300),
    overhead=st.integers(min_value=0, max_value=12),
)
def test_fill_never_over_maximal_keeps_best_solo_and_reports_every_unit(
    units: list[tuple[int, float, int]], budget: int, overhead: int
) -> None:
    costs = [c for c, _, _ in units]
    scores = [s for _, s, _ in units]
    pen = [p for _, _, p in units]
    measure = _measure(costs, overhead, pen)
    done = fill(costs, scores, budget, measure, allow_empty=True)
    if done.output is None:
        # nothing fits even alone
        assert all(measure(frozenset({u}))[1] > budget for u in range(len(units)))
        assert done.selected == [] and set(done.dropped) == set(range(len(units)))
        return
    assert (done.output, done.tokens) == measure(done.kept)
    assert done.tokens <= budget
    assert done.kept == frozenset(done.selected)
    assert done.selected == sorted(done.selected)
    # maximal: no unit left out would still fit
    assert all(measure(done.kept | {u})[1] > budget for u in done.dropped)
    # the best-ranked unit that fits alone is kept
    rank = sorted(range(len(units)), key=lambda u: (-scores[u], u))
    best = next(u for u in rank if measure(frozenset({u}))[1] <= budget)
    assert best in done.kept
    assert set(done.selected) | set(done.dropped) == set(range(len(units)))
    assert set(done.dropped.values()) <= {"over_budget", "over_budget_measured"}


def test_fill_shrinks_room_by_overshoot_then_drops_the_lowest_scored() -> None:
    costs = [10, 10, 10, 10]
    scores = [0.4, 0.9, 0.1, 0.5]
    # The estimate misses 5 tokens per unit: select's choice (all four) measures 60 > 40.
    measure = _measure(costs, 0, [5] * 4)
    shrunk = fill(costs, scores, 40, measure)
    # room 40 - 20 = 20: the best two; then 0 and 2 are tried and measure 45
    assert shrunk.selected == [1, 3] and shrunk.tokens == 30
    assert shrunk.dropped == {0: "over_budget_measured", 2: "over_budget_measured"}
    assert shrunk.renders == 2 + 1 + 2  # two rounds, the best solo, two trials
    dropped = fill(costs, scores, 40, measure, rounds=1)
    # one round: the lowest-scored units go one by one (2, then 0) until it fits
    assert dropped.selected == [1, 3] and dropped.tokens == 30
    assert dropped.renders == 1 + 2 + 1 + 2


def test_fill_expands_a_group_that_does_not_fit_and_covers_the_members_of_one_that_does() -> None:
    # units 0-2 are blocks; unit 3 is a group of all three, scored as its best block.
    costs = [20, 20, 20, 60]
    scores = [0.2, 0.9, 0.5, 0.9]
    members = [frozenset({0}), frozenset({1}), frozenset({2}), frozenset({0, 1, 2})]
    children = {3: [0, 1, 2]}

    def measure(kept: frozenset[int]) -> tuple[str, int]:
        return "", sum(costs[i] for i in kept)

    small = fill(costs, scores, 45, measure, children=children, members=members)
    assert small.dropped[3] == "expanded_into_children"
    assert small.selected == [1, 2] and small.kept == {1, 2}
    whole = fill(costs, scores, 60, measure, children=children, members=members)
    assert whole.selected == [3] and whole.kept == {0, 1, 2}
    assert whole.dropped == {}  # the blocks are covered by the group, neither kept nor dropped


def test_fill_keeps_the_best_unit_that_fits_alone_over_a_cheaper_estimate() -> None:
    # Unit 0 is best; its estimate (50) is over the budget, but rendered alone it fits (slack).
    costs = [50, 10, 10]

    def measure(kept: frozenset[int]) -> tuple[str, int]:
        real = {0: 46, 1: 10, 2: 10}
        return "", sum(real[i] for i in kept)

    done = fill(costs, [0.9, 0.5, 0.4], 48, measure, slack=2)
    assert done.selected == [0]
    assert done.dropped == {1: "over_budget", 2: "over_budget"}


def test_fill_top_up_is_bounded_and_says_so() -> None:
    costs = [5] * 10
    scores = [float(-i) for i in range(10)]

    def measure(kept: frozenset[int]) -> tuple[str, int]:
        return "", 2 * len(kept)  # less than the estimate: room is left after select

    bounded = fill(costs, scores, 20, measure, max_trials=0)
    assert bounded.selected == [0, 1, 2, 3] and bounded.tokens == 8
    assert set(bounded.dropped.values()) == {"trial_limit_reached"}
    topped = fill(costs, scores, 20, measure, max_trials=3)
    assert topped.selected == [0, 1, 2, 3, 4, 5, 6] and topped.renders == 1 + 1 + 3
    full = fill(costs, scores, 20, measure)
    # a unit whose cost (5) is over the room left (4) is not tried, even if it would fit
    assert full.selected == list(range(8)) and full.tokens == 16
    assert full.dropped == {8: "over_budget", 9: "over_budget"}


def test_fill_respects_candidates_and_separators() -> None:
    costs = [3, 3, 3]

    def measure(kept: frozenset[int]) -> tuple[str, int]:
        return "", 4 * len(kept) - 1  # units joined by a 1-token separator

    done = fill(costs, [0.3, 0.2, 0.1], 100, measure, candidates=[1, 2], separator_cost=1)
    assert done.selected == [1, 2] and 0 not in done.dropped
    tight = fill(costs, [0.3, 0.2, 0.1], 7, measure, separator_cost=1)
    assert tight.selected == [0, 1] and tight.tokens == 7


def test_fill_without_room_raises_or_returns_nothing() -> None:
    def measure(kept: frozenset[int]) -> tuple[str, int]:
        return "", 10 * len(kept)

    with pytest.raises(BudgetTooSmallError, match="measured alone") as err:
        fill([10, 12], [0.5, 0.1], 5, measure)
    assert err.value.smallest == 10
    empty = fill([10, 12], [0.5, 0.1], 5, measure, allow_empty=True)
    assert (
        empty.output is None
        and empty.selected == []
        and empty.dropped == {0: "over_budget", 1: "over_budget"}
    )
    with pytest.raises(EmptyInputError):
        fill([], [], 5, measure)
    with pytest.raises(ConfigError, match="scores"):
        fill([1, 2], [0.5], 5, measure)
    with pytest.raises(ConfigError, match="member sets"):
        fill([1, 2], [0.5, 0.4], 5, measure, members=[frozenset({0})])


def test_select_with_nested_members_charges_a_parent_only_for_what_it_adds() -> None:
    # Unit 0 is a section holding units 1 and 2 (members 10, 11) and its heading (member 12).
    members = [frozenset({10, 11, 12}), frozenset({10}), frozenset({11})]
    costs = [21, 10, 10]
    scores = [0.8, 0.9, 0.1]
    sel = select(costs, scores, 21, children={0: [1, 2]}, candidates=[0, 1, 2], members=members)
    # Unit 1 first (10 tokens); the section then adds 11 and replaces it; unit 2 is inside.
    assert sel.selected == [0] and sel.used == 21 and sel.dropped == {}
    # Without members the section would be charged in full after unit 1, and expanded.
    plain = select(costs, scores, 21, children={0: [1, 2]}, candidates=[0, 1, 2])
    assert plain.selected == [1, 2] and plain.dropped == {0: "expanded_into_children"}
