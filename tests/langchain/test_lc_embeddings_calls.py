"""A LangChain ``Embeddings`` passed in is asked for as little as the bundled embedder: the query
once per call, each block of a page once across questions, and its async methods on the async
path. Real vectors (the embedded all-MiniLM-L6-v2) on a real WikiTableQuestions page."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path

import pytest
from hrefine.models import default_embedder
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

from langchain_hrefine import HtmlRagCompressor

BUDGET = 512


class CountingEmbeddings(Embeddings):
    """The embedded MiniLM behind LangChain's interface, recording every text it is asked for,
    per method (sync and async apart)."""

    def __init__(self) -> None:
        self.model = default_embedder()
        self.calls: Counter[str] = Counter()
        self.documents: list[str] = []  # every text given to (a)embed_documents
        self.queries: list[str] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls["embed_documents"] += 1
        self.documents.extend(texts)
        return self.model.embed(texts).tolist()  # type: ignore[no-any-return]

    def embed_query(self, text: str) -> list[float]:
        self.calls["embed_query"] += 1
        self.queries.append(text)
        return self.model.embed_query(text).tolist()  # type: ignore[no-any-return]

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        asyncio.get_running_loop()  # awaited on an event loop, not run in a worker thread
        self.calls["aembed_documents"] += 1
        self.documents.extend(texts)
        return self.model.embed(texts).tolist()  # type: ignore[no-any-return]

    async def aembed_query(self, text: str) -> list[float]:
        self.calls["aembed_query"] += 1
        self.queries.append(text)
        return self.model.embed_query(text).tolist()  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def wtq_page(shared_data: Path) -> tuple[str, list[str]]:
    """A WTQ page and two of its questions."""
    folder = shared_data / "wtq"
    with (folder / "questions.jsonl").open(encoding="utf-8") as lines:
        rows = [json.loads(line) for line in lines]
    doc = rows[0]["doc"]
    questions = [r["question"] for r in rows if r["doc"] == doc][:2]
    return (folder / doc).read_text(encoding="utf-8"), questions


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_query_once_per_call_and_blocks_once_across_questions(
    wtq_page: tuple[str, list[str]], mode: str
) -> None:
    page, questions = wtq_page
    embeddings = CountingEmbeddings()
    compressor = HtmlRagCompressor(embeddings=embeddings, max_tokens=BUDGET)
    docs = [Document(page_content=page, metadata={"source": "wtq"})]

    def run(question: str) -> list[Document]:
        if mode == "sync":
            return list(compressor.compress_documents(docs, question))
        return list(asyncio.run(compressor.acompress_documents(docs, question)))

    first = run(questions[0])
    after_first = Counter(embeddings.calls)
    second = run(questions[1])
    assert first and second and first[0].page_content != second[0].page_content

    docs_method, query_method = (
        ("embed_documents", "embed_query")
        if mode == "sync"
        else ("aembed_documents", "aembed_query")
    )
    # The path's own methods only: the async path awaits the async ones.
    assert set(embeddings.calls) == {docs_method, query_method}
    # Each question embedded once, though the pruner scores twice per call (tables' columns,
    # then the blocks).
    assert embeddings.queries == questions
    assert embeddings.calls[query_method] == 2
    # Every block text once: the second question finds the page's vectors cached.
    assert after_first[docs_method] >= 1
    assert embeddings.calls[docs_method] == after_first[docs_method]
    assert len(embeddings.documents) == len(set(embeddings.documents)) > 20


def test_the_cache_gives_the_same_output_as_embedding_afresh(
    wtq_page: tuple[str, list[str]],
) -> None:
    page, questions = wtq_page
    docs = [Document(page_content=page)]
    warm = HtmlRagCompressor(embeddings=CountingEmbeddings(), max_tokens=BUDGET)
    warm.compress_documents(docs, questions[0])
    cached = warm.compress_documents(docs, questions[1])
    fresh = HtmlRagCompressor(embeddings=CountingEmbeddings(), max_tokens=BUDGET)
    assert [d.page_content for d in cached] == [
        d.page_content for d in fresh.compress_documents(docs, questions[1])
    ]
