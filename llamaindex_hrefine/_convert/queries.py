"""A LlamaIndex ``QueryBundle``'s query embedding, read as LlamaIndex's own
``VectorIndexRetriever`` reads it, for the core's tree searches (``query_vector``).

The bundle's ``embedding`` when it is set; otherwise, when it has ``custom_embedding_strs``
(what ``HyDEQueryTransform`` sets), the mean of the index embedder's query embeddings of them
(``BaseEmbedding.get_agg_embedding_from_queries``); otherwise None, and the core embeds
``query_str`` itself, exactly as before. Whatever reads text (an LLM prompt, the BM25 match)
still reads ``query_str``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import numpy as np
from hrefine._encodable import encodable
from hrefine.errors import EmptyInputError, InputTypeError
from hrefine.models import Embedder
from llama_index.core.schema import QueryBundle

__all__ = ["abundle_vector", "bundle_vector"]


def bundle_vector(bundle: QueryBundle, embedder: Callable[[], Embedder]) -> Any:
    """The query embedding ``bundle`` asks for, or None for the core to embed ``query_str``.

    Parameters
    ----------
    bundle:
        The query.
    embedder:
        Gives the index's embedder (called only when ``custom_embedding_strs`` are embedded,
        so a bundle with an ``embedding`` loads no model).

    Returns
    -------
    Any
        The bundle's ``embedding`` as it is (the core checks its size: one from another model
        of the same size is the caller's to avoid), a ``(dim,)`` float64 mean of the embedded
        ``custom_embedding_strs``, or None.

    Raises
    ------
    InputTypeError
        ``custom_embedding_strs`` is not a list of str.
    EmptyInputError
        ``custom_embedding_strs`` is empty or holds an empty string.
    """
    if bundle.embedding is not None:
        return bundle.embedding
    texts = _embedding_strs(bundle)
    if texts is None:
        return None
    model = embedder()
    vectors = np.asarray([model.embed_query(text) for text in texts], dtype=np.float64)
    # LlamaIndex's mean_agg: several strings (HyDE's document and the question) count equally.
    return vectors.mean(axis=0)


async def abundle_vector(bundle: QueryBundle, embedder: Callable[[], Embedder]) -> Any:
    """:func:`bundle_vector`, embedding in the default executor (the loop is never blocked)."""
    if bundle.embedding is not None or bundle.custom_embedding_strs is None:
        return bundle_vector(bundle, embedder)  # nothing to embed
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(None, bundle_vector, bundle, embedder)


def _embedding_strs(bundle: QueryBundle) -> list[str] | None:
    """The bundle's ``custom_embedding_strs``, checked as queries are (None when unset)."""
    given = bundle.custom_embedding_strs
    if given is None:
        return None
    if isinstance(given, (str, bytes)) or not isinstance(given, (list, tuple)):
        msg = f"QueryBundle.custom_embedding_strs must be a list of str, got {type(given).__name__}"
        raise InputTypeError(msg)
    if not given:
        msg = (
            "QueryBundle.custom_embedding_strs is empty; give the strings to embed, or None "
            "to embed query_str"
        )
        raise EmptyInputError(msg)
    out: list[str] = []
    for i, text in enumerate(given):
        if not isinstance(text, str):
            msg = f"QueryBundle.custom_embedding_strs[{i}] is a {type(text).__name__}, not a str"
            raise InputTypeError(msg)
        if not text.strip():  # an empty HyDE answer would rank by an empty string's vector
            msg = f"QueryBundle.custom_embedding_strs[{i}] is empty; every string must hold text"
            raise EmptyInputError(msg)
        out.append(encodable(text))  # lone surrogates: no tokenizer encodes them
    return out
