"""The benchmark suite's floor logic (benchmarks/run.py) on hand-made results."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
run = pytest.importorskip("benchmarks.run")

RESULT = {
    "data_sha256": {"hotpotqa": "a" * 64},
    "metrics": {"hotpotqa": {"bm25": {"512": {"support_recall": 0.8, "containment": 0.9}}}},
}


def test_lookup_follows_slash_paths() -> None:
    assert run.lookup(RESULT, "metrics/hotpotqa/bm25/512/support_recall") == 0.8
    assert run.lookup(RESULT, "metrics/hotpotqa/lead/512/support_recall") is None


def test_floor_check_passes_within_epsilon_and_fails_below() -> None:
    path = "metrics/hotpotqa/bm25/512/support_recall"
    ok = {"epsilon": 0.03, "floors": {"baselines": {path: 0.82}}}
    assert run.check_floors("baselines", RESULT, ok) == ([], [])
    bad = {"epsilon": 0.03, "floors": {"baselines": {path: 0.9}}}
    failures, _ = run.check_floors("baselines", RESULT, bad)
    assert len(failures) == 1 and "support_recall" in failures[0]


def test_changed_data_fails_and_missing_values_are_noted() -> None:
    baseline = {
        "data_sha256": {"hotpotqa": "b" * 64},
        "floors": {"baselines": {"metrics/wtq/bm25/512/containment": 0.5}},
    }
    failures, notes = run.check_floors("baselines", RESULT, baseline)
    assert "changed" in failures[0]
    assert "not produced" in notes[0]


def test_update_baseline_rounds_down_and_never_lowers_without_permission() -> None:
    baseline: dict = {"floors": {"baselines": {"metrics/hotpotqa/bm25/512/containment": 0.95}}}
    refused = run.update_baseline(baseline, {"baselines": RESULT}, allow_regression=False)
    floors = baseline["floors"]["baselines"]
    assert floors["metrics/hotpotqa/bm25/512/support_recall"] == 0.8
    assert floors["metrics/hotpotqa/bm25/512/containment"] == 0.95
    assert len(refused) == 1
    run.update_baseline(baseline, {"baselines": RESULT}, allow_regression=True)
    assert baseline["floors"]["baselines"]["metrics/hotpotqa/bm25/512/containment"] == 0.9
    assert baseline["data_sha256"] == {"hotpotqa": "a" * 64}


def test_discover_lists_expected_benchmarks_first() -> None:
    names = run.discover()
    assert names[:2] == ["baselines", "htmlrag"]
    assert "run" not in names and "_common" not in names
    assert "ref_htmlrag_runner" not in names  # a helper with main(argv), not a benchmark


def test_a_method_run_on_a_subset_is_pinned_from_the_subset_table() -> None:
    # The reference runs on fewer questions in quick mode: its main-table value mixes samples,
    # so only the same-question table pins it (and every method on those questions).
    full = {"containment": {"1024": 0.9}, "missing": 0}
    partial = {"containment": {"1024": 0.2}, "missing": 6}
    result = {
        "quality": {
            "wtq": {
                "table": {"ours": full, "ref": partial},
                "reference_subset": {
                    "table": {"ours": {"containment": {"1024": 1.0}}, "ref": partial}
                },
            }
        }
    }
    leaves = run.pinnable("htmlrag", result)
    assert leaves == {
        "quality/wtq/table/ours/containment/1024": 0.9,
        "quality/wtq/reference_subset/table/ours/containment/1024": 1.0,
        "quality/wtq/reference_subset/table/ref/containment/1024": 0.2,
    }
    # Without a subset table a method's gaps are not hidden: it is pinned where it stands.
    del result["quality"]["wtq"]["reference_subset"]
    assert "quality/wtq/table/ref/containment/1024" in run.pinnable("htmlrag", result)
