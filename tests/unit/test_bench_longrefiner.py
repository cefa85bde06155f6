"""The LongRefiner benchmark's pieces: the quick selection, the rows per dataset, one dataset
run end to end (no LM), the per-step and structure tables, the target and the pinned floors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hrefine.budget import get_counter
from hrefine.eval.loaders import half_of
from hrefine.eval.longrefiner_method import LongRefinerCompressor
from hrefine.eval.methods import get_method

from benchmarks import longrefiner as bench
from benchmarks._longrefiner_report import plot, render_markdown
from benchmarks.run import pinnable


@pytest.fixture(autouse=True)
def _data(shared_data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HREFINE_DATA", str(shared_data))


def test_quick_mode_takes_short_documents_of_both_halves() -> None:
    counter = get_counter(None)
    items, docs = bench.select("leval-cuad", True, counter)
    assert {d["half"] for d in docs.values()} == {"tune", "check"}
    # At most QUICK_DOCS per half (fewer where a half has fewer short documents).
    for half in ("tune", "check"):
        assert 1 <= sum(d["half"] == half for d in docs.values()) <= bench.QUICK_DOCS["leval-cuad"]
    cap = bench.QUICK_QUESTIONS["leval-cuad"]
    for doc_id, info in docs.items():
        assert info["tokens"] <= bench.QUICK_MAX_DOC_TOKENS
        assert info["half"] == half_of(doc_id)
        asked = [it for it in items if it.doc_id == doc_id]
        assert len(asked) == info["questions"] and (cap is None or len(asked) <= cap)
    # The model row: a few questions of the first document of each half.
    lm = bench.lm_subset("leval-cuad", items, True)
    assert 0 < len(lm) <= 2 * bench.QUICK_LM_QUESTIONS
    assert {half_of(it.doc_id) for it in lm} == {"tune", "check"}
    assert bench.lm_subset("leval-qasper", items, True) == []
    assert bench.lm_subset("leval-cuad", items, False) == items
    every, all_docs = bench.select("leval-cuad", False, counter)
    assert len(every) == 91 and len(all_docs) == 14
    assert {it.id for it in items} <= {it.id for it in every}


def test_rows_per_dataset() -> None:
    counter = get_counter(None)
    nq, _ = bench.select("leval-nq", True, counter)
    qasper, _ = bench.select("leval-qasper", True, counter)
    assert bench.methods_for("leval-nq", nq) == [*bench.OURS, *bench.BASELINES, "htmlrag"]
    assert bench.methods_for("leval-qasper", qasper) == [*bench.OURS, *bench.BASELINES]
    # Quick mode runs the LM row only where it is affordable on a CPU.
    assert "longrefiner-lm" not in bench.methods_for("leval-qasper", qasper, quick=True)
    cuad, _ = bench.select("leval-cuad", True, counter)
    assert "longrefiner-lm" in bench.methods_for("leval-cuad", cuad, quick=True)


def test_one_dataset_end_to_end_and_its_report(embedder: Any, tmp_path: Path) -> None:
    counter = get_counter(None)
    items, docs = bench.select("leval-qasper", True, counter)
    items = [next(it for it in items if half_of(it.doc_id) == h) for h in bench.HALVES]
    docs = {it.doc_id: {**docs[it.doc_id], "questions": 1} for it in items}
    comps: dict[str, Any] = {
        "longrefiner": LongRefinerCompressor(tokenizer=counter, embedder=embedder),
        "lead-text": get_method("lead-text", tokenizer=counter),
        "chunks-bm25": get_method("chunks-bm25", tokenizer=counter),
        "chunks-embedding": get_method("chunks-embedding", tokenizer=counter, embedder=embedder),
    }
    block = bench.run_dataset("leval-qasper", items, comps, counter, quick=True)
    assert block["methods"] == ["longrefiner", *bench.BASELINES]
    for name in block["methods"]:
        assert block["costs"][name]["n_errors"] == 0
        assert block["costs"][name]["over_budget"] == 0
        for b in bench.BUDGETS:
            assert block["table"][name][str(b)] is not None
    for half in bench.HALVES:
        part = block["halves"][half]
        assert (part["n_questions"], part["n_documents"]) == (1, 1)
    # The whole table is the mean of the halves' (one question each).
    for b in bench.BUDGETS:
        halves = [block["halves"][h]["table"]["longrefiner"][str(b)] for h in bench.HALVES]
        assert block["table"]["longrefiner"][str(b)] == pytest.approx(sum(halves) / 2)

    calls = block["calls"]["longrefiner"]
    assert len(calls) == len(items) * len(bench.BUDGETS)
    assert {c["doc_id"] for c in calls} == set(docs)
    steps = bench.step_times(calls)
    assert set(steps) == {*bench.STEPS, "total", "as_run", "calls"}
    assert steps["total"] >= steps["as_run"] > 0
    assert steps["total"] == pytest.approx(sum(steps[s] for s in bench.STEPS), abs=1e-3)
    block.update(
        n_questions=len(items),
        n_documents=len(docs),
        documents=docs,
        ceiling=bench.ceiling(items, "containment"),
        steps={"longrefiner": steps},
        not_run={"longrefiner-lm": "quick mode"},
    )
    block["structures"] = bench.structures(block, docs)
    assert [s["source"] for s in block["structures"]] == ["headings", "headings"]
    assert all(s["coverage"] == 1.0 for s in block["structures"])
    assert bench.model_steps([]) == {}

    res = {
        "mode": "quick",
        "created": "2026-01-01T00:00:00Z",
        "wall_s": 1.0,
        "budgets": list(bench.BUDGETS),
        "tokenizer": counter.name,
        "embedder": "all-MiniLM-L6-v2",
        "settings": {"longrefiner": "defaults"},
        "selection": {"rule": "test", "halves": "half_of"},
        "cache": {"folder": "x", "structures_made": 0, "structures_cached_before": 0},
        "hardware": {"cpu": "test", "cores": 2},
        "versions": {"hrefine": "0"},
        "datasets": {"leval-qasper": block},
        "targets": {},
    }
    md = render_markdown(res)
    assert "### leval-qasper: answer containment (2 questions" in md
    assert "tuning half: longrefiner" in md and "checking half: chunks-bm25" in md
    assert "## Time per document, by step" in md and "1.0 everywhere" in md
    assert "_Not run: longrefiner-lm: quick mode._" in md
    assert plot(res, tmp_path / "lr.png").stat().st_size > 1000


def _cuad_block(ours: float, best_baseline: float) -> dict[str, Any]:
    table = {
        "longrefiner": {"512": 0.5, "1024": ours, "2048": 0.9},
        "lead-text": {"512": 0.2, "1024": 0.3, "2048": 0.4},
        "chunks-bm25": {"512": 0.4, "1024": best_baseline, "2048": 0.8},
    }
    half = {"n_questions": 3, "n_documents": 1, "table": table}
    return {"table": table, "halves": {"tune": half, "check": half}, "per_question": {}}


def test_target_and_floors() -> None:
    met = bench.targets({"leval-cuad": _cuad_block(0.75, 0.70)})["longrefiner"]["all"]
    assert met["meets_target"] and met["ahead_of_every_baseline"]
    assert met["best_baseline"] == "chunks-bm25"
    missed = bench.targets({"leval-cuad": _cuad_block(0.70, 0.71)})["longrefiner"]
    assert not missed["all"]["meets_target"] and not missed["check"]["ahead_of_every_baseline"]
    assert "longrefiner-lm" in bench.targets({"leval-cuad": _cuad_block(0.7, 0.7)})
    assert bench.targets({"leval-cuad": _cuad_block(0.7, 0.7)})["longrefiner-lm"] == {}

    res = {"metrics": {"leval-cuad": {"longrefiner": {"1024": {"containment": 0.75}}}}}
    assert pinnable("longrefiner", res) == {"metrics/leval-cuad/longrefiner/1024/containment": 0.75}
