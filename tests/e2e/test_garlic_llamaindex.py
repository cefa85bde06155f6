"""End to end in LlamaIndex with GARLIC: a real HotpotQA item, the embedded default embedder, a
query engine and an agent tool over the GarlicRetriever, and a GarlicIndex persisted, loaded
and queried.

The graph is built once over the item's paragraphs with the instant deterministic LLM of
``garlic_fakes``; answers come from ``MockLLM``, which echoes its prompt, so a response shows
exactly what the answering LLM was given.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from garlic_fakes import FACT, SMALL, garlic_llm, hotpot, hotpot_paragraphs
from hrefine.models import Embedder
from hrefine.testing import ScriptedLM
from llama_index.core import Document, StorageContext, load_index_from_storage
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.tools import RetrieverTool

from llamaindex_hrefine import GarlicIndex, GarlicRetriever


@pytest.fixture(scope="module")
def item(shared_data: Path) -> Any:
    return hotpot(shared_data)


@pytest.fixture(scope="module")
def retriever(shared_data: Path, embedder: Embedder) -> GarlicRetriever:
    documents = [
        Document(text=text, id_=title, metadata={"title": title})
        for title, text in hotpot_paragraphs(shared_data)
    ]
    return GarlicRetriever.from_documents(
        documents, llm=ScriptedLM(garlic_llm), embed_model=embedder, **SMALL
    )


async def test_query_engine_prompt_holds_what_the_search_read(
    item: Any, retriever: GarlicRetriever
) -> None:
    engine = RetrieverQueryEngine.from_args(retriever, llm=MockLLM())
    response = engine.query(item.question)
    assert FACT in str(response)
    assert "hrefine_" not in str(response)  # the bookkeeping keys stay out of the prompt
    assert [n.node.node_id for n in response.source_nodes] == [
        n.node.node_id for n in retriever.retrieve(item.question)
    ]
    again = await engine.aquery(item.question)
    assert str(again) == str(response)


def test_retriever_as_an_agent_tool(item: Any, retriever: GarlicRetriever) -> None:
    tool = RetrieverTool.from_defaults(
        retriever,
        name="wiki_search",
        description="Search the encyclopedia paragraphs; returns what answers the question.",
    )
    output = tool.call(input=item.question)
    assert FACT in output.content
    assert output.tool_name == "wiki_search"


def test_index_query_engine_after_a_reload(
    shared_data: Path, item: Any, embedder: Embedder, tmp_path: Path
) -> None:
    documents = [
        Document(text=text, id_=title, metadata={"title": title})
        for title, text in hotpot_paragraphs(shared_data)
    ]
    index = GarlicIndex.from_documents(
        documents, llm=ScriptedLM(garlic_llm), embed_model=embedder, **SMALL
    )
    index.storage_context.persist(persist_dir=str(tmp_path))
    loaded = load_index_from_storage(
        StorageContext.from_defaults(persist_dir=str(tmp_path)),
        llm=ScriptedLM(garlic_llm),
        embed_model=embedder,
    )
    # the GARLIC LLM searches; MockLLM (echoing its prompt) answers
    response = loaded.as_query_engine(llm=MockLLM()).query(item.question)
    assert FACT in str(response)
    assert all(
        n.node.metadata["hrefine_kind"] in ("chunk", "summary") for n in response.source_nodes
    )
