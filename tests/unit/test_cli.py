"""The ``hrefine`` command line, driven through typer's test runner, ``main`` and a real
process, on real pages."""

from __future__ import annotations

import html
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_checks import one_line_error as _one_line_error
from hrefine._cli_support import loading_line
from hrefine.cli import app, main
from hrefine.errors import ConfigError
from hrefine.html import DEFAULT_BUDGET
from typer.testing import CliRunner

DATA = Path(__file__).resolve().parents[1] / "data" / "html"
# What the CLI sets to quiet model loading; pinned here so that no test leaks them.
QUIET_ENV = {"HF_HUB_DISABLE_PROGRESS_BARS": "1", "TRANSFORMERS_VERBOSITY": "error"}


@pytest.fixture(autouse=True)
def _cli_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in QUIET_ENV.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("HREFINE_DEBUG", raising=False)


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def table_page(tmp_path: Path) -> Path:
    rows = "".join(f"<tr><td>City {i}</td><td>{1000 + i}</td></tr>" for i in range(60))
    page = tmp_path / "p.html"
    page.write_text(
        "<html><body><p>Unrelated introduction about weather and rain.</p>"
        f"<table><tr><th>City</th><th>Population</th></tr>{rows}</table>"
        "<p>Springfield has a population of 42,000 people.</p></body></html>",
        encoding="utf-8",
    )
    return page


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
    res = runner.invoke(
        app, ["demo", "--no-raptor", "--max-tokens", "512", "--data", str(shared_data)]
    )
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
    (tmp_path / "notes.txt").write_text("a file where a folder would go", encoding="utf-8")
    bad = tmp_path / "notes.txt" / "r.html"  # a missing folder is made; a file is not one
    res = runner.invoke(
        app, ["html", "prune", str(page), "-q", "words", "--scorer", "bm25", "--report", str(bad)]
    )
    assert res.exit_code == 2
    assert "could not write the report" in res.output


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["-d", "wtqq"], "unknown dataset 'wtqq'; use one of articles, hotpotqa,"),
        (["-d", "wtq", "-b", "0"], "--budgets must be positive token counts"),
        (["-d", "wtq", "-b", "512,-5"], "--budgets must be positive token counts"),
        (["-d", "wtq", "-b", "512,lots"], "--budgets must be whole token counts"),
        (["-d", "wtq", "--tokenizer", "no-such-tokenizer"], "tokenizer 'no-such-tokenizer'"),
        (["-d", "wtq", "-n", "0"], "--limit/-n must be at least 1 item per dataset, got 0"),
        (["-d", "wtq", "-n", "-2"], "--limit/-n must be at least 1 item per dataset, got -2"),
        # A misspelt option is the caller's mistake, not a method to skip.
        (["-d", "wtq", "-n", "1", "--option", "fooz=1"], "method 'htmlrag' takes no option 'fooz'"),
    ],
)
def test_eval_mistakes_are_one_line_errors(
    capsys: pytest.CaptureFixture[str], shared_data: Path, args: list[str], expected: str
) -> None:
    argv = ["eval", "-m", "htmlrag", "--data-dir", str(shared_data), "--no-progress", *args]
    assert expected in _one_line_error(capsys, argv)


def test_eval_unknown_names_suggest_the_nearest(
    capsys: pytest.CaptureFixture[str], shared_data: Path
) -> None:
    base = ["eval", "--data-dir", str(shared_data)]
    line = _one_line_error(capsys, [*base, "-m", "htmlrag", "-d", "leval-nqq"])
    assert line.endswith("did you mean 'leval-nq'?")
    line = _one_line_error(capsys, [*base, "-m", "chunk-bm25", "-d", "wtq"])
    assert "unknown method 'chunk-bm25'" in line and line.endswith("did you mean 'chunks-bm25'?")
    assert "htmlrag-generative" in line  # the known names are listed


