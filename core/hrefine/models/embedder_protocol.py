"""The :class:`Embedder` protocol every method's embedder meets, and the checks of what
hrefine's embedders are asked to embed."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from hrefine.errors import ConfigError, InputTypeError

__all__ = ["Embedder", "check_max_tokens", "check_query_text", "check_texts"]


@runtime_checkable
class Embedder(Protocol):
    """Maps texts to L2-normalised vectors.

    hrefine's own embedders also take a keyword ``max_tokens`` in ``embed`` and ``embed_query``
    (the word pieces read of each text); the protocol does not ask for it.
    """

    name: str

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed documents: a ``(len(texts), dim)`` float32 array with unit rows."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one query: a ``(dim,)`` float32 unit vector."""
        ...


def check_texts(texts: Sequence[str]) -> None:
    """Refuse one string (not a list of texts) and anything in the list that is not a str."""
    if isinstance(texts, str):
        msg = "embed() takes a sequence of texts, got one string; use embed_query() for it"
        raise InputTypeError(msg)
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            msg = f"embed() takes texts (str); item {i} is a {type(text).__name__}"
            raise InputTypeError(msg)


def check_query_text(text: str) -> None:
    """Refuse a query that is not a str."""
    if not isinstance(text, str):
        msg = f"the query must be a str, got a {type(text).__name__}"
        raise InputTypeError(msg)


def check_max_tokens(max_tokens: int | None) -> None:
    """Refuse a ``max_tokens`` read limit that is not a whole number >= 1 or None."""
    if max_tokens is not None and (
        isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1
    ):
        msg = f"max_tokens must be a whole number >= 1 or None, got {max_tokens!r}"
        raise ConfigError(msg)
