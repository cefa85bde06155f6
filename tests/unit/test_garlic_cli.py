"""``hrefine garlic build`` and ``hrefine garlic query`` through typer's runner and ``main``: a
build by the CLI with the embedded SmolLM2 over the openings of two real HotpotQA paragraphs;
queries, with SmolLM2 in attention mode, of a graph of three whole paragraphs saved by the core
API (with a fast echo summariser), as the library searches it; and every mistake as one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_checks import one_line_error as _one_line_error
from hrefine.cli import app
from hrefine.garlic import GarlicGraph, GarlicSearcher
from hrefine.raptor import Source
from typer.testing import CliRunner

pytestmark = pytest.mark.lm

# Small batches and short summaries: a few SmolLM2 calls build the levels in seconds.
BUILD = ["--chunk-tokens", "64", "--batch-tokens", "400", "--summary-tokens", "32"]


@pytest.fixture(autouse=True)
def _cli_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    monkeypatch.setenv("TRANSFORMERS_VERBOSITY", "error")
    monkeypatch.delenv("HREFINE_DEBUG", raising=False)


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture(scope="module")
def item(shared_data: Path) -> Any:
    from hrefine.eval.loaders import load_dataset

    return load_dataset("hotpotqa", data_dir=shared_data)[0]


def echo_points(prompt: str) -> str:
    """A fast fake summariser: one bullet of ten words per two input lines (levels shrink)."""
    body = prompt.split("\n\n", 1)[1].split("\n\nSplit your summary", 1)[0]
    lines = body.split("\n")
    pairs = [" ".join(lines[i : i + 2]) for i in range(0, len(lines), 2)]
    return "\n".join("* " + " ".join(pair.split()[:10]) for pair in pairs)


@pytest.fixture(scope="module")
def docs(item: Any, tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The first two sentences of the item's first two paragraphs, one text file each."""
    folder = tmp_path_factory.mktemp("garlic-docs")
    paths = []
    for k, paragraph in enumerate(item.extra["paragraphs"][:2]):
        path = folder / f"p{k}.txt"
        path.write_text(" ".join(paragraph["sentences"][:2]), encoding="utf-8")
        paths.append(path)
    return paths


