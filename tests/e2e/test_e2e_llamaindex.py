"""End to end in LlamaIndex: real pages in a VectorStoreIndex, a query engine and a tool."""

from __future__ import annotations

from pathlib import Path

import pytest
from e2e_helpers import (
    BUDGET,
    CRATER_QUESTION,
    LRT_QUESTION,
    contains_answer,
    load_corpus,
    load_question,
)
from hrefine.budget import get_counter
from hrefine.models import Embedder
from llama_index.core import Settings, VectorStoreIndex
from llama_index.core.llms import MockLLM
from llama_index.core.schema import MetadataMode, TextNode
from llama_index.core.tools import RetrieverTool

from llamaindex_hrefine import HtmlRagNodePostprocessor
from llamaindex_hrefine._convert import HrefineEmbedding


@pytest.fixture
def index(shared_data: Path, embedder: Embedder) -> VectorStoreIndex:
    nodes = [
        TextNode(text=html, id_=doc, metadata={"source": doc})
        for doc, html in load_corpus(shared_data)
    ]
    return VectorStoreIndex(nodes, embed_model=HrefineEmbedding(embedder))


def _pruned_text(nodes: list) -> str:  # type: ignore[type-arg]
    return "\n".join(n.node.get_content(metadata_mode=MetadataMode.NONE) for n in nodes)


def test_query_engine_sources_are_pruned_html_within_budget(
    shared_data: Path, index: VectorStoreIndex
) -> None:
    row = load_question(shared_data, CRATER_QUESTION)
    engine = index.as_query_engine(
        llm=MockLLM(),  # echoes its prompt, so the response shows what the LLM was given
        similarity_top_k=3,
        node_postprocessors=[HtmlRagNodePostprocessor(max_tokens=BUDGET)],
    )
    response = engine.query(row["question"])

    sources = response.source_nodes
    assert sources
    pruned = _pruned_text(sources)
    assert contains_answer(pruned, row["answers"])
    assert "<td" in pruned
    assert get_counter(None).count(pruned) <= BUDGET
    for source in sources:
        assert source.node.metadata["hrefine_tokens"] <= BUDGET
        assert "hrefine_" not in source.node.get_content(metadata_mode=MetadataMode.LLM)
    assert contains_answer(str(response), row["answers"])
    assert Settings._llm is None  # the explicit MockLLM was used, Settings.llm never resolved


def test_retriever_tool_returns_pruned_answer(shared_data: Path, index: VectorStoreIndex) -> None:
    row = load_question(shared_data, LRT_QUESTION)
    tool = RetrieverTool.from_defaults(
        retriever=index.as_retriever(similarity_top_k=3),
        node_postprocessors=[HtmlRagNodePostprocessor(max_tokens=BUDGET)],
        name="wikipedia_tables",
        description="Search Wikipedia pages; returns the parts relevant to the query, as HTML.",
    )
    output = tool.call(row["question"])
    assert contains_answer(output.content, row["answers"])
    assert get_counter(None).count(_pruned_text(output.raw_output)) <= BUDGET
