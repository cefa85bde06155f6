"""The runner, the reports and ``hrefine eval`` end to end on small limits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hrefine.eval import (
    DATASETS,
    EvalItem,
    LeadCompressor,
    evaluate_items,
    load_dataset,
    run_eval,
    run_many,
    score_output,
)
from hrefine.eval.cli import eval_app
from hrefine.eval.report import markdown_tables
from typer.testing import CliRunner


def test_run_eval_lead_on_hotpotqa(shared_data: Path) -> None:
    result = run_eval("lead-text", "hotpotqa", budgets=[256, 1024], limit=6, data_dir=shared_data)
    assert result.skipped is None
    assert result.n_items == 6 and len(result.items) == 12
    assert result.primary_metric == "support_recall"
    assert result.score(1024) >= result.score(256)  # type: ignore[operator]
    for summary in result.summaries:
        assert summary.over_budget == 0 and summary.errors == 0
        assert summary.tokens_out <= summary.budget
        assert 0 < summary.compression <= 1


def test_run_eval_wtq_defaults_to_strict_questions(shared_data: Path) -> None:
    result = run_eval("chunks-bm25", "wtq", budgets=[512], limit=3, data_dir=shared_data)
    assert result.meta["strict_only"] is True
    assert result.meta["data_sha256"]
    assert result.summaries[0].scored["containment"] == 3


def test_missing_dataset_and_method_are_skipped_not_raised(tmp_path: Path) -> None:
    results = run_many(["lead-text", "no.such.module:Thing"], ["wtq"], [512], data_dir=tmp_path)
    assert len(results) == 2
    assert all(r.skipped for r in results)
    assert "not available" in (results[0].skipped or "")
    text = markdown_tables({"runs": [r.to_dict() for r in results]})
    assert "Skipped" in text


def test_errors_are_recorded_per_item() -> None:
    class Boom:
        name = "boom"

        def compress(self, document: str, query: str, max_tokens: int) -> str:
            raise RuntimeError("kaput")

    item = EvalItem(id="x", question="q", answers=("a",), dataset="t", doc_id="d", doc_text="a")
    rows = evaluate_items(Boom(), [item], [10])
    assert rows[0].error == "RuntimeError: kaput"
    assert rows[0].metrics["containment"] == 0.0
    with pytest.raises(RuntimeError):
        evaluate_items(Boom(), [item], [10], fail_fast=True)


def test_reader_llm_adds_em_and_f1() -> None:
    item = EvalItem(
        id="x",
        question="Which city?",
        answers=("Paris",),
        dataset="t",
        doc_id="d",
        doc_text="The meeting was in Paris. " * 20,
    )
    prompts: list[str] = []

    def reader(prompt: str) -> str:
        prompts.append(prompt)
        return "Paris."

    rows = evaluate_items(LeadCompressor(), [item], [16], reader=reader)
    assert rows[0].metrics["reader_em"] == 1.0 and rows[0].metrics["reader_f1"] == 1.0
    assert "Which city?" in prompts[0] and "Paris" in prompts[0]


def test_score_output_uses_the_gold_each_item_has() -> None:
    item = EvalItem(
        id="x",
        question="q",
        answers=("Yes",),
        dataset="t",
        doc_id="d",
        doc_text="",
        extra={"supporting_paragraphs": ["alpha beta"], "gold_text": "alpha beta gamma"},
    )
    scores = score_output(item, "<p>alpha beta</p>")
    assert scores == {"containment": None, "support_recall": 1.0, "token_recall": 2 / 3}


def test_score_output_on_quality_scores_the_gold_option(shared_data: Path) -> None:
    item = load_dataset("leval-quality", shared_data)[0]
    unrelated = load_dataset("hotpotqa", shared_data, limit=1)[0].document
    full = score_output(item, item.document)
    other = score_output(item, unrelated)
    assert set(full) == {"containment", "option_recall"}
    assert full["containment"] == 0.0  # the gold option paraphrases the story
    assert full["option_recall"] is not None and full["option_recall"] > 0.5
    assert other["option_recall"] is not None and other["option_recall"] < full["option_recall"]
    assert score_output(item, "")["option_recall"] == 0.0


def test_quality_headline_metric_is_option_recall() -> None:
    assert DATASETS["leval-quality"].primary_metric == "option_recall"
    run = {
        "dataset": "leval-quality",
        "method": "lead",
        "budgets": [512],
        "metrics": ["option_recall"],
        "summaries": [
            {
                "budget": 512,
                "metrics": {"option_recall": 0.25, "containment": 0.0},
                "scored": {"option_recall": 3, "containment": 3},
                "tokens_in": 100.0,
                "tokens_out": 50.0,
                "ms_per_item": 1.0,
                "over_budget": 0,
                "errors": 0,
            }
        ],
    }
    md = markdown_tables({"runs": [run]})
    assert "| leval-quality | 3 | gold-option word recall | lead | 0.250 |" in md
    assert "answer containment" not in md


def test_cli_runs_end_to_end_and_writes_json_md_png(shared_data: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = CliRunner().invoke(
        eval_app,
        [
            "--method", "lead-text,chunks-bm25",
            "--dataset", "leval-qasper,nosuch-missing.jsonl",
            "--budgets", "256,512",
            "--limit", "3",
            "--out", str(out),
            "--data-dir", str(shared_data),
            "--no-progress",
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "skipped" in result.output
    data = json.loads((out / "eval.json").read_text())
    runs = [r for r in data["runs"] if not r["skipped"]]
    assert {r["method"] for r in runs} == {"lead-text", "chunks-bm25"}
    assert len(runs[0]["items"]) == 6
    assert data["meta"]["tokenizer"] == "llama-3.2"
    md = (out / "eval.md").read_text()
    assert "| leval-qasper |" in md and "answer containment" in md
    png = (out / "eval.png").read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 5_000


def test_cli_list_and_missing_arguments() -> None:
    runner = CliRunner()
    listing = runner.invoke(eval_app, ["--list"])
    assert listing.exit_code == 0 and "hotpotqa" in listing.output
    assert "chunks-bm25" in listing.output and "bm25 -> chunks-bm25" in listing.output
    assert runner.invoke(eval_app, ["--method", "lead-text"]).exit_code == 2
