"""``hrefine train build-data`` and ``hrefine train TASK`` through typer's runner (the tiny
random Llama of lm_fixture stands in for the base model)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hrefine.cli import app
from hrefine.train import read_examples
from lm_fixture import TINY_WORDS, build_tiny_lm
from typer.testing import CliRunner


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.mark.usefixtures("shared_data")
def test_build_data_writes_examples_and_refuses_to_overwrite(
    runner: CliRunner, tmp_path: Path
) -> None:
    out = tmp_path / "qa.jsonl"
    args = ["train", "build-data", "query-analysis", "--from", "hotpotqa", "--limit", "5"]
    res = runner.invoke(app, [*args, "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert "built 5 query-analysis examples from 5 questions (hotpotqa[tune])" in res.output
    report = read_examples(out, task="query-analysis")
    assert len(report.examples) == 5 and not report.malformed
    assert {e.target for e in report.examples} == {"[Global]"}
    res = runner.invoke(app, [*args, "-o", str(out)])
    assert res.exit_code == 2 and "--overwrite" in res.output
    res = runner.invoke(app, ["train", "build-data", "nonsense", "-o", str(tmp_path / "x")])
    assert res.exit_code == 2 and "unknown task" in res.output


def test_train_skips_malformed_rows_and_refuses_an_existing_folder(
    runner: CliRunner, tmp_path: Path
) -> None:
    lm = build_tiny_lm(tmp_path / "tiny")
    rows = [
        json.dumps(
            {
                "task": "global-selection",
                "user": " ".join(TINY_WORDS[i : i + 5]),
                "target": TINY_WORDS[40 + i % 2],
                "group": f"d{i % 3}",
            }
        )
        for i in range(8)
    ]
    rows.insert(3, "{broken")
    rows.insert(5, json.dumps({"task": "global-selection", "user": "w1"}))
    data = tmp_path / "ex.jsonl"
    data.write_text("\n".join(rows) + "\n", encoding="utf-8")
    out = tmp_path / "adapter"
    args = ["train", "global-selection", "--data", str(data), "--out", str(out), "--lm", str(lm)]
    fast = ["--steps", "2", "--batch-size", "2", "--rank", "2", "--quiet"]
    res = runner.invoke(app, [*args, *fast, "--json"])
    assert res.exit_code == 0, res.output
    assert "skipped 2 of 10 rows" in res.output and "line 4: not JSON" in res.output
    assert "trained 2 steps on" in res.output
    # The command that checks the adapter, with the base model it was trained on.
    assert "evaluate it with: hrefine eval --method longrefiner-lm" in res.output
    assert f"selection_adapter={out}" in res.output and f"lm={lm}" in res.output
    assert (out / "adapter_config.json").is_file()
    res = runner.invoke(app, [*args, *fast])
    assert res.exit_code == 2 and "exists and is not empty" in res.output
    res = runner.invoke(app, ["train", "structuring", "--out", str(tmp_path / "o"), *fast])
    assert res.exit_code == 2 and "--data" in res.output
    res = runner.invoke(app, [*args, "--overwrite", "--precision", "int4"])
    assert res.exit_code == 2 and "precision" in res.output


def test_train_makes_missing_folders_and_resumes_to_more_steps(
    runner: CliRunner, tmp_path: Path
) -> None:
    lm = build_tiny_lm(tmp_path / "tiny")
    rows = [
        json.dumps(
            {
                "task": "query-analysis",
                "user": " ".join(TINY_WORDS[i : i + 5]),
                "target": TINY_WORDS[40 + i % 2],
                "group": f"d{i % 3}",
            }
        )
        for i in range(6)
    ]
    data = tmp_path / "ex.jsonl"
    data.write_text("\n".join(rows) + "\n", encoding="utf-8")
    out = tmp_path / "adapters" / "qa"  # "adapters" does not exist yet
    args = ["train", "query-analysis", "--data", str(data), "--out", str(out), "--lm", str(lm)]
    fast = ["--batch-size", "2", "--rank", "2", "--eval-fraction", "0", "--quiet"]
    res = runner.invoke(app, [*args, *fast, "--steps", "1"])
    assert res.exit_code == 0, res.output
    assert (out / "adapter_config.json").is_file()
    res = runner.invoke(app, [*args, *fast, "--steps", "2", "--resume"])
    assert res.exit_code == 0, res.output
    assert "trained 2 steps" in res.output and "resumed from step 1" in res.output
    # Nothing left to do: the message names the command line's flags, not Python's keywords.
    res = runner.invoke(app, [*args, *fast, "--steps", "2", "--resume"])
    assert res.exit_code == 2
    assert "--steps above 2" in res.output and "--overwrite" in res.output
    assert "=True" not in res.output and "max_steps" not in res.output
    res = runner.invoke(app, [*args, *fast, "--steps", "2"])
    assert res.exit_code == 2 and "pass --overwrite" in res.output and "--resume" in res.output
    assert "=True" not in res.output
