"""A framework's embedding model behind the core :class:`~hrefine.models.embed.Embedder`
protocol: LangChain ``Embeddings`` and LlamaIndex embed models are wrapped in it by the
adapters (and by :func:`~hrefine.models.embed.get_embedder` for any object with
``embed_documents``/``embed_query``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, cast

import numpy as np

from hrefine._encodable import encodable, encodable_all
from hrefine.errors import InputTypeError
from hrefine.models._embed_state import VectorCache, cache_key, finite_rows, normalize_rows
from hrefine.models._loop import call_async
from hrefine.models.embedder_protocol import check_texts

__all__ = ["CallableEmbedder"]

# Cache tags: a model may embed a query and a document differently.
_DOCUMENT, _QUERY = b"document", b"query"


class CallableEmbedder:
    """Wraps ``texts -> vectors`` callables (e.g. a framework's embedding model) as an Embedder.

    Vectors are kept by content (a bounded LRU, like :class:`SentenceTransformerEmbedder`'s):
    a page pruned again for another question does not embed its blocks again, and a query
    scored twice in one call is embedded once, which for a hosted model is requests and money
    saved. The model must give a text the same vector every time; a vector with a NaN or
    infinite value is refused (:class:`~hrefine.errors.ModelOutputError`) and never cached.

    Parameters
    ----------
    embed_documents:
        ``list[str] -> vectors`` (LangChain's ``embed_documents``, LlamaIndex's
        ``get_text_embedding_batch``); called only with texts not in the cache.
    embed_query:
        ``str -> vector``; None embeds the query as a document.
    name:
        A short name for reports.
    aembed_documents, aembed_query:
        Async counterparts. When the embedder runs for an async entry point
        (``HtmlPruner.aprune``), they are awaited on the caller's event loop instead of the
        sync ones being called (see :mod:`hrefine.models._loop`). None: the sync ones always.
    cache_size:
        Vectors kept, documents and queries together (0 keeps none).
    """

    def __init__(
        self,
        embed_documents: Callable[[list[str]], Any],
        embed_query: Callable[[str], Any] | None = None,
        *,
        name: str = "callable",
        aembed_documents: Callable[[list[str]], Awaitable[Any]] | None = None,
        aembed_query: Callable[[str], Awaitable[Any]] | None = None,
        cache_size: int = 50_000,
    ) -> None:
        # Thread-safe; a copy or a pickle starts with an empty one. Made first: it checks
        # cache_size before anything else is kept.
        self._cache = VectorCache(cache_size)
        self._docs = embed_documents
        self._query = embed_query
        self._adocs = aembed_documents
        self._aquery = aembed_query
        self.name = name

    def clear_cache(self) -> None:
        """Forget every cached vector."""
        self._cache.clear()

    def _embed_documents(self, texts: list[str]) -> Any:
        adocs = self._adocs
        if adocs is None:
            return self._docs(texts)
        return call_async(lambda: adocs(texts), lambda: self._docs(texts))

    def _embed_query(self, text: str) -> Any:
        query, aquery = self._query, self._aquery
        if query is None:
            return self._embed_documents([text])[0]
        if aquery is None:
            return query(text)
        return call_async(lambda: aquery(text), lambda: query(text))

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed documents as unit rows; a text embedded before is taken from the cache."""
        check_texts(texts)
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        # Lone surrogates become U+FFFD: a model's client could not encode them to send.
        texts = encodable_all(texts)
        keys = [cache_key(t, _DOCUMENT) for t in texts]
        out = self._cache.get_many(keys)
        # Each distinct text not in the cache, once, in one call of the model. The cache is not
        # locked meanwhile: threads that miss the same text both embed it.
        todo: dict[bytes, str] = {}
        for k, text, vec in zip(keys, texts, out, strict=True):
            if vec is None:
                todo.setdefault(k, text)
        if todo:
            asked = list(todo.values())
            raw = finite_rows(self._embed_documents(asked), self.name, asked)
            fresh = dict(zip(todo, normalize_rows(raw), strict=True))
            self._cache.put_many(fresh.items())
            out = [fresh[k] if v is None else v for k, v in zip(keys, out, strict=True)]
        return np.vstack(cast(list[np.ndarray], out))

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one query as a unit vector (cached, like the documents)."""
        if not isinstance(text, str):
            msg = f"the query must be a str, got a {type(text).__name__}"
            raise InputTypeError(msg)
        text = encodable(text)
        key = cache_key(text, _QUERY)
        vec = self._cache.get(key)
        if vec is None:
            vec = normalize_rows(finite_rows(self._embed_query(text), self.name))[0]
            self._cache.put(key, vec)
        return vec.copy()  # the cache's own array: a caller's in-place change must not reach it


def own_async_method(obj: Any, name: str) -> Any:
    """``obj``'s async method ``name``, or None when it has none or only LangChain's base
    class's, which runs the sync method in the loop's executor: awaited from a pruner's
    worker thread, that would take a second executor thread per call (and could wait for
    one forever when the workers fill the executor)."""
    method = getattr(obj, name, None)
    defined = getattr(type(obj), name, None)
    if not callable(method) or getattr(defined, "__module__", "").startswith("langchain_core."):
        return None
    return method
