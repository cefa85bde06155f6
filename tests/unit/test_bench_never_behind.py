"""The never-behind benchmark: HtmlRAG's registered variants run where HtmlRAG does, the
summary's verdicts, and runs of each half joined into one result."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from benchmarks.never_behind import html_only


def test_htmlrag_variants_are_html_methods() -> None:
    assert html_only("htmlrag")
    assert html_only("htmlrag-generative") and html_only("htmlrag-bm25")
    assert not html_only("raptor") and not html_only("chunks-embedding")
    assert not html_only("htmlragged")  # a prefix is not a variant without its dash


def test_verdict_counts_questions_and_checks_the_interval() -> None:
    from benchmarks.never_behind import verdict

    best = [0.5, 0.3, 0.7, 20]
    assert verdict([0.5, 0.3, 0.7, 20], best) == "level"
    assert verdict([0.6, 0.4, 0.8, 20], best) == "ahead (+2)"
    assert verdict([0.45, 0.25, 0.65, 20], best) == "behind (-1), inside"
    assert verdict([0.2, 0.05, 0.4, 20], best) == "BEHIND (-6)"
    # A share (QuALITY's option words kept) less than a question apart shows the gap itself.
    assert verdict([0.49, 0.3, 0.7, 20], best) == "behind (-0.010), inside"


def test_runs_of_each_half_merge_into_one_result(tmp_path: Path, monkeypatch: Any) -> None:
    import benchmarks.never_behind as nb

    cell = [0.5, 0.3, 0.7, 20]
    rows = {"chunks-bm25": {"512": cell}, "garlic": {"512": cell}}
    for half in ("check", "tune"):  # the check run written first: the merge puts tune first
        run = {"code": "c1", "hardware": {"cpu": "x"}, "tables": {"hotpotqa": {half: rows}}}
        (tmp_path / f"run_{half}.json").write_text(json.dumps(run))
    monkeypatch.setattr(nb, "RESULTS_DIR", tmp_path)
    joined = nb.merged(["run_check", "run_tune"])
    assert list(joined["tables"]["hotpotqa"]) == ["tune", "check"]
    other = {"code": "c2", "hardware": {}, "tables": {}}
    (tmp_path / "other.json").write_text(json.dumps(other))
    with pytest.raises(SystemExit, match="different code"):
        nb.merged(["run_tune", "other"])


def test_a_pinned_cache_key_names_the_code_the_run_had(tmp_path: Path, monkeypatch: Any) -> None:
    import benchmarks.never_behind as nb

    res = {"code": "c1", "hardware": {"cpu": "x"}, "tables": {}}
    assert "pinned" not in nb.render(res)
    pinned = {**res, "source": "s2", "versions": {"raptor": 5}}
    assert "cache key pinned; run with code s2, output versions raptor 5" in nb.render(pinned)
    for half, source in (("tune", "s2"), ("check", "s3")):  # same key, other code: refused
        run = {**pinned, "source": source, "tables": {"hotpotqa": {half: {}}}}
        (tmp_path / f"run_{half}.json").write_text(json.dumps(run))
    monkeypatch.setattr(nb, "RESULTS_DIR", tmp_path)
    with pytest.raises(SystemExit, match="different code"):
        nb.merged(["run_tune", "run_check"])


def test_intervals_resample_whole_documents() -> None:
    from benchmarks.never_behind import interval

    # Two pages of ten questions each, one page all kept, one all lost: the questions of a
    # page move together, so drawing pages is a coin toss between 0, 0.5 and 1.
    values = [1.0] * 10 + [0.0] * 10
    docs = ["a"] * 10 + ["b"] * 10
    mean, lo, hi = interval(values, docs)
    assert mean == 0.5 and lo == 0.0 and hi == 1.0
    # Drawn one at a time, the same twenty questions look far surer of their mean.
    _, q_lo, q_hi = interval(values)
    assert 0.2 < q_lo < 0.5 < q_hi < 0.8
    assert all(math.isnan(x) for x in interval([], []))  # no questions, no interval


def test_the_paired_verdict_reads_the_difference_interval() -> None:
    from benchmarks.never_behind import paired_verdict

    assert paired_verdict([0.0, -0.1, 0.1, 20, "chunks-bm25"]) == "level"
    assert paired_verdict([0.1, 0.05, 0.2, 20, "chunks-bm25"]) == "ahead (+2 [+1, +4])"
    assert paired_verdict([-0.1, -0.3, 0.0, 20, "chunks-bm25"]) == "behind (-2 [-6, +0])"
    assert paired_verdict([-0.2, -0.35, -0.05, 20, "x"]) == "BEHIND (-4 [-7, -1])"
    # An end that rounds to no question keeps its sign, as the capitals say.
    assert paired_verdict([-0.2, -0.35, -0.01, 20, "x"]) == "BEHIND (-4 [-7, -0.2])"
    # A share less than a question apart (QuALITY's option words) shows the shares.
    assert paired_verdict([-0.01, -0.03, 0.02, 20, "x"]) == "behind (-0.010 [-0.030, +0.020])"


def test_the_table_pairs_each_method_with_the_best_chunk_baseline(monkeypatch: Any) -> None:
    import types

    import hrefine.eval.loaders as loaders

    import benchmarks.never_behind as nb

    questions = [types.SimpleNamespace(id=f"q{i}", doc_id=f"d{i // 2}") for i in range(8)]
    monkeypatch.setattr(nb, "items", lambda ds: questions)
    monkeypatch.setattr(loaders, "half_of", lambda doc_id: "tune")

    def run(kept: set[int]) -> dict[str, Any]:
        return {f"q{i}": {str(b): float(i in kept) for b in nb.BUDGETS} for i in range(8)}

    runs = {
        "chunks-bm25": run({0, 1}),
        "chunks-embedding": run(set(range(8))),
        "lead-text": run(set()),
        "m": run(set(range(8))),
        "worse": run({0, 2, 4, 6}),  # one question lost on every page: behind in any draw
    }
    cells, paired = nb.table("x", runs)
    assert cells["tune"]["chunks-embedding"]["512"][0] == 1.0
    assert cells["tune"]["m"]["512"][3:] == [8, 4] and "check" not in cells
    assert set(paired["tune"]) == {"m", "worse"}  # baselines are not paired with themselves
    assert paired["tune"]["m"]["512"][0] == 0.0 and paired["tune"]["m"]["512"][4] == (
        "chunks-embedding"
    )
    diff, lo, hi, n, best = paired["tune"]["worse"]["1024"]
    assert (diff, lo, hi, n, best) == (-0.5, -0.5, -0.5, 8, "chunks-embedding")


def test_paired_and_unpaired_runs_do_not_merge(tmp_path: Path, monkeypatch: Any) -> None:
    import benchmarks.never_behind as nb

    cells = {str(b): [0.5, 0.3, 0.7, 20, 5] for b in (512, 1024, 2048)}
    for half, paired in (("tune", True), ("check", False)):
        run: dict[str, Any] = {
            "code": "c1",
            "hardware": {},
            "tables": {"hotpotqa": {half: {"chunks-bm25": cells}}},
        }
        if paired:
            run["paired"] = {"hotpotqa": {half: {}}}
        (tmp_path / f"run_{half}.json").write_text(json.dumps(run))
    monkeypatch.setattr(nb, "RESULTS_DIR", tmp_path)
    assert "paired" in nb.merged(["run_tune"])
    assert "20 questions on 5 documents" in nb.render(nb.merged(["run_tune"]))
    assert "resamples whole documents" in nb.render(nb.merged(["run_tune"]))
    assert "over the half's questions" in nb.render(nb.merged(["run_check"]))
    with pytest.raises(SystemExit, match="paired"):
        nb.merged(["run_tune", "run_check"])
