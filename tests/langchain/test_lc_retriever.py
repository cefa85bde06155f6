"""CompressionRetriever: the LangChain standard retriever suite, k, kwargs and async."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from langchain_core.callbacks import Callbacks
from langchain_core.documents import BaseDocumentCompressor, Document
from langchain_core.retrievers import BaseRetriever
from langchain_tests.integration_tests import RetrieversIntegrationTests
from lc_helpers import KeywordHtmlRetriever, make_documents
from pydantic import Field

from langchain_hrefine import CompressionRetriever, HtmlRagCompressor

QUERY = "What is the frequency of the station called The Wolf?"


class TestCompressionRetrieverStandard(RetrieversIntegrationTests):
    """LangChain's own retriever contract, over HtmlRAG with BM25 and the regex tokenizer."""

    @property
    def retriever_constructor(self) -> type[BaseRetriever]:
        return CompressionRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {
            "base_retriever": KeywordHtmlRetriever(documents=make_documents(), k=4),
            # the defaults (one budget shared by the pages), as users configure it
            "base_compressor": HtmlRagCompressor(max_tokens=600, scorer="bm25", tokenizer="regex"),
            "k": 4,
        }

    @property
    def retriever_query_example(self) -> str:
        return QUERY


class ScoreByLength(BaseDocumentCompressor):
    """A stand-in compressor: scores each copy by content length; records calls."""

    calls: list[str] = Field(default_factory=list)

    def compress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        self.calls.append("sync")
        return [
            Document(page_content=d.page_content, metadata={"relevance_score": len(d.page_content)})
            for d in documents
        ]

    async def acompress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        self.calls.append("async")
        return self.compress_documents(documents, query, callbacks)[:]


def _retriever(k: int | None = None) -> tuple[CompressionRetriever, KeywordHtmlRetriever]:
    docs = [Document(page_content="x" * n) for n in (3, 9, 1, 7, 5)]
    base = KeywordHtmlRetriever(documents=docs, k=5)
    return CompressionRetriever(base_retriever=base, base_compressor=ScoreByLength(), k=k), base


def test_k_keeps_highest_scores_in_compressor_order() -> None:
    retriever, _ = _retriever(k=3)
    out = retriever.invoke("anything")
    assert [len(d.page_content) for d in out] == [9, 7, 5]


def test_k_none_returns_everything_the_compressor_returns() -> None:
    retriever, _ = _retriever()
    assert len(retriever.invoke("anything")) == 5


def test_invoke_k_overrides_and_other_kwargs_reach_the_base_retriever() -> None:
    retriever, base = _retriever(k=4)
    out = retriever.invoke("anything", k=2, flavour="html")
    assert len(out) == 2
    assert base.calls[-1] == {"flavour": "html"}


def test_bad_k_is_rejected() -> None:
    retriever, _ = _retriever()
    with pytest.raises(ValueError, match="k must be a positive int"):
        retriever.invoke("anything", k=0)


async def test_async_path_uses_the_async_compressor() -> None:
    retriever, _ = _retriever(k=2)
    compressor = retriever.base_compressor
    assert isinstance(compressor, ScoreByLength)
    compressor.calls = []
    out = await retriever.ainvoke("anything")
    assert [len(d.page_content) for d in out] == [9, 7]
    assert compressor.calls == ["async", "sync"]


async def test_htmlrag_retriever_sync_async_parity() -> None:
    retriever = CompressionRetriever(
        base_retriever=KeywordHtmlRetriever(documents=make_documents(), k=3),
        base_compressor=HtmlRagCompressor(max_tokens=120, scorer="bm25", tokenizer="regex"),
    )
    sync = retriever.invoke(QUERY)
    asyn = await retriever.ainvoke(QUERY)
    assert [(d.page_content, d.metadata) for d in sync] == [
        (d.page_content, d.metadata) for d in asyn
    ]
    assert any("WNAX-FM" in d.page_content for d in sync)


def test_empty_base_result_gives_empty_list() -> None:
    retriever = CompressionRetriever(
        base_retriever=KeywordHtmlRetriever(documents=[], k=3),
        base_compressor=ScoreByLength(),
    )
    assert retriever.invoke("anything") == []


class NumpyScores(BaseDocumentCompressor):
    """A stand-in reranker: scores as numpy float32 (ONNX and torch rerankers give these), with
    a NaN, a bool and a string among them."""

    def compress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        scores: list[Any] = [
            np.float32(0.1), np.float32(0.2), np.float32(0.9), np.float32(0.8),
            float("nan"), True, "0.99",
        ]  # fmt: skip
        return [
            Document(page_content=d.page_content, metadata={"relevance_score": s})
            for d, s in zip(documents, scores, strict=True)
        ]


def test_k_reads_numpy_scores_and_skips_what_is_not_a_number() -> None:
    # Was: a float32 score failed the isinstance check and counted as no score, so k=2 kept
    # the two lowest-scored documents.
    docs = [Document(page_content=f"doc {i}") for i in range(7)]
    retriever = CompressionRetriever(
        base_retriever=KeywordHtmlRetriever(documents=docs, k=7),
        base_compressor=NumpyScores(),
        k=2,
    )
    assert [d.page_content for d in retriever.invoke("anything")] == ["doc 2", "doc 3"]
