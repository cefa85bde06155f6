"""End to end in LangChain: real pages, the embedded default embedder, an LCEL chain and a tool."""

from __future__ import annotations

from pathlib import Path

import pytest
from e2e_helpers import (
    BUDGET,
    CRATER_QUESTION,
    LRT_QUESTION,
    PagesRetriever,
    RecordingChatModel,
    contains_answer,
    load_corpus,
    load_question,
)
from hrefine.budget import get_counter
from hrefine.models.local_lm import LocalLM
from langchain_core.documents import Document
from langchain_core.messages import ToolMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnablePassthrough
from langchain_core.tools.retriever import create_retriever_tool

from langchain_hrefine import CompressionRetriever, HtmlRagCompressor


def format_docs(docs: list[Document]) -> str:
    """Join the pruned pages the way the pruner counts them (one newline between pages)."""
    return "\n".join(doc.page_content for doc in docs)


@pytest.fixture
def retriever(shared_data: Path) -> CompressionRetriever:
    pages = [
        Document(page_content=html, metadata={"source": doc})
        for doc, html in load_corpus(shared_data)
    ]
    return CompressionRetriever(
        base_retriever=PagesRetriever(documents=pages, k=3),
        base_compressor=HtmlRagCompressor(max_tokens=BUDGET),
    )


async def test_lcel_chain_prompt_holds_the_answer_table_within_budget(
    shared_data: Path, retriever: CompressionRetriever
) -> None:
    row = load_question(shared_data, LRT_QUESTION)
    model = RecordingChatModel(responses=["Cheng Lim"])
    prompt = ChatPromptTemplate.from_messages(
        [
            ("system", "Answer the question from these HTML tables.\n\n{context}"),
            ("human", "{question}"),
        ]
    )
    chain = (
        {"context": retriever | format_docs, "question": RunnablePassthrough()}
        | prompt
        | model
        | StrOutputParser()
    )

    assert chain.invoke(row["question"]) == "Cheng Lim"

    system, human = model.received[-1]
    assert human.content == row["question"]
    context = str(system.content).split("\n\n", 1)[1]
    assert contains_answer(context, row["answers"])
    assert "<td" in context  # the answer comes as table HTML, original tag names
    assert get_counter(None).count(context) <= BUDGET

    # The async path of the same chain sends the same prompt.
    await chain.ainvoke(row["question"])
    assert model.received[-1] == model.received[-2]


def test_retriever_as_agent_tool(shared_data: Path, retriever: CompressionRetriever) -> None:
    row = load_question(shared_data, CRATER_QUESTION)
    tool = create_retriever_tool(
        retriever,
        "wikipedia_tables",
        "Search Wikipedia pages; returns only the parts relevant to the query, as HTML.",
        document_separator="\n",
    )
    # An agent calls the tool with a tool call and reads back a ToolMessage.
    message = tool.invoke(
        {
            "name": "wikipedia_tables",
            "args": {"query": row["question"]},
            "id": "call_1",
            "type": "tool_call",
        }
    )
    assert isinstance(message, ToolMessage)
    content = str(message.content)
    assert contains_answer(content, row["answers"])
    assert get_counter(None).count(content) <= BUDGET
    # The plain-arguments form an agent framework may use gives the same text.
    assert tool.invoke({"query": row["question"]}) == content


@pytest.mark.slow
@pytest.mark.lm
def test_generative_stage_through_the_compressor(shared_data: Path, lm: LocalLM) -> None:
    row = load_question(shared_data, LRT_QUESTION)
    page = dict(load_corpus(shared_data))[row["doc"]]
    compressor = HtmlRagCompressor(max_tokens=256, generative=True, lm=lm)
    (doc,) = compressor.compress_documents([Document(page_content=page)], row["question"])
    assert "hrefine_stage2_score" in doc.metadata
    assert get_counter(None).count(doc.page_content) <= 256
