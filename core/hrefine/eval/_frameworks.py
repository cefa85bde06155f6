"""Evaluate any LangChain document compressor or LlamaIndex node postprocessor as a compressor.

This is the only module of ``hrefine.eval`` that touches the frameworks, and only inside
functions, so importing the core never imports them. The document is chunked with the
evaluation's tokenizer, the chunks go in as Documents/Nodes, and what comes back (in the
framework's rank order) is fitted to the token budget by :func:`hrefine.eval.text.fill_budget`,
in document order where the chunk's position survived.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import Any

import numpy as np

from hrefine.budget import TokenCounter, get_counter
from hrefine.chunk import chunk_text
from hrefine.errors import EmptyInputError
from hrefine.eval.text import fill_budget

__all__ = ["LangChainCompressor", "LlamaIndexCompressor", "is_langchain", "is_llamaindex"]

_POSITION_KEY = "hrefine_chunk"


def is_langchain(obj: object) -> bool:
    """Whether ``obj`` looks like a LangChain ``BaseDocumentCompressor``."""
    return callable(getattr(obj, "compress_documents", None))


def is_llamaindex(obj: object) -> bool:
    """Whether ``obj`` looks like a LlamaIndex ``BaseNodePostprocessor``."""
    return callable(getattr(obj, "postprocess_nodes", None))


def _chunks_of(document: str, counter: TokenCounter, chunk_tokens: int) -> list[str]:
    from hrefine.eval.baselines import as_plain_text

    chunks = chunk_text(as_plain_text(document), counter, chunk_tokens)
    if not chunks:
        msg = "the document has no visible text to compress"
        raise EmptyInputError(msg)
    return chunks


def _fit(
    returned: Sequence[tuple[str, int | None, float | None]],
    counter: TokenCounter,
    max_tokens: int,
) -> str:
    """Fit (text, original position or None, framework score or None) to the budget."""
    if not returned:
        return ""
    texts = [t for t, _, _ in returned]
    n = len(texts)
    # Rank order is the framework's; its own scores break nothing when they are absent.
    scores = np.arange(n, 0, -1, dtype=np.float64)
    big = 1 << 40
    order = [pos if pos is not None else big + rank for rank, (_, pos, _) in enumerate(returned)]
    return fill_budget(texts, scores, counter, max_tokens, order=order)


Returned = list[tuple[str, int | None, float | None]]


class _FrameworkCompressor(abc.ABC):
    """A framework component evaluated as a :class:`hrefine.eval.Compressor`: the document is
    chunked, the chunks go through the component, and what comes back is fitted to the budget.

    Parameters
    ----------
    component:
        The framework's compressor or postprocessor.
    tokenizer:
        Evaluation tokenizer (chunk sizes and the budget).
    chunk_tokens:
        Chunk size fed to the component.
    name:
        Report name (default: the class name).
    """

    def __init__(
        self,
        component: Any,
        *,
        tokenizer: Any = None,
        chunk_tokens: int = 128,
        name: str | None = None,
    ) -> None:
        self.component = component
        self.counter = get_counter(tokenizer)
        self.chunk_tokens = chunk_tokens
        self.name = name or type(component).__name__

    def compress(self, document: str, query: str, max_tokens: int) -> str:
        """Chunk ``document`` (HTML or plain text), run the component for ``query``, and join
        what it returned within ``max_tokens``."""
        chunks = _chunks_of(document, self.counter, self.chunk_tokens)
        return _fit(self._run(chunks, query), self.counter, max_tokens)

    @abc.abstractmethod
    def _run(self, chunks: list[str], query: str) -> Returned:
        """(text, original position or None, score or None) of each returned chunk."""


class LangChainCompressor(_FrameworkCompressor):
    """A LangChain ``BaseDocumentCompressor`` (``compress_documents(documents, query)``) as an
    evaluation compressor; the parameters are :class:`_FrameworkCompressor`'s."""

    def _run(self, chunks: list[str], query: str) -> Returned:
        from langchain_core.documents import Document  # noqa: TID251 - optional extra, lazy

        docs = [Document(page_content=c, metadata={_POSITION_KEY: i}) for i, c in enumerate(chunks)]
        returned: Returned = []
        for doc in self.component.compress_documents(docs, query):
            pos = doc.metadata.get(_POSITION_KEY)
            score = doc.metadata.get("relevance_score")
            returned.append((str(doc.page_content), pos if isinstance(pos, int) else None, score))
        return returned


class LlamaIndexCompressor(_FrameworkCompressor):
    """A LlamaIndex ``BaseNodePostprocessor`` (``postprocess_nodes(nodes, query_str=...)``) as
    an evaluation compressor; the parameters are :class:`_FrameworkCompressor`'s."""

    def _run(self, chunks: list[str], query: str) -> Returned:
        # optional extra, imported lazily so the core never needs LlamaIndex
        from llama_index.core.schema import NodeWithScore, TextNode  # noqa: TID251

        nodes = [
            NodeWithScore(
                node=TextNode(text=c, id_=f"chunk-{i}", metadata={_POSITION_KEY: i}), score=1.0
            )
            for i, c in enumerate(chunks)
        ]
        returned: Returned = []
        for item in self.component.postprocess_nodes(nodes, query_str=query):
            node = getattr(item, "node", item)
            pos = getattr(node, "metadata", {}).get(_POSITION_KEY)
            text = node.get_content() if hasattr(node, "get_content") else str(node)
            returned.append((str(text), pos if isinstance(pos, int) else None, item.score))
        return returned
