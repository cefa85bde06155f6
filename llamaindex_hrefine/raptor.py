"""RAPTOR in LlamaIndex: a ``RaptorIndex`` (a real ``BaseIndex``) and a ``RaptorRetriever``.

The index builds a :class:`~hrefine.raptor.RaptorTree` over its documents and keeps it in
LlamaIndex's own stores, so ``storage_context.persist`` and ``load_index_from_storage`` work as
for any index: every tree node is a ``TextNode`` in the docstore (its text, metadata, embedding
and its ``SOURCE``/``PARENT``/``CHILD`` relationships), and the tree's shape (node ids, kinds,
layers, weighted edges), its settings and a checksum of the whole are a
:class:`RaptorIndexStruct` in the index store. Importing this module registers that struct type
and the index class with LlamaIndex's loaders.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hrefine.errors import ConfigError, InputTypeError, NotSupportedError
from hrefine.models._loop import run_to_end
from hrefine.raptor import RaptorOptions, RaptorTree, RetrievedNode
from hrefine.raptor.options import check_mode
from hrefine.raptor.serial_insert import agrow, insert_lock
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.callbacks.base import CallbackManager
from llama_index.core.ingestion import arun_transformations
from llama_index.core.schema import (
    BaseNode,
    Document,
    NodeWithScore,
    QueryBundle,
    TransformComponent,
)
from llama_index.core.storage.storage_context import StorageContext

from llamaindex_hrefine._convert import (
    QueryCheckedRetriever,
    abundle_vector,
    bundle_vector,
    retrieved_to_nodes,
    to_embedder,
    to_sources,
)
from llamaindex_hrefine._raptor_store import RaptorStore
from llamaindex_hrefine._tree_storage import TreeIndexStruct, register

__all__ = [
    "RaptorIndex",
    "RaptorIndexStruct",
    "RaptorNotSupportedError",
    "RaptorRetriever",
]

#: The index-store type of a :class:`RaptorIndexStruct` (what the loaders dispatch on).
#: LlamaIndex finds a stored index's classes by it in
#: registries that only importing this package fills, and has no plugin hook that would
#: fill them in a fresh process: the type says what to import, since LlamaIndex's
#: ``KeyError`` shows it.
STRUCT_TYPE = "hrefine_raptor: import llamaindex_hrefine to load this index"
#: The type that earlier versions wrote (still loaded).
OLD_STRUCT_TYPE = "hrefine_raptor"
#: Keyword arguments of ``as_retriever`` (``as_query_engine`` passes the others on).
_RETRIEVER_KEYS = ("mode", "k", "max_tokens", "similarity_top_k", "summary_rank")
_DEFAULT = "default"


#: Raised for what a RAPTOR index cannot do (deleting or updating documents); the shared
#: :class:`hrefine.errors.NotSupportedError` under the name this module has exported.
RaptorNotSupportedError = NotSupportedError


@dataclass
class RaptorIndexStruct(TreeIndexStruct):
    """The shape of a RAPTOR tree, kept in LlamaIndex's index store (fields: see
    :class:`~llamaindex_hrefine._tree_index.TreeIndexStruct`; edge weights are cluster
    memberships, ``options`` the :class:`~hrefine.raptor.RaptorOptions`)."""

    @classmethod
    def get_type(cls) -> Any:
        """The index-store type name (:data:`STRUCT_TYPE`)."""
        return STRUCT_TYPE


def _limits(k: object, max_tokens: object) -> dict[str, Any]:
    """The ``k``/``max_tokens`` arguments given (the tree's own options fill the others)."""
    out: dict[str, Any] = {}
    if k != _DEFAULT:
        out["k"] = k
    if max_tokens != _DEFAULT:
        out["max_tokens"] = max_tokens
    return out


class RaptorIndex(RaptorStore[RaptorIndexStruct]):
    """A RAPTOR summary tree as a LlamaIndex index.

    Documents are cut into ~100-token leaves, embedded and clustered, each cluster summarised by
    ``llm``, and the summaries clustered and summarised again, layer by layer
    (:class:`~hrefine.raptor.RaptorTree`). Queries are answered from every layer at once (the
    collapsed tree) or by walking down from the roots (``mode="traversal"``).

    Make one with :meth:`from_documents` (RAPTOR chunks the documents itself; pass
    ``transformations=`` to run your own parsers first) or with ``RaptorIndex(nodes=...)``,
    where each node is a text to chunk (its ``ref_doc_id``, or its own id, is its document).
    :meth:`insert`/:meth:`insert_nodes` add documents and re-summarise only the summaries above
    the new leaves. Persist with ``index.storage_context.persist(persist_dir)`` and load with
    ``load_index_from_storage(StorageContext.from_defaults(persist_dir=...), llm=...,
    embed_model=...)`` (or :meth:`from_persist_dir`).

    Deleting or updating documents is not supported (it would need the clusters above them
    rebuilt): :meth:`delete_ref_doc`, :meth:`delete_nodes` and :meth:`update_ref_doc` raise
    :class:`RaptorNotSupportedError`; build a new index instead.

    Parameters
    ----------
    nodes:
        LlamaIndex nodes or Documents to build the tree over.
    llm:
        The summariser: a LlamaIndex ``LLM`` (called with ``complete``/``acomplete``, with
        ``llm_concurrency``/``llm_retries``/``llm_timeout``), a ``str -> str`` callable (sync
        or async), an hrefine LocalLM or TextGenerator, or None for no model (the leading
        sentences of each cluster's texts). ``Settings.llm`` is never read. A LlamaIndex
        ``LLM`` also answers in :meth:`as_query_engine` when that is given none.
    embed_model:
        A LlamaIndex ``BaseEmbedding`` or an hrefine ``Embedder``; None: hrefine's embedded
        all-MiniLM-L6-v2 (``Settings.embed_model`` is never read).
    tokenizer:
        Tokenizer of every token count (chunk size, summary size, retrieval budget); anything
        :func:`hrefine.budget.get_counter` takes (None: Llama-3.2's; when loading, the saved
        one if it was named, as ``"regex"`` or ``"cl100k_base"``: an object is not saved).
    options:
        A :class:`~hrefine.raptor.RaptorOptions`; ``settings`` change single fields of it.
    index_struct, storage_context, callback_manager, transformations, show_progress:
        As for any LlamaIndex index (``index_struct`` is given by the loaders).
    **settings:
        :class:`~hrefine.raptor.RaptorOptions` fields (``chunk_tokens``, ``max_layers``,
        ``mode``, ``k``, ``max_tokens``...). When loading, they change the saved ones.

    Raises
    ------
    EmptyInputError
        Every document is empty.
    GenerationError
        The LLM failed, timed out or answered with nothing after its retries.
    PersistenceError
        Loading: the stores do not hold a valid RAPTOR tree (edited, truncated, or missing
        nodes).

    Examples
    --------
    >>> from llama_index.core import Document
    >>> index = RaptorIndex.from_documents([Document(text=long_text)], llm=my_llm)  # doctest: +SKIP
    >>> index.as_query_engine(llm=my_llm, max_tokens=2000).query("...")  # doctest: +SKIP
    """

    index_struct_cls = RaptorIndexStruct
    method = "RAPTOR"
    _needs_nodes = (
        "RaptorIndex needs nodes: pass nodes=[...], use RaptorIndex.from_documents(docs), "
        "or load a persisted one with load_index_from_storage / from_persist_dir"
    )
    _wrong_struct = (
        "index_struct must be a RaptorIndexStruct, got {got}; load a RaptorIndex from a store "
        "that a RaptorIndex persisted"
    )
    # An engine's mode, k (or similarity_top_k), max_tokens and summary_rank go to the
    # retriever.
    _retriever_args = _RETRIEVER_KEYS

    def __init__(
        self,
        nodes: Sequence[BaseNode] | None = None,
        *,
        llm: Any = None,
        embed_model: BaseEmbedding | Any = None,
        tokenizer: Any = None,
        options: RaptorOptions | None = None,
        index_struct: RaptorIndexStruct | None = None,
        storage_context: StorageContext | None = None,
        callback_manager: CallbackManager | None = None,
        transformations: list[TransformComponent] | None = None,
        show_progress: bool = False,
        **settings: Any,
    ) -> None:
        # BaseIndex.__init__ builds the tree, so everything it needs is set first.
        self._options = RaptorOptions.build(options, **settings)
        # Models given as settings or inside ``options`` go through the same conversions.
        models = {name: getattr(self._options, name) for name in ("llm", "embedder", "tokenizer")}
        self._llm = llm if llm is not None else models["llm"]
        self._embedder = to_embedder(embed_model if embed_model is not None else models["embedder"])
        self._tokenizer = tokenizer if tokenizer is not None else models["tokenizer"]
        # The tokenizer stays in the options: the saved ones keep it when it is named
        # ("regex", "cl100k_base"; ``plain()`` leaves objects out), so a load given none
        # counts in the same tokens, as RaptorTree.load and LangChain's RaptorRetriever do.
        self._options = self._options.replace(llm=None, embedder=None, tokenizer=self._tokenizer)
        self._given_options = options if options is None else self._options
        self._settings = {k: v for k, v in settings.items() if k not in models}
        self._own_transformations = transformations
        for i, node in enumerate(nodes or ()):
            if not isinstance(node, BaseNode):
                msg = (
                    f"nodes[{i}] is a {type(node).__name__}; pass LlamaIndex nodes or Documents "
                    "(wrap plain text in llama_index.core.Document)"
                )
                raise InputTypeError(msg)
        super().__init__(
            nodes, index_struct, storage_context, callback_manager, transformations, show_progress
        )

    # -- building ---------------------------------------------------------------------------
    def build_index_from_nodes(
        self, nodes: Sequence[BaseNode], **build_kwargs: Any
    ) -> RaptorIndexStruct:
        """Build the tree over ``nodes``; the docstore gets the tree's nodes, not the inputs."""
        return self._build_index_from_nodes(nodes, **build_kwargs)

    # -- inserting --------------------------------------------------------------------------
    def insert(self, document: Document, **insert_kwargs: Any) -> None:
        """Add ``document``: its leaves join the nearest first-layer clusters, and only the
        summaries above them are made again (one LLM call per changed summary)."""
        with self._callback_manager.as_trace("insert"):
            self.insert_nodes(self._parsed([document]), **insert_kwargs)
            self.docstore.set_document_hash(document.id_, document.hash)

    async def ainsert(self, document: Document, **insert_kwargs: Any) -> None:
        """:meth:`insert` without blocking the event loop."""
        with self._callback_manager.as_trace("ainsert"):
            nodes = (
                await arun_transformations(
                    [document], self._own_transformations, show_progress=self._show_progress
                )
                if self._own_transformations
                else [document]
            )
            with self._callback_manager.as_trace("ainsert_nodes"):
                await self._ainsert(nodes, document)  # the hash set with the nodes

    def insert_nodes(self, nodes: Sequence[BaseNode], **insert_kwargs: Any) -> None:
        """Add ``nodes`` (each chunked into leaves, its ``ref_doc_id`` or id as its document),
        re-summarising only the affected ancestors. The nodes are not stored or changed."""
        with self._callback_manager.as_trace("insert_nodes"):
            self._insert(nodes, **insert_kwargs)  # writes the index struct too

    async def ainsert_nodes(self, nodes: Sequence[BaseNode], **insert_kwargs: Any) -> None:
        """:meth:`insert_nodes` without blocking the event loop (the LLM is awaited).

        Cancelled while the summaries are made, it changes nothing; once the docstore is being
        written, the docstore, the index struct and the tree are all brought up to date before
        the cancellation is raised.
        """
        with self._callback_manager.as_trace("ainsert_nodes"):
            await self._ainsert(nodes, None)

    async def _ainsert(self, nodes: Sequence[BaseNode], document: Document | None) -> None:
        raptor = self.raptor_tree
        # As _insert: one insert at a time, the tree swapped in after the stores' writes.
        async with insert_lock(raptor).held():
            grown = await agrow(raptor, to_sources(nodes))
            changed, old_ids = self._rewritten(grown)
            stored = await self._docstore.aget_nodes(old_ids)
            out, node_ids = self._written(nodes, grown, changed, stored)

            async def commit() -> None:
                await self._docstore.async_add_documents(out, allow_update=True)
                self._publish(grown, node_ids)
                await self._storage_context.index_store.async_add_index_struct(self._index_struct)
                if document is not None:
                    await self._docstore.aset_document_hash(document.id_, document.hash)

            # A cancellation in the middle left nodes in the docstore that no struct named,
            # and summaries rewritten there that the tree still held in their old words.
            await run_to_end(commit())

    # -- deleting (not supported) -----------------------------------------------------------
    def delete_nodes(
        self, node_ids: list[str], delete_from_docstore: bool = False, **delete_kwargs: Any
    ) -> None:
        """Not supported: raises :class:`RaptorNotSupportedError` (nothing is deleted)."""
        raise self._refuse()

    async def adelete_nodes(
        self, node_ids: list[str], delete_from_docstore: bool = False, **delete_kwargs: Any
    ) -> None:
        """Not supported: raises :class:`RaptorNotSupportedError` (nothing is deleted)."""
        raise self._refuse()

    def delete_ref_doc(
        self, ref_doc_id: str, delete_from_docstore: bool = False, **delete_kwargs: Any
    ) -> None:
        """Not supported: raises :class:`RaptorNotSupportedError` (nothing is deleted), as do
        ``update_ref_doc`` and ``refresh_ref_docs`` for a changed document."""
        raise self._refuse()

    async def adelete_ref_doc(
        self, ref_doc_id: str, delete_from_docstore: bool = False, **delete_kwargs: Any
    ) -> None:
        """Not supported: raises :class:`RaptorNotSupportedError` (nothing is deleted)."""
        raise self._refuse()

    # -- loading and saving -----------------------------------------------------------------
    # -- queries ----------------------------------------------------------------------------
    @property
    def raptor_tree(self) -> RaptorTree:
        """The core :class:`~hrefine.raptor.RaptorTree` (its ``stats``, ``layers``, ``save``)."""
        return self._tree()

    def as_retriever(  # type: ignore[override]
        self,
        mode: str | None = None,
        k: int | str | None = _DEFAULT,
        max_tokens: int | str | None = _DEFAULT,
        *,
        similarity_top_k: int | None = None,
        summary_rank: str | None = None,
        **kwargs: Any,
    ) -> RaptorRetriever:
        """A :class:`RaptorRetriever` over this index.

        Parameters
        ----------
        mode:
            ``"collapsed"`` or ``"traversal"``; default: the index's ``mode``.
        k:
            Most nodes returned (collapsed) or kept per layer (traversal); None: no limit.
            Default: the index's ``k``. ``similarity_top_k`` is taken as ``k``.
        max_tokens:
            Token budget of the returned nodes together (None: none). Default: the index's.
        summary_rank:
            ``"off"`` (leaves only), ``"below"`` or ``"free"`` (summaries compete, as in the
            paper); default: the index's.
        **kwargs:
            Ignored (query and chat engines pass their own arguments on here), but for
            ``filters``, ``doc_ids`` and ``node_ids``, which raise ``NotSupportedError``: a
            filter ignored would return what it was meant to keep out.
        """
        self._refuse_narrowing(kwargs)
        if similarity_top_k is not None:
            if k != _DEFAULT:
                msg = "pass k or similarity_top_k, not both"
                raise ConfigError(msg)
            k = similarity_top_k
        return RaptorRetriever(
            self,
            mode=mode,
            k=k,
            max_tokens=max_tokens,
            summary_rank=summary_rank,
            callback_manager=self._callback_manager,
        )


class RaptorRetriever(QueryCheckedRetriever):
    """Retrieve from a RAPTOR tree: the chunks (and, with the tree's ``summary_rank`` not
    ``"off"``, the summaries) most similar to the query.

    Parameters
    ----------
    raptor:
        A :class:`RaptorIndex` (nodes come back as copies of its docstore nodes) or a core
        :class:`~hrefine.raptor.RaptorTree` (nodes are made from the tree).
    mode:
        ``"collapsed"`` (every layer ranked together) or ``"traversal"`` (top ``k`` per layer
        from the roots down); default: the tree's ``mode``.
    k:
        Most nodes returned (collapsed) or kept per layer (traversal); None: no limit.
        Default (``"default"``): the tree's ``k``.
    max_tokens:
        Token budget of the returned nodes together, in the tree's tokenizer (None: none).
        Default (``"default"``): the tree's ``max_tokens``.
    summary_rank:
        ``"off"`` (leaves only), ``"below"`` (a summary never above the best node it
        summarises) or ``"free"`` (summaries by their own score, as in the paper); default:
        the tree's.
    callback_manager, verbose:
        As for any LlamaIndex retriever.

    Notes
    -----
    Returns nodes best first, each with ``score`` its relevance in [0, 1] and metadata: the
    source document's (leaves) plus ``hrefine_raw_score`` (cosine similarity),
    ``hrefine_layer`` (0 = leaf chunk), ``hrefine_kind``, ``hrefine_node_id`` (id in the
    tree), ``hrefine_sources`` (document ids), ``hrefine_tokens`` and on leaves
    ``hrefine_start``/``hrefine_end`` (character offsets into the text of the Document or node
    the leaf was cut from); these are hidden
    from the LLM and embed views. A leaf's ``ref_doc_id`` is its document's id.
    ``aretrieve`` awaits the query embedding in an executor (it never blocks the loop).

    A ``QueryBundle`` is read as LlamaIndex's ``VectorIndexRetriever`` reads it: its
    ``embedding`` when set, else the mean of the tree embedder's embeddings of its
    ``custom_embedding_strs`` (HyDE's), else ``query_str`` is embedded; the BM25 match reads
    ``query_str``. A given ``embedding`` must come from the tree's embedder (a wrong size
    raises ``ConfigError``; another model of the same size is not detected).

    Raises
    ------
    ConfigError
        ``mode``, ``k``, ``max_tokens`` or ``summary_rank`` is not valid (raised here, not at
        the first query).
    BudgetTooSmallError
        At query time: ``max_tokens`` is smaller than every node.
    ConfigError, InputTypeError, EmptyInputError
        At query time: a bundle's ``embedding`` is not of the nodes' size (or not numbers), or
        its ``custom_embedding_strs`` is not a list of non-empty str.
    """

    def __init__(
        self,
        raptor: RaptorIndex | RaptorTree,
        *,
        mode: str | None = None,
        k: int | str | None = _DEFAULT,
        max_tokens: int | str | None = _DEFAULT,
        summary_rank: str | None = None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
    ) -> None:
        if not isinstance(raptor, (RaptorIndex, RaptorTree)):
            msg = (
                f"RaptorRetriever needs a RaptorIndex or an hrefine RaptorTree, got "
                f"{type(raptor).__name__}"
            )
            raise InputTypeError(msg)
        self._raptor = raptor
        self._mode = None if mode is None else check_mode(mode)
        self._settings = _limits(k, max_tokens)
        if summary_rank is not None:
            self._settings["summary_rank"] = summary_rank
        self._tree().options.replace(**self._settings)  # a bad setting fails now
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    def _tree(self) -> RaptorTree:
        raptor = self._raptor
        return raptor.raptor_tree if isinstance(raptor, RaptorIndex) else raptor

    def _stored_ids(self, results: Sequence[RetrievedNode]) -> list[str] | None:
        """Docstore ids of ``results`` (None over a bare tree: nodes are made from it)."""
        if not isinstance(self._raptor, RaptorIndex):
            return None
        ids = self._raptor.index_struct.node_ids
        return [ids[r.id] for r in results]

    def _nodes(
        self, results: Sequence[RetrievedNode], stored: Sequence[BaseNode] | None
    ) -> list[NodeWithScore]:
        raptor = self._raptor
        node_ids = raptor.index_struct.node_ids if isinstance(raptor, RaptorIndex) else None
        sources = list(self._tree().tree.metadata.get("sources", []))
        return retrieved_to_nodes(results, node_ids, sources, stored)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        tree = self._tree()
        vector = bundle_vector(query_bundle, lambda: tree.embedder)
        results = tree.retrieve(
            query_bundle.query_str, mode=self._mode, query_vector=vector, **self._settings
        )
        wanted = self._stored_ids(results)
        stored = None
        if wanted is not None and isinstance(self._raptor, RaptorIndex):
            stored = self._raptor.docstore.get_nodes(wanted)
        return self._nodes(results, stored)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        tree = self._tree()
        vector = await abundle_vector(query_bundle, lambda: tree.embedder)
        results = await tree.aretrieve(
            query_bundle.query_str, mode=self._mode, query_vector=vector, **self._settings
        )
        wanted = self._stored_ids(results)
        stored = None
        if wanted is not None and isinstance(self._raptor, RaptorIndex):
            stored = await self._raptor.docstore.aget_nodes(wanted)
        return self._nodes(results, stored)


# The loaders find a stored index's classes by its struct type.
register(RaptorIndexStruct, RaptorIndex, STRUCT_TYPE, OLD_STRUCT_TYPE)
