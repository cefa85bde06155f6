"""#55 item 2: a saved folder names models only by model names or files inside itself.

A saved tree's settings are opened on load (its tokenizer at once, its embedder at the first
query), so a forged ``tokenizer='/etc/passwd'`` read that file and failed with a raw tokenizers
exception, and a tokenizer or embedder elsewhere on disk was loaded silently. Such a setting is
now a PersistenceError that says to pass the model to the load, and a model the caller passes
wins without the saved one being opened.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from cli_checks import one_line_error
from garlic_fakes import SMALL, garlic_llm
from hrefine._saved import content_digest
from hrefine.budget import RegexCounter
from hrefine.errors import PersistenceError
from hrefine.garlic import GarlicGraph
from hrefine.raptor import RaptorTree
from hrefine.testing import KeywordEmbedder
from raptor_fakes import summary_of

CAT = "The cat sat on the mat near the door. Michael Grant wrote about it. " * 12
DOG = "Dogs bark at night in the old city by the river. " * 12


@pytest.fixture(scope="module")
def emb() -> KeywordEmbedder:
    return KeywordEmbedder(dim=64)


@pytest.fixture(scope="module")
def raptor(emb: KeywordEmbedder) -> RaptorTree:
    return RaptorTree.build(
        [CAT, DOG], llm=summary_of, embedder=emb, tokenizer="regex", reduction_dim=16
    )


@pytest.fixture(scope="module")
def graph(emb: KeywordEmbedder) -> GarlicGraph:
    return GarlicGraph.build([CAT, DOG], lm=garlic_llm, embedder=emb, tokenizer="regex", **SMALL)


def _tokenizer_json(path: Path) -> Path:
    """A small real tokenizer.json (word level), so that opening it would succeed."""
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace

    tok = Tokenizer(WordLevel({"[UNK]": 0, "cat": 1, "dog": 2}, unk_token="[UNK]"))
    tok.pre_tokenizer = Whitespace()  # type: ignore[assignment]
    path.parent.mkdir(parents=True, exist_ok=True)
    tok.save(str(path))
    return path


def _saved(obj: RaptorTree | GarlicGraph, folder: Path, **config: Any) -> Path:
    """``obj`` saved in ``folder``, its saved settings then forged with ``config`` (the content
    checksum made anew, as a forger would)."""
    obj.save(folder)
    manifest = json.loads((folder / "tree.json").read_text(encoding="utf-8"))
    manifest["config"].update(config)
    manifest["content_sha256"] = content_digest(manifest)
    (folder / "tree.json").write_text(json.dumps(manifest), encoding="utf-8")
    return folder


def _outside_values(tmp_path: Path) -> list[object]:
    elsewhere = _tokenizer_json(tmp_path / "elsewhere" / "tokenizer.json")
    return [
        "/etc/passwd",  # was: read, then a raw tokenizers exception
        str(elsewhere),  # was: loaded silently
        str(elsewhere.parent),  # a model folder elsewhere
        "../elsewhere/tokenizer.json",  # out of the folder by '..'
        "~/tokenizer.json",
        7,  # not a name at all
    ]


@pytest.mark.parametrize("setting", ["tokenizer", "embedder"])
def test_a_raptor_tree_naming_a_path_outside_its_folder_is_refused(
    raptor: RaptorTree, emb: KeywordEmbedder, tmp_path: Path, setting: str
) -> None:
    for i, value in enumerate(_outside_values(tmp_path)):
        folder = _saved(raptor, tmp_path / f"t{i}", **{setting: value})
        with pytest.raises(PersistenceError, match=f"saved {setting}") as err:
            RaptorTree.load(folder)
        assert f"RaptorTree.load(path, {setting}=...)" in str(err.value)


@pytest.mark.parametrize("setting", ["tokenizer", "embedder"])
def test_a_garlic_graph_naming_a_path_outside_its_folder_is_refused(
    graph: GarlicGraph, tmp_path: Path, setting: str
) -> None:
    for i, value in enumerate(_outside_values(tmp_path)):
        folder = _saved(graph, tmp_path / f"g{i}", **{setting: value})
        with pytest.raises(PersistenceError, match=f"saved {setting}") as err:
            GarlicGraph.load(folder)
        assert f"GarlicGraph.load(path, {setting}=...)" in str(err.value)


def test_a_relative_path_to_the_working_directory_is_refused(
    raptor: RaptorTree, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A name-shaped value that is a file where the caller runs would be opened there.
    _tokenizer_json(tmp_path / "work" / "tok" / "tokenizer.json")
    monkeypatch.chdir(tmp_path / "work")
    folder = _saved(raptor, tmp_path / "t", tokenizer="tok/tokenizer.json")
    with pytest.raises(PersistenceError, match="outside the saved folder"):
        RaptorTree.load(folder)


def test_a_link_inside_the_folder_to_a_file_elsewhere_is_refused(
    raptor: RaptorTree, tmp_path: Path
) -> None:
    target = _tokenizer_json(tmp_path / "elsewhere" / "tokenizer.json")
    folder = _saved(raptor, tmp_path / "t", tokenizer="tok.json")
    os.symlink(target, folder / "tok.json")
    with pytest.raises(PersistenceError, match="saved tokenizer"):
        RaptorTree.load(folder)


def test_models_the_caller_passes_win_and_the_saved_ones_are_not_opened(
    raptor: RaptorTree, graph: GarlicGraph, emb: KeywordEmbedder, tmp_path: Path
) -> None:
    forged = {"tokenizer": "/etc/passwd", "embedder": "/etc"}
    tree = RaptorTree.load(
        _saved(raptor, tmp_path / "t", **forged), tokenizer="regex", embedder=emb
    )
    assert isinstance(tree.counter, RegexCounter)
    # The caller's tokenizer name is the tree's now (a save records it); the forged ones unread.
    assert tree.options.tokenizer == "regex" and tree.options.embedder is None
    assert tree.retrieve("Who wrote about the cat?", k=2)
    loaded = GarlicGraph.load(
        _saved(graph, tmp_path / "g", **forged), embedder=emb, tokenizer="regex"
    )
    assert loaded.options.tokenizer == "regex" and loaded.options.embedder is None
    assert loaded.embedder is emb


def test_model_names_and_files_inside_the_folder_are_used(
    raptor: RaptorTree, emb: KeywordEmbedder, tmp_path: Path
) -> None:
    folder = _saved(raptor, tmp_path / "t", tokenizer="regex", embedder="org/some-model")
    tree = RaptorTree.load(folder, embedder=None)
    assert isinstance(tree.counter, RegexCounter)
    assert tree.options.embedder == "org/some-model"  # a name: resolved by the embedder later
    inside = _saved(raptor, tmp_path / "u", tokenizer="tokenizer.json")
    _tokenizer_json(inside / "tokenizer.json")
    tree = RaptorTree.load(inside, embedder=emb)
    assert tree.options.tokenizer == str((inside / "tokenizer.json").resolve())
    assert tree.counter.count("cat dog bird") == 3


def test_the_cli_refuses_a_forged_tree_in_one_line(
    raptor: RaptorTree, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _saved(raptor, tmp_path / "t", tokenizer="/etc/passwd", embedder="/etc")
    query = ["raptor", "query", str(folder), "-q", "x"]
    # Each forged model is refused unless given; the one given is used instead (not opened).
    line = one_line_error(capsys, [*query, "--embedder", "org/some-model"])
    assert "saved tokenizer '/etc/passwd'" in line and "--tokenizer" in line
    line = one_line_error(capsys, [*query, "--tokenizer", "regex"])
    assert "saved embedder '/etc'" in line and "--embedder" in line