@pytest.fixture(scope="module")
def saved(item: Any, embedder: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A graph of the item's first three paragraphs, built by the core API and saved."""
    from hrefine.eval.loaders import hotpot_paragraph_text

    sources = [
        Source(hotpot_paragraph_text(p), {"source": p["title"]}, p["title"])
        for p in item.extra["paragraphs"][:3]
    ]
    graph = GarlicGraph.build(
        sources,
        lm=echo_points,
        embedder=embedder,
        chunk_tokens=48,
        batch_tokens=400,
        summary_tokens=48,
    )
    assert graph.levels >= 2
    folder = tmp_path_factory.mktemp("garlic-api") / "graph"
    graph.save(folder)
    return folder


@pytest.fixture(scope="module")
def built(docs: list[Path], tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A graph built by ``hrefine garlic build`` (SmolLM2, attention edges), and its stderr."""
    folder = tmp_path_factory.mktemp("garlic") / "graph"
    res = CliRunner().invoke(
        app, ["garlic", "build", *map(str, docs), "-o", str(folder), *BUILD, "--lm", "default"]
    )
    assert res.exit_code == 0, res.output
    return folder, res.stderr


def test_build_saves_a_graph_and_reports_each_level(
    built: tuple[Path, str], docs: list[Path]
) -> None:
    folder, err = built
    graph = GarlicGraph.load(folder)
    assert graph.edge_mode == "attention" and graph.levels >= 1
    assert "loading SmolLM2-135M-Instruct, all-MiniLM-L6-v2" in err and "2 documents" in err
    for level in range(1, graph.levels + 1):
        assert f"level {level}: summarising" in err
    leaves = graph.tree.at_level(0)
    assert f"built {len(leaves)} leaves, {graph.levels} summary levels" in err
    assert f"saved to {folder}" in err
    assert {graph.tree[i].metadata["source"] for i in leaves} == {str(p) for p in docs}
    opts = graph.options
    assert (opts.chunk_tokens, opts.batch_tokens, opts.summary_tokens) == (64, 400, 32)


def test_build_without_an_llm_uses_no_model(docs: list[Path], tmp_path: Path) -> None:
    # #53: the measured default is the no-model graph; --lm smollm2 is the embedded LM.
    folder = tmp_path / "graph"
    res = CliRunner().invoke(app, ["garlic", "build", *map(str, docs), "-o", str(folder), *BUILD])
    assert res.exit_code == 0, res.output
    assert "loading no LLM, all-MiniLM-L6-v2" in res.stderr
    graph = GarlicGraph.load(folder)
    assert graph.edge_mode == "embedding" and graph.levels >= 1
    # The stand-in wrote the levels' points; no LLM call made them (was "1 LLM calls").
    assert "embedding edges, 0 LLM calls" in res.stderr


def test_query_prints_the_library_search(runner: CliRunner, saved: Path, item: Any) -> None:
    folder = saved
    res = runner.invoke(
        app, ["garlic", "query", str(folder), "-q", item.question, "--max-steps", "2"]
    )
    assert res.exit_code == 0, res.output
    expected = GarlicSearcher(GarlicGraph.load(folder)).search(item.question, max_steps=2)
    trace, _, text = res.stdout.partition("\n\n")
    lines = trace.splitlines()
    assert len(lines) == len(expected.trace)
    for line, step in zip(lines, expected.trace, strict=True):
        assert line.startswith(f"step {step.step:>3}")
        assert f"P(Yes) {step.p_yes:.3f}" in line and f"{step.new_tokens:>6} new tokens" in line
    assert text.rstrip("\n").split("\n\n") == expected.texts_in_document_order()
    assert f"stopped by {expected.stopped_by}" in res.stderr
    assert f"{expected.prefilled_tokens} tokens pre-filled" in res.stderr
    # No --lm and a graph with embedding edges: no model (#53), as GarlicSearcher's default.
    assert "loading no LLM, all-MiniLM-L6-v2" in res.stderr and "prompt mode" in res.stderr


def test_query_fill_tokens_reads_on_to_the_leaf_budget(
    runner: CliRunner, saved: Path, item: Any
) -> None:
    args = ["garlic", "query", str(saved), "-q", item.question, "--json", "--fill-tokens", "60"]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    expected = GarlicSearcher(GarlicGraph.load(saved)).search(item.question, fill_tokens=60)
    assert out["stopped_by"] == expected.stopped_by
    assert [v["id"] for v in out["visited"]] == [v.id for v in expected.visited]
    assert out["stopped_by"] in {"filled", "exhausted", "max_steps", "max_tokens"}


def test_query_json_and_report(runner: CliRunner, saved: Path, item: Any, tmp_path: Path) -> None:
    folder = saved
    report = tmp_path / "search.html"
    args = ["garlic", "query", str(folder), "-q", item.question, "--json", "--lm", "smollm2"]
    res = runner.invoke(
        app, [*args, "--patience", "2", "--max-steps", "3", "--report", str(report)]
    )
    assert res.exit_code == 0, res.output
    assert "loading SmolLM2-135M-Instruct" in res.stderr
    out = json.loads(res.stdout)
    assert out["query"] == item.question and out["mode"] == "attention"
    assert out["stopped_by"] in {"patience", "max_steps", "exhausted"}
    assert (
        len(out["trace"]) == len(out["visited"]) - sum(v["step"] == 0 for v in out["visited"]) + 1
    )
    assert sum(s["said_yes"] for s in out["trace"]) <= 2
    assert out["prefilled_tokens"] < out["recompute_tokens"]
    by_id = {v["id"]: v["text"] for v in out["visited"]}
    assert out["texts_in_document_order"] == [by_id[i] for i in out["document_order"]]
    assert f"report written to {report}" in res.stderr
    page = report.read_text(encoding="utf-8")
    assert "<script" not in page.lower() and "Content-Security-Policy" in page
    assert "The Yes/No trace" in page and "The graph, top level first" in page
    # -n 1: the top level is always read, then the first node to add passes the limit
    res = runner.invoke(app, [*args, "-n", "1"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["stopped_by"] in {"max_tokens", "patience"} and len(out["trace"]) == 1


def test_mistakes_are_one_line(
    capsys: pytest.CaptureFixture[str], docs: list[Path], tmp_path: Path
) -> None:
    folder = tmp_path  # a folder, but not a saved graph
    doc = str(docs[0])
    out = str(tmp_path / "g")
    err = _one_line_error(capsys, ["garlic", "query", str(tmp_path / "none"), "-q", "x"])
    assert "no saved graph" in err
    assert "question is empty" in _one_line_error(
        capsys, ["garlic", "query", str(folder), "-q", "  "]
    )
    err = _one_line_error(
        capsys, ["garlic", "query", str(folder), "-q", "x", "--report", f"{doc}/r.html"]
    )
    assert f"{doc} is a file, not a folder" in err
    assert "--max-tokens" in _one_line_error(
        capsys, ["garlic", "query", str(folder), "-q", "x", "-n", "-3"]
    )
    # Limits are refused before the graph (here: not a graph) and the model load.
    for flag in ("--max-steps", "--patience", "--fill-tokens"):
        err = _one_line_error(capsys, ["garlic", "query", str(folder), "-q", "x", flag, "0"])
        assert f"{flag} must be at least 1, got 0" in err
    assert "not written by hrefine" in _one_line_error(
        capsys, ["garlic", "query", str(folder), "-q", "x"]
    )
    assert "edges must be one of" in _one_line_error(
        capsys, ["garlic", "build", doc, "-o", out, "--edges", "cosine"]
    )
    assert "--batch-tokens (500) must exceed --chunk-tokens + --summary-tokens" in _one_line_error(
        capsys,
        ["garlic", "build", doc, "-o", out, "--chunk-tokens", "400", "--batch-tokens", "500"],
    )
    empty = tmp_path / "empty.txt"
    empty.write_text("  \n", encoding="utf-8")
    assert "documents are empty" in _one_line_error(
        capsys, ["garlic", "build", str(empty), "-o", out]
    )
    assert "it is a file" in _one_line_error(capsys, ["garlic", "build", doc, "-o", doc])
    assert "no such file" in _one_line_error(capsys, ["garlic", "build", "missing.txt", "-o", out])
    err = _one_line_error(capsys, ["garlic", "build", doc, "-o", out, "--lm", str(tmp_path / "m")])
    assert str(tmp_path / "m") in err and not Path(out).exists()
