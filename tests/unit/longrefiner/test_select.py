"""Global selection, local and global scores, and the budgeted selection (the official code's
selection defects are test cases here)."""

from __future__ import annotations

import numpy as np
import pytest
from hrefine.budget import RegexCounter
from hrefine.errors import BudgetTooSmallError
from hrefine.longrefiner import LongRefinerOptions, Span, StructuredDocument, build_document
from hrefine.longrefiner.select import (
    global_scores,
    local_scores,
    parse_selection,
    pick,
    selection_prompt,
)
from hrefine.models import Embedder
from hrefine.models.lexical import BM25Scorer

TEXT = (
    "This agreement is made between Acme and Beta.\n"
    "TERM\n"
    "The term is five years from the Effective Date.\n"
    "It renews for one year unless a party objects.\n"
    "PAYMENT\n"
    "Fees are due within thirty days of invoice.\n"
    "Renewal Fees\n"
    "Renewal fees rise by three percent.\n"
    "GOVERNING LAW\n"
    "This agreement is governed by the laws of Delaware.\n"
)


def _doc(text: str = TEXT) -> StructuredDocument:
    spans: list[Span] = []
    path: tuple[str, ...] = ()
    pos = 0
    for line in text.splitlines(keepends=True):
        start, end = pos, pos + len(line.rstrip("\n"))
        pos += len(line)
        if line.strip() == "Renewal Fees":
            path = (path[0], "Renewal Fees")
            spans.append(Span(start, end, path, True))
        elif line.strip().isupper():
            path = (line.strip(),)
            spans.append(Span(start, end, path, True))
        else:
            spans.append(Span(start, end, path))
    return build_document(
        text,
        spans,
        RegexCounter(),
        source="headings",
        title="Deal",
        leaf_tokens=60,
        min_leaf_tokens=0,
    )


def test_selection_prompt_has_the_published_outline() -> None:
    doc = _doc()
    system, user = selection_prompt("When does it end?", doc, LongRefinerOptions(), tuned=True)
    assert system == LongRefinerOptions().selection_system
    assert "**Document abstract**: This agreement is made between Acme and Beta." in user
    assert "Title: Deal\nSection1: TERM\nSection2: PAYMENT\nSubsection1: Renewal Fees\n" in user
    assert user.endswith("**Question**:When does it end?\nOutput:")
    untuned, _ = selection_prompt("q", doc, LongRefinerOptions(), tuned=False)
    assert "JSON list" in untuned


@pytest.mark.parametrize(
    "answer",
    [
        '["term", "Governing Law"]',
        '{"selected_titles": ["TERM", "governing law"]}',
        '[{"selected_titles": ["Section1: TERM", "\'GOVERNING LAW\'"]}]',
        '["term", "governing law"',  # cut off: repaired
        "The useful parts are TERM and Governing Law.",  # no list at all
    ],
)
def test_selection_answers_are_read_leniently(answer: str) -> None:
    doc = _doc()
    found = parse_selection(answer, doc, source="llm")
    titles = {t for i, t, _ in doc.outline() if i in found.selected}
    assert titles == {"TERM", "GOVERNING LAW"}
    assert found.source == "llm" and found.raw == answer


def test_abstract_and_unknown_names() -> None:
    doc = _doc()
    found = parse_selection('["abstract", "Warranty"]', doc, source="lm")
    assert found.selected == (doc.abstract_id(),)
    assert found.unmatched == ("Warranty",)
    garbage = parse_selection("I cannot help with that.", doc, source="lm")
    assert garbage.selected == () and garbage.source == "fallback"
    assert garbage.raw == "I cannot help with that."


def test_global_score_is_split_evenly_to_children() -> None:
    doc = _doc()
    ids = {t: i for i, t, _ in doc.outline()}
    gs = global_scores(doc, [ids["PAYMENT"]])
    payment = doc.tree[ids["PAYMENT"]]
    assert gs[payment.id] == 1.0
    assert len(payment.children) == 2
    for c in payment.children:
        assert gs[c] == pytest.approx(0.5)
    renewal = ids["Renewal Fees"]
    (leaf,) = doc.tree[renewal].children
    assert gs[leaf] == pytest.approx(0.5)  # the sub-section's half, to its one paragraph
    assert gs[ids["TERM"]] == 0.0


