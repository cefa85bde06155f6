"""A LangChain retriever over a RAPTOR summary tree (:mod:`hrefine.raptor`)."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from hrefine.errors import ConfigError
from hrefine.models import Embedder
from hrefine.options import adapter_model
from hrefine.raptor import RaptorOptions, RaptorTree, RetrievedNode, Source
from hrefine.raptor.serial_insert import InsertLock
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from pydantic import PrivateAttr

from langchain_hrefine._convert import (
    documents_to_sources,
    nodes_to_documents,
    to_embedder,
    to_summariser,
)
from langchain_hrefine._fields import field_settings, model_field
from langchain_hrefine._store_retriever import LoadArgs, StoreRetriever

__all__ = ["RaptorRetriever"]

logger = logging.getLogger(__name__)

#: The settings a call may change: ``invoke(query, k=..., max_tokens=..., mode=...,
#: lexical_weight=..., summary_rank=...)``; the fields give the others, and :meth:`save`
#: writes them over the tree's own.
CALL_SETTINGS = ("k", "max_tokens", "mode", "lexical_weight", "summary_rank")
#: The RAPTOR settings that are fields of the retriever (the models are fields of their own).
FIELD_SETTINGS = field_settings(RaptorOptions)

if TYPE_CHECKING:
    _RaptorFields = StoreRetriever
else:  # one field per RaptorOptions setting (its llm, embedder and tokenizer are declared below)
    _RaptorFields = adapter_model(StoreRetriever, RaptorOptions, name="_RaptorRetrieverFields")


class RaptorRetriever(_RaptorFields):
    """Retrieve from a RAPTOR tree: leaf chunks and LLM summaries of their clusters.

    The documents are cut into ~100-token chunks, embedded, clustered, and each cluster is
    summarised by ``llm``; the summaries are clustered and summarised again, layer after layer
    (Sarthi et al., 2024). A query is answered from every layer at once (``mode="collapsed"``,
    the paper's best) or by walking down from the top layer (``"traversal"``). By default only
    chunks come back (``summary_rank="off"``, the best measured with the embedded models);
    ``summary_rank="free"`` lets summaries compete with them as in the paper, so a question
    about the whole can get a summary.

    Make one with :meth:`from_texts` or :meth:`from_documents` (or their async forms), or
    :meth:`load` a saved one; grow it with :meth:`add_documents` (only the summaries above the
    new chunks are made again). A retriever made empty (``RaptorRetriever(llm=...)``) builds its
    tree on the first :meth:`add_documents` and returns no documents before that. The tree is
    the ``store`` field, so a copy LangChain makes from the fields (``configurable_fields``)
    searches it too.

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
    ``cluster_group_size``, ``seed``, ``prompt``, ``system_prompt``, ``mode``, ``k``,
    ``max_tokens``, ``lexical_weight``, ``summary_rank``, ``llm_concurrency``, ``llm_retries``,
    ``llm_timeout``. The building settings are used when
    the tree is built (a built tree keeps them; :meth:`load` sets the fields from the saved
    tree); ``mode``, ``k``, ``max_tokens``, ``lexical_weight`` and ``summary_rank`` are read
    at each call, and ``invoke(query, k=..., summary_rank=...)`` changes them for one call.
    ``k`` is the most documents returned in ``"collapsed"`` mode, and the most kept per layer
    in ``"traversal"`` mode (as in the paper: up to ``k`` per layer); ``max_tokens`` bounds
    the sum of the returned documents' token counts in either mode.

    Examples
    --------
    >>> from langchain_hrefine import RaptorRetriever
    >>> retriever = RaptorRetriever.from_documents(  # doctest: +SKIP
    ...     docs, llm=chat_model, max_tokens=2000
    ... )
    >>> context = retriever.invoke("What is the story about?")  # doctest: +SKIP
    """

    _component = "RaptorRetriever"
    _options_type = RaptorOptions
    _store_type = RaptorTree
    _call_names = CALL_SETTINGS
    _saved_fields = CALL_SETTINGS
    _empty_warning = "RaptorRetriever has no documents yet; add_documents() builds its tree"
    _nothing_to_save = "this RaptorRetriever has no tree to save; add documents first"

    llm: Any = model_field(
        "Summariser: a chat model, LLM, Runnable or str -> str callable; None: "
        "no model (the leading sentences of each cluster's texts)."
    )
    """The summariser: a LangChain chat model, LLM or Runnable taking a string prompt (called
    with ``invoke``, or ``ainvoke`` on the async path), a ``str -> str`` callable (sync or
    async), an hrefine ``LocalLM`` or ``TextGenerator``; None: no model (each summary is
    the leading sentences of its cluster's texts).
    """
    embeddings: Embeddings | Embedder | None = model_field(
        "Embeddings of chunks, summaries and queries; None: the embedded model."
    )
    """LangChain ``Embeddings`` (or an hrefine ``Embedder``) for chunks, summaries and queries;
    None uses hrefine's embedded all-MiniLM-L6-v2, offline. Pass the same one to
    :meth:`load` as the tree was built with.
    """
    # Held while an empty retriever builds its tree (add_documents), so that a second call
    # inserts into it rather than building another in its place.
    _building: InsertLock = PrivateAttr(default_factory=InsertLock)

    tokenizer: Any = model_field("Tokenizer of chunk sizes and max_tokens (None: Llama-3.2's).")
    """The reader LLM's tokenizer, in which chunk sizes and ``max_tokens`` are counted: a
    Hugging Face name or tokenizer, a ``tokenizer.json`` path, a tiktoken encoding or model
    name (``"cl100k_base"``), a ``tiktoken.Encoding``, a ``str -> int`` callable, or None
    for Llama-3.2's.
    """

    # -- the tree ---------------------------------------------------------------------------
    @property
    def tree(self) -> RaptorTree | None:
        """The core :class:`~hrefine.raptor.RaptorTree` (None until documents are added):
        its ``stats``, ``layers`` and node graph."""
        tree: RaptorTree | None = self.store
        return tree

    def _models(self, options: RaptorOptions) -> dict[str, Any]:
        """The core models for a build: the LLM, embedder and tokenizer, converted."""
        return {
            "llm": to_summariser(self.llm, options),
            "embedder": to_embedder(self.embeddings),
            "tokenizer": self.tokenizer,
        }

    # -- building ---------------------------------------------------------------------------
    def _build_store(self, sources: list[Source], progress: bool) -> RaptorTree:
        options = self._options()
        return RaptorTree.build(sources, options, progress=progress, **self._models(options))

    async def _abuild_store(self, sources: list[Source], progress: bool) -> RaptorTree:
        options = self._options()
        return await RaptorTree.abuild(sources, options, progress=progress, **self._models(options))

    def add_documents(self, documents: Sequence[Document], **kwargs: Any) -> None:
        """Add ``documents`` to the tree (the first call of an empty retriever builds it).

        Only the summaries above the new chunks are made again. The tree changes only if every
        summary succeeds: on :class:`~hrefine.errors.GenerationError` it is as it was.
        Calls at the same time (threads, or ``aadd_documents`` coroutines) run one after the
        other: on an empty retriever the first builds the tree and the others insert into it.
        The Documents are not changed.

        Raises
        ------
        ConfigError
            An unknown keyword argument.
        """
        _no_kwargs("add_documents", kwargs)
        sources = documents_to_sources(documents)
        with self._building:  # a second first call inserts into the tree the first built
            store = self.store
            if store is None:
                self.store = self._build_store(sources, False)
                return
        store.insert(sources)  # inserts wait for each other (the tree's own lock)

    async def aadd_documents(self, documents: Sequence[Document], **kwargs: Any) -> None:
        """:meth:`add_documents` without blocking the event loop."""
        _no_kwargs("aadd_documents", kwargs)
        sources = documents_to_sources(documents)
        async with self._building.held():  # waits without blocking the event loop
            store = self.store
            if store is None:
                self.store = await self._abuild_store(sources, False)
                return
        await store.ainsert(sources)

    # -- retrieval --------------------------------------------------------------------------
    def _documents(self, nodes: list[RetrievedNode]) -> list[Document]:
        ids = list(self.store.tree.metadata.get("sources", []))
        return nodes_to_documents(nodes, ids)

    def _retrieve(self, store: RaptorTree, query: str, settings: dict[str, Any]) -> list[Document]:
        return self._documents(store.retrieve(query, **settings))

    async def _aretrieve(
        self, store: RaptorTree, query: str, settings: dict[str, Any]
    ) -> list[Document]:
        return self._documents(await store.aretrieve(query, **settings))

    # -- persistence ------------------------------------------------------------------------
    def _saveable(self, store: RaptorTree, options: RaptorOptions) -> RaptorTree:
        return RaptorTree(store.tree, options, tokenizer=store.counter)

    @classmethod
    def _load_store(cls, path: str | os.PathLike[str], given: LoadArgs) -> RaptorTree:
        # Token counts are made again in a given tokenizer's tokens; the LLM summarises what
        # add_documents adds.
        embedder = to_embedder(given.embeddings)
        tokenizer, settings = given.tokenizer, given.settings
        loaded = RaptorTree.load(path, embedder=embedder, tokenizer=tokenizer, **settings)
        options = loaded.options
        return RaptorTree(
            loaded.tree,
            options,
            llm=to_summariser(given.llm, options),
            embedder=embedder,
            tokenizer=loaded.counter,
        )


def _no_kwargs(method: str, kwargs: Mapping[str, Any]) -> None:
    """Raise ConfigError naming the keyword arguments ``method`` does not take."""
    if kwargs:
        msg = f"RaptorRetriever.{method} takes no keyword arguments, got {', '.join(kwargs)}"
        raise ConfigError(msg)
