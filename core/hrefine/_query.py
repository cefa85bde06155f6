"""The one check every method makes of a query before any model sees it."""

from __future__ import annotations

from hrefine._encodable import encodable
from hrefine.errors import EmptyInputError, InputTypeError

__all__ = ["check_query"]


def check_query(query: object, *, used_for: str) -> str:
    """The query, ready for every model: lone surrogates (which no tokenizer encodes) become
    U+FFFD.

    Parameters
    ----------
    query:
        What the caller passed.
    used_for:
        What the method does with it, for the message of an empty query ("HtmlRAG ranks the
        HTML blocks against the query").

    Raises
    ------
    InputTypeError
        ``query`` is not a str.
    EmptyInputError
        ``query`` is empty or only white space.
    """
    if not isinstance(query, str):
        msg = f"the query must be a str, got {type(query).__name__}; pass the question as text"
        raise InputTypeError(msg)
    if not query.strip():
        msg = f"the query is empty; {used_for}"
        raise EmptyInputError(msg)
    return encodable(query)
