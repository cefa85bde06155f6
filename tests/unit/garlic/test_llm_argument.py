"""#55 item 13: GARLIC takes its model as ``llm=``, as RAPTOR and the adapters do; ``lm=`` (its
earlier name) still works, and giving both is a ConfigError."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_checks import one_line_error
from garlic_fakes import SMALL, garlic_llm
from hrefine._saved import content_digest
from hrefine.cli import app
from hrefine.errors import ConfigError
from hrefine.garlic import GarlicGraph, GarlicOptions, GarlicSearcher
from hrefine.testing import KeywordEmbedder
from typer.testing import CliRunner

CAT = "The cat sat on the mat near the door. Michael Grant wrote about it. " * 12
DOG = "Dogs bark at night in the old city by the river. " * 12


def other_llm(prompt: str) -> str:
    return garlic_llm(prompt)


@pytest.fixture(scope="module")
def emb() -> KeywordEmbedder:
    return KeywordEmbedder(dim=64)


def _build(emb: KeywordEmbedder, **model: Any) -> GarlicGraph:
    return GarlicGraph.build([CAT, DOG], embedder=emb, tokenizer="regex", **model, **SMALL)


@pytest.fixture(scope="module")
def graph(emb: KeywordEmbedder) -> GarlicGraph:
    return _build(emb, llm=garlic_llm)


def test_build_takes_llm_as_it_takes_lm(graph: GarlicGraph, emb: KeywordEmbedder) -> None:
    # Was: ConfigError "GarlicOptions has no setting 'llm'".
    by_lm = _build(emb, lm=garlic_llm)
    assert [n.text for n in graph.tree] == [n.text for n in by_lm.tree]
    assert graph.stats["llm"] == by_lm.stats["llm"]
    with pytest.raises(ConfigError, match="not both"):
        _build(emb, lm=garlic_llm, llm=other_llm)


def test_the_searcher_takes_llm_as_it_takes_lm(graph: GarlicGraph) -> None:
    assert GarlicSearcher(graph, llm=other_llm).lm is other_llm
    assert GarlicSearcher(graph, lm=other_llm).lm is other_llm
    with pytest.raises(ConfigError, match="not both"):
        GarlicSearcher(graph, lm=garlic_llm, llm=other_llm)
    result = GarlicSearcher(graph, llm=garlic_llm).search("Who wrote about the cat?")
    assert result.trace


def test_options_and_load_take_llm(graph: GarlicGraph, tmp_path: Path) -> None:
    assert GarlicOptions.build(llm=other_llm).lm is other_llm
    assert GarlicOptions.build().replace(llm=other_llm).lm is other_llm
    with pytest.raises(ConfigError, match="not both"):
        GarlicOptions.build(llm=other_llm, lm=garlic_llm)
    folder = graph.save(tmp_path / "g")
    loaded = GarlicGraph.load(folder, embedder=graph.embedder, llm=other_llm)
    assert loaded.options.lm is other_llm
    assert GarlicSearcher(loaded).lm is other_llm  # the searcher's default is the graph's
    with pytest.raises(ConfigError, match="not both"):
        GarlicGraph.load(folder, llm=other_llm, lm=garlic_llm)


def test_a_saved_lm_path_gives_way_to_an_llm_passed_to_load(
    graph: GarlicGraph, tmp_path: Path
) -> None:
    folder = graph.save(tmp_path / "g")
    manifest = json.loads((folder / "tree.json").read_text(encoding="utf-8"))
    manifest["config"]["lm"] = "/etc/passwd"
    manifest["content_sha256"] = content_digest(manifest)
    (folder / "tree.json").write_text(json.dumps(manifest), encoding="utf-8")
    # llm= is the same setting as the saved lm, so the caller's wins and the saved is not used.
    assert GarlicGraph.load(folder, embedder=graph.embedder, llm=other_llm).options.lm is other_llm


@pytest.mark.parametrize("command", ["build", "query"])
def test_the_cli_takes_llm_and_lm(command: str) -> None:
    out = CliRunner().invoke(app, ["garlic", command, "--help"]).output
    assert "--llm" in out and "--lm" in out


@pytest.mark.parametrize("flag", ["--llm", "--lm"])
def test_garlic_query_reads_the_model_from_llm_or_lm(
    graph: GarlicGraph, tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str
) -> None:
    folder = graph.save(tmp_path / "g")
    missing = str(tmp_path / "no-such-model")
    line = one_line_error(capsys, ["garlic", "query", str(folder), "-q", "x", flag, missing])
    assert "no-such-model" in line  # the model was looked for: the flag was taken
