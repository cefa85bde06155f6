"""The :class:`Compressor` protocol that every evaluated method and baseline implements."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

__all__ = ["Compressor", "FunctionCompressor"]


@runtime_checkable
class Compressor(Protocol):
    """Shrinks one document to at most ``max_tokens`` tokens of what matters for ``query``."""

    name: str
    """Short name used in reports."""

    def compress(self, document: str, query: str, max_tokens: int) -> str:
        """Return the compressed context (plain text or HTML) for ``query``.

        Parameters
        ----------
        document:
            The raw document: HTML or plain text.
        query:
            The question.
        max_tokens:
            Token budget, in the evaluation's tokenizer.

        Returns
        -------
        str
            The context a reader LLM would see.
        """
        ...


class FunctionCompressor:
    """Wraps a plain ``(document, query, max_tokens) -> str`` function as a :class:`Compressor`.

    Parameters
    ----------
    fn:
        The function.
    name:
        Report name (default: the function's ``__name__``).
    """

    def __init__(self, fn: Callable[[str, str, int], str], name: str | None = None) -> None:
        self._fn = fn
        self.name: str = name or str(getattr(fn, "__name__", "function"))

    def compress(self, document: str, query: str, max_tokens: int) -> str:
        """Call the wrapped function."""
        return str(self._fn(document, query, max_tokens))
