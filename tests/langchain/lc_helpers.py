"""Test helpers for the LangChain adapter: small HTML pages, a keyword fake Embeddings, a tiny
retriever. Deterministic and offline: no model is loaded.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from hrefine.testing import KeywordEmbedder, keyword_tokens
from html_pages import PAGES
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import BaseDocumentCompressor, Document
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever
from pydantic import PrivateAttr


def make_documents() -> list[Document]:
    """One Document per page, with nested metadata (to check it is copied, not shared)."""
    return [
        Document(
            page_content=html,
            metadata={"source": f"{name}.html", "tags": ["wiki", name], "info": {"lang": "en"}},
            id=f"doc-{name}",
        )
        for name, html in PAGES.items()
    ]


class KeywordEmbeddings(Embeddings):
    """A LangChain ``Embeddings`` over :class:`hrefine.testing.KeywordEmbedder` (counts calls)."""

    def __init__(self, dim: int = 512) -> None:
        self.inner = KeywordEmbedder(dim=dim)
        self.document_calls = 0
        self.query_calls = 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.document_calls += 1
        return self.inner.embed(texts).tolist()  # type: ignore[no-any-return]

    def embed_query(self, text: str) -> list[float]:
        self.query_calls += 1
        return self.inner.embed_query(text).tolist()  # type: ignore[no-any-return]


_TAG_RE = re.compile(r"<[^>]+>")


class KeywordHtmlRetriever(BaseRetriever):
    """A tiny in-memory retriever: ranks HTML Documents by query-word overlap, honours ``k``."""

    documents: list[Document]
    k: int = 4
    _calls: list[dict[str, Any]] = PrivateAttr(default_factory=list)

    @property
    def calls(self) -> list[dict[str, Any]]:
        """The keyword arguments of each call, for tests."""
        return self._calls

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        self._calls.append(dict(kwargs))
        k = int(kwargs.get("k", self.k))
        words = set(keyword_tokens(query))

        def overlap(doc: Document) -> int:
            return len(words & set(keyword_tokens(_TAG_RE.sub(" ", doc.page_content))))

        ranked = sorted(self.documents, key=overlap, reverse=True)
        return ranked[:k]


#: ``await compress(compressor, documents, query)``: the sync or async path (see conftest).
Compress = Callable[[BaseDocumentCompressor, Sequence[Document], str], Awaitable[list[Document]]]
