"""RAPTOR as an eval method: budgets met, one tree per document, trees cached on disk, and the
extractive stand-in summariser writing its summaries from its children's leading sentences."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hrefine.budget import get_counter
from hrefine.eval import evaluate_items
from hrefine.eval.loaders import load_dataset
from hrefine.eval.methods import available_methods, get_method
from hrefine.eval.raptor_method import ExtractiveSummariser, RaptorCompressor
from hrefine.models.smollm2 import SMOLLM2_NAME
from hrefine.raptor import summary_prompt
from hrefine.tree import NodeKind
from raptor_fakes import Summariser

BUDGETS = (256, 512)


@pytest.fixture(scope="module")
def paper_items(shared_data: Path) -> list[Any]:
    """Every Qasper question on the first paper (several questions, one document)."""
    items = load_dataset("qasper", data_dir=shared_data)
    first = items[0].doc_id
    same = [it for it in items if it.doc_id == first]
    assert len(same) >= 3
    return same


@pytest.fixture(scope="module")
def hotpot_item(shared_data: Path) -> Any:
    return load_dataset("hotpotqa", data_dir=shared_data, limit=1)[0]


def test_registered_and_listed() -> None:
    assert {"raptor", "raptor-traversal"} <= set(available_methods())
    method = get_method("raptor-traversal", llm="extractive")
    assert isinstance(method, RaptorCompressor)
    assert (method.name, method.mode, method.options.k) == ("raptor-traversal", "traversal", 10)
    collapsed = get_method("RAPTOR", llm="extractive")
    assert (collapsed.name, collapsed.mode, collapsed.options.k) == ("raptor", "collapsed", None)


def test_default_is_the_library_default_no_model() -> None:
    # What `hrefine eval -m raptor` measures is what RaptorTree.build gives with no LLM.
    defaults = (get_method("raptor"), get_method("raptor-traversal"), RaptorCompressor(llm=None))
    for method in defaults:
        assert isinstance(method.llm, ExtractiveSummariser)
    named = RaptorCompressor(llm="default")
    assert named._model_names() == (SMOLLM2_NAME, "all-MiniLM-L6-v2")  # the paper's model, named


def test_questions_of_one_document_share_one_tree_and_stay_in_budget(
    paper_items: list[Any], embedder: Any, tmp_path: Path
) -> None:
    counter = get_counter(None)
    llm = Summariser()
    named = {"llm_name": "fake", "embedder": embedder, "tokenizer": counter, "cache_dir": tmp_path}
    method = RaptorCompressor(llm=llm, **named)
    rows = evaluate_items(method, paper_items, BUDGETS, tokenizer=counter, fail_fast=True)

    assert method.builds == 1 and method.loads == 0
    assert method.llm_calls == len(llm.prompts) > 0  # one tree's summaries, not one per question
    assert len(rows) == len(paper_items) * len(BUDGETS)
    for row in rows:
        assert row.error is None
        # Within the budget, and filled: nodes are ~100 tokens, so little room is left.
        assert row.budget - 110 <= row.tokens_out <= row.budget
    # The tree was saved: a second compressor over the same cache loads it, builds nothing and
    # answers the same, collapsed and by traversal.
    again = RaptorCompressor(llm=Summariser(), **named)
    first = paper_items[0]
    assert again.compress(first.document, first.question, 512) == method.compress(
        first.document, first.question, 512
    )
    assert (again.builds, again.loads) == (0, 1)
    # The build statistics come back with it (saved beside the tree).
    assert again.tree_for(first.document).stats["llm_calls"] == len(llm.prompts)
    walk = RaptorCompressor("traversal", llm=Summariser(), **named)
    for budget in BUDGETS:
        out = walk.compress(first.document, first.question, budget)
        assert 0 < counter.count(out) <= budget
    assert (walk.builds, walk.loads) == (0, 1)


def test_a_budget_holding_the_question_keeps_its_paragraphs_whole(
    shared_data: Path, embedder: Any
) -> None:
    """Leaves in document order, summaries after them: no summary splits a paragraph."""
    (item,) = [
        it
        for it in load_dataset("hotpotqa", data_dir=shared_data)
        if it.id == "5a76387d554299109176e6ba"  # a summary split a paragraph at 1,024 and 2,048
    ]
    counter = get_counter(None)
    method = RaptorCompressor(llm="extractive", tokenizer=counter, embedder=embedder)
    out = method.compress(item.document, item.question, 2048)
    assert counter.count(out) <= 2048
    flat = " ".join(out.split())
    for paragraph in item.extra["supporting_paragraphs"]:
        assert " ".join(paragraph.split()) in flat
    tree = method.tree_for(item.document).tree
    kind = {n.text: n.kind for n in tree}
    kinds = [kind.get(part, NodeKind.SUMMARY) for part in out.split("\n\n")]
    assert NodeKind.CHUNK in kinds
    first_summary = kinds.index(NodeKind.SUMMARY) if NodeKind.SUMMARY in kinds else len(kinds)
    assert all(k == NodeKind.CHUNK for k in kinds[:first_summary])
    assert NodeKind.CHUNK not in kinds[first_summary:]


def test_extractive_summaries_are_sentences_of_their_children(
    hotpot_item: Any, embedder: Any
) -> None:
    counter = get_counter(None)
    method = RaptorCompressor(llm="extractive", embedder=embedder, tokenizer=counter)
    out = method.compress(hotpot_item.document, hotpot_item.question, 300)
    assert 0 < counter.count(out) <= 300
    assert method.llm_calls == 0  # the stand-in's extracts are not LLM calls
    tree = method.tree_for(hotpot_item.document)
    summaries = [n for n in tree.tree if n.kind == NodeKind.SUMMARY]
    assert summaries
    summarise = ExtractiveSummariser(tree.options.prompt, tokenizer=counter)
    for node in summaries:
        assert node.text.strip()
        assert counter.count(node.text) <= tree.options.summary_tokens
        children = [tree.tree[c].text for c in tree.tree.sort_by_order(node.children)]
        # The summary is the extract of exactly its children, in document order ...
        assert node.text == summarise(summary_prompt(tree.options.prompt, children))
        # ... every word taken from them: nothing invented.
        assert set(node.text.split()) <= set(" ".join(children).split())


def test_central_extracts_keep_what_the_cluster_shares() -> None:
    summarise = ExtractiveSummariser(tokenizer="regex", max_tokens=24, pick="central")
    texts = [
        "The weather was mild. The harbour of Brest holds the fleet.",
        "Gulls nested on the roofs. The fleet left the harbour of Brest at dawn.",
        "Brest harbour and its fleet were rebuilt after the war.",
    ]
    out = summarise(summarise.head + "\n\n".join(texts) + summarise.tail)
    assert "harbour of Brest holds the fleet" in out and "fleet left the harbour" in out
    assert "weather" not in out and "Gulls" not in out
    # Kept sentences stay in their document order.
    assert out.index("holds the fleet") < out.index("left the harbour")


def test_extractive_round_robin_takes_first_sentences_first() -> None:
    summarise = ExtractiveSummariser(tokenizer="regex", max_tokens=12, pick="leading")
    texts = [
        "Alpha one is first. Alpha two is second. Alpha three is third.",
        "Beta one is first. Beta two is second.",
    ]
    prompt = summarise.head + "\n\n".join(texts) + summarise.tail
    assert summarise.texts(prompt) == texts
    out = summarise(prompt)
    # Both first sentences before any second one; each text's sentences in their own order.
    assert out.startswith("Alpha one is first.")
    assert "Beta one is first." in out
    assert "third" not in out
    assert get_counter("regex").count(out) <= 12
    # A first sentence longer than the budget is cut, never left out.
    long = ExtractiveSummariser(tokenizer="regex", max_tokens=3, pick="leading")(prompt)
    assert long and texts[0].startswith(long)
