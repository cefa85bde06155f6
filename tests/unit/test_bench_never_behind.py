"""The never-behind benchmark: HtmlRAG's registered variants run where HtmlRAG does, the
summary's verdicts, and runs of each half joined into one result."""

from __future__ import annotations

import json
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
