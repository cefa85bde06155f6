"""Budgets counted in tiktoken's encodings: by encoding or OpenAI model name, or a
``tiktoken.Encoding``; read from data on disk, never fetched, with a clear error when it is
not there."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import hrefine._tiktoken as tk
import pytest
from hrefine.budget import get_counter
from hrefine.errors import MissingDependencyError, ModelNotFoundError
from hrefine.html import HtmlPruner

tiktoken = pytest.importorskip("tiktoken")

TEXT = "Budgets in GPT-4o tokens: <|endoftext|> counts as text, 東京 too."
PAGE = (
    "<html><body><h1>Rivers</h1><p>The Volga is the longest river of Europe.</p>"
    "<p>The Rhine reaches the North Sea at Rotterdam.</p></body></html>"
)


def _data_file(encoding: str) -> Path:
    """Where this machine keeps the encoding's data (the test needs it on disk)."""
    folder = tk._data_folder(encoding)
    if folder is None:
        pytest.skip(f"tiktoken's {encoding} data is not on this machine")
    url = tk.ENCODING_FILES[encoding][0]
    return folder / hashlib.sha1(url.encode()).hexdigest()


@pytest.mark.parametrize(
    ("name", "encoding"),
    [("gpt-4o", "o200k_base"), ("o200k_base", "o200k_base"), ("cl100k_base", "cl100k_base")],
)
def test_a_tiktoken_name_counts_in_its_encoding(name: str, encoding: str) -> None:
    _data_file(encoding)
    counter = get_counter(name)
    assert counter.name == encoding
    ids = counter.encoding.encode_ordinary(TEXT)  # type: ignore[attr-defined]
    assert counter.count(TEXT) == len(ids) > 10
    assert counter.count_many([TEXT, "", "a b"]) == [len(ids), 0, 2]


def test_an_encoding_object_is_a_tokenizer_and_the_budget_holds_in_it() -> None:
    _data_file("cl100k_base")
    encoding = get_counter("cl100k_base").encoding  # type: ignore[attr-defined]
    assert isinstance(encoding, tiktoken.Encoding)
    pruner = HtmlPruner(scorer="bm25", tokenizer=encoding)
    result = pruner.prune(PAGE, "which river is the longest?", 16)
    assert result.tokenizer == "cl100k_base"
    assert len(encoding.encode_ordinary(result.html)) == result.tokens <= 16
    assert "Volga" in result.html


def test_data_found_through_tiktoken_cache_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = _data_file("cl100k_base")
    shutil.copy(source, tmp_path / source.name)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    assert tk._data_folder("cl100k_base") == tmp_path
    assert get_counter("cl100k_base").count("hello world") == 2


def test_missing_data_says_what_to_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tk, "_cache_folders", lambda: [tmp_path])
    with pytest.raises(ModelNotFoundError, match="TIKTOKEN_CACHE_DIR") as caught:
        HtmlPruner(tokenizer="gpt-4o")  # when made, not at the first call
    assert "'o200k_base'" in str(caught.value) and str(tmp_path) in str(caught.value)


def test_without_tiktoken_its_names_ask_for_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tk, "available", lambda module: module != "tiktoken")
    for name in ("gpt-4o", "cl100k_base", "o200k_base"):
        with pytest.raises(MissingDependencyError, match="tiktoken"):
            get_counter(name)
    assert tk.tiktoken_encoding_name("org/some-model") is None


def test_other_names_still_go_to_hugging_face() -> None:
    assert tk.tiktoken_encoding_name("meta-llama/Llama-3.2-1B") is None
    with pytest.raises(ModelNotFoundError, match="neither a file, a folder, a tiktoken name"):
        HtmlPruner(tokenizer="hrefine-tests/no-such-tokenizer")