def test_local_scores_rank_the_answer_and_sections_average_children(embedder: Embedder) -> None:
    from hrefine.models.scorers import EmbeddingScorer

    doc = _doc()
    (ls,) = local_scores(
        "Which state's law governs the agreement?",
        [doc],
        EmbeddingScorer(embedder),
        lexical_weight=0.5,
    )
    leaves = [n.id for n in doc.tree if n.kind == "paragraph"]
    best = max(leaves, key=lambda i: ls[i])
    assert "Delaware" in doc.node_text(best)
    assert all(0.0 <= ls[i] <= 1.0 for i in range(len(doc.tree)))
    for sid in doc.sections():
        kids = doc.tree[sid].children
        assert ls[sid] == pytest.approx(np.mean([ls[c] for c in kids]))


def test_bm25_scores_are_relative_to_the_best() -> None:
    doc = _doc()
    (ls,) = local_scores("invoice fees", [doc], BM25Scorer(), lexical_weight=0.5)
    assert max(ls) == pytest.approx(1.0)


def _flat(costs: list[int]) -> StructuredDocument:
    """A document of paragraphs whose token costs (RegexCounter: words) are ``costs``."""
    paras = [" ".join(["tok"] * c) for c in costs]
    text = "\n".join(paras)
    spans, pos = [], 0
    for p in paras:
        spans.append(Span(pos, pos + len(p)))
        pos += len(p) + 1
    return build_document(
        text, spans, RegexCounter(), source="paragraphs", leaf_tokens=1000, min_leaf_tokens=0
    )


def test_selection_never_stops_at_the_first_overflow_and_keeps_the_last_node() -> None:
    doc = _flat([5, 50, 5, 5])
    ids = [n.id for n in doc.tree if n.kind == "paragraph"]
    scores = np.zeros(len(doc.tree))
    # The big unit ranks second: the official code stopped there and kept 5 tokens of 20.
    for rank, node in zip([0.9, 0.8, 0.5, 0.4], ids, strict=True):
        scores[node] = rank
    got = pick([doc], [scores], 20, RegexCounter(), separator="\n")
    assert got.kept[0] == [ids[0], ids[2], ids[3]]  # the last node fits, and is kept
    assert got.tokens <= 20
    assert got.dropped[0][ids[1]] == "over_budget"
    # Output in document order, not score order.
    assert got.texts[0].split("\n") == [doc.node_text(i) for i in got.kept[0]]


def test_selection_keeps_document_order_and_fills_exactly() -> None:
    doc = _flat([3, 4, 5, 6, 7, 8])
    ids = [n.id for n in doc.tree if n.kind == "paragraph"]
    scores = np.zeros(len(doc.tree))
    for rank, node in enumerate(reversed(ids)):
        scores[node] = 1.0 - rank / 10  # the last paragraph scores best
    counter = RegexCounter()
    for budget in range(3, 34):
        got = pick([doc], [scores], budget, counter, separator="\n")
        assert counter.count(got.texts[0]) <= budget
        assert got.kept[0] == sorted(got.kept[0])
        left = [i for i in ids if i not in got.kept[0]]
        room = budget - got.tokens
        assert all(counter.count(doc.node_text(i)) > room for i in left)


def test_a_section_that_fits_is_kept_whole_and_one_that_does_not_is_expanded() -> None:
    doc = _doc()
    ids = {t: i for i, t, _ in doc.outline()}
    scores = np.zeros(len(doc.tree))
    scores[ids["TERM"]] = 1.0
    for c in doc.tree[ids["TERM"]].children:
        scores[c] = 0.1
    counter = RegexCounter()
    whole = pick([doc], [scores], 40, counter)
    assert ids["TERM"] in whole.kept[0]
    assert doc.node_text(ids["TERM"]) in whole.texts[0]
    assert whole.texts[0].count("The term is five years") == 1  # never twice
    tight = pick([doc], [scores], 12, counter)
    assert tight.dropped[0][ids["TERM"]] == "expanded_into_children"
    assert tight.kept[0] and all(doc.tree[i].kind == "paragraph" for i in tight.kept[0])


