"""Every conversion between LangChain and the hrefine core, in one place.

This is the only module of ``langchain_hrefine`` that sees both worlds: LangChain ``Embeddings``
become a core :class:`~hrefine.models.Embedder`, chat models, LLMs and Runnables become a core
:class:`~hrefine.models.TextGenerator`, and ``Document`` objects go in as HTML strings and come
back as new ``Document`` objects. Caller objects are never mutated: metadata is always copied.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from hrefine.errors import InputTypeError
from hrefine.html.outcome import DocumentOutcome, kept_with_metadata
from hrefine.models import (
    CallableEmbedder,
    Embedder,
    TextGenerator,
    as_text_generator,
    get_embedder,
)
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.output_parsers import StrOutputParser
from langchain_core.runnables import Runnable

__all__ = [
    "HrefineEmbeddings",
    "documents_to_html",
    "outcomes_to_documents",
    "to_embedder",
    "to_text_generator",
]

logger = logging.getLogger(__name__)


def to_embedder(embeddings: Embeddings | Embedder | None) -> Embedder | None:
    """Turn LangChain ``Embeddings`` into a core :class:`~hrefine.models.Embedder`.

    Parameters
    ----------
    embeddings:
        A LangChain ``Embeddings``, an object that already implements the core ``Embedder``
        protocol (returned as is), or None (returned as None: the core picks its default model).

    Returns
    -------
    Embedder or None
        An embedder whose rows are L2-normalised, whatever the LangChain model returns, that
        keeps vectors by text and awaits ``aembed_documents``/``aembed_query`` on the async
        path (:class:`~hrefine.models.CallableEmbedder`).
    """
    if embeddings is None:
        return None
    if isinstance(embeddings, HrefineEmbeddings):
        return embeddings.embedder
    if isinstance(embeddings, Embeddings):
        # Vectors are cached by text (a page asked again embeds only the query); the async
        # methods run on the caller's loop on the async path, when the class has its own
        # (the base class's only runs the sync method in a thread).
        cls = type(embeddings)
        own_async = cls.aembed_documents is not Embeddings.aembed_documents
        own_aquery = cls.aembed_query is not Embeddings.aembed_query
        return CallableEmbedder(
            embeddings.embed_documents,
            embeddings.embed_query,
            name=f"langchain:{cls.__name__}",
            aembed_documents=embeddings.aembed_documents if own_async else None,
            aembed_query=embeddings.aembed_query if own_aquery else None,
        )
    if isinstance(embeddings, Embedder):
        return embeddings
    msg = (
        f"cannot use {type(embeddings).__name__} as embeddings: pass a LangChain Embeddings, "
        "an hrefine Embedder, or None for the embedded default model"
    )
    raise InputTypeError(msg)


class HrefineEmbeddings(Embeddings):
    """A core :class:`~hrefine.models.Embedder` as LangChain ``Embeddings``.

    Lets a LangChain vector store use the same embedder as hrefine (by default the embedded
    all-MiniLM-L6-v2, offline). :func:`to_embedder` unwraps it again, so hrefine never embeds
    through the LangChain layer twice.

    Parameters
    ----------
    embedder:
        A core ``Embedder``; None uses :func:`hrefine.models.default_embedder`.
    """

    def __init__(self, embedder: Embedder | None = None) -> None:
        self.embedder = get_embedder(embedder)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed documents as lists of floats (unit length)."""
        return [[float(x) for x in row] for row in self.embedder.embed(texts)]

    def embed_query(self, text: str) -> list[float]:
        """Embed one query as a list of floats (unit length)."""
        return [float(x) for x in self.embedder.embed_query(text)]


def to_text_generator(llm: Any, **options: Any) -> TextGenerator:
    """Turn a LangChain chat model, LLM or Runnable into a core ``TextGenerator``.

    The model is called as ``llm | StrOutputParser()``: ``invoke`` on the sync path and
    ``ainvoke`` on the async path, so the event loop is never blocked by a model with native async.

    Parameters
    ----------
    llm:
        A ``BaseChatModel``, ``BaseLLM`` or any ``Runnable`` taking a string prompt; a core
        ``TextGenerator``, a ``LocalLM`` or a plain ``str -> str`` callable is accepted too.
    **options:
        Passed to :class:`~hrefine.models.TextGenerator` (``max_concurrency``, ``retries``,
        ``timeout``...).

    Returns
    -------
    TextGenerator
        The wrapped model.
    """
    if isinstance(llm, TextGenerator):
        return llm
    if isinstance(llm, Runnable):
        chain = llm | StrOutputParser()

        def _invoke(prompt: str) -> str:
            return str(chain.invoke(prompt))

        async def _ainvoke(prompt: str) -> str:
            return str(await chain.ainvoke(prompt))

        options.setdefault("name", f"langchain:{type(llm).__name__}")
        return TextGenerator(_invoke, afn=_ainvoke, **options)
    if callable(llm) or hasattr(llm, "session"):  # a str -> str callable, or a LocalLM
        return as_text_generator(llm, **options)
    msg = (
        f"cannot use {type(llm).__name__} as an LLM: pass a LangChain chat model, LLM or "
        "Runnable, or a str -> str callable"
    )
    raise InputTypeError(msg)


def documents_to_html(documents: Sequence[Document]) -> list[str]:
    """The HTML (``page_content``) of each Document, in order."""
    return [doc.page_content for doc in documents]


def outcomes_to_documents(
    documents: Sequence[Document],
    outcomes: Sequence[DocumentOutcome],
    *,
    token_counts: Sequence[int],
    tokenizer: str,
    keep_input_order: bool = False,
) -> list[Document]:
    """The new Documents a compressor returns for ``documents`` (most relevant first, or in
    input order), from one outcome per input and each outcome's token count under the
    pruner's ``tokenizer``.

    Documents with nothing kept are left out and counted in every output's
    ``hrefine_dropped_documents``. Each output gets a copy of its input's metadata plus the
    hrefine keys (:func:`hrefine.html.outcome.kept_with_metadata`); an input's own
    ``relevance_score`` (a reranker's) is kept as ``hrefine_input_score``.
    """
    kept = kept_with_metadata(
        outcomes,
        token_counts,
        tokenizer=tokenizer,
        unit="documents",
        metadata_of=lambda i: documents[i].metadata,
        # a reranker's score, before ours
        input_score_of=lambda i: documents[i].metadata.get("relevance_score"),
        keep_input_order=keep_input_order,
    )
    return [
        Document(page_content=o.html, metadata=metadata, id=documents[o.index].id)
        for o, metadata in kept
    ]
