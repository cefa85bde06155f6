"""Options shared by the methods of one run: each method gets the ones it takes."""

from __future__ import annotations

from pathlib import Path

import pytest
from hrefine.errors import ConfigError, UnknownSettingError
from hrefine.eval import run_many
from hrefine.eval.baselines import ChunkCompressor
from hrefine.eval.methods import build_methods, get_method
from hrefine.models import default_embedder, get_embedder


def test_each_method_of_a_run_gets_the_options_it_takes() -> None:
    made = build_methods(["lead-text", "chunks-bm25"], {"chunk_tokens": 48}, tokenizer="regex")
    (lead, lead_left), (chunks, chunks_left) = made
    assert lead_left == ("chunk_tokens",) and chunks_left == ()
    assert isinstance(chunks, ChunkCompressor) and chunks.chunk_tokens == 48
    assert getattr(lead, "name", "") == "lead-text"


def test_an_option_no_method_of_the_run_takes_is_refused() -> None:
    with pytest.raises(ConfigError, match="no method of the run takes option 'chunk_tokenz'"):
        build_methods(["lead-text", "chunks-bm25"], {"chunk_tokenz": 48}, tokenizer="regex")


def test_one_method_alone_must_take_every_option() -> None:
    with pytest.raises(UnknownSettingError, match="'lead-text' takes no option 'chunk_tokens'"):
        build_methods(["lead-text"], {"chunk_tokens": 48}, tokenizer="regex")
    with pytest.raises(UnknownSettingError) as caught:
        get_method("lead-text", tokenizer="regex", chunk_tokens=48, seed=1)
    assert caught.value.unknown == ("chunk_tokens", "seed")


def test_a_bad_value_for_an_option_a_method_takes_is_still_an_error() -> None:
    with pytest.raises(ConfigError, match="chunk_tokens must be >= 1"):
        build_methods(["lead-text", "chunks-bm25"], {"chunk_tokens": 0}, tokenizer="regex")


def test_a_run_records_the_options_a_method_ran_without(tmp_path: Path) -> None:
    path = tmp_path / "mine.jsonl"
    path.write_text(
        '{"id": "a", "question": "where is alpha?", "answers": ["alpha"], '
        '"document": "alpha beta gamma. delta epsilon."}\n',
        encoding="utf-8",
    )
    lead, chunks = run_many(
        ["lead-text", "chunks-bm25"],
        [str(path)],
        [8],
        method_options={"chunk_tokens": 4},
        tokenizer="regex",
    )
    assert lead.meta["options_not_taken"] == ["chunk_tokens"]
    assert "options_not_taken" not in chunks.meta
    assert chunks.n_items == 1 and not chunks.skipped


def test_the_embedded_embedder_is_taken_by_its_own_names() -> None:
    # Not a cache lookup (that would fail offline): the embedded copy.
    assert get_embedder("all-MiniLM-L6-v2") is default_embedder()
    assert get_embedder("sentence-transformers/all-MiniLM-L6-v2") is default_embedder()


def test_the_cli_says_which_method_runs_without_an_option(
    capsys: pytest.CaptureFixture[str], shared_data: Path, tmp_path: Path
) -> None:
    from cli_checks import one_line_error
    from hrefine.cli import main

    base = ["eval", "-d", "articles", "-n", "1", "-b", "64", "--tokenizer", "regex"]
    base += ["--data-dir", str(shared_data), "--no-progress", "-o", str(tmp_path / "out")]
    code = main([*base, "-m", "lead-text,chunks-bm25", "--option", "chunk_tokens=48"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "note: lead-text takes no option chunk_tokens; it runs without" in err
    line = one_line_error(capsys, [*base, "-m", "lead-text,chunks-bm25", "--option", "chunk=48"])
    assert "no method of the run takes option 'chunk'" in line
