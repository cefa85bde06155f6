"""Fixtures for the LangChain adapter tests (helpers live in ``lc_helpers``)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from langchain_core.documents import BaseDocumentCompressor, Document
from lc_helpers import Compress, KeywordEmbeddings, make_documents


@pytest.fixture
def documents() -> list[Document]:
    return make_documents()


@pytest.fixture
def keyword_embeddings() -> KeywordEmbeddings:
    return KeywordEmbeddings()


@pytest.fixture(params=["sync", "async"])
def compress(request: pytest.FixtureRequest) -> Compress:
    """Runs a compressor through ``compress_documents`` or ``acompress_documents``."""

    async def run(
        compressor: BaseDocumentCompressor, docs: Sequence[Document], query: str
    ) -> list[Document]:
        if request.param == "sync":
            return list(compressor.compress_documents(docs, query))
        return list(await compressor.acompress_documents(docs, query))

    return run
