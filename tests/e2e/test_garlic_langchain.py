"""End to end in LangChain with GARLIC: a real HotpotQA item, the embedded default embedder, an
LCEL chain, a compression pipeline and an agent tool.

The graph is built once over the item's paragraphs with an instant deterministic LLM
(``garlic_fakes.garlic_llm``: bullets for summaries, Yes once ``FACT`` is read); the point here
is the plumbing from the search to the prompt.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from e2e_helpers import PagesRetriever, RecordingChatModel
from garlic_fakes import ANSWER, FACT, SMALL, garlic_llm, hotpot, hotpot_paragraphs
from hrefine.budget import get_counter
from hrefine.testing import ScriptedLM
from langchain_core.documents import Document
from langchain_core.language_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableLambda, RunnablePassthrough
from langchain_core.tools.retriever import create_retriever_tool

from langchain_hrefine import CompressionRetriever, GarlicCompressor, GarlicRetriever


def format_docs(docs: list[Document]) -> str:
    """The nodes the search read, one after another."""
    return "\n\n".join(doc.page_content for doc in docs)


@pytest.fixture(scope="module")
def item(shared_data: Path) -> Any:
    return hotpot(shared_data)


@pytest.fixture(scope="module")
def documents(shared_data: Path) -> list[Document]:
    return [
        Document(page_content=text, metadata={"title": title}, id=title)
        for title, text in hotpot_paragraphs(shared_data)
    ]


@pytest.fixture(scope="module")
def retriever(documents: list[Document]) -> GarlicRetriever:
    # the LLM as a LangChain Runnable: prompt-only mode
    return GarlicRetriever.from_documents(documents, llm=RunnableLambda(garlic_llm), **SMALL)


async def test_lcel_chain_prompt_holds_what_the_search_read(
    item: Any, retriever: GarlicRetriever
) -> None:
    model = RecordingChatModel(responses=[ANSWER])
    prompt = ChatPromptTemplate.from_messages(
        [
            ("system", "Answer the question from this context.\n\n{context}"),
            ("human", "{question}"),
        ]
    )
    chain = (
        {"context": retriever | format_docs, "question": RunnablePassthrough()}
        | prompt
        | model
        | StrOutputParser()
    )

    assert chain.invoke(item.question) == ANSWER

    system, human = model.received[-1]
    assert human.content == item.question
    context = str(system.content).split("\n\n", 1)[1]
    docs = retriever.invoke(item.question)
    assert format_docs(docs) == context
    assert FACT in context
    # summary points of the graph's top level reach the prompt, then the chunk that answered
    assert any(d.metadata["hrefine_kind"] == "summary" for d in docs)
    (chunk,) = [d for d in docs if FACT in d.page_content]
    assert chunk.metadata["hrefine_said_yes"] and chunk.metadata["hrefine_sources"] == [ANSWER]

    # the async path of the same chain sends the same prompt
    await chain.ainvoke(item.question)
    assert model.received[-1] == model.received[-2]


def test_compressor_after_a_retriever_keeps_the_budget(
    item: Any, documents: list[Document]
) -> None:
    budget = 300
    pipeline = CompressionRetriever(
        base_retriever=PagesRetriever(documents=documents, k=4),
        base_compressor=GarlicCompressor(max_tokens=budget, llm=ScriptedLM(garlic_llm), **SMALL),
    )
    docs = pipeline.invoke(item.question)
    assert docs
    fetched = {d.id for d in PagesRetriever(documents=documents, k=4).invoke(item.question)}
    assert {s for d in docs for s in d.metadata["hrefine_sources"]} <= fetched
    counter = get_counter(None)
    assert sum(counter.count(d.page_content) for d in docs) <= budget
    assert all(0.0 <= d.metadata["relevance_score"] <= 1.0 for d in docs)


def test_retriever_as_an_agent_tool(item: Any, retriever: GarlicRetriever) -> None:
    tool = create_retriever_tool(
        retriever,
        "wiki_search",
        "Search the encyclopedia paragraphs; returns what answers the question.",
    )
    agent = FakeMessagesListChatModel(
        responses=[
            AIMessage(
                content="",
                tool_calls=[
                    {"name": "wiki_search", "args": {"query": item.question}, "id": "call_1"}
                ],
            )
        ]
    )
    request = agent.invoke("Which series is told in first person?")
    assert isinstance(request, AIMessage)
    (call,) = request.tool_calls
    message = tool.invoke({**call, "type": "tool_call"})
    assert isinstance(message, ToolMessage)
    assert message.tool_call_id == "call_1"
    content = str(message.content)
    assert FACT in content
    assert tool.invoke({"query": item.question}) == content
