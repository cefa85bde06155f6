"""End to end in LangChain with RAPTOR: a real Qasper paper, the embedded default embedder, an
LCEL chain and an agent tool.

The tree is built once over the paper with an instant deterministic summariser (the point here
is the plumbing from the retriever to the prompt; the summaries' quality is the LLM's).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from e2e_helpers import ANSWER_MARGIN, RecordingChatModel, answer_lead, normalize
from hrefine.budget import get_counter
from hrefine.eval.loaders import EvalItem, load_dataset
from langchain_core.documents import Document
from langchain_core.language_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnablePassthrough
from langchain_core.tools.retriever import create_retriever_tool
from raptor_fakes import Summariser

from langchain_hrefine import RaptorRetriever

#: A paper (stance detection on Chinese Facebook posts) and a question whose answer is verbatim
#: in one chunk, which leads every other chunk by a margin (checked below).
PAPER = "qasper_08"
QUESTION = "What topic is covered in the Chinese Facebook data? "
#: Token budget of the retrieved context (default tokenizer).
BUDGET = 1024


def format_docs(docs: list[Document]) -> str:
    """The retrieved chunks and summaries, one after another."""
    return "\n\n".join(doc.page_content for doc in docs)


def has_answer(text: str, item: EvalItem) -> bool:
    """True when one of the item's answers occurs in ``text`` (case and spacing ignored)."""
    return any(normalize(a) in normalize(text) for a in item.answers)


@pytest.fixture(scope="module")
def item(shared_data: Path) -> EvalItem:
    (found,) = [
        it
        for it in load_dataset("qasper", data_dir=shared_data)
        if it.doc_id == PAPER and it.question == QUESTION
    ]
    assert has_answer(found.document, found)
    return found


@pytest.fixture(scope="module")
def retriever(item: EvalItem) -> RaptorRetriever:
    paper = Document(page_content=item.document, metadata={"paper": PAPER}, id=PAPER)
    return RaptorRetriever.from_documents([paper], llm=Summariser(), max_tokens=BUDGET)


async def test_lcel_chain_prompt_holds_the_answer_chunk_within_budget(
    item: EvalItem, retriever: RaptorRetriever
) -> None:
    model = RecordingChatModel(responses=["Anti-nuclear power."])
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

    assert chain.invoke(item.question) == "Anti-nuclear power."

    system, human = model.received[-1]
    assert human.content == item.question
    context = str(system.content).split("\n\n", 1)[1]
    assert has_answer(context, item)
    docs = retriever.invoke(item.question)
    assert format_docs(docs) == context
    counter = get_counter(None)
    assert sum(counter.count(d.page_content) for d in docs) <= BUDGET
    # the answer comes from a chunk of the paper, with its place in the paper
    (chunk,) = [
        d
        for d in docs
        if d.metadata["hrefine_kind"] == "chunk" and has_answer(d.page_content, item)
    ][:1]
    start, end = chunk.metadata["hrefine_start"], chunk.metadata["hrefine_end"]
    assert item.document[start:end] == chunk.page_content
    assert chunk.metadata["paper"] == PAPER
    assert chunk.metadata["hrefine_sources"] == [PAPER]
    # leaves only by default; asked for, summaries of the paper compete for the prompt too
    assert all(d.metadata["hrefine_kind"] == "chunk" for d in docs)
    free = retriever.invoke(item.question, summary_rank="free")
    assert any(d.metadata["hrefine_kind"] == "summary" for d in free)

    # the async path of the same chain sends the same prompt
    await chain.ainvoke(item.question)
    assert model.received[-1] == model.received[-2]


def test_the_answer_chunk_leads_by_a_margin(item: EvalItem, retriever: RaptorRetriever) -> None:
    assert retriever.tree is not None
    (answer,) = item.answers
    assert answer_lead(retriever.tree, item.question, answer) >= ANSWER_MARGIN


def test_retriever_as_an_agent_tool(item: EvalItem, retriever: RaptorRetriever) -> None:
    tool = create_retriever_tool(
        retriever,
        "paper_search",
        "Search the paper; returns its most relevant passages and summaries.",
    )
    # a tool-calling model asks for the search; the tool answers with a ToolMessage
    agent = FakeMessagesListChatModel(
        responses=[
            AIMessage(
                content="",
                tool_calls=[
                    {"name": "paper_search", "args": {"query": item.question}, "id": "call_1"}
                ],
            )
        ]
    )
    request = agent.invoke("Which topic do the Facebook posts cover?")
    assert isinstance(request, AIMessage)
    (call,) = request.tool_calls
    message = tool.invoke({**call, "type": "tool_call"})
    assert isinstance(message, ToolMessage)
    assert message.tool_call_id == "call_1"
    content = str(message.content)
    assert has_answer(content, item)
    # the plain-arguments form gives the same text, and so does the Runnable's own as_tool
    assert tool.invoke({"query": item.question}) == content
    as_tool = retriever.as_tool(name="paper_search", description="Search the paper.")
    docs = as_tool.invoke({"input": item.question})
    assert any(has_answer(d.page_content, item) for d in docs)
