"""Odd inputs to the shared layers every method goes through: LLM answers that are not text,
save folders that are not paths, lone surrogates in a token count, adapter fields pydantic
would coerce, and collections that are not lists."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from hrefine.budget import get_counter
from hrefine.errors import GenerationError, InputTypeError, PersistenceError
from hrefine.models.text_generator import TextGenerator
from hrefine.persist import load_tree, save_tree
from hrefine.tree import Tree
from pydantic import ValidationError


@pytest.mark.parametrize("answer", [None, b"bytes", 5, 2.5, True])
def test_an_llm_answer_that_is_not_text_is_a_generation_error(answer: object) -> None:
    gen = TextGenerator(lambda prompt: answer, retries=0, name="odd-llm")
    with pytest.raises(GenerationError, match="odd-llm returned"):
        gen.generate("Summarise this.")
    with pytest.raises(GenerationError, match="odd-llm returned"):
        asyncio.run(gen.agenerate("Summarise this."))


def test_an_answer_object_that_prints_as_its_text_is_kept() -> None:
    class Completion:  # as a LlamaIndex CompletionResponse: str() is its text
        def __str__(self) -> str:
            return "A short summary."

    assert TextGenerator(lambda prompt: Completion()).generate("p") == "A short summary."


@pytest.mark.parametrize("out", [None, "one string", 3])
def test_a_batch_function_that_returns_no_list_is_a_generation_error(out: object) -> None:
    gen = TextGenerator(lambda p: "x", batch_fn=lambda prompts: out, name="batcher")
    with pytest.raises(GenerationError, match="batcher returned"):
        gen.batch(["a", "b"])


def _tree() -> Tree:
    tree = Tree()
    tree.add_node("only node", kind="chunk")
    return tree


@pytest.mark.parametrize("path", [None, 5, ["a"]])
def test_a_save_folder_that_is_not_a_path_is_an_input_type_error(path: Any) -> None:
    with pytest.raises(InputTypeError, match="folder must be a str or a path"):
        save_tree(_tree(), path)
    with pytest.raises(InputTypeError, match="folder must be a str or a path"):
        load_tree(path)


def test_saving_where_a_file_stands_is_a_persistence_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file.txt"
    blocker.write_text("keep me", encoding="utf-8")
    with pytest.raises(PersistenceError, match="cannot save the tree"):
        save_tree(_tree(), blocker)
    with pytest.raises(PersistenceError):
        save_tree(_tree(), blocker / "below")
    assert blocker.read_text(encoding="utf-8") == "keep me"


@pytest.mark.parametrize("tokenizer", [None, "cl100k_base", "regex"])
def test_a_lone_surrogate_is_counted_as_the_replacement_character(tokenizer: str | None) -> None:
    counter = get_counter(tokenizer)
    with_surrogate = counter.count("price \ud800 rises")
    assert with_surrogate == counter.count("price \ufffd rises")
    assert counter.count_many(["a \udc00 b", "plain"]) == [
        counter.count("a \ufffd b"),
        counter.count("plain"),
    ]


def test_hf_tokenizer_counts_a_lone_surrogate(tmp_path: Path) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace

    tok = tokenizers.Tokenizer(WordLevel({"[UNK]": 0, "a": 1}, unk_token="[UNK]"))
    tok.pre_tokenizer = Whitespace()
    counter = get_counter(tok)
    assert counter.count("a \ud800 a") == 3
    assert counter.count_many(["a \ud800", "a"]) == [2, 1]


@pytest.mark.parametrize(
    ("field", "value"), [("top_n", True), ("top_n", "2"), ("keep_input_order", 1)]
)
def test_adapter_fields_are_not_coerced_by_pydantic(field: str, value: object) -> None:
    from langchain_hrefine import LongRefinerCompressor
    from llamaindex_hrefine import LongRefinerNodePostprocessor

    for cls in (LongRefinerCompressor, LongRefinerNodePostprocessor):
        with pytest.raises(ValidationError, match=field):
            cls(scorer="bm25", **{field: value})


def test_raptor_retriever_refuses_a_boolean_budget() -> None:
    from langchain_hrefine import RaptorRetriever

    with pytest.raises(ValidationError, match="max_tokens"):
        RaptorRetriever(max_tokens=True)


def test_postprocessors_and_compressors_refuse_what_is_not_a_list() -> None:
    from langchain_core.documents import Document
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

    from langchain_hrefine import HtmlRagCompressor, LongRefinerCompressor
    from llamaindex_hrefine import HtmlRagNodePostprocessor, LongRefinerNodePostprocessor

    doc = Document(page_content="<p>Rome is the capital of Italy.</p>")
    for comp in (HtmlRagCompressor(scorer="bm25"), LongRefinerCompressor(scorer="bm25")):
        for bad in (None, doc):
            with pytest.raises(InputTypeError, match="list of LangChain Documents"):
                comp.compress_documents(bad, "capital of Italy")  # type: ignore[arg-type]
    node = NodeWithScore(node=TextNode(text="<p>Rome is the capital of Italy.</p>"), score=1.0)
    query = QueryBundle("capital of Italy")
    for post in (
        HtmlRagNodePostprocessor(scorer="bm25"),
        LongRefinerNodePostprocessor(scorer="bm25"),
    ):
        for bad in (None, node):
            with pytest.raises(InputTypeError, match="list of LlamaIndex"):
                post.postprocess_nodes(bad, query)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "argv",
    [
        ["html", "prune", "PAGE", "-q", "capital", "--scorer", "bm25", "--report", "DIR"],
        ["refine", "DOC", "-q", "capital", "-n", "20", "--scorer", "bm25", "--report", "DIR"],
        ["html", "prune", "PAGE", "-q", "capital", "--scorer", "bm25", "-o", "DIR"],
    ],
)
def test_a_report_or_output_path_that_is_a_folder_is_refused_before_anything_is_printed(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str]
) -> None:
    from hrefine.cli import main

    page = tmp_path / "page.html"
    page.write_text("<p>Rome is the capital of Italy.</p>", encoding="utf-8")
    doc = tmp_path / "doc.txt"
    doc.write_text("Rome is the capital of Italy.", encoding="utf-8")
    folder = tmp_path / "a-folder"
    folder.mkdir()
    swap = {"PAGE": str(page), "DOC": str(doc), "DIR": str(folder)}
    code = main([swap.get(a, a) for a in argv])
    out, err = capsys.readouterr()
    assert code == 2 and "Traceback" not in err
    said = " ".join(err.replace("│", " ").split())  # typer draws its message in a box
    assert "is a directory" in said or "it is a folder" in said, err
    assert out == ""  # refused before anything was pruned or printed
