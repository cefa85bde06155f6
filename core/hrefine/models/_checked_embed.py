"""Any embedder that is not hrefine's own, behind the checks hrefine's own make.

:func:`~hrefine.models.embed.get_embedder` returns hrefine's embedders as they are (they check
their model's output themselves) and wraps any other object with ``embed``/``embed_query`` in a
:class:`CheckedEmbedder`, so every method sees the same guarantees whatever the caller passed:
a ``name`` (the object's, else its class name), and finite vectors
(:func:`~hrefine.models._embed_state.finite_rows`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from hrefine.models._embed_state import finite_rows

__all__ = ["CheckedEmbedder", "embedder_name", "takes_max_tokens"]


def embedder_name(embedder: object) -> str:
    """``embedder``'s ``name`` when it is a non-empty string, else its class name."""
    name = getattr(embedder, "name", None)
    return name if isinstance(name, str) and name else type(embedder).__name__


def takes_max_tokens(method: Callable[..., Any]) -> bool:
    """Whether ``method`` has a keyword parameter ``max_tokens`` (a ``**kwargs`` is not one)."""
    try:
        param = inspect.signature(method).parameters.get("max_tokens")
    except (TypeError, ValueError):  # no signature to read (some builtins)
        return False
    return param is not None and param.kind in (param.KEYWORD_ONLY, param.POSITIONAL_OR_KEYWORD)


class CheckedEmbedder:
    """``inner`` (an object with ``embed`` and ``embed_query``) with a name and checked vectors.

    A NaN or infinite value in what ``inner`` returns is a
    :class:`~hrefine.errors.ModelOutputError` naming the embedder and the text. A ``max_tokens``
    read limit reaches ``inner`` only where its method takes one. Any other attribute is
    ``inner``'s.

    Parameters
    ----------
    inner:
        The embedder.
    """

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = embedder_name(inner)

    def __getattr__(self, attr: str) -> Any:
        # Only reached for names this class lacks; ``inner`` is missing while unpickling.
        inner = self.__dict__.get("inner")
        if inner is None or attr.startswith("__"):
            raise AttributeError(attr)
        if attr == "embed_query_and_documents" and callable(getattr(inner, attr, None)):
            return self._embed_query_and_documents
        return getattr(inner, attr)

    def _limit(self, method: Callable[..., Any], max_tokens: int | None) -> dict[str, int]:
        if max_tokens is None or not takes_max_tokens(method):
            return {}
        return {"max_tokens": max_tokens}

    def embed(self, texts: Sequence[str], *, max_tokens: int | None = None) -> np.ndarray:
        """``inner.embed(texts)``, checked."""
        method = self.inner.embed
        return finite_rows(method(texts, **self._limit(method, max_tokens)), self.name, texts)

    def embed_query(self, text: str, *, max_tokens: int | None = None) -> np.ndarray:
        """``inner.embed_query(text)``, checked."""
        method = self.inner.embed_query
        return finite_rows(method(text, **self._limit(method, max_tokens)), self.name)

    def _embed_query_and_documents(
        self, query: str, texts: Sequence[str], *, max_tokens: int | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        method = self.inner.embed_query_and_documents
        q, docs = method(query, texts, **self._limit(method, max_tokens))
        return finite_rows(q, self.name), finite_rows(docs, self.name, texts)

    def __repr__(self) -> str:
        return f"CheckedEmbedder({self.inner!r})"
