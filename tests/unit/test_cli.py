"""The ``hrefine`` command line, driven through typer's test runner on real pages."""

from __future__ import annotations

import html
import json
from pathlib import Path

import pytest
from hrefine.cli import app
from typer.testing import CliRunner

DATA = Path(__file__).resolve().parents[1] / "data" / "html"


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


def test_html_clean_file_drops_scripts_keeps_text(runner: CliRunner, tmp_path: Path) -> None:
    page = tmp_path / "p.html"
    page.write_text(
        "<html><head><script>alert(1)</script></head><body>"
        "<h1>Title</h1><p>Body text here.</p></body></html>",
        encoding="utf-8",
    )
    res = runner.invoke(app, ["html", "clean", str(page)])
    assert res.exit_code == 0, res.output
    assert "<h1>Title</h1>" in res.stdout
    assert "alert" not in res.stdout


def test_html_clean_reads_stdin_bytes_in_other_encodings(runner: CliRunner) -> None:
    raw = (DATA / "latin1.html").read_bytes()
    res = runner.invoke(app, ["html", "clean", "-"], input=raw)
    assert res.exit_code == 0, res.output
    assert "\ufffd" not in res.stdout  # decoded, not mangled


def test_html_prune_json_report_within_budget(runner: CliRunner, tmp_path: Path) -> None:
    rows = "".join(f"<tr><td>City {i}</td><td>{1000 + i}</td></tr>" for i in range(60))
    page = tmp_path / "p.html"
    page.write_text(
        "<html><body><p>Unrelated introduction about weather and rain.</p>"
        f"<table><tr><th>City</th><th>Population</th></tr>{rows}</table>"
        "<p>Springfield has a population of 42,000 people.</p></body></html>",
        encoding="utf-8",
    )
    res = runner.invoke(
        app,
        [
            *("html", "prune", str(page), "-q", "population of Springfield"),
            *("-n", "80", "--scorer", "bm25", "--json"),
        ],
    )
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    assert report["tokens"] <= 80
    assert "Springfield" in report["html"]
    assert any(b["kept"] for b in report["blocks"])


def test_html_prune_rejects_urls_and_missing_files(runner: CliRunner) -> None:
    res = runner.invoke(app, ["html", "prune", "https://example.com/x", "-q", "q"])
    assert res.exit_code == 2
    assert "URL" in res.output
    res = runner.invoke(app, ["html", "clean", "/no/such/page.html"])
    assert res.exit_code == 2


def test_html_prune_budget_too_small_is_a_clear_error(runner: CliRunner, tmp_path: Path) -> None:
    page = tmp_path / "p.html"
    page.write_text("<p>Some words in a paragraph.</p>", encoding="utf-8")
    res = runner.invoke(app, ["html", "prune", str(page), "-q", "words", "-n", "1"])
    assert res.exit_code == 2
    assert "error" in res.output.lower()


def test_html_prune_bad_scorer_and_a_folder_are_clear_errors(
    runner: CliRunner, tmp_path: Path
) -> None:
    page = tmp_path / "p.html"
    page.write_text("<p>Some words in a paragraph.</p>", encoding="utf-8")
    for bad in ("nosuch", "cross-encoder:"):
        res = runner.invoke(app, ["html", "prune", str(page), "-q", "words", "--scorer", bad])
        assert res.exit_code == 2 and res.exception is not None
        assert "unknown scorer" in res.output and "Traceback" not in res.output
    res = runner.invoke(app, ["html", "clean", str(tmp_path)])
    assert res.exit_code == 2 and "folder" in res.output


def test_doctor_reports_tokenizer_and_embedder(runner: CliRunner) -> None:
    res = runner.invoke(app, ["doctor", "--skip-lm"])
    assert res.exit_code == 0, res.output
    assert "tokenizer" in res.stdout and "embedder" in res.stdout
    assert "FAILED" not in res.stdout
    assert "generative LM" not in res.stdout


def test_eval_is_mounted(runner: CliRunner) -> None:
    res = runner.invoke(app, ["eval", "--list"])
    assert res.exit_code == 0, res.output
    assert "bm25" in res.stdout


def test_demo_prunes_real_pages(runner: CliRunner, shared_data: Path) -> None:
    res = runner.invoke(app, ["demo", "--max-tokens", "512", "--data", str(shared_data)])
    assert res.exit_code == 0, res.output
    assert "answer kept on" in res.stdout
    assert "every output within 512 tokens" in res.stdout


def test_html_prune_writes_a_report(runner: CliRunner, shared_data: Path, tmp_path: Path) -> None:
    question = json.loads((shared_data / "wtq" / "questions.jsonl").open().readline())
    page = shared_data / "wtq" / question["doc"]
    report = tmp_path / "out" / "report.html"
    report.parent.mkdir()
    res = runner.invoke(
        app,
        [
            *("html", "prune", str(page), "-q", question["question"]),
            *("--max-tokens", "300", "--scorer", "bm25", "--report", str(report)),
        ],
    )
    assert res.exit_code == 0, res.output
    assert "report written to" in res.output
    text = report.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>")
    assert "Content-Security-Policy" in text
    assert page.name in text  # the file name is the report's title
    assert html.escape(question["question"], quote=False) in text
    assert text.count(' data-b="') > 10
    assert res.stdout.strip()  # the pruned HTML still goes to stdout


def test_html_prune_report_to_an_unwritable_path_is_a_clear_error(
    runner: CliRunner, tmp_path: Path
) -> None:
    page = tmp_path / "p.html"
    page.write_text("<p>Some words in a paragraph.</p>", encoding="utf-8")
    bad = tmp_path / "missing-dir" / "r.html"
    res = runner.invoke(
        app, ["html", "prune", str(page), "-q", "words", "--scorer", "bm25", "--report", str(bad)]
    )
    assert res.exit_code == 2
    assert "could not write the report" in res.output
