"""End to end in LlamaIndex with LongRefiner: whole CUAD contracts and a Qasper paper in a
VectorStoreIndex with the embedded embedder, a query engine and a retriever tool."""

from __future__ import annotations

from pathlib import Path

import pytest
from hrefine.budget import get_counter
from hrefine.models import Embedder
from llama_index.core import Settings, VectorStoreIndex
from llama_index.core.llms import MockLLM
from llama_index.core.schema import MetadataMode, NodeWithScore, TextNode
from llama_index.core.tools import RetrieverTool
from lr_data import (
    ANNOTATORS,
    CONTRACT,
    EXPIRATION,
    PAPER,
    RENEWAL,
    contracts,
    cuad_item,
    has_answer,
    qasper_item,
)

from llamaindex_hrefine import HrefineEmbedding, LongRefinerNodePostprocessor

#: Token budget of the refined context (all retrieved documents together; default tokenizer).
BUDGET = 1024


@pytest.fixture(scope="module")
def index(shared_data: Path, embedder: Embedder) -> VectorStoreIndex:
    texts = {**contracts(shared_data), PAPER: qasper_item(shared_data).document}
    nodes = [
        TextNode(text=text, id_=doc_id, metadata={"source": f"{doc_id}.txt"})
        for doc_id, text in texts.items()
    ]
    return VectorStoreIndex(nodes, embed_model=HrefineEmbedding(embedder))


def _refined_text(nodes: list[NodeWithScore]) -> str:
    return "\n\n".join(n.node.get_content(metadata_mode=MetadataMode.NONE) for n in nodes)


def test_query_engine_prompt_holds_the_answer_clause_within_budget(
    shared_data: Path, index: VectorStoreIndex, embedder: Embedder
) -> None:
    item = cuad_item(shared_data, RENEWAL)
    engine = index.as_query_engine(
        llm=MockLLM(),  # echoes its prompt, so the response shows what the LLM was given
        similarity_top_k=5,
        node_postprocessors=[LongRefinerNodePostprocessor(max_tokens=BUDGET, embed_model=embedder)],
    )
    response = engine.query(item.question)

    sources = response.source_nodes
    assert sources
    refined = _refined_text(sources)
    assert has_answer(refined, item)
    assert get_counter(None).count(refined) <= BUDGET
    contract = next(s for s in sources if s.node.node_id == CONTRACT)
    assert has_answer(contract.node.get_content(), item)
    for source in sources:
        assert source.node.metadata["hrefine_method"] == "longrefiner"
        assert "hrefine_" not in source.node.get_content(metadata_mode=MetadataMode.LLM)
    # The synthesised prompt (echoed by MockLLM) holds the clause.
    assert has_answer(str(response), item)
    assert Settings._llm is None  # the explicit MockLLM was used, Settings.llm never resolved


async def test_async_query_engine_on_the_paper(
    shared_data: Path, index: VectorStoreIndex, embedder: Embedder
) -> None:
    item = qasper_item(shared_data, ANNOTATORS)
    engine = index.as_query_engine(
        llm=MockLLM(),
        similarity_top_k=5,
        node_postprocessors=[
            LongRefinerNodePostprocessor(max_tokens=512, embed_model=embedder, top_n=2)
        ],
    )
    response = await engine.aquery(item.question)
    assert 1 <= len(response.source_nodes) <= 2
    assert response.source_nodes[0].node.node_id == PAPER
    assert has_answer(str(response), item)
    assert get_counter(None).count(_refined_text(response.source_nodes)) <= 512


def test_retriever_tool_returns_the_refined_clause(
    shared_data: Path, index: VectorStoreIndex, embedder: Embedder
) -> None:
    item = cuad_item(shared_data, EXPIRATION)
    tool = RetrieverTool.from_defaults(
        retriever=index.as_retriever(similarity_top_k=5),
        node_postprocessors=[LongRefinerNodePostprocessor(max_tokens=BUDGET, embed_model=embedder)],
        name="contract_search",
        description="Search the contracts; returns the clauses relevant to the query.",
    )
    output = tool.call(item.question)
    assert has_answer(output.content, item)
    assert get_counter(None).count(_refined_text(output.raw_output)) <= BUDGET
