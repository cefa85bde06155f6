"""Odd queries (issue #41, item 2): lone surrogates reach no model, and a query that is not a
string is an InputTypeError at every entry point."""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pytest
from hrefine._encodable import encodable
from hrefine.errors import EmptyInputError, InputTypeError
from hrefine.html import HtmlPruner
from hrefine.models import CallableEmbedder

PAGE = (
    "<html><body><h1>Springfield</h1><p>Springfield has a population of 42,000 people.</p>"
    "<p>The weather is mild and rainy in spring.</p></body></html>"
)
ODD = ["population \ud800 of Springfield", "caf\udce9 Springfield", "\udfff", "pair \ud83d\ude00"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("plain", "plain"),
        ("é日本", "é日本"),
        ("a\ud800b", "a\ufffdb"),
        ("\udc80\udc81", "\ufffd\ufffd"),
        ("end \ud83d", "end \ufffd"),
        ("\ud83d\ude00", "\U0001f600"),  # a pair held as two code points is one character
    ],
)
def test_encodable_replaces_lone_surrogates_only(text: str, expected: str) -> None:
    out = encodable(text)
    assert out == expected
    out.encode("utf-8")  # strict


@pytest.mark.parametrize("query", ODD)
def test_lone_surrogates_in_the_query_do_not_crash_the_embedding_scorer(
    embedder: Any, query: str
) -> None:
    pruner = HtmlPruner(embedder=embedder, tokenizer="regex")
    result = pruner.prune(PAGE, query, 30)
    assert "42,000" in result.html and 0 < result.tokens <= 30
    assert result.query == encodable(query)
    result.query.encode("utf-8")


def test_the_bundled_embedder_reads_lone_surrogates_as_replacement_characters(
    embedder: Any,
) -> None:
    odd, clean = "caf\udce9 au lait", "caf\ufffd au lait"
    np.testing.assert_array_equal(embedder.embed([odd]), embedder.embed([clean]))
    np.testing.assert_array_equal(embedder.embed_query(odd), embedder.embed_query(clean))
    q, docs = embedder.embed_query_and_documents(odd, [odd, "plain"])
    np.testing.assert_allclose(q, embedder.embed_query(clean), atol=1e-6)
    np.testing.assert_allclose(docs[0], embedder.embed([clean])[0], atol=1e-6)


def test_a_callable_embedder_sends_its_model_encodable_text() -> None:
    seen: list[str] = []

    def model(texts: list[str]) -> list[list[float]]:
        for t in texts:
            t.encode("utf-8")  # what a hosted model's client does before sending
            seen.append(t)
        return [[1.0, float(len(t))] for t in texts]

    emb = CallableEmbedder(model, lambda t: model([t])[0])
    emb.embed(["a\ud800", "b"])
    emb.embed_query("q\udfff")
    assert seen == ["a\ufffd", "b", "q\ufffd"]


@pytest.mark.parametrize("query", [42, None, b"bytes query", ["a", "list"], 3.5])
def test_a_query_that_is_not_a_string_is_an_input_type_error_in_the_core(query: Any) -> None:
    pruner = HtmlPruner(scorer="bm25", tokenizer="regex")
    with pytest.raises(InputTypeError, match=type(query).__name__):
        pruner.prune(PAGE, query, 50)
    with pytest.raises(InputTypeError):
        asyncio.run(pruner.aprune(PAGE, query, 50))


def test_an_empty_query_is_still_an_empty_input_error() -> None:
    with pytest.raises(EmptyInputError):
        HtmlPruner(scorer="bm25", tokenizer="regex").prune(PAGE, "  \n", 50)


@pytest.mark.parametrize("query", [42, b"bytes query"])
def test_the_embedders_refuse_a_query_that_is_not_a_string(embedder: Any, query: Any) -> None:
    for emb in (embedder, CallableEmbedder(lambda ts: [[1.0, 2.0] for _ in ts])):
        with pytest.raises(InputTypeError):
            emb.embed_query(query)
        with pytest.raises(InputTypeError, match="item 1"):
            emb.embed(["fine", query])


@pytest.mark.parametrize("query", [42, None, b"bytes query"])
def test_a_query_that_is_not_a_string_is_an_input_type_error_in_langchain(query: Any) -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.documents import Document

    from langchain_hrefine import HtmlRagCompressor

    compressor = HtmlRagCompressor(scorer="bm25", tokenizer="regex")  # type: ignore[call-arg]
    docs = [Document(page_content=PAGE)]
    with pytest.raises(InputTypeError):
        compressor.compress_documents(docs, query)
    with pytest.raises(InputTypeError):
        asyncio.run(compressor.acompress_documents(docs, query))


@pytest.mark.parametrize("query", [42, b"bytes query"])
def test_a_query_that_is_not_a_string_is_an_input_type_error_in_llamaindex(query: Any) -> None:
    pytest.importorskip("llama_index.core")
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

    from llamaindex_hrefine import HtmlRagNodePostprocessor

    post = HtmlRagNodePostprocessor(scorer="bm25", tokenizer="regex")
    nodes = [NodeWithScore(node=TextNode(text=PAGE))]
    with pytest.raises(InputTypeError):
        post.postprocess_nodes(nodes, query_str=query)
    with pytest.raises(InputTypeError):
        post.postprocess_nodes(nodes, query_bundle=QueryBundle(query_str=query))


def test_lone_surrogates_in_an_adapter_query_are_replaced(embedder: Any) -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.documents import Document

    from langchain_hrefine import HtmlRagCompressor

    compressor = HtmlRagCompressor(tokenizer="regex", max_tokens=40)  # type: ignore[call-arg]
    out = compressor.compress_documents([Document(page_content=PAGE)], "population \ud800")
    assert out and "42,000" in out[0].page_content
