"""``hrefine raptor build`` and ``hrefine raptor query`` through typer's runner and ``main``:
queries on a tree saved by the core API (with a fast fake summariser), builds with the real
embedded models, and every mistake as one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_checks import one_line_error as _one_line_error
from hrefine.budget import default_counter
from hrefine.cli import app
from hrefine.eval import load_dataset
from hrefine.raptor import RaptorTree, Source
from hrefine.raptor.cli import read_sources
from hrefine.raptor.extractive import sentences
from typer.testing import CliRunner

pytest.importorskip("umap")

QUESTION = "What made it easier for previous presidents to get away with adultery?"


#: Three paragraphs that make three leaves and one summary (the builds below).
TIDES = (
    "Tides are the rise and fall of sea levels caused by the gravity of the Moon and the "
    "Sun. Most coasts see two high tides and two low tides each day.\n\n"
    "Spring tides happen at new and full moon, when the Sun and Moon pull in line, and "
    "their range is largest. Neap tides happen at the quarter moons.\n\n"
    "Tidal power stations, such as La Rance in France, turn the flow of the tide into "
    "electricity with turbines in a barrage across an estuary."
)


@pytest.fixture(autouse=True)
def _cli_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    monkeypatch.setenv("TRANSFORMERS_VERBOSITY", "error")
    monkeypatch.delenv("HREFINE_DEBUG", raising=False)


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


def echo_llm(prompt: str) -> str:
    """A fast fake summariser: the first 50 words of the texts it is given."""
    return " ".join(prompt.split(":", 1)[1].split()[:50])


def _opening(text: str, tokens: int) -> str:
    counter = default_counter()
    kept: list[str] = []
    for line in text.split("\n"):
        if counter.count("\n".join([*kept, line])) > tokens:
            break
        kept.append(line)
    return "\n".join(kept)


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> tuple[Path, RaptorTree]:
    """A tree over the opening of a real QuALITY story, saved; and the tree itself."""
    item = next(it for it in load_dataset("quality") if it.doc_id == "quality_01")
    doc = Source(_opening(item.document, 1800), {"source": "quality_01"}, "quality_01")
    # Summaries compete (the paper's ranking), so the queries below can return them.
    tree = RaptorTree.build([doc], llm=echo_llm, max_tokens=300, summary_rank="free")
    assert tree.layers >= 1
    folder = tmp_path_factory.mktemp("raptor") / "tree"
    tree.save(folder)
    return folder, tree


def test_query_lists_the_same_nodes_as_the_library(
    runner: CliRunner, saved: tuple[Path, RaptorTree]
) -> None:
    folder, tree = saved
    res = runner.invoke(app, ["raptor", "query", str(folder), "-q", QUESTION])
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    expected = tree.retrieve(QUESTION)
    assert len(lines) == len(expected)
    for rank, (line, node) in enumerate(zip(lines, expected, strict=True), 1):
        assert line.lstrip().startswith(f"{rank}. layer {node.layer} {node.kind}")
        assert f"#{node.id} " in line and f"score {node.score:.3f}" in line
        assert node.text.split()[0] in line
    used = sum(n.tokens for n in expected)
    assert f"{len(expected)} nodes, {used} tokens of 300 (collapsed" in res.stderr


def test_query_json_traversal_and_budget(runner: CliRunner, saved: tuple[Path, RaptorTree]) -> None:
    folder, tree = saved
    args = ["raptor", "query", str(folder), "-q", QUESTION, "--json"]
    res = runner.invoke(app, [*args, "--mode", "traversal", "--k", "2", "-n", "250"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    expected = tree.retrieve(QUESTION, mode="traversal", k=2, max_tokens=250)
    assert [n["id"] for n in out["nodes"]] == [n.id for n in expected]
    assert out["mode"] == "traversal" and out["k"] == 2 and out["max_tokens"] == 250
    assert out["tokens"] == sum(n["tokens"] for n in out["nodes"]) <= 250
    leaf = next(n for n in out["nodes"] if n["kind"] == "chunk")
    assert leaf["metadata"]["source"] == "quality_01" and leaf["sources"] == [0]
    # 0 means no limit: every node comes back, best first
    res = runner.invoke(app, [*args, "--k", "0", "-n", "0"])
    assert res.exit_code == 0, res.output
    everything = json.loads(res.stdout)["nodes"]
    # Every node, but summaries whose every sentence the returned nodes already hold.
    returned = {n["id"] for n in everything}
    said = {s for n in everything for s in sentences(n["text"])}
    for node in tree.tree:
        assert node.id in returned or set(sentences(node.text)) <= said
    assert [n["id"] for n in everything] == [
        n.id for n in tree.retrieve(QUESTION, k=None, max_tokens=None)
    ]
    scores = [n["score"] for n in everything]
    assert scores == sorted(scores, reverse=True)


def test_summary_rank_is_set_for_one_query(
    runner: CliRunner, saved: tuple[Path, RaptorTree]
) -> None:
    folder, tree = saved
    args = ["raptor", "query", str(folder), "-q", QUESTION, "--json", "-n", "600"]
    kinds = {}
    for rank in ("free", "off"):
        res = runner.invoke(app, [*args, "--summary-rank", rank])
        assert res.exit_code == 0, res.output
        nodes = json.loads(res.stdout)["nodes"]
        expected = tree.retrieve(QUESTION, max_tokens=600, summary_rank=rank)
        assert [n["id"] for n in nodes] == [n.id for n in expected]
        kinds[rank] = {n["kind"] for n in nodes}
    assert kinds == {"free": {"chunk", "summary"}, "off": {"chunk"}}
    assert RaptorTree.load(folder).options.summary_rank == "free"  # the saved tree is kept
    res = runner.invoke(app, [*args, "--summary-rank", "sideways"])
    assert res.exit_code != 0 and "--summary-rank must be one of" in res.output


def test_query_writes_a_report(
    runner: CliRunner, saved: tuple[Path, RaptorTree], tmp_path: Path
) -> None:
    folder, tree = saved
    report = tmp_path / "r.html"
    res = runner.invoke(
        app, ["raptor", "query", str(folder), "-q", QUESTION, "--report", str(report)]
    )
    assert res.exit_code == 0, res.output
    assert f"report written to {report}" in res.stderr
    page = report.read_text(encoding="utf-8")
    assert "<script" not in page
    for node in tree.retrieve(QUESTION):
        assert f'class="node hit" id="n{node.id}"' in page


def test_build_reads_files_and_stdin_and_saves_a_queryable_tree(
    runner: CliRunner, tmp_path: Path
) -> None:
    # One short document is one leaf: no cluster, no summary, so the LLM is never called.
    page = tmp_path / "page.html"
    page.write_text(
        "<html><head><script>var x = 1;</script></head><body><h1>Tides</h1>"
        "<p>The Moon's gravity raises two bulges of water, so most coasts see two high "
        "tides a day.</p></body></html>",
        encoding="utf-8",
    )
    out = tmp_path / "tree"
    res = runner.invoke(app, ["raptor", "build", str(page), "-o", str(out), "--quiet"])
    assert res.exit_code == 0, res.output
    assert "built 1 leaves, 0 summary layers (nodes per layer 1), 0 LLM calls" in res.stderr
    assert res.stderr.count("\n") == 1  # --quiet: only the closing line
    res = runner.invoke(app, ["raptor", "query", str(out), "-q", "how many high tides?", "--json"])
    assert res.exit_code == 0, res.output
    (node,) = json.loads(res.stdout)["nodes"]
    assert node["text"].startswith("Tides\nThe Moon's gravity")  # HTML read as its text
    assert "var x" not in node["text"] and node["metadata"]["source"] == str(page)
    # stdin, Markdown read as it is
    res = runner.invoke(
        app, ["raptor", "build", "-", "-o", str(out), "--chunk-tokens", "50"], input="# Notes\n\nA."
    )
    assert res.exit_code == 0, res.output
    assert "embedding 1 leaves" in res.stderr  # the progress lines
    assert RaptorTree.load(out).options.chunk_tokens == 50


def test_a_build_with_no_model_reports_no_llm_calls(runner: CliRunner, tmp_path: Path) -> None:
    # Was "1 LLM calls": the extractive stand-in's extract was counted as an LLM call.
    text = tmp_path / "tides.txt"
    text.write_text(TIDES, encoding="utf-8")
    out = tmp_path / "tree"
    build = ["raptor", "build", str(text), "-o", str(out), "--chunk-tokens", "40", "--quiet"]
    res = runner.invoke(app, build)
    assert res.exit_code == 0, res.output
    summaries = [n for n in RaptorTree.load(out).tree if n.level >= 1]
    assert summaries  # the stand-in wrote summaries, and no LLM was called for them
    assert f"summary layers (nodes per layer 3 / {len(summaries)}), 0 LLM calls" in res.stderr


def test_read_sources_decodes_and_converts(tmp_path: Path) -> None:
    utf16 = tmp_path / "notes.txt"
    utf16.write_text("Caf\u00e9 au lait, na\u00efve r\u00e9sum\u00e9.", encoding="utf-16")
    md = tmp_path / "notes.md"
    md.write_text("# Title\n\n<b>bold</b> stays as written", encoding="utf-8")
    html_doc = tmp_path / "a.htm"
    html_doc.write_bytes(
        b'<meta charset="latin-1"><p>Caf\xe9 <b>cr\xe8me</b></p><script>x()</script>'
    )
    a, b, c = read_sources([str(utf16), str(md), str(html_doc)])
    assert a.text == "Caf\u00e9 au lait, na\u00efve r\u00e9sum\u00e9."
    assert b.text == "# Title\n\n<b>bold</b> stays as written" and b.id == str(md)
    assert c.text == "Caf\u00e9 cr\u00e8me"


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["raptor", "build", "/no/such.txt", "-o", "{tmp}/t"], "no such file: /no/such.txt"),
        (["raptor", "build", "{tmp}", "-o", "{tmp}/t"], "is a folder"),
        (["raptor", "build", "https://x.org/a", "-o", "{tmp}/t"], "looks like a URL"),
        (["raptor", "build", "{tmp}/doc.pdf", "-o", "{tmp}/t"], "PDF"),
        (["raptor", "build", "{tmp}/empty.txt", "-o", "{tmp}/t"], "documents are empty"),
        (["raptor", "build", "{tmp}/doc.txt", "-o", "{tmp}/doc.txt"], "it is a file"),
        (["raptor", "build", "{tmp}/doc.txt", "-o", "{tmp}/doc.txt/t"], "is a file, not a folder"),
        (["raptor", "build", "-", "-", "-o", "{tmp}/t"], "more than once"),
        (["raptor", "build", "{tmp}/doc.txt", "-o", "{tmp}/t", "--chunk-tokens", "2"], "chunk"),
        (["raptor", "build", "{tmp}/doc.txt", "-o", "{tmp}/t", "--llm", "{tmp}/no-lm"], "no-lm"),
        (["raptor", "query", "{tmp}/none", "-q", "x"], "no saved tree at"),
        (["raptor", "query", "{tmp}", "-q", "x"], "{tmp}"),
    ],
)
def test_mistakes_are_one_line_errors(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str], expected: str
) -> None:
    (tmp_path / "doc.pdf").write_bytes(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<<>>\nendobj\n")
    (tmp_path / "empty.txt").write_text("  \n", encoding="utf-8")
    (tmp_path / "doc.txt").write_text("Some words.", encoding="utf-8")
    args = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    err = _one_line_error(capsys, args)
    assert expected.replace("{tmp}", str(tmp_path)) in err


def test_query_mistakes_on_a_saved_tree_are_one_line_errors(
    capsys: pytest.CaptureFixture[str], saved: tuple[Path, RaptorTree], tmp_path: Path
) -> None:
    folder, _ = saved
    base = ["raptor", "query", str(folder)]
    assert "question is empty" in _one_line_error(capsys, [*base, "-q", "  "])
    assert "--k must be a positive" in _one_line_error(capsys, [*base, "-q", "x", "--k", "-1"])
    assert "mode must be one of" in _one_line_error(capsys, [*base, "-q", "x", "--mode", "up"])
    assert "smaller than the smallest" in _one_line_error(capsys, [*base, "-q", "x", "-n", "1"])
    (tmp_path / "notes.txt").write_text("a file where a folder would go", encoding="utf-8")
    bad = str(tmp_path / "notes.txt" / "r.html")  # a missing folder is made; a file is not one
    assert "not a folder" in _one_line_error(capsys, [*base, "-q", "x", "--report", bad])
    # a saved tree whose embeddings were truncated
    copy = tmp_path / "truncated"
    copy.mkdir()
    for f in folder.iterdir():
        data = f.read_bytes()
        (copy / f.name).write_bytes(data[: len(data) // 2] if f.suffix == ".npy" else data)
    err = _one_line_error(capsys, ["raptor", "query", str(copy), "-q", "x"])
    assert str(copy) in err or "embeddings" in err


def test_doctor_lists_the_raptor_packages(runner: CliRunner) -> None:
    from hrefine.cli import _PACKAGES

    assert {"umap-learn", "scikit-learn"} <= set(_PACKAGES)


@pytest.mark.lm
def test_build_with_the_embedded_models(runner: CliRunner, tmp_path: Path) -> None:
    """The real path: SmolLM2 writes the summary of a cluster of real leaves."""
    text = tmp_path / "tides.txt"
    text.write_text(TIDES, encoding="utf-8")
    out = tmp_path / "tree"
    res = runner.invoke(
        app,
        [
            *("raptor", "build", str(text), "-o", str(out)),
            *("--chunk-tokens", "40", "--summary-tokens", "24", "--llm", "smollm2"),
        ],
    )
    assert res.exit_code == 0, res.output
    assert "layer 1: summarising" in res.stderr and "summary layers" in res.stderr
    tree = RaptorTree.load(out)
    summaries = [n for n in tree.tree if n.level >= 1]
    assert summaries and all(n.text.strip() and n.children for n in summaries)
    assert f"{len(summaries)} LLM calls" in res.stderr
    query = ["raptor", "query", str(out), "-q", "what causes tides?"]
    res = runner.invoke(app, query)  # the default: leaves only
    assert res.exit_code == 0, res.output
    assert "layer 0 chunk" in res.stdout and "summary" not in res.stdout
    res = runner.invoke(app, [*query, "--summary-rank", "free"])
    assert res.exit_code == 0, res.output
    assert "layer 1 summary" in res.stdout


def test_demo_raptor_part_on_a_real_story(shared_data: Path) -> None:
    """The demo's RAPTOR part, with the fast fake summariser in place of SmolLM2."""
    from hrefine._demo import RAPTOR_BUDGET, run_raptor_demo
    from rich.console import Console

    console = Console(record=True, width=120)
    summary = run_raptor_demo(data=shared_data, console=console, llm=echo_llm)
    text = console.export_text()
    assert summary["doc"] == "quality_01"  # the shortest story
    assert len(summary["nodes_per_layer"]) >= 2 and summary["nodes_per_layer"][0] > 5
    assert summary["retrieved"] and summary["tokens"] <= RAPTOR_BUDGET
    assert f"Retrieved for {summary['question']!r}" in text
    assert "gold option:" in text and "Tree built in" in text and "summaries written" in text


@pytest.mark.lm
@pytest.mark.slow
def test_demo_with_the_embedded_models(runner: CliRunner, shared_data: Path) -> None:
    """``hrefine demo``: HtmlRAG, then RAPTOR with SmolLM2 (minutes on a busy CPU)."""
    res = runner.invoke(app, ["demo", "--max-tokens", "512", "--data", str(shared_data)])
    assert res.exit_code == 0, res.output
    assert "answer kept on" in res.stdout and "hrefine demo: RAPTOR" in res.stdout
    assert "layer 1: summarising" in res.stderr and "gold option:" in res.stdout