def test_a_unit_inside_a_kept_one_is_never_added_again() -> None:
    doc = _doc()
    ids = {t: i for i, t, _ in doc.outline()}
    scores = np.zeros(len(doc.tree))
    payment = ids["PAYMENT"]
    scores[payment] = 1.0
    for node in doc.tree:
        if node.id and node.id != payment:
            scores[node.id] = 0.5 if payment in doc.tree.ancestors(node.id) else 0.0
    got = pick([doc], [scores], 200, RegexCounter())
    text = got.texts[0]
    for node in doc.tree:
        if node.kind == "paragraph":
            assert text.count(doc.node_text(node.id)) <= 1
    kept = got.kept[0]
    assert not any(set(doc.tree.ancestors(i)) & set(kept) for i in kept)


def test_a_section_is_charged_only_for_what_its_kept_parts_do_not_hold() -> None:
    # The best paragraph is kept first; its section, ranked next, costs only its heading and
    # its other paragraph, so a budget of the section's size keeps the section whole.
    doc = _doc()
    ids = {t: i for i, t, _ in doc.outline()}
    term = ids["TERM"]
    first, second = doc.tree[term].children
    scores = np.zeros(len(doc.tree))
    scores[first], scores[term], scores[second] = 0.9, 0.8, 0.1
    counter = RegexCounter()
    budget = counter.count(doc.node_text(term))
    got = pick([doc], [scores], budget, counter)
    assert got.kept[0] == [term] and got.texts[0] == doc.node_text(term)


def test_several_documents_share_one_budget() -> None:
    a, b = _flat([4, 4, 4]), _flat([4, 4, 4])
    sa, sb = np.zeros(len(a.tree)), np.zeros(len(b.tree))
    sa[1], sb[2], sb[3] = 0.9, 0.8, 0.7
    got = pick([a, b], [sa, sb], 12, RegexCounter(), separator="\n")
    assert got.kept == [[1], [2, 3]]
    assert got.tokens <= 12


def test_a_budget_below_every_unit_trims_the_best_leaf_or_says_so() -> None:
    doc = _flat([30])
    scores = np.ones(len(doc.tree))
    got = pick([doc], [scores], 5, RegexCounter())
    assert got.trimmed and RegexCounter().count(got.texts[0]) <= 5
    assert doc.text.startswith(got.texts[0])
    long_word = build_document(
        "x" * 50, [Span(0, 50)], RegexCounter(), source="p", leaf_tokens=100, min_leaf_tokens=0
    )
    from hrefine.budget import CallableCounter

    chars = CallableCounter(len, name="chars")
    with pytest.raises(BudgetTooSmallError, match="first word"):
        pick([long_word], [np.ones(2)], 3, chars)


def test_every_node_is_ranked_so_a_strong_paragraph_beats_weak_sections() -> None:
    # The official selection ranks all nodes: a paragraph scoring above every section is
    # taken first, even when whole sections of middling score would fill the budget.
    doc = _doc()
    ids = {t: i for i, t, _ in doc.outline()}
    scores = np.full(len(doc.tree), 0.3)
    term = ids["TERM"]
    renews = doc.tree[term].children[1]
    scores[term] = 0.2
    scores[renews] = 0.9
    lead = doc.abstract_id()
    assert lead is not None
    scores[lead] = scores[doc.tree[lead].children[0]] = 0.0
    counter = RegexCounter()
    budget = counter.count(doc.node_text(ids["PAYMENT"])) + counter.count(
        doc.node_text(ids["GOVERNING LAW"])
    )
    got = pick([doc], [scores], budget, counter)
    # Kept itself or inside a kept section (kept lists the outermost units).
    assert {renews, *doc.tree.ancestors(renews)} & set(got.kept[0])
    assert "It renews for one year" in got.texts[0] and got.tokens <= budget
