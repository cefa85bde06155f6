"""LangChain retrievers built on the hrefine compressors."""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

from hrefine._adapter_errors import OneLineSettingErrors
from hrefine.errors import ConfigError
from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import BaseDocumentCompressor, Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field

__all__ = ["CompressionRetriever"]


def _top_k(documents: Sequence[Document], k: int | None) -> list[Document]:
    """The ``k`` documents with the highest ``relevance_score``, in the compressor's order."""
    docs = list(documents)
    if k is None or len(docs) <= k:
        return docs

    def score(i: int) -> float:
        # Any real number counts (a reranker's numpy float32 too); a bool, NaN or text is none.
        value = docs[i].metadata.get("relevance_score")
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            return float("-inf")
        number = float(value)
        return float("-inf") if math.isnan(number) else number

    # Python's sort is stable: among equal scores the earlier document wins.
    best = sorted(range(len(docs)), key=score, reverse=True)[:k]
    return [docs[i] for i in sorted(best)]


def _with_top_n(compressor: BaseDocumentCompressor, k: int | None) -> BaseDocumentCompressor:
    """The compressor asked for ``k`` results, when it has a ``top_n`` field (hrefine's
    compressors, and rerankers such as Cohere's or FlashRank's): then it picks them itself,
    which a shared budget needs (each of the ``k`` keeps some text). The caller's compressor
    is not changed: a copy is made for the call, sharing its loaded models."""
    fields = type(compressor).model_fields
    if k is None or "top_n" not in fields:
        return compressor
    current = getattr(compressor, "top_n", None)
    top_n = k if not isinstance(current, int) else min(k, current)
    if top_n == current:
        return compressor
    return compressor.model_copy(update={"top_n": top_n})


class CompressionRetriever(OneLineSettingErrors, BaseRetriever):
    """Retrieve with ``base_retriever``, then compress the results with ``base_compressor``.

    A small, dependency-free replacement for ``ContextualCompressionRetriever`` (which now lives
    in ``langchain-classic``). Callbacks flow to both children; the async path awaits the base
    retriever's ``ainvoke`` and the compressor's ``acompress_documents``.

    Examples
    --------
    >>> from langchain_hrefine import CompressionRetriever, HtmlRagCompressor
    >>> retriever = CompressionRetriever(  # doctest: +SKIP
    ...     base_retriever=my_retriever,
    ...     base_compressor=HtmlRagCompressor(max_tokens=1024),
    ...     k=3,
    ... )
    >>> docs = retriever.invoke("who won the 1972 award?")  # doctest: +SKIP
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    base_retriever: BaseRetriever = Field(description="Retriever that fetches the documents.")
    """Any LangChain retriever. Extra keyword arguments of ``invoke`` (other than ``k``) are
    passed on to it.
    """
    base_compressor: BaseDocumentCompressor = Field(
        description="Compressor applied to the retrieved documents."
    )
    """Any LangChain document compressor, e.g. :class:`~langchain_hrefine.HtmlRagCompressor`."""
    k: int | None = Field(default=None, ge=1, description="Most documents returned (None: all).")
    """Most documents returned after compression (None: all). A compressor with a ``top_n``
    field (``HtmlRagCompressor``, rerankers) is asked for ``k`` results (the smaller of
    ``k`` and its own ``top_n``); from any other compressor, the ``k`` with the highest
    ``metadata["relevance_score"]`` are kept, in the compressor's order. ``invoke(query,
    k=...)`` overrides it for one call.
    """

    def _resolve_k(self, kwargs: dict[str, Any]) -> int | None:
        k = kwargs.pop("k", self.k)
        if k is not None and (not isinstance(k, int) or isinstance(k, bool) or k < 1):
            msg = f"k must be a positive int or None, got {k!r}"
            raise ConfigError(msg)
        return k

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        k = self._resolve_k(kwargs)
        docs = self.base_retriever.invoke(
            query, config={"callbacks": run_manager.get_child()}, **kwargs
        )
        if not docs:
            return []
        compressor = _with_top_n(self.base_compressor, k)
        compressed = compressor.compress_documents(docs, query, callbacks=run_manager.get_child())
        return _top_k(compressed, k)

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        k = self._resolve_k(kwargs)
        docs = await self.base_retriever.ainvoke(
            query, config={"callbacks": run_manager.get_child()}, **kwargs
        )
        if not docs:
            return []
        compressor = _with_top_n(self.base_compressor, k)
        compressed = await compressor.acompress_documents(
            docs, query, callbacks=run_manager.get_child()
        )
        return _top_k(compressed, k)
