"""``hrefine refine`` through typer's runner and ``main``: real CUAD contracts, Qasper papers and
an NQ page refined from files and stdin, the outline with what was kept, the JSON, the refined
text and the report written to files, and every mistake as one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_checks import one_line_error as _one_line_error
from hrefine.cli import app, main
from hrefine.errors import ConfigError
from typer.testing import CliRunner

QUESTION = "On what date will the contract's initial term expire?"
CLAUSE = "initial period of five (5) years"


@pytest.fixture(autouse=True)
def _cli_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    monkeypatch.setenv("TRANSFORMERS_VERBOSITY", "error")
    monkeypatch.delenv("HREFINE_DEBUG", raising=False)


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture(scope="module")
def contract(shared_data: Path) -> Path:
    return shared_data / "leval" / "cuad" / "docs" / "cuad_00.txt"


@pytest.fixture(scope="module")
def paper(shared_data: Path) -> Path:
    return shared_data / "leval" / "qasper" / "docs" / "qasper_01.txt"


def _ok(runner: CliRunner, argv: list[str], **kwargs: Any) -> Any:
    res = runner.invoke(app, argv, **kwargs)
    assert res.exit_code == 0, res.output
    return res


def test_a_paper_with_the_embedded_models_prints_outline_kept_units_then_text(
    runner: CliRunner, paper: Path, embedder: Any
) -> None:
    question = "What is the size of the new dataset?"
    res = _ok(runner, ["refine", str(paper), "-q", question, "-n", "200"])
    out = res.stdout
    head, text = out.split("\n== refined text (", 1)
    assert head.startswith(f"== [1] | {paper} | ")
    assert "structure from headings" in head and "step 3: off" in head
    assert "outline (+ kept, = inside kept, ~ has kept parts, * chosen by step 3; score):" in head
    assert "kept (" in head
    marked = [line for line in head.splitlines() if line.startswith(("  +", "  ~"))]
    assert marked  # something was kept and its sections are marked
    tokens = int(text.split(" tokens)", 1)[0])
    assert 0 < tokens <= 200
    assert "14,100" in text.split("==\n", 1)[1]  # the answer reaches the refined text
    lines = res.stderr.splitlines()
    assert lines[0] == "loading all-MiniLM-L6-v2 and the Llama-3.2 tokenizer..."
    assert lines[-1].startswith(f"{tokens} / 200 tokens (llama-3.2); kept ")


def test_json_has_per_document_kept_nodes_scores_analysis_and_timings(
    runner: CliRunner, contract: Path, tmp_path: Path
) -> None:
    argv = ["refine", str(contract), "-q", QUESTION, "-n", "300", "--scorer", "bm25"]
    res = _ok(runner, [*argv, "--json"])
    data = json.loads(res.stdout)
    assert data["query"] == QUESTION and data["budget"] == 300
    assert 0 < data["tokens"] <= 300 and data["tokenizer"] == "llama-3.2"
    assert data["analysis"]["source"] == "off" and data["analysis"]["w_global"] == 0.5
    assert set(data["timings"]) >= {
        "analysis",
        "structure",
        "selection",
        "scoring",
        "fill",
        "total",
    }
    (doc,) = data["documents"]
    assert doc["source"] == str(contract) and doc["structure"] == "numbered"
    assert CLAUSE in doc["text"] and doc["text"] == data["text"]
    term = next(
        k for k in doc["kept"] if CLAUSE in Path(contract).read_text()[k["start"] : k["end"]]
    )
    assert term["path"][-1].endswith("Term") and term["path"][0].startswith("11")
    # No section chosen (step 3 off): the combined score is the local one.
    assert 0 <= term["local"] <= 1 and term["combined"] == pytest.approx(term["local"])
    assert doc["selection"]["source"] == "off" and doc["selection"]["selected"] == []
    assert doc["dropped"]["expanded_into_children"] > 0
    assert doc["sections"] > 50 and doc["paragraphs"] > doc["sections"]
    # -o takes the JSON instead of stdout.
    out = tmp_path / "refined.json"
    res = _ok(runner, [*argv, "--json", "-o", str(out)])
    assert res.stdout == "" and f"written to {out}" in res.stderr
    saved = json.loads(out.read_text(encoding="utf-8"))
    assert saved["documents"][0]["kept"] == doc["kept"] and saved["text"] == data["text"]


def test_output_file_report_and_no_structure(
    runner: CliRunner, contract: Path, tmp_path: Path
) -> None:
    argv = ["refine", str(contract), "-q", QUESTION, "-n", "300", "--scorer", "bm25"]
    plain = _ok(runner, [*argv, "--no-show-structure"]).stdout
    assert not plain.startswith("==") and CLAUSE in plain
    # Missing parent folders of both outputs are made.
    out, report = tmp_path / "out" / "refined.txt", tmp_path / "reports" / "report.html"
    res = _ok(runner, [*argv, "--no-show-structure", "-o", str(out), "--report", str(report)])
    assert res.stdout == ""
    assert out.read_text(encoding="utf-8") == plain
    assert f"written to {out}" in res.stderr and f"report written to {report}" in res.stderr
    page = report.read_text(encoding="utf-8")
    assert "LongRefiner report" in page and "<script" not in page and str(contract) in page
    assert "kept" in page and QUESTION.replace("'", "&#x27;") in page
    # With the structure shown, -o still takes the text alone; the outline goes to stdout.
    res = _ok(runner, [*argv, "-o", str(out)])
    assert res.stdout.startswith("== [1]") and "refined text" not in res.stdout
    assert out.read_text(encoding="utf-8") == plain


def test_stdin_markdown_and_several_documents_share_the_budget(
    runner: CliRunner, contract: Path, paper: Path
) -> None:
    notes = (
        "# Moving house\n\nPack the books first; they are heavy and fill small boxes.\n\n"
        "## The lease\n\nThe lease of the new flat starts on 1 May and runs for two years.\n"
    )
    res = _ok(
        runner,
        ["refine", "-", str(contract), str(paper), "-q", "When does the lease start?", "-n",
         "120", "--scorer", "bm25", "--tokenizer", "regex", "--json"],
        input=notes,
    )  # fmt: skip
    data = json.loads(res.stdout)
    assert [d["source"] for d in data["documents"]] == ["stdin", str(contract), str(paper)]
    assert data["documents"][0]["structure"] == "markdown"
    assert "1 May" in data["documents"][0]["text"]
    assert data["tokens"] <= 120
    assert sum(d["tokens"] for d in data["documents"]) <= 120 + 2 * len(data["documents"])
    assert "loading" not in res.stderr  # regex and BM25 load nothing


def test_an_html_page_is_structured_by_its_markup(runner: CliRunner, shared_data: Path) -> None:
    page = shared_data / "leval" / "nq" / "docs" / "nq_00.html"
    res = _ok(
        runner,
        ["refine", str(page), "-q", "Who plays June in The Handmaid's Tale?", "-n", "150",
         "--scorer", "bm25"],
    )  # fmt: skip
    assert "structure from html" in res.stdout
    assert "<p>" not in res.stdout.split("== refined text", 1)[1]  # visible text, not markup


def test_structure_paragraphs_forces_no_sections(runner: CliRunner, contract: Path) -> None:
    res = _ok(
        runner,
        ["refine", str(contract), "-q", QUESTION, "-n", "200", "--scorer", "bm25",
         "--structure", "paragraphs"],
    )  # fmt: skip
    assert "structure from paragraphs: 0 sections" in res.stdout
    assert "outline (" not in res.stdout


def test_mistakes_are_one_line_errors(
    capsys: pytest.CaptureFixture[str], contract: Path, tmp_path: Path
) -> None:
    base = ["-q", QUESTION, "-n", "100", "--scorer", "bm25"]
    missing = tmp_path / "nope.txt"
    assert f"no such file: {missing}" in _one_line_error(capsys, ["refine", str(missing), *base])
    empty = tmp_path / "empty.txt"
    empty.write_text("  \n\n", encoding="utf-8")
    line = _one_line_error(capsys, ["refine", str(empty), *base])
    assert f"nothing to refine: {empty} is empty" in line
    line = _one_line_error(capsys, ["refine", str(empty), str(empty), *base])
    assert "all 2 documents are empty" in line
    line = _one_line_error(capsys, ["refine", str(contract), "-q", QUESTION, "-n", "0"])
    assert "--max-tokens must be at least 1, got 0" in line
    line = _one_line_error(capsys, ["refine", str(contract), "-q", "  ", "-n", "10"])
    assert "the question is empty" in line
    assert "folder" in _one_line_error(capsys, ["refine", str(tmp_path), *base])
    assert "more than once" in _one_line_error(capsys, ["refine", "-", "-", *base])
    pdf = tmp_path / "paper.pdf"
    pdf.write_bytes(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<<>>\nendobj\n")
    assert "hrefine: error:" in _one_line_error(capsys, ["refine", str(pdf), *base])
    line = _one_line_error(capsys, ["refine", str(contract), *base, "--structure", "chapters"])
    assert "structure must be one of" in line and "'chapters'" in line
    line = _one_line_error(capsys, ["refine", str(contract), *base, "--structure", "model"])
    assert "--structure model needs a model: give --lm" in line
    line = _one_line_error(capsys, ["refine", str(contract), *base, "--global-selection", "on"])
    assert "--global-selection on needs a model" in line
    line = _one_line_error(
        capsys, ["refine", str(contract), *base, "--selection-adapter", str(tmp_path)]
    )
    assert "--selection-adapter" in line and "needs a model" in line
    line = _one_line_error(
        capsys, ["refine", str(contract), *base, "--report", str(empty / "no" / "r.html")]
    )
    assert "could not write the report" in line and f"{empty} is a file, not a folder" in line
    line = _one_line_error(capsys, ["refine", str(contract), *base, "--scorer", "tf-idf"])
    assert "tf-idf" in line


def test_a_missing_model_fails_in_one_line_before_anything_loads(
    capsys: pytest.CaptureFixture[str], contract: Path, tmp_path: Path
) -> None:
    """As in ``raptor build`` and ``garlic build``: the model is looked for first, so no
    "loading ..." line promises what cannot load."""
    model = tmp_path / "no-model"
    argv = ["refine", str(contract), "-q", QUESTION, "-n", "50", "--scorer", "bm25"]
    code = main([*argv, "--lm", str(model)])
    err = capsys.readouterr().err.splitlines()
    assert code == 2
    assert len(err) == 1
    assert err[0].startswith("hrefine: error: ") and str(model) in err[0]


def test_debug_shows_the_traceback_instead(
    capsys: pytest.CaptureFixture[str], contract: Path
) -> None:
    with pytest.raises(ConfigError, match="at least 1"):
        main(["refine", str(contract), "-q", QUESTION, "-n", "0", "--debug"])
    assert "hrefine: error" not in capsys.readouterr().err


def test_demo_refines_a_real_contract(shared_data: Path) -> None:
    from hrefine._demo import LONGREFINER_BUDGET, run_longrefiner_demo
    from rich.console import Console

    console = Console(record=True, width=120)
    summary = run_longrefiner_demo(data=shared_data, console=console)
    assert summary["source"] == "numbered" and summary["sections"] > 20
    assert summary["answer_found"] and 0 < summary["tokens"] <= LONGREFINER_BUDGET
    printed = console.export_text()
    assert "TERM AND TERMINATION" in printed and "the gold clause is in the kept text" in printed
