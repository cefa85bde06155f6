"""Checks of what :meth:`~hrefine.longrefiner.LongRefiner.refine` is given: the query, the
budget, the documents and their titles, each refused with an error that says what to pass."""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence, Set
from typing import Any

from hrefine._decode import decode_bytes
from hrefine._encodable import encodable
from hrefine._query import check_query
from hrefine.errors import ConfigError, EmptyInputError, InputTypeError
from hrefine.longrefiner.document import StructuredDocument

__all__ = [
    "USED_FOR",
    "blanked",
    "check_budget",
    "check_call",
    "check_document",
    "check_refine_query",
    "check_titles",
    "present_documents",
]

#: What an empty query's error says LongRefiner needs the query for.
USED_FOR = "LongRefiner scores the document's sections against the query"


def blanked(texts: list[str], repeats: dict[int, int]) -> list[str]:
    """``texts`` with each repeat of an earlier one emptied (``repeats``: see
    :func:`hrefine.repeats.first_copies`): it is structured, asked about and scored once, and
    a shared budget is not spent on it twice."""
    return ["" if i in repeats else t for i, t in enumerate(texts)]


def present_documents(docs: Sequence[StructuredDocument | None]) -> list[StructuredDocument]:
    """The documents that have text; all empty is an error."""
    present = [d for d in docs if d is not None]
    if not present:
        msg = f"all {len(docs)} documents are empty (no text to refine)"
        raise EmptyInputError(msg)
    return present


def check_call(
    query: object, documents: object, max_tokens: object, titles: Sequence[str] | None
) -> tuple[str, int, list[str]]:
    """The query, the budget and the list of texts of one refine call."""
    text = check_refine_query(query)
    budget = check_budget(max_tokens)
    if isinstance(documents, (str, bytes, bytearray)):
        texts: list[Any] = [documents]
    elif isinstance(documents, (Mapping, Set)):
        # A dict would be read as its keys, a set in no set order: neither is a list of texts.
        msg = (
            f"documents must be a string or a list of strings, got {type(documents).__name__}; "
            "pass the texts in a list"
        )
        raise InputTypeError(msg)
    elif isinstance(documents, Sequence) or hasattr(documents, "__iter__"):
        texts = list(documents)  # type: ignore[call-overload]
    else:
        msg = f"documents must be a string or a list of strings, got {type(documents).__name__}"
        raise InputTypeError(msg)
    check_titles(titles)
    if titles is not None and len(titles) != len(texts):
        msg = f"got {len(titles)} titles for {len(texts)} documents; pass one per document"
        raise ConfigError(msg)
    return text, budget, texts


def check_titles(titles: object) -> None:
    """Refuse ``titles`` unless it is None or a list of str (or None, no title) items.

    Raises
    ------
    InputTypeError
        ``titles`` is a string (read as one title per character), not a sequence, or holds
        something other than str or None.
    """
    if titles is None:
        return
    if isinstance(titles, (str, bytes, bytearray)) or not isinstance(titles, Sequence):
        msg = f"titles must be a list of strings, one per document, got {type(titles).__name__}"
        raise InputTypeError(msg)
    for i, title in enumerate(titles):
        if title is not None and not isinstance(title, str):
            msg = f"title {i} is a {type(title).__name__}; pass a str (or None for no title)"
            raise InputTypeError(msg)


def check_refine_query(query: object) -> str:
    """The query, checked as every method checks it."""
    return check_query(query, used_for=USED_FOR)


def check_budget(max_tokens: object) -> int:
    """A whole number of tokens, at least 1."""
    # numpy integers are whole numbers too; bools, floats and strings are not.
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, numbers.Integral):
        msg = f"max_tokens must be a whole number, got {type(max_tokens).__name__}"
        raise InputTypeError(msg)
    if max_tokens < 1:
        msg = f"max_tokens must be at least 1, got {max_tokens}"
        raise ConfigError(msg)
    return int(max_tokens)


def check_document(document: object, max_chars: int) -> str:
    """One document as text: bytes decoded, lone surrogates replaced, size and emptiness checked.

    Bytes are decoded as a page's are (a byte-order mark, UTF-16 without one, UTF-8, the
    declared charset, then legacy code pages: :mod:`hrefine._decode`), not as UTF-8
    with every other byte replaced; a binary file is refused.
    """
    if isinstance(document, (bytes, bytearray)):
        document = decode_bytes(bytes(document))
    if not isinstance(document, str):
        msg = f"a document must be a string (HTML, Markdown or text), got {type(document).__name__}"
        raise InputTypeError(msg)
    # Lone surrogates (JSON's "\\ud800", text cut inside a pair) reach no tokenizer: each
    # becomes U+FFFD, as in the query, so the structure still holds every other character.
    document = encodable(document)
    if len(document) > max_chars:
        msg = (
            f"document of {len(document):,} characters is over max_input_chars "
            f"({max_chars:,}); raise the limit or split the document"
        )
        raise ConfigError(msg)
    if not document.strip():
        msg = "the document is empty"
        raise EmptyInputError(msg)
    return document