def test_eval_without_a_data_folder_says_where_it_looked(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "no-data"
    monkeypatch.setenv("HREFINE_DATA", str(missing))
    line = _one_line_error(capsys, ["eval", "-m", "chunks-bm25", "-d", "wtq"])
    assert f"no evaluation data folder at {missing}" in line and "--data-dir" in line


def test_debug_shows_the_traceback_instead(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ConfigError, match="unknown dataset"):
        main(["eval", "-m", "htmlrag", "-d", "wtqq", "--debug"])  # after the command too
    monkeypatch.setenv("HREFINE_DEBUG", "1")
    with pytest.raises(ConfigError, match="positive token counts"):
        main(["eval", "-m", "htmlrag", "-d", "wtq", "-b", "0"])
    assert "hrefine: error" not in capsys.readouterr().err


def test_html_prune_mistakes_are_one_line_errors(
    capsys: pytest.CaptureFixture[str], table_page: Path, tmp_path: Path
) -> None:
    prune = ["html", "prune", str(table_page), "-q", "Springfield"]
    assert "unknown scorer" in _one_line_error(capsys, [*prune, "--scorer", "bm52"])
    line = _one_line_error(capsys, [*prune, "--tokenizer", "no-such-tokenizer"])
    assert "tokenizer 'no-such-tokenizer'" in line
    (tmp_path / "notes.txt").write_text("a file where a folder would go", encoding="utf-8")
    line = _one_line_error(capsys, [*prune, "-o", str(tmp_path / "notes.txt" / "out.html")])
    assert "not a folder" in line
    assert "no such file" in _one_line_error(capsys, ["html", "clean", str(tmp_path / "x.html")])


def test_html_prune_writes_to_output_with_the_given_tokenizer(
    capsys: pytest.CaptureFixture[str], table_page: Path, tmp_path: Path
) -> None:
    out = tmp_path / "pruned.html"
    argv = ["html", "prune", str(table_page), "-q", "population of Springfield", "-n", "80"]
    code = main([*argv, "--scorer", "bm25", "--tokenizer", "regex", "-o", str(out)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert captured.out == ""  # the pruned HTML went to the file
    assert "Springfield has a population" in out.read_text(encoding="utf-8")
    assert "/ 80 tokens (regex)" in captured.err and f"written to {out}" in captured.err
    assert "loading" not in captured.err  # BM25 and the regex counter load no model


def test_html_prune_default_budget_is_the_librarys(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from langchain_hrefine import HtmlRagCompressor
    from llamaindex_hrefine import HtmlRagNodePostprocessor

    assert HtmlRagCompressor.model_fields["max_tokens"].default == DEFAULT_BUDGET
    assert HtmlRagNodePostprocessor.model_fields["max_tokens"].default == DEFAULT_BUDGET
    page = tmp_path / "p.html"
    page.write_text("<p>Rome is the capital of Italy.</p>", encoding="utf-8")
    argv = ["html", "prune", str(page), "-q", "capital", "--scorer", "bm25", "--json"]
    assert main([*argv, "--tokenizer", "regex"]) == 0
    assert json.loads(capsys.readouterr().out)["budget"] == DEFAULT_BUDGET


def test_eval_old_method_names_work_with_a_deprecation_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    data = tmp_path / "tiny.jsonl"
    doc = " ".join(f"Filler sentence number {i} about nothing." for i in range(40))
    row = {"id": "q1", "question": "Where is the Clock Tower?", "answers": ["Springfield"]}
    row["document"] = doc + " The Clock Tower stands in Springfield."
    data.write_text(json.dumps(row) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    argv = ["eval", "-m", "BM25", "-d", str(data), "-b", "64", "--tokenizer", "regex"]
    assert main([*argv, "-o", str(out), "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "hrefine: warning: method 'BM25' is now called 'chunks-bm25'" in err
    runs = json.loads((out / "eval.json").read_text())["runs"]
    assert [r["method"] for r in runs] == ["chunks-bm25"]
    assert runs[0]["summaries"][0]["metrics"]["containment"] == 1.0

    assert main(["eval", "--help"]) == 0
    help_text = " ".join(capsys.readouterr().out.replace("\u2502", " ").split())
    for old, new in (("lead", "lead-text"), ("bm25", "chunks-bm25")):
        assert f"{old} -> {new}" in help_text
    assert "htmlrag-bm25" in help_text and "htmlrag-generative" in help_text


def test_loading_line_names_what_loads() -> None:
    expected = "loading all-MiniLM-L6-v2 and the Llama-3.2 tokenizer..."
    assert loading_line(scorer="embedding") == expected
    assert loading_line(scorer="bm25", tokenizer="regex") is None
    both = loading_line(scorer="bm25", tokenizer="gpt-4o", generative=True)
    assert both == "loading SmolLM2-135M-Instruct and the tokenizer 'gpt-4o'..."
    cross = loading_line(scorer="cross-encoder:/m/ce", tokenizer="llama-3.2")
    assert cross == "loading the cross-encoder '/m/ce' and the Llama-3.2 tokenizer..."


def _hrefine(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m hrefine`` in a fresh process, where the models load for the first time."""
    env = {k: v for k, v in os.environ.items() if k not in QUIET_ENV and k != "HREFINE_DEBUG"}
    cmd = [sys.executable, "-m", "hrefine", *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, check=False)


def test_first_call_says_what_loads_and_shows_no_bars_or_warnings(table_page: Path) -> None:
    proc = _hrefine("html", "prune", str(table_page), "-q", "population of Springfield")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert lines[0] == "loading all-MiniLM-L6-v2 and the Llama-3.2 tokenizer..."
    assert len(lines) == 2 and "tokens (llama-3.2)" in lines[1], proc.stderr
    assert "Springfield" in proc.stdout


def test_doctor_loads_models_without_bars_or_warnings() -> None:
    proc = _hrefine("doctor", "--skip-lm")
    assert proc.returncode == 0, proc.stderr
    assert "all-MiniLM-L6-v2" in proc.stdout
    assert proc.stderr == ""  # no "Loading weights" bar, no FutureWarning


def test_eval_help_lists_every_registered_method_and_no_subcommands(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from hrefine.eval.methods import available_methods

    # hrefine's own methods (other tests register more, after the CLI's help was written).
    builtin = (
        *("lead-text", "chunks-bm25", "chunks-embedding", "htmlrag", "htmlrag-bm25"),
        *("htmlrag-generative", "raptor", "raptor-traversal", "garlic", "longrefiner"),
        "longrefiner-lm",
    )
    assert set(builtin) <= set(available_methods())
    assert main(["eval", "--help"]) == 0
    help_text = " ".join(capsys.readouterr().out.replace("\u2502", " ").split())
    assert "Usage: hrefine eval [OPTIONS]" in help_text and "COMMAND" not in help_text
    for name in builtin:
        assert f" {name}," in help_text or f" {name}." in help_text, name


def test_every_commands_help_shows_flags_as_plain_flags(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import typer

    def paths(command: object, prefix: list[str]) -> list[list[str]]:
        found = [prefix]
        for name, sub in getattr(command, "commands", {}).items():
            found += paths(sub, [*prefix, name])
        return found

    every = paths(typer.main.get_command(app), [])
    assert ["distributed", "html"] in every and ["eval"] in every
    for path in every:
        assert main([*path, "--help"]) == 0, path
        out = capsys.readouterr().out
        assert "--help" in out and "<bool>" not in out, path
    assert main(["distributed", "html", "--help"]) == 0
    assert "<int>" in capsys.readouterr().out  # options that take a value keep their type


@pytest.mark.parametrize(
    ("methods", "options", "expected"),
    [
        (["raptor"], {}, "loading all-MiniLM-L6-v2 and the Llama-3.2 tokenizer..."),
        (["garlic"], {}, "loading all-MiniLM-L6-v2 and the Llama-3.2 tokenizer..."),
        (["garlic"], {"llm": "default"}, "loading all-MiniLM-L6-v2, SmolLM2-135M-Instruct and"),
        (["raptor-traversal"], {"llm": "default"}, "loading all-MiniLM-L6-v2, SmolLM2-135M"),
        (["chunks-embedding"], {"embedder": "my/model"}, "loading the embedder 'my/model' and"),
    ],
)
def test_eval_loading_line_follows_the_llm_option(
    methods: list[str], options: dict[str, str], expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # RAPTOR and GARLIC evaluate with no model unless `--option llm=default` names SmolLM2.
    from hrefine.eval.cli import _loading

    _loading(methods, options, None)
    assert capsys.readouterr().err.startswith(expected)


def test_a_tokenizer_path_that_is_not_a_tokenizer_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # Was: a 60-190 line traceback and exit 1 (the tokenizers library's bare Exception, or
    # transformers' ValueError for a folder with no tokenizer in it).
    bad = tmp_path / "tok.json"
    bad.write_text('{"not": "a tokenizer"}', encoding="utf-8")
    empty = tmp_path / "empty"
    empty.mkdir()
    page = tmp_path / "p.html"
    page.write_text("<p>Paris is the capital of France.</p>", encoding="utf-8")
    prune = ["html", "prune", str(page), "-q", "capital", "--scorer", "bm25"]
    line = _one_line_error(capsys, [*prune, "--tokenizer", str(bad)])
    assert "could not be read as a tokenizer.json" in line
    assert "holds no tokenizer" in _one_line_error(capsys, [*prune, "--tokenizer", str(empty)])
    assert main([*prune, "--tokenizer", "regex", "--lm", str(empty)]) == 2
    err = capsys.readouterr().err  # the loading line, then the error
    assert "Traceback" not in err
    assert err.splitlines()[-1].startswith("hrefine: error: could not load the model")


def test_eval_checks_its_output_folder_first_and_keeps_stdout_for_the_table(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # Was: an --out that could not be a folder failed with a traceback after the whole run;
    # the progress bar went to stdout, into the Markdown table; the data's fingerprint hashed
    # the JSONL's whole folder, the report written into it included, so it changed every run.
    data = tmp_path / "my.jsonl"
    row = {"id": "q1", "question": "Who?", "answers": ["Friedkin"], "document": "Friedkin did."}
    data.write_text(json.dumps(row) + "\n", encoding="utf-8")
    argv = ["eval", "-m", "lead-text", "-d", str(data), "-b", "16", "--tokenizer", "regex"]
    line = _one_line_error(capsys, [*argv, "--out", str(data)])
    assert "could not save the evaluation report" in line
    digests: list[list[str]] = []
    for _ in range(2):
        assert main([*argv, "--out", str(tmp_path / "out")]) == 0
        out = capsys.readouterr().out
        assert out.startswith("### ") and "━" not in out
        report = json.loads((tmp_path / "out" / "eval.json").read_text(encoding="utf-8"))
        digests.append(_data_digests(report))
    assert digests[0] == digests[1] and digests[0]
    # A budget past numpy's integers (2**64) is run and plotted, not a traceback.
    huge = str(2**64)
    assert main([*argv[:-3], huge, "--tokenizer", "regex", "--out", str(tmp_path / "huge")]) == 0
    assert (tmp_path / "huge" / "eval.png").stat().st_size > 0


def _data_digests(report: object) -> list[str]:
    """Every ``data_sha256`` value in a report."""
    if isinstance(report, dict):
        found = [str(report["data_sha256"])] if "data_sha256" in report else []
        return found + [d for v in report.values() for d in _data_digests(v)]
    if isinstance(report, list):
        return [d for v in report for d in _data_digests(v)]
    return []


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["eval", "-m", "lead-text", "-d", "wtq", "-n", "1.5"], "'--limit' / '-n'"),
        (["html", "prune", "page.html", "--bogus"], "No such option: --bogus"),
        (["raptor", "query"], "Missing argument"),
    ],
)
def test_a_flag_the_parser_refuses_is_one_line_too(
    capsys: pytest.CaptureFixture[str], argv: list[str], expected: str
) -> None:
    # Was typer's usage lines and a boxed panel, though the docs promise one line.
    line = _one_line_error(capsys, argv)
    assert expected in line


def test_demo_mistakes_are_the_usual_error_line(
    capsys: pytest.CaptureFixture[str], shared_data: Path, tmp_path: Path
) -> None:
    # Was red text on stdout; the data hint did not name --data, the flag just given.
    for argv, expected in (
        (["demo", "--data", str(tmp_path)], "give --data, put ../shared beside the repo"),
        (["demo", "--data", str(shared_data), "--page", "bogus"], "no strict question on page"),
    ):
        assert main(argv) == 2
        captured = capsys.readouterr()
        assert not captured.out
        last = captured.err.strip().splitlines()[-1]
        assert last.startswith("hrefine: error: ") and expected in last
