"""Errors name what the user typed: a mistake in the root's own options is the usual one line,
and a setting's Python name in an error message shows as the command's flag (the library's own
messages, seen from Python, keep the names)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from cli_checks import one_line_error
from hrefine.cli import main
from hrefine.errors import ConfigError
from test_cli import _cli_env  # noqa: F401  (autouse: quiet model loading, no HREFINE_DEBUG)


@pytest.fixture
def text(tmp_path: Path) -> Path:
    path = tmp_path / "tides.txt"
    path.write_text("Tides rise and fall twice a day. The Moon pulls the sea.\n", encoding="utf-8")
    return path


@pytest.fixture
def page(tmp_path: Path) -> Path:
    path = tmp_path / "page.html"
    path.write_text("<html><body><p>Tides rise and fall.</p></body></html>", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Path:
    """A one-leaf RAPTOR tree, saved (the embedded embedder; no summariser is called)."""
    pytest.importorskip("umap")
    from hrefine.raptor import RaptorTree

    folder = tmp_path_factory.mktemp("raptor") / "tree"
    RaptorTree.build(["Tides rise and fall twice a day."], embedder=embedder).save(folder)
    return folder


def test_a_mistake_in_the_root_options_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    # Was typer's usage lines and a boxed "No such option: --bogus" panel.
    line = one_line_error(capsys, ["--bogus"])
    assert line == "hrefine: error: No such option: --bogus (see hrefine --help)"
    assert one_line_error(capsys, ["--bogus", "raptor"]) == line
    assert one_line_error(capsys, ["nosuchverb"]) == (
        "hrefine: error: No such command 'nosuchverb'. (see hrefine --help)"
    )


@pytest.mark.parametrize("argv", [[], ["raptor"], ["html"]])
def test_a_group_alone_shows_its_help_and_no_error_line(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    # `hrefine raptor` was its help followed by an empty "hrefine: error:  (see ...)" line.
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert "Usage: hrefine" in captured.out and "Commands" in captured.out
    assert captured.err == ""


def test_the_summary_rank_of_a_query_is_named_by_its_flag(
    capsys: pytest.CaptureFixture[str], tree: Path
) -> None:
    argv = ["raptor", "query", str(tree), "-q", "tides", "--summary-rank", "bogus"]
    # Was "summary_rank must be ...", a name the command line does not take.
    assert one_line_error(capsys, argv) == (
        "hrefine: error: --summary-rank must be one of 'free', 'below', 'off', got 'bogus'"
    )
    # A one-word name opening the message is the setting too.
    assert one_line_error(capsys, [*argv[:5], "--mode", "up"]) == (
        "hrefine: error: --mode must be one of 'collapsed', 'traversal', got 'up'"
    )


@pytest.mark.parametrize(
    ("verb", "expected"),
    [
        (
            ["raptor", "build", "{text}", "-o", "{out}", "--chunk-tokens", "3"],
            "--chunk-tokens must be >= 8, got 3",
        ),
        (
            ["garlic", "build", "{text}", "-o", "{out}", "--edges", "bogus"],
            "--edges must be one of 'auto', 'attention', 'embedding', got 'bogus'",
        ),
        (
            ["html", "prune", "{page}", "-q", "tides", "--lm", ""],
            "--lm is an empty string; give a model folder or name, or None for the default",
        ),
        (
            # Only the names the command takes: it has no --dropout.
            ["train", "html-pruner", "--out", "{out}", "--eval-fraction", "2"],
            "dropout and --eval-fraction must be below 1, got dropout=0.05, --eval-fraction=2.0",
        ),
    ],
)
def test_a_setting_is_named_by_the_flag_of_the_verb(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    text: Path,
    page: Path,
    verb: list[str],
    expected: str,
) -> None:
    paths = {"text": text, "page": page, "out": tmp_path / "out"}
    argv = [word.format(**paths) for word in verb]
    assert one_line_error(capsys, argv) == f"hrefine: error: {expected}"
    assert not (tmp_path / "out").exists()


def test_words_and_values_that_match_a_setting_are_left_alone(
    capsys: pytest.CaptureFixture[str], page: Path, tree: Path
) -> None:
    # "scorer" is prose here, and 'max_tokens' is the value typed, not the --max-tokens setting.
    argv = ["html", "prune", str(page), "-q", "tides", "--scorer", "max_tokens"]
    assert one_line_error(capsys, argv) == (
        "hrefine: error: unknown scorer 'max_tokens'; use 'embedding', 'bm25' or "
        "'cross-encoder:<model>'"
    )
    # --question is an option of the query: "question" inside the sentence stays a word.
    argv = ["raptor", "query", str(tree), "-q", "  "]
    assert one_line_error(capsys, argv) == "hrefine: error: the question is empty; give one with -q"


def test_debug_shows_the_library_message_as_it_is(tree: Path) -> None:
    argv = ["--debug", "raptor", "query", str(tree), "-q", "tides", "--summary-rank", "bogus"]
    with pytest.raises(ConfigError, match=r"^summary_rank must be one of"):
        main(argv)
