"""Method resolution: registered names, import paths, LangChain and LlamaIndex components."""

from __future__ import annotations

import sys
import types
from collections.abc import Sequence
from typing import Any

import pytest
from hrefine.budget import RegexCounter
from hrefine.errors import ConfigError
from hrefine.eval import ChunkCompressor, available_methods, get_method, register_method
from hrefine.eval.methods import RENAMED_METHODS, PrunerCompressor, resolve_method_name

DOC = "\n\n".join(
    [f"Block {i} is about gardening tools and soil." for i in range(40)]
    + ["The tallest tower in town is the Clock Tower, 87 metres high."]
    + [f"Block {i} is about cooking pasta." for i in range(40, 80)]
)


def test_registered_names_say_what_the_method_is() -> None:
    names = {"lead-text", "chunks-bm25", "chunks-embedding", "htmlrag", "htmlrag-bm25"}
    assert names | {"htmlrag-generative"} <= set(available_methods())
    assert get_method("lead-text").name == "lead-text"
    chunks = get_method("chunks-bm25", chunk_tokens=64)
    assert chunks.name == "chunks-bm25"
    assert isinstance(chunks, ChunkCompressor) and chunks.chunk_tokens == 64
    assert get_method("Chunks-BM25").name == "chunks-bm25"  # names in any case


def test_htmlrag_variants_configure_the_pruner() -> None:
    bm25 = get_method("htmlrag-bm25", tokenizer="regex")
    generative = get_method("htmlrag-generative", tokenizer="regex", chunk_tokens=64)
    assert isinstance(bm25, PrunerCompressor) and isinstance(generative, PrunerCompressor)
    assert (bm25.name, generative.name) == ("htmlrag-bm25", "htmlrag-generative")
    assert bm25.pruner.options.scorer == "bm25" and not bm25.pruner.options.generative
    assert generative.pruner.options.generative
    out = bm25.compress(DOC, "How high is the Clock Tower?", 64)
    assert "87 metres" in out


@pytest.mark.parametrize(
    ("old", "new"),
    [("lead", "lead-text"), ("bm25", "chunks-bm25"), ("embedding", "chunks-embedding")],
)
def test_old_names_still_work_with_a_warning(old: str, new: str) -> None:
    assert RENAMED_METHODS[old] == new
    assert resolve_method_name(old) == new
    with pytest.warns(FutureWarning, match=f"'{old}' is now called '{new}'"):
        comp = get_method(old)
    assert comp.name == new  # reports carry the new name


def test_unknown_method_lists_the_registered_ones_and_the_nearest() -> None:
    with pytest.raises(ConfigError, match="lead-text") as err:
        get_method("nonsense")
    assert "did you mean" not in str(err.value)
    with pytest.raises(ConfigError, match="did you mean 'chunks-bm25'"):
        get_method("chunk-bm25")
    with pytest.raises(ConfigError, match="did you mean 'chunks-embedding'"):
        resolve_method_name("embeding")


def test_htmlrag_is_registered_lazily() -> None:
    try:
        comp = get_method("htmlrag")
    except ImportError:
        pytest.skip("hrefine.html.HtmlPruner not available yet")
    assert comp.name == "htmlrag"


def _fake_module(monkeypatch: pytest.MonkeyPatch, **attrs: Any) -> str:
    module = types.ModuleType("fake_eval_methods")
    for key, value in attrs.items():
        setattr(module, key, value)
    monkeypatch.setitem(sys.modules, "fake_eval_methods", module)
    return "fake_eval_methods"


class KeepFirst:
    """A user compressor class taking the evaluation tokenizer."""

    def __init__(self, tokenizer: Any = None, words: int = 3) -> None:
        self.tokenizer = tokenizer
        self.words = words

    def compress(self, document: str, query: str, max_tokens: int) -> str:
        return " ".join(document.split()[: self.words])


def test_import_path_class_gets_tokenizer_and_options(monkeypatch: pytest.MonkeyPatch) -> None:
    mod = _fake_module(monkeypatch, KeepFirst=KeepFirst)
    counter = RegexCounter()
    comp = get_method(f"{mod}:KeepFirst", tokenizer=counter, words=2)
    assert comp.name == "KeepFirst"
    assert comp.compress("a b c d", "q", 10) == "a b"


def test_import_path_function(monkeypatch: pytest.MonkeyPatch) -> None:
    def shout(document: str, query: str, max_tokens: int) -> str:
        return document.upper()[:max_tokens]

    mod = _fake_module(monkeypatch, shout=shout)
    comp = get_method(f"{mod}:shout")
    assert comp.name == "shout"
    assert comp.compress("abc", "q", 2) == "AB"


def test_bad_import_paths() -> None:
    with pytest.raises(ValueError, match="no attribute"):
        get_method("hrefine.eval:NoSuchThing")
    with pytest.raises(ImportError):
        get_method("surely_missing_module_xyz:Thing")


def test_register_method_and_pruner_adapter() -> None:
    class Result:
        def __init__(self, html: str) -> None:
            self.html = html

    class Pruner:
        def prune(self, html: str, query: str, max_tokens: int) -> Result:
            return Result(html[:max_tokens])

    register_method("test-pruner", lambda tokenizer=None: PrunerCompressor(Pruner()))
    comp = get_method("test-pruner")
    assert comp.name == "test-pruner"
    out = comp.compress("plain text only", "q", 30)
    assert out.startswith("<html><body>")  # plain text is wrapped as HTML first


def test_llamaindex_postprocessor_by_import_path() -> None:
    comp = get_method("llama_index.core.postprocessor:LongContextReorder", chunk_tokens=16)
    assert comp.name == "LongContextReorder"
    out = comp.compress(DOC, "tallest tower", 60)
    from hrefine.budget import get_counter

    assert "Block" in out
    assert get_counter().count(out) <= 60


def test_langchain_compressor_instance_ranks_then_fits_budget() -> None:
    from hrefine.budget import get_counter
    from langchain_core.documents import BaseDocumentCompressor, Document

    class KeywordFilter(BaseDocumentCompressor):
        keyword: str = "tower"

        def compress_documents(
            self, documents: Sequence[Document], query: str, callbacks: Any = None
        ) -> Sequence[Document]:
            hits = [d for d in documents if self.keyword in d.page_content.lower()]
            return list(reversed(hits))

    comp = get_method(KeywordFilter(), chunk_tokens=16)
    assert comp.name == "KeywordFilter"
    out = comp.compress(DOC, "tallest tower", 200)
    assert "Clock Tower" in out
    assert "gardening" not in out
    assert get_counter().count(out) <= 200


@pytest.mark.parametrize("method", ["lead-text", "chunks-bm25", "htmlrag", "raptor", "garlic"])
def test_a_misspelt_option_is_a_config_error_naming_the_method(method: str) -> None:
    # Was: a TypeError from deep in the constructor, which an evaluation skipped as a method
    # that is unavailable.
    with pytest.raises(ConfigError, match="chunk_tokenz"):
        get_method(method, tokenizer="regex", chunk_tokenz=64)
