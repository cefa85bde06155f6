"""Text embedders: the ``Embedder`` protocol, its sentence-transformers implementation, and
:func:`get_embedder`, which turns what a user passes (None, a model folder or name, a
framework's embedding model, a callable) into one.

The protocol is in :mod:`hrefine.models.embedder_protocol`, the implementation in
:mod:`hrefine.models.sentence_transformer`, the embedded default model's folder in
:mod:`hrefine.models.embedder_folder`; every name is imported from here too.
"""

from __future__ import annotations

import os
from functools import lru_cache
from typing import Any

from hrefine.errors import ConfigError, InputTypeError
from hrefine.models._callable_embed import CallableEmbedder, own_async_method
from hrefine.models._checked_embed import CheckedEmbedder
from hrefine.models._embed_cpu import CPU_BATCH_TOKENS
from hrefine.models._embed_state import normalize_rows
from hrefine.models.embedder_folder import (
    DEFAULT_EMBEDDER_PACKAGE,
    EMBEDDED_EMBEDDER,
    default_embedder_path,
)
from hrefine.models.embedder_protocol import Embedder
from hrefine.models.sentence_transformer import PRECISIONS, SentenceTransformerEmbedder

__all__ = [
    "CPU_BATCH_TOKENS",
    "DEFAULT_EMBEDDER_PACKAGE",
    "PRECISIONS",
    "CallableEmbedder",
    "Embedder",
    "SentenceTransformerEmbedder",
    "default_embedder",
    "default_embedder_path",
    "get_embedder",
    "normalize_rows",
]


# The names a string may give the embedded embedder by (compared in lower case).
_EMBEDDED_NAMES = frozenset(
    {EMBEDDED_EMBEDDER.lower(), f"sentence-transformers/{EMBEDDED_EMBEDDER}".lower()}
)


@lru_cache(maxsize=1)
def default_embedder() -> SentenceTransformerEmbedder:
    """The embedded default embedder (all-MiniLM-L6-v2, 384-d), one instance per process.

    It reads up to the model's own limit, 256 word pieces of each text; a method that wants
    fewer passes ``max_tokens`` per call (the HTML pruner reads 128, the length the model was
    trained on).
    """
    return SentenceTransformerEmbedder(str(default_embedder_path()), name=EMBEDDED_EMBEDDER)


def get_embedder(embedder: Any = None) -> Embedder:
    """Resolve ``embedder`` to an :class:`Embedder`.

    ``None`` gives :func:`default_embedder`; a string is a local path, the embedded model's name
    (``"all-MiniLM-L6-v2"``, also with ``sentence-transformers/``: the default), a packaged
    model's name (``"all-mpnet-base-v2"``, installed by ``hrefine models install``) or a cached
    model name; an
    object with ``embed_documents``/``embed_query`` (LangChain style), one with
    ``get_text_embedding_batch``/``get_query_embedding`` (a LlamaIndex embed model) or a
    callable ``list[str] -> vectors`` is wrapped in a :class:`CallableEmbedder`. hrefine's own
    embedders are used as they are; any other object with ``embed``/``embed_query`` is wrapped in a
    :class:`~hrefine.models._checked_embed.CheckedEmbedder`, which names it (its ``name``, else
    its class name) and checks its vectors. Every embedder this returns refuses a vector with a
    NaN or infinite value (:class:`~hrefine.errors.ModelOutputError`).

    Raises
    ------
    InputTypeError
        ``embedder`` is none of these.
    """
    if embedder is None:
        return default_embedder()
    if isinstance(embedder, str):
        from hrefine.models.packaged import find_packaged, installed_folder

        if not embedder.strip():
            msg = "the embedder name is empty; pass a model folder or name, or None (the default)"
            raise ConfigError(msg)

        if not os.path.exists(embedder) and embedder.strip().lower() in _EMBEDDED_NAMES:
            return default_embedder()  # its own name: the embedded copy, not a cache lookup
        packaged = None if os.path.exists(embedder) else find_packaged(embedder, "embedder")
        if packaged is not None:  # "all-mpnet-base-v2": the copy `hrefine models install` made
            return _packaged_embedder(str(installed_folder(packaged)), packaged.name)
        return SentenceTransformerEmbedder(embedder)
    if hasattr(embedder, "embed") and hasattr(embedder, "embed_query"):
        from hrefine.testing import KeywordEmbedder

        # hrefine's own check their vectors already (the keyword embedder's are finite).
        own = (SentenceTransformerEmbedder, CallableEmbedder, CheckedEmbedder, KeywordEmbedder)
        return embedder if isinstance(embedder, own) else CheckedEmbedder(embedder)
    if hasattr(embedder, "embed_documents") and hasattr(embedder, "embed_query"):
        return CallableEmbedder(
            embedder.embed_documents,
            embedder.embed_query,
            name=type(embedder).__name__,
            aembed_documents=own_async_method(embedder, "aembed_documents"),
            aembed_query=own_async_method(embedder, "aembed_query"),
        )
    if hasattr(embedder, "get_text_embedding_batch") and hasattr(embedder, "get_query_embedding"):
        # A LlamaIndex embed model: it is callable too, but as a transform over nodes.
        return CallableEmbedder(
            embedder.get_text_embedding_batch,
            embedder.get_query_embedding,
            name=type(embedder).__name__,
        )
    if callable(embedder):
        return CallableEmbedder(embedder)
    msg = (
        f"cannot use {type(embedder).__name__} as an embedder: pass None, a model folder or "
        "name, an object with embed/embed_query or embed_documents/embed_query, or a callable "
        "list[str] -> vectors"
    )
    raise InputTypeError(msg)


@lru_cache(maxsize=4)
def _packaged_embedder(folder: str, name: str) -> SentenceTransformerEmbedder:
    """One embedder per installed packaged model's folder, shared by every method."""
    return SentenceTransformerEmbedder(folder, name=name)
