"""The one check every method makes of a query before any model sees it, and of a query
vector a caller embedded itself."""

from __future__ import annotations

from typing import Any

import numpy as np

from hrefine._encodable import encodable
from hrefine.errors import ConfigError, EmptyInputError, InputTypeError

__all__ = ["check_query", "check_query_vector"]


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


def check_query_vector(
    vector: Any, embeddings: np.ndarray | None, *, nodes: str, fix: str | None = None
) -> np.ndarray:
    """A query embedding as a ``(dim,)`` float64 array, checked against the nodes' size.

    RAPTOR and GARLIC take one from the caller in place of embedding the query text (a
    framework's precomputed or HyDE embedding). It is not normalised here: each method scores
    it as it scores its embedder's vectors.

    Parameters
    ----------
    vector:
        A sequence of numbers or a 1-D array (a ``(1, dim)`` row is taken as one vector).
    embeddings:
        The nodes' ``(n_nodes, dim)`` matrix, whose ``dim`` the vector must have (None: nothing
        embedded, the size not checked).
    nodes:
        What the nodes are, for the messages ("the tree's nodes").
    fix:
        What to do about a wrong size (default: give a vector from the nodes' model).

    Raises
    ------
    InputTypeError
        ``vector`` is not a flat sequence of numbers.
    ConfigError
        Its size is not the nodes' ``dim``, or a value is NaN or infinite.
    """
    try:
        q = np.asarray(vector, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        msg = (
            f"the query embedding must be a sequence of numbers, got {type(vector).__name__} "
            f"({exc})"
        )
        raise InputTypeError(msg) from exc
    if q.ndim == 2 and q.shape[0] == 1:
        q = q[0]
    if q.ndim != 1:
        msg = f"the query embedding must be one flat vector, got an array of shape {q.shape}"
        raise InputTypeError(msg)
    dim = None if embeddings is None else int(embeddings.shape[1])
    # Checked here: a wrong size would otherwise fail as a numpy broadcast error, or not at all.
    if dim is not None and q.shape[0] != dim:
        fix = fix or "give an embedding made by the model the nodes were embedded with"
        msg = f"the query embedding has {q.shape[0]} dimensions but {nodes} have {dim}; {fix}"
        raise ConfigError(msg)
    if not np.isfinite(q).all():
        msg = "the query embedding holds NaN or infinite values; every value must be finite"
        raise ConfigError(msg)
    return q
