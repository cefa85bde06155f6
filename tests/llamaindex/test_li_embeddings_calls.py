"""A LlamaIndex embed model passed in: the query embedded once per call, each block of a page
once across questions, and the async methods on the async path. Real vectors (the embedded
all-MiniLM-L6-v2) on a real WikiTableQuestions page."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from hrefine.models import default_embedder
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from pydantic import PrivateAttr

from llamaindex_hrefine import HtmlRagNodePostprocessor


class CountingEmbedding(BaseEmbedding):
    """The embedded MiniLM as a LlamaIndex embed model, recording each text it embeds."""

    _log: dict[str, list[str]] = PrivateAttr(default_factory=dict)

    def _record(self, kind: str, texts: list[str]) -> None:
        self._log.setdefault(kind, []).extend(texts)

    def _get_query_embedding(self, query: str) -> list[float]:
        self._record("query", [query])
        return default_embedder().embed_query(query).tolist()  # type: ignore[no-any-return]

    async def _aget_query_embedding(self, query: str) -> list[float]:
        asyncio.get_running_loop()
        self._record("aquery", [query])
        return default_embedder().embed_query(query).tolist()  # type: ignore[no-any-return]

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._get_text_embeddings([text])[0]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        self._record("documents", texts)
        return default_embedder().embed(texts).tolist()  # type: ignore[no-any-return]

    async def _aget_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        self._record("adocuments", texts)
        return default_embedder().embed(texts).tolist()  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def wtq_page(shared_data: Path) -> tuple[str, list[str]]:
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
    model = CountingEmbedding(model_name="counting-minilm")
    post = HtmlRagNodePostprocessor(embed_model=model, max_tokens=512)
    nodes = [NodeWithScore(node=TextNode(text=page, id_="wtq"), score=1.0)]

    def run(question: str) -> list[Any]:
        bundle = QueryBundle(question)
        if mode == "sync":
            return list(post.postprocess_nodes(nodes, query_bundle=bundle))
        return list(asyncio.run(post.apostprocess_nodes(nodes, query_bundle=bundle)))

    assert run(questions[0]) and run(questions[1])
    log: dict[str, list[str]] = model._log
    documents, queries = ("documents", "query") if mode == "sync" else ("adocuments", "aquery")
    assert set(log) == {documents, queries}
    assert log[queries] == questions
    assert len(log[documents]) == len(set(log[documents])) > 20
