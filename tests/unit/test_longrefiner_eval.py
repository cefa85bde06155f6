"""LongRefiner as an eval method: registered names, the harness's tokenizer as the budget's,
outcomes reused across budgets and questions without changing any output, per-step records."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hrefine.budget import get_counter
from hrefine.errors import UnknownSettingError
from hrefine.eval import evaluate_items
from hrefine.eval.loaders import load_dataset
from hrefine.eval.longrefiner_method import STEPS, LongRefinerCompressor
from hrefine.eval.methods import available_methods, get_method
from hrefine.longrefiner import LongRefiner
from hrefine.testing import ScriptedLM

BUDGETS = (256, 512, 1024)


@pytest.fixture(scope="module")
def contract(shared_data: Path) -> list[Any]:
    """Three CUAD questions on one contract."""
    items = load_dataset("leval-cuad", data_dir=shared_data)
    first = items[0].doc_id
    same = [it for it in items if it.doc_id == first][:3]
    assert len(same) == 3
    return same


def _answers(prompt: str) -> str:
    """A text LLM that calls every query global and picks the first titled section it sees."""
    if "**Document outline**" in prompt:
        outline = prompt.split("**Document outline**", 1)[1]
        lines = outline.splitlines()
        titles = [ln.split(":", 1)[1].strip() for ln in lines if ln.startswith("Section")]
        return json.dumps(titles[:1])
    return "query_type: [Global]"


def test_registered_and_listed(embedder: Any) -> None:
    assert {"longrefiner", "longrefiner-lm"} <= set(available_methods())
    method = get_method("LongRefiner", scorer="bm25")
    assert isinstance(method, LongRefinerCompressor)
    assert method.name == "longrefiner"
    opts = method.refiner.options
    assert (opts.lm, opts.scorer, opts.structure) == (None, "bm25", "auto")
    # Options pass through to LongRefinerOptions; a bad one is the refiner's error, and one it
    # has no setting for is named (a run of several methods leaves it to those that take it).
    with pytest.raises(UnknownSettingError, match="'chunk_tokens'") as caught:
        get_method("longrefiner", chunk_tokens=64)
    assert caught.value.unknown == ("chunk_tokens",)
    with pytest.raises(ValueError, match="structure"):
        get_method("longrefiner", structure="chapters")
    # An embedder BM25 would ignore is refused, as the HtmlRAG methods refuse it.
    with pytest.raises(ValueError, match="an embedder was given with scorer='bm25'"):
        get_method("longrefiner", embedder=embedder, scorer="bm25")


def test_budgets_are_counted_in_the_harness_tokenizer(contract: list[Any], embedder: Any) -> None:
    counter = get_counter("regex")
    method = get_method("longrefiner", tokenizer=counter, embedder=embedder)
    assert method.refiner.counter is counter
    rows = evaluate_items(method, contract, BUDGETS, tokenizer=counter, fail_fast=True)
    assert len(rows) == len(contract) * len(BUDGETS)
    for row in rows:
        assert row.error is None and not row.over_budget
        # Filled: leaves are at most 160 tokens, so little of the budget is left over.
        assert row.budget - 170 <= row.tokens_out <= row.budget
    # Containment on the contract's own clauses: LongRefiner finds most answers at 1024.
    found = [r.metrics["containment"] for r in rows if r.budget == 1024]
    assert sum(found) >= 2


def test_outcomes_are_reused_across_budgets_and_questions_without_changing_outputs(
    contract: list[Any], embedder: Any
) -> None:
    counter = get_counter(None)
    llm = ScriptedLM(_answers)
    method = LongRefinerCompressor(llm=llm, tokenizer=counter, embedder=embedder)
    assert method.name == "longrefiner-lm"
    outs = {
        (it.id, b): method.compress(it.document, it.question, b) for it in contract for b in BUDGETS
    }
    # One analysis and one section choice per question, not one per budget.
    assert len(llm.prompts) == 2 * len(contract)
    # A plain LongRefiner (nothing reused) gives the very same texts.
    plain = LongRefiner(llm=ScriptedLM(_answers), tokenizer=counter, embedder=embedder)
    for it in contract:
        for b in BUDGETS:
            assert plain.refine(it.question, it.document, b).text == outs[(it.id, b)]

    records = method.records
    assert len(records) == len(contract) * len(BUDGETS)
    assert len({r.doc_key for r in records}) == 1
    first, second = records[0], records[1]
    assert first.reused == ()  # the first call computed everything
    assert second.reused == ("analysis", "structure", "selection")  # same question, next budget
    assert records[len(BUDGETS)].reused == ("structure",)  # next question, same contract
    for r in records:
        assert set(r.timings) == set(r.cold) == {*STEPS, "total"}
        assert r.tokens <= r.budget
        assert (r.source, r.coverage) == ("numbered", 1.0)
        assert r.sections > 5 and r.leaves > r.sections
        assert r.analysis["label"] == "global" and r.selection_source == "llm"
        assert len(r.selected) == 1
        for step in STEPS:
            assert r.cold[step] >= r.timings[step] - 1e-9
        # A reused step counts what computing it cost, not the near-zero look-up.
        assert r.cold["total"] == pytest.approx(
            r.timings["total"] + sum(r.cold[s] - r.timings[s] for s in STEPS)
        )
    assert records[1].cold["structure"] == pytest.approx(records[0].cold["structure"], abs=1e-3)
    means = method.step_seconds()
    assert set(means) == {*STEPS, "total"} and means["total"] > 0


def test_structure_option_passes_through(contract: list[Any], embedder: Any) -> None:
    method = get_method("longrefiner", structure="paragraphs", embedder=embedder)
    item = contract[0]
    out = method.compress(item.document, item.question, 300)
    assert out and get_counter(None).count(out) <= 300
    (record,) = method.records
    assert (record.source, record.sections, record.coverage) == ("paragraphs", 0, 1.0)
