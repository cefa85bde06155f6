"""Follow-ups of the CLI's one-line errors: a setting named by its flag whatever the option's
spelling, every ``hrefine distributed`` setting checked before Ray starts, an empty model name
refused by every verb, ``--limit`` below 1 refused, and ``--embedder`` on the verbs that embed
(the embedded model given by its folder does what no flag does; a missing one fails first)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_checks import one_line_error
from hrefine.cli import main
from hrefine.errors import ConfigError
from hrefine.models.embedder_folder import default_embedder_path
from test_cli import _cli_env  # noqa: F401  (autouse: quiet model loading, no HREFINE_DEBUG)

#: The embedded all-MiniLM-L6-v2 by its folder: what resolves offline (its name alone does not).
EMBEDDED = str(default_embedder_path())
TEXT = "Tides rise and fall twice a day. The Moon pulls the sea, and the Sun does a little.\n"


@pytest.fixture
def text(tmp_path: Path) -> Path:
    path = tmp_path / "tides.txt"
    path.write_text(TEXT, encoding="utf-8")
    return path


@pytest.fixture
def page(tmp_path: Path) -> Path:
    path = tmp_path / "page.html"
    path.write_text(
        "<html><body><h1>Tides</h1><p>Tides rise and fall twice a day.</p>"
        "<p>Bread is baked in ovens.</p></body></html>",
        encoding="utf-8",
    )
    return path


def _run(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[str, str]:
    """Run ``hrefine argv``, assert it succeeded; its stdout and stderr."""
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 0, err
    return out, err


# -- 1. a setting named by its flag, whatever the option is called -----------------------------
def test_train_steps_is_named_by_its_flag(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # Was "max_steps must be >= 1": the option was called steps, the setting max_steps.
    argv = ["train", "html-pruner", "--out", str(tmp_path / "a"), "--steps", "0"]
    assert one_line_error(capsys, argv) == "hrefine: error: --steps must be >= 1, got 0"


# -- 2. hrefine distributed: every setting checked before Ray starts ---------------------------
class _Reached(ConfigError):
    """Raised by the stand-in of run_stage: the settings got past the checks."""


@pytest.fixture
def stages(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """``run_stage`` replaced: the arguments of each call (none may start Ray here)."""
    import hrefine.distributed

    calls: list[dict[str, Any]] = []

    def run_stage(stage: str, **kwargs: Any) -> None:
        calls.append({"stage": stage, **kwargs})
        raise _Reached("reached run_stage")

    monkeypatch.setattr(hrefine.distributed, "run_stage", run_stage)
    return calls


@pytest.mark.parametrize(
    ("verb", "expected"),
    [
        (["html", "--max-words", "0"], "--max-words must be >= 1, got 0"),
        (
            ["structure", "--structure", "bogus"],
            "--structure must be one of 'auto', 'markup', 'model', 'paragraphs', got 'bogus'",
        ),
        (
            ["structure", "--structure", "model"],
            "--structure model needs a model: give --lm (a model folder, a cached name, or "
            "default)",
        ),
        (["raptor", "--chunk-tokens", "3"], "--chunk-tokens must be >= 8, got 3"),
        (
            ["garlic", "--edges", "bogus"],
            "--edges must be one of 'auto', 'attention', 'embedding', got 'bogus'",
        ),
        (
            ["refine", "--method", "bogus"],
            "--method must be one of 'longrefiner', 'htmlrag', got 'bogus'",
        ),
        (
            ["refine", "--method", "htmlrag", "--scorer", "bogus"],
            "unknown scorer 'bogus'; use 'embedding', 'bm25' or 'cross-encoder:<model>'",
        ),
        (["refine", "--max-tokens", "0"], "--max-tokens must be >= 1, got 0"),
    ],
)
def test_a_distributed_setting_fails_before_ray_starts(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    stages: list[dict[str, Any]],
    verb: list[str],
    expected: str,
) -> None:
    # Were checked in the actors only: a traceback (ActorDiedError), or every row failed.
    argv = ["distributed", *verb, "-i", str(tmp_path / "in.jsonl"), "-o", str(tmp_path / "out")]
    assert one_line_error(capsys, argv) == f"hrefine: error: {expected}"
    assert stages == []


def test_good_distributed_settings_reach_the_run(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, stages: list[dict[str, Any]]
) -> None:
    where = ["-i", str(tmp_path / "in.jsonl"), "-o", str(tmp_path / "out"), "--quiet"]
    for verb in (
        ["structure", "--structure", "model", "--lm", "default"],
        ["refine", "--method", "htmlrag", "--scorer", "BM25"],
        ["raptor", "--llm", "smollm2"],
    ):
        assert one_line_error(capsys, ["distributed", *verb, *where]).endswith("reached run_stage")
    assert stages[0]["settings"] == {"structure": "model", "lm": "default"}
    assert stages[1]["settings"] == {"scorer": "BM25"} and stages[1]["method"] == "htmlrag"
    assert stages[2]["settings"]["llm"] == "smollm2"


# -- 3. an empty model name ---------------------------------------------------------------------
@pytest.mark.parametrize(
    ("verb", "flag"),
    [
        (["garlic", "build", "{text}", "-o", "{out}", "--lm", ""], "--lm"),
        (["garlic", "build", "{text}", "-o", "{out}", "--llm", " "], "--llm"),
        (["garlic", "query", "{folder}", "-q", "tides", "--llm", ""], "--llm"),
        (["raptor", "build", "{text}", "-o", "{out}", "--llm", ""], "--llm"),
        (["refine", "{text}", "-q", "tides", "-n", "50", "--lm", ""], "--lm"),
        (["refine", "{text}", "-q", "tides", "-n", "50", "--lm", "  "], "--lm"),
        (["train", "html-pruner", "--out", "{out}", "--lm", ""], "--lm"),
        (["train", "build-data", "html-pruner", "-o", "{out}/x.jsonl", "--lm", ""], "--lm"),
        (["distributed", "structure", "-i", "{text}", "-o", "{out}", "--lm", ""], "--lm"),
        (["distributed", "raptor", "-i", "{text}", "-o", "{out}", "--llm", ""], "--llm"),
        (["distributed", "garlic", "-i", "{text}", "-o", "{out}", "--lm", ""], "--lm"),
    ],
)
def test_an_empty_model_name_is_refused_as_html_prune_refuses_it(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    text: Path,
    stages: list[dict[str, Any]],
    verb: list[str],
    flag: str,
) -> None:
    # Was a model loaded from '.' (the working folder), or (raptor) no model at all.
    folder = tmp_path / "saved"
    folder.mkdir()
    argv = [w.format(text=text, out=tmp_path / "out", folder=folder) for w in verb]
    assert one_line_error(capsys, argv) == (
        f"hrefine: error: {flag} is an empty string; give a model folder or name, or None for "
        "the default"
    )
    assert not (tmp_path / "out").exists()


# -- 4. --limit below 1 ---------------------------------------------------------------------------
def test_build_data_refuses_a_limit_below_one(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # Was "built 0 html-pruner examples ...", exit status 0, and an empty file written.
    out = tmp_path / "ex.jsonl"
    argv = ["train", "build-data", "html-pruner", "-o", str(out), "--limit", "0"]
    assert one_line_error(capsys, argv) == (
        "hrefine: error: --limit must be at least 1 question per source, got 0"
    )
    assert not out.exists()


# -- 5. --embedder ----------------------------------------------------------------------------
#: A verb that scores with the embedder, what it prints, and what the output holds.
_SCORING = {
    "html prune": (["html", "prune", "{page}", "-q", "When do tides rise?", "-n", "16"], "Tides"),
    "refine": (
        ["refine", "{text}", "-q", "What pulls the sea?", "-n", "20", "--no-show-structure"],
        "Moon",
    ),
}


@pytest.mark.parametrize("verb", list(_SCORING))
def test_a_scoring_verb_takes_an_embedder(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, text: Path, page: Path, verb: str
) -> None:
    words, found = _SCORING[verb]
    argv = [w.format(text=text, page=page) for w in words]
    plain, said = _run(capsys, argv)
    given, said_given = _run(capsys, [*argv, "--embedder", EMBEDDED])
    assert given == plain and found in given
    assert said.startswith("loading all-MiniLM-L6-v2 and")
    assert said_given.startswith(f"loading the embedder {EMBEDDED!r} and")
    missing = str(tmp_path / "missing")
    line = one_line_error(capsys, [*argv, "--embedder", missing])
    assert line.startswith(f"hrefine: error: embedding model {missing!r} is not a folder")
    # The HTML pruner's options refuse it; LongRefiner's would ignore it: the CLI refuses it.
    assert one_line_error(capsys, [*argv, "--embedder", EMBEDDED, "--scorer", "BM25"]) == (
        "hrefine: error: an embedder was given with scorer='bm25', which does not use one; "
        "use scorer='embedding' to score with it, or leave the embedder out"
    )


def _config(folder: Path) -> dict[str, Any]:
    config: dict[str, Any] = json.loads((folder / "tree.json").read_text())["config"]
    return config


def test_garlic_build_and_query_take_an_embedder(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, text: Path
) -> None:
    plain, given = tmp_path / "plain", tmp_path / "given"
    _run(capsys, ["garlic", "build", str(text), "-o", str(plain), "--quiet"])
    _, said = _run(capsys, ["garlic", "build", str(text), "-o", str(given), "--embedder", EMBEDDED])
    assert said.startswith(f"loading no LLM, the embedder {EMBEDDED!r} and")
    # Saved with the graph (a keyword of the build was not), so a query embeds with it too.
    assert _config(given)["embedder"] == EMBEDDED and _config(plain)["embedder"] is None
    query = ["-q", "What pulls the sea?"]
    out_plain, _ = _run(capsys, ["garlic", "query", str(plain), *query])
    out_given, said = _run(capsys, ["garlic", "query", str(given), *query, "--embedder", EMBEDDED])
    assert out_given == out_plain and "Moon" in out_given
    assert said.startswith(f"loading no LLM, the embedder {EMBEDDED!r} and")
    # A folder outside the graph's is not opened unless given again.
    assert "saved embedder" in one_line_error(capsys, ["garlic", "query", str(given), *query])
    missing = str(tmp_path / "missing")
    for argv in (
        ["garlic", "build", str(text), "-o", str(tmp_path / "new"), "--embedder", missing],
        ["garlic", "query", str(plain), *query, "--embedder", missing],
    ):
        line = one_line_error(capsys, argv)
        assert line.startswith(f"hrefine: error: embedding model {missing!r} is not a folder")
    assert not (tmp_path / "new").exists()


def test_raptor_build_saves_the_embedder_it_was_given(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, text: Path
) -> None:
    pytest.importorskip("umap")
    plain, given = tmp_path / "plain", tmp_path / "given"
    _run(capsys, ["raptor", "build", str(text), "-o", str(plain), "--quiet"])
    _run(
        capsys, ["raptor", "build", str(text), "-o", str(given), "--quiet", "--embedder", EMBEDDED]
    )
    # Was None: the name went to the build as a keyword, which is not saved.
    assert _config(given)["embedder"] == EMBEDDED
    query = ["-q", "What pulls the sea?", "--json"]
    out_plain, _ = _run(capsys, ["raptor", "query", str(plain), *query])
    out_given, _ = _run(capsys, ["raptor", "query", str(given), *query, "--embedder", EMBEDDED])
    assert out_given == out_plain
    missing = str(tmp_path / "missing")
    argv = ["raptor", "build", str(text), "-o", str(tmp_path / "new"), "--embedder", missing]
    line = one_line_error(capsys, argv)  # before the build's progress lines
    assert line.startswith(f"hrefine: error: embedding model {missing!r} is not a folder")
