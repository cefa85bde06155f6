"""End to end in LangChain with LongRefiner: whole CUAD contracts behind a retriever, the
embedded default embedder, an LCEL chain, an agent tool and the prompt-only mode in a chain."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from e2e_helpers import PagesRetriever, RecordingChatModel
from hrefine.budget import get_counter
from hrefine.eval.loaders import EvalItem
from hrefine.models import Embedder
from langchain_core.documents import Document
from langchain_core.language_models import FakeListChatModel, FakeMessagesListChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnablePassthrough
from langchain_core.tools.retriever import create_retriever_tool
from lr_data import (
    ANNOTATORS,
    CONTRACT,
    EXPIRATION,
    RENEWAL,
    contracts,
    cuad_item,
    has_answer,
    qasper_item,
)

from langchain_hrefine import CompressionRetriever, LongRefinerCompressor

#: Token budget of the refined context (all retrieved contracts together; default tokenizer).
BUDGET = 1024


def format_docs(docs: list[Document]) -> str:
    """The refined contracts one after another, joined as their kept parts are."""
    return "\n\n".join(doc.page_content for doc in docs)


@pytest.fixture(scope="module")
def retriever(shared_data: Path, embedder: Embedder) -> CompressionRetriever:
    docs = [
        Document(page_content=text, metadata={"source": f"{doc_id}.txt"}, id=doc_id)
        for doc_id, text in contracts(shared_data).items()
    ]
    return CompressionRetriever(
        base_retriever=PagesRetriever(documents=docs, k=3),
        base_compressor=LongRefinerCompressor(max_tokens=BUDGET, embeddings=embedder),
    )


async def test_lcel_chain_prompt_holds_the_answer_clause_within_budget(
    shared_data: Path, retriever: CompressionRetriever
) -> None:
    item = cuad_item(shared_data, RENEWAL)
    model = RecordingChatModel(responses=["One-year automatic renewals."])
    prompt = ChatPromptTemplate.from_messages(
        [
            ("system", "Answer from these contract excerpts.\n\n{context}"),
            ("human", "{question}"),
        ]
    )
    chain = (
        {"context": retriever | format_docs, "question": RunnablePassthrough()}
        | prompt
        | model
        | StrOutputParser()
    )

    assert chain.invoke(item.question) == "One-year automatic renewals."

    system, human = model.received[-1]
    assert human.content == item.question
    context = str(system.content).split("\n\n", 1)[1]
    assert has_answer(context, item)
    assert get_counter(None).count(context) <= BUDGET
    docs = retriever.invoke(item.question)
    assert format_docs(docs) == context
    (contract,) = [d for d in docs if d.id == CONTRACT]
    assert has_answer(contract.page_content, item)
    assert contract.metadata["source"] == f"{CONTRACT}.txt"
    assert contract.metadata["hrefine_method"] == "longrefiner"
    assert contract.metadata["hrefine_structure"] == "numbered"

    # The async path of the same chain sends the same prompt.
    await chain.ainvoke(item.question)
    assert model.received[-1] == model.received[-2]


def test_compression_retriever_as_an_agent_tool(
    shared_data: Path, retriever: CompressionRetriever
) -> None:
    item = cuad_item(shared_data, EXPIRATION)
    tool = create_retriever_tool(
        retriever,
        "contract_search",
        "Search the contracts; returns the clauses relevant to the query.",
        document_separator="\n\n",
    )
    # A tool-calling model asks for the search; the tool answers with a ToolMessage.
    agent = FakeMessagesListChatModel(
        responses=[
            AIMessage(
                content="",
                tool_calls=[
                    {"name": "contract_search", "args": {"query": item.question}, "id": "call_1"}
                ],
            )
        ]
    )
    request = agent.invoke("When does the Corio agreement expire?")
    assert isinstance(request, AIMessage)
    (call,) = request.tool_calls
    message = tool.invoke({**call, "type": "tool_call"})
    assert isinstance(message, ToolMessage) and message.tool_call_id == "call_1"
    content = str(message.content)
    assert has_answer(content, item)
    assert get_counter(None).count(content) <= BUDGET
    # The plain-arguments form an agent framework may use gives the same text.
    assert tool.invoke({"query": item.question}) == content


def test_k_asks_the_compressor_for_that_many_contracts(
    shared_data: Path, retriever: CompressionRetriever
) -> None:
    item = cuad_item(shared_data, RENEWAL)
    every = retriever.invoke(item.question)
    assert len(every) == 3  # each retrieved contract keeps some of the budget
    (doc,) = retriever.invoke(item.question, k=1)
    # The most relevant contract, refined again alone: the whole budget is its own.
    assert doc.id == every[0].id
    assert every[0].metadata["hrefine_tokens"] < doc.metadata["hrefine_tokens"] <= BUDGET
    assert get_counter(None).count(doc.page_content) == doc.metadata["hrefine_tokens"]
    assert doc.metadata["hrefine_dropped_documents"] == 2


def test_prompt_only_mode_inside_a_chain(shared_data: Path, embedder: Embedder) -> None:
    item: EvalItem = qasper_item(shared_data, ANNOTATORS)
    # The refiner's model (query analysis, then section choice) and the reader are both chat
    # models; each is asked only what its role needs.
    refiner_model = FakeListChatModel(responses=["[Local]", json.dumps(["Data Collection"])])
    compressor = LongRefinerCompressor(max_tokens=400, embeddings=embedder, llm=refiner_model)
    paper = Document(page_content=item.document, metadata={"title": "OLID"}, id="qasper_01")
    retriever = CompressionRetriever(
        base_retriever=PagesRetriever(documents=[paper], k=1), base_compressor=compressor
    )
    reader = RecordingChatModel(responses=["Five annotators."])
    prompt = ChatPromptTemplate.from_messages(
        [("system", "Answer from this paper.\n\n{context}"), ("human", "{question}")]
    )
    chain = (
        {"context": retriever | format_docs, "question": RunnablePassthrough()}
        | prompt
        | reader
        | StrOutputParser()
    )
    assert chain.invoke(item.question) == "Five annotators."
    context = str(reader.received[-1][0].content).split("\n\n", 1)[1]
    assert has_answer(context, item)
    assert get_counter(None).count(context) <= 400
