"""A LangChain retriever over a RAPTOR summary tree (:mod:`hrefine.raptor`)."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hrefine.errors import ConfigError, TreeError
from hrefine.models import Embedder
from hrefine.options import adapter_model
from hrefine.raptor import RaptorOptions, RaptorTree, RetrievedNode, Source
from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field, PrivateAttr

from langchain_hrefine._convert import (
    documents_to_sources,
    nodes_to_documents,
    texts_to_sources,
    to_embedder,
    to_summariser,
)

__all__ = ["RaptorRetriever"]

logger = logging.getLogger(__name__)

#: The settings a call may change: ``invoke(query, k=..., max_tokens=..., mode=...)``.
CALL_SETTINGS = ("k", "max_tokens", "mode")
#: The RAPTOR settings that are fields of the retriever (the models are fields of their own).
FIELD_SETTINGS = tuple(n for n in RaptorOptions.names() if n not in RaptorOptions.adapter_excluded)

if TYPE_CHECKING:
    _RaptorFields = BaseRetriever
else:  # one field per RaptorOptions setting (its llm, embedder and tokenizer are declared below)
    _RaptorFields = adapter_model(BaseRetriever, RaptorOptions, name="_RaptorRetrieverFields")


class RaptorRetriever(_RaptorFields):
    """Retrieve from a RAPTOR tree: leaf chunks and LLM summaries of their clusters.

    The documents are cut into ~100-token chunks, embedded, clustered, and each cluster is
    summarised by ``llm``; the summaries are clustered and summarised again, layer after layer
    (Sarthi et al., 2024). A query is answered from every layer at once (``mode="collapsed"``,
    the paper's best) or by walking down from the top layer (``"traversal"``), so a question
    about one detail gets its chunk and a question about the whole gets the summaries.

    Make one with :meth:`from_texts` or :meth:`from_documents` (or their async forms), or
    :meth:`load` a saved one; grow it with :meth:`add_documents` (only the summaries above the
    new chunks are made again). A retriever made empty (``RaptorRetriever(llm=...)``) builds its
    tree on the first :meth:`add_documents` and returns no documents before that.

    Each returned Document is new (the inputs are never changed); they come most relevant first.
    ``page_content`` is the chunk or summary text; ``metadata`` is, for a chunk, a copy of its
    document's metadata, plus ``relevance_score`` (cosine similarity mapped into [0, 1]),
    ``hrefine_raw_score`` (the cosine similarity), ``hrefine_layer`` (0 for a chunk, 1 for a
    summary of chunks...), ``hrefine_kind`` (``"chunk"`` or ``"summary"``), ``hrefine_node_id``,
    ``hrefine_tokens`` (tokens in ``tokenizer``), ``hrefine_sources`` (the ids of the documents
    the text comes from where they had ids, else their indexes in the order added) and
    ``hrefine_start``/``hrefine_end`` (character offsets of a chunk in its document) or
    ``hrefine_children`` (the node ids a summary summarises).

    Every :class:`~hrefine.raptor.RaptorOptions` setting but the models is a field of the same
    name, type, default and description: ``chunk_tokens``, ``summary_tokens``, ``max_layers``,
    ``reduction_dim``, ``membership_threshold``, ``max_clusters``, ``cluster_max_tokens``,
    ``seed``, ``prompt``, ``system_prompt``, ``mode``, ``k``, ``max_tokens``,
    ``llm_concurrency``, ``llm_retries``, ``llm_timeout``. The building settings are used when
    the tree is built (a built tree keeps them; :meth:`load` sets the fields from the saved
    tree); ``mode``, ``k`` and ``max_tokens`` are read at each call, and ``invoke(query,
    k=..., max_tokens=..., mode=...)`` changes them for one call. ``k`` is the most documents
    returned in ``"collapsed"`` mode, and the most kept per layer in ``"traversal"`` mode (as
    in the paper: up to ``k`` per layer); ``max_tokens`` bounds the sum of the returned
    documents' token counts in either mode.

    Attributes
    ----------
    llm:
        The summariser: a LangChain chat model, LLM or Runnable taking a string prompt (called
        with ``invoke``, or ``ainvoke`` on the async path), a ``str -> str`` callable (sync or
        async), an hrefine ``LocalLM`` or ``TextGenerator``; None uses the embedded SmolLM2.
    embeddings:
        LangChain ``Embeddings`` (or an hrefine ``Embedder``) for chunks, summaries and queries;
        None uses hrefine's embedded all-MiniLM-L6-v2, offline. Pass the same one to
        :meth:`load` as the tree was built with.
    tokenizer:
        The reader LLM's tokenizer, in which chunk sizes and ``max_tokens`` are counted: a
        Hugging Face name or tokenizer, a ``tokenizer.json`` path, a tiktoken encoding or model
        name (``"cl100k_base"``), a ``tiktoken.Encoding``, a ``str -> int`` callable, or None
        for Llama-3.2's.

    Examples
    --------
    >>> from langchain_hrefine import RaptorRetriever
    >>> retriever = RaptorRetriever.from_documents(  # doctest: +SKIP
    ...     docs, llm=chat_model, max_tokens=2000
    ... )
    >>> context = retriever.invoke("What is the story about?")  # doctest: +SKIP
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    llm: Any = Field(
        default=None,
        description="Summariser: a chat model, LLM, Runnable or str -> str callable; None: "
        "the embedded SmolLM2.",
    )
    embeddings: Embeddings | Embedder | None = Field(
        default=None,
        description="Embeddings of chunks, summaries and queries; None: the embedded model.",
    )
    tokenizer: Any = Field(
        default=None,
        description="Tokenizer of chunk sizes and max_tokens (None: Llama-3.2's).",
    )

    _tree: RaptorTree | None = PrivateAttr(default=None)

    def model_post_init(self, context: Any, /) -> None:
        """Check the settings now, so that a bad one fails at construction."""
        self._options()

    # -- the tree ---------------------------------------------------------------------------
    @property
    def tree(self) -> RaptorTree | None:
        """The core :class:`~hrefine.raptor.RaptorTree` (None until documents are added):
        its ``stats``, ``layers`` and node graph."""
        return self._tree

    def _options(self) -> RaptorOptions:
        """The fields as RaptorOptions (checked); the tokenizer is kept too, so that a named
        one (``"cl100k_base"``) is saved with the tree."""
        values = {n: getattr(self, n) for n in FIELD_SETTINGS}
        return RaptorOptions.build(**values, tokenizer=self.tokenizer)

    def _models(self, options: RaptorOptions) -> dict[str, Any]:
        """The core models for a build: the LLM, embedder and tokenizer, converted."""
        return {
            "llm": to_summariser(self.llm, options),
            "embedder": to_embedder(self.embeddings),
            "tokenizer": self.tokenizer,
        }

    # -- building ---------------------------------------------------------------------------
    @classmethod
    def from_texts(
        cls,
        texts: Iterable[str],
        metadatas: Sequence[Mapping[str, Any]] | None = None,
        *,
        ids: Sequence[str | None] | None = None,
        llm: Any = None,
        embeddings: Embeddings | Embedder | None = None,
        tokenizer: Any = None,
        progress: bool = False,
        **fields: Any,
    ) -> RaptorRetriever:
        """Build a retriever over ``texts``.

        Parameters
        ----------
        texts:
            The documents' texts.
        metadatas:
            One metadata dict per text (copied onto its chunks; JSON-able values if the tree is
            to be saved), or None.
        ids:
            One id per text (reported in ``hrefine_sources``), or None.
        llm, embeddings, tokenizer:
            The models (see the class attributes).
        progress:
            Log each layer as it is made.
        **fields:
            Any other field: ``k``, ``max_tokens``, ``mode``, ``chunk_tokens``...

        Raises
        ------
        EmptyInputError
            Every text is empty.
        GenerationError
            The LLM failed, timed out or answered with nothing after its retries (no
            retriever is made).
        ConfigError, InputTypeError
            A setting or an input is not valid.
        """
        sources = texts_to_sources(texts, metadatas, ids)
        return cls._build(sources, llm, embeddings, tokenizer, progress, fields)

    @classmethod
    def from_documents(
        cls,
        documents: Iterable[Document],
        *,
        llm: Any = None,
        embeddings: Embeddings | Embedder | None = None,
        tokenizer: Any = None,
        progress: bool = False,
        **fields: Any,
    ) -> RaptorRetriever:
        """Build a retriever over LangChain ``documents`` (their text, a copy of their metadata
        and their ids); same parameters and errors as :meth:`from_texts`."""
        sources = documents_to_sources(documents)
        return cls._build(sources, llm, embeddings, tokenizer, progress, fields)

    @classmethod
    async def afrom_texts(
        cls,
        texts: Iterable[str],
        metadatas: Sequence[Mapping[str, Any]] | None = None,
        *,
        ids: Sequence[str | None] | None = None,
        llm: Any = None,
        embeddings: Embeddings | Embedder | None = None,
        tokenizer: Any = None,
        progress: bool = False,
        **fields: Any,
    ) -> RaptorRetriever:
        """:meth:`from_texts` without blocking the event loop (the LLM is awaited, models and
        clustering run in the default executor)."""
        sources = texts_to_sources(texts, metadatas, ids)
        return await cls._abuild(sources, llm, embeddings, tokenizer, progress, fields)

    @classmethod
    async def afrom_documents(
        cls,
        documents: Iterable[Document],
        *,
        llm: Any = None,
        embeddings: Embeddings | Embedder | None = None,
        tokenizer: Any = None,
        progress: bool = False,
        **fields: Any,
    ) -> RaptorRetriever:
        """:meth:`from_documents` without blocking the event loop."""
        sources = documents_to_sources(documents)
        return await cls._abuild(sources, llm, embeddings, tokenizer, progress, fields)

    @classmethod
    def _build(
        cls,
        sources: list[Source],
        llm: Any,
        embeddings: Any,
        tokenizer: Any,
        progress: bool,
        fields: dict[str, Any],
    ) -> RaptorRetriever:
        self = cls(llm=llm, embeddings=embeddings, tokenizer=tokenizer, **fields)
        options = self._options()
        self._tree = RaptorTree.build(sources, options, progress=progress, **self._models(options))
        return self

    @classmethod
    async def _abuild(
        cls,
        sources: list[Source],
        llm: Any,
        embeddings: Any,
        tokenizer: Any,
        progress: bool,
        fields: dict[str, Any],
    ) -> RaptorRetriever:
        self = cls(llm=llm, embeddings=embeddings, tokenizer=tokenizer, **fields)
        options = self._options()
        self._tree = await RaptorTree.abuild(
            sources, options, progress=progress, **self._models(options)
        )
        return self

    def add_documents(self, documents: Sequence[Document], **kwargs: Any) -> None:
        """Add ``documents`` to the tree (the first call of an empty retriever builds it).

        Only the summaries above the new chunks are made again. The tree changes only if every
        summary succeeds: on :class:`~hrefine.errors.GenerationError` it is as it was.
        The Documents are not changed.

        Raises
        ------
        ConfigError
            An unknown keyword argument.
        """
        _no_kwargs("add_documents", kwargs)
        sources = documents_to_sources(documents)
        if self._tree is None:
            options = self._options()
            self._tree = RaptorTree.build(sources, options, **self._models(options))
        else:
            self._tree.insert(sources)

    async def aadd_documents(self, documents: Sequence[Document], **kwargs: Any) -> None:
        """:meth:`add_documents` without blocking the event loop."""
        _no_kwargs("aadd_documents", kwargs)
        sources = documents_to_sources(documents)
        if self._tree is None:
            options = self._options()
            self._tree = await RaptorTree.abuild(sources, options, **self._models(options))
        else:
            await self._tree.ainsert(sources)

    # -- retrieval --------------------------------------------------------------------------
    def _call_settings(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(kwargs) - set(CALL_SETTINGS))
        if unknown:
            msg = (
                f"RaptorRetriever.invoke got unknown argument(s) {', '.join(unknown)}; "
                f"a call may set {', '.join(CALL_SETTINGS)}"
            )
            raise ConfigError(msg)
        return {n: kwargs.get(n, getattr(self, n)) for n in CALL_SETTINGS}

    def _documents(self, nodes: list[RetrievedNode]) -> list[Document]:
        assert self._tree is not None
        ids = list(self._tree.tree.metadata.get("sources", []))
        return nodes_to_documents(nodes, ids)

    def _empty(self) -> list[Document]:
        logger.warning("RaptorRetriever has no documents yet; add_documents() builds its tree")
        return []

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        settings = self._call_settings(kwargs)
        if self._tree is None:
            return self._empty()
        return self._documents(self._tree.retrieve(query, **settings))

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        settings = self._call_settings(kwargs)
        if self._tree is None:
            return self._empty()
        return self._documents(await self._tree.aretrieve(query, **settings))

    # -- persistence ------------------------------------------------------------------------
    def save(self, path: str | os.PathLike[str]) -> Path:
        """Save the tree and the settings into folder ``path`` (JSON and .npy, checksummed,
        never pickle); the models are not saved. Returns the folder.

        Raises
        ------
        TreeError
            The retriever has no tree yet.
        """
        if self._tree is None:
            msg = "this RaptorRetriever has no tree to save; add documents first"
            raise TreeError(msg)
        tree = self._tree
        # the current retrieval fields, with the tree's own building settings
        options = tree.options.replace(**{n: getattr(self, n) for n in CALL_SETTINGS})
        return RaptorTree(tree.tree, options, tokenizer=tree.counter).save(path)

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        *,
        llm: Any = None,
        embeddings: Embeddings | Embedder | None = None,
        tokenizer: Any = None,
        **fields: Any,
    ) -> RaptorRetriever:
        """A retriever over the tree saved in ``path`` by :meth:`save`.

        Parameters
        ----------
        path:
            The folder.
        llm:
            The summariser for :meth:`add_documents` (None: the embedded SmolLM2).
        embeddings:
            The embeddings the tree was built with (None: the embedded model).
        tokenizer:
            Count tokens with this one (the tree's counts are made again); None: the saved
            tokenizer if it was named, else the default.
        **fields:
            Change saved settings (``k``, ``max_tokens``, ``mode``...) or set the retriever's
            own fields (``tags``, ``metadata``).

        Raises
        ------
        PersistenceError
            ``path`` is not a saved RAPTOR tree, or a file in it was edited or truncated.
        ConfigError, InputTypeError
            A setting in ``fields`` is not valid.
        """
        settings = {n: v for n, v in fields.items() if n in FIELD_SETTINGS}
        others = {n: v for n, v in fields.items() if n not in FIELD_SETTINGS}
        RaptorOptions.build(**settings)  # a bad setting of the caller's is theirs to fix
        embedder = to_embedder(embeddings)
        loaded = RaptorTree.load(path, embedder=embedder, tokenizer=tokenizer, **settings)
        options = loaded.options
        tree = RaptorTree(
            loaded.tree,
            options,
            llm=to_summariser(llm, options),
            embedder=embedder,
            tokenizer=loaded.counter,
        )
        saved = {n: getattr(options, n) for n in FIELD_SETTINGS}
        self = cls(
            llm=llm,
            embeddings=embeddings,
            tokenizer=tokenizer if tokenizer is not None else options.tokenizer,
            **saved,
            **others,
        )
        self._tree = tree
        return self


def _no_kwargs(method: str, kwargs: Mapping[str, Any]) -> None:
    """Raise ConfigError naming the keyword arguments ``method`` does not take."""
    if kwargs:
        msg = f"RaptorRetriever.{method} takes no keyword arguments, got {', '.join(kwargs)}"
        raise ConfigError(msg)
