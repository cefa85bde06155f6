"""LlamaIndex components over a GARLIC graph (:mod:`hrefine.garlic`): an index and a retriever."""

from __future__ import annotations

import asyncio
import functools
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hrefine.errors import ConfigError, InputTypeError, NotSupportedError
from hrefine.garlic import GarlicGraph, GarlicOptions, GarlicSearcher, SearchResult
from hrefine.garlic.options import one_llm
from hrefine.models import Embedder
from hrefine.options import check_int
from hrefine.tree import NodeKind
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.callbacks import CallbackManager
from llama_index.core.schema import (
    BaseNode,
    NodeWithScore,
    QueryBundle,
    TransformComponent,
)
from llama_index.core.storage.storage_context import StorageContext

from llamaindex_hrefine._convert import (
    QueryCheckedRetriever,
    bundle_vector,
    node_list,
    raptor_nodes,
    to_embedder,
    to_garlic_llm,
    to_sources,
    visited_to_nodes,
)
from llamaindex_hrefine._tree_index import StoredTreeIndex, progress_bar
from llamaindex_hrefine._tree_storage import TreeIndexStruct, fill_struct, register

#: ``as_query_engine`` arguments that go to the retriever.
_RETRIEVER_KEYS = ("patience", "max_steps", "max_tokens", "k", "similarity_top_k")
#: The LlamaIndex retriever arguments GarlicRetriever takes beside them.
_LI_KEYS = ("callback_manager", "verbose")

__all__ = ["GarlicIndex", "GarlicIndexStruct", "GarlicRetriever"]

#: The index-store type of a GARLIC index.
#: LlamaIndex finds a stored index's classes by it in
#: registries that only importing this package fills, and has no plugin hook that would
#: fill them in a fresh process: the type says what to import, since LlamaIndex's
#: ``KeyError`` shows it.
STRUCT_TYPE = "hrefine_garlic: import llamaindex_hrefine to load this index"
#: The type that earlier versions wrote (still loaded).
OLD_STRUCT_TYPE = "hrefine_garlic"


@dataclass
class GarlicIndexStruct(TreeIndexStruct):
    """The shape of a GARLIC graph, kept in LlamaIndex's index store (fields: see
    :class:`~llamaindex_hrefine._tree_index.TreeIndexStruct`; a summary point's edge weights
    sum to 1, ``options`` the :class:`~hrefine.garlic.GarlicOptions`)."""

    @classmethod
    def get_type(cls) -> Any:
        """The index-store type name (:data:`STRUCT_TYPE`)."""
        return STRUCT_TYPE


class GarlicIndex(StoredTreeIndex[GarlicIndexStruct]):
    """A GARLIC graph over documents, kept in LlamaIndex's stores.

    The documents go in whole: GARLIC cuts them into ``chunk_tokens`` leaves itself, and the LLM
    writes summary points over batches of them, level after level (see
    :class:`~hrefine.garlic.GarlicGraph`). Every graph node (chunk or summary point, with its
    embedding) is a ``TextNode`` in the docstore; the graph's shape is the index struct, so
    ``storage_context.persist`` and ``load_index_from_storage`` keep and load it (checked
    against its checksum). :meth:`as_retriever` gives a :class:`GarlicRetriever`.

    Parameters
    ----------
    nodes:
        LlamaIndex Documents or nodes (not changed).
    llm:
        The LLM (see :class:`GarlicRetriever`); ``Settings.llm`` is never read.
    embed_model:
        The embed model of the nodes and queries (None: the embedded all-MiniLM-L6-v2).
    options:
        :class:`~hrefine.garlic.GarlicOptions`; ``settings`` change single fields of it.
    index_struct, storage_context, callback_manager, show_progress:
        As for any LlamaIndex index.

    Raises
    ------
    ConfigError
        Neither nodes nor an index struct was given.
    PersistenceError
        A stored index is malformed, edited or truncated.

    Notes
    -----
    Inserting and deleting are not supported (a new summary level would change every level
    above it): build a new index.
    """

    index_struct_cls = GarlicIndexStruct
    method = "GARLIC"
    _kind = "graph"
    _needs_nodes = (
        "GarlicIndex needs nodes: pass nodes=[...], use GarlicIndex.from_documents(docs), "
        "or load a persisted one with load_index_from_storage"
    )
    _wrong_struct = "index_struct must be a GarlicIndexStruct, got {got}"
    # An engine's patience, max_steps, max_tokens, k and search_llm (the LLM that searches;
    # default the index's) go to the retriever.
    _retriever_args = (*_RETRIEVER_KEYS, "search_llm")

    def __init__(
        self,
        nodes: Sequence[BaseNode] | None = None,
        *,
        llm: Any = None,
        embed_model: BaseEmbedding | Embedder | None = None,
        options: GarlicOptions | None = None,
        index_struct: GarlicIndexStruct | None = None,
        storage_context: StorageContext | None = None,
        callback_manager: CallbackManager | None = None,
        transformations: list[TransformComponent] | None = None,
        show_progress: bool = False,
        **settings: Any,
    ) -> None:
        # lm= is GARLIC's earlier name of llm= (ConfigError when both are given).
        llm = one_llm(settings.pop("lm", None), llm)
        # BaseIndex.__init__ builds the graph, so everything it needs is set first.
        self._options = GarlicOptions.build(options, **settings)
        self._settings = settings
        self._llm = llm
        self._embed_model = embed_model
        super().__init__(
            nodes, index_struct, storage_context, callback_manager, transformations, show_progress
        )

    def _build_index_from_nodes(
        self, nodes: Sequence[BaseNode], **build_kwargs: Any
    ) -> GarlicIndexStruct:
        with progress_bar(self._show_progress, "GARLIC graph") as progress:
            graph = GarlicGraph.build(
                to_sources(nodes),
                lm=to_garlic_llm(self._llm, self._options.llm_timeout),
                embedder=to_embedder(self._embed_model),
                options=self._options,
                progress=progress,
            )
        tree = graph.tree
        node_ids = [str(uuid.uuid4()) for _ in range(len(tree))]
        sources = list(tree.metadata.get("sources", []))
        templates = dict(enumerate(nodes))
        stored = raptor_nodes(tree, range(len(tree)), node_ids, sources, templates=templates)
        struct = GarlicIndexStruct()
        fill_struct(struct, tree, node_ids, graph.options.plain())
        self._docstore.add_documents(stored, allow_update=True)
        self._built = graph
        return struct

    def _load(self, struct: GarlicIndexStruct) -> GarlicGraph:
        """The graph held by the stores for ``struct``; raises PersistenceError."""
        where, _, tree = self._stored_tree(struct)
        # A model the caller gives is used, the saved one unread; a saved one that is a path
        # is refused (a store may name only model names).
        models = {"lm": self._llm, "embedder": self._embed_model}
        given = {*self._settings, *(name for name, m in models.items() if m is not None)}
        options = GarlicOptions.from_saved(
            struct.options, where, given=given, load="GarlicIndex.from_persist_dir(dir, {name}=...)"
        ).replace(**self._settings)
        self._options = options
        return GarlicGraph.from_tree(
            tree, options, embedder=to_embedder(self._embed_model), where=where
        )

    @property
    def garlic_graph(self) -> GarlicGraph:
        """The core :class:`~hrefine.garlic.GarlicGraph` (its ``stats``, ``levels``, ``save``)."""
        assert self._built is not None
        graph: GarlicGraph = self._built
        return graph

    def as_retriever(self, **kwargs: Any) -> GarlicRetriever:  # type: ignore[override]
        """A :class:`GarlicRetriever` over this index's graph.

        Parameters
        ----------
        **kwargs:
            :class:`GarlicRetriever`'s arguments (``llm``, ``patience``, ``max_steps``,
            ``max_tokens``, ``k``...); ``llm`` and ``embed_model`` default to the index's.
            ``similarity_top_k`` is taken as ``k``.
        """
        self._refuse_narrowing(kwargs)
        unknown = sorted(set(kwargs) - {"llm", "embed_model", *_RETRIEVER_KEYS, *_LI_KEYS})
        if unknown:
            msg = (
                f"GarlicIndex.as_retriever got unknown argument(s) {', '.join(unknown)}; it "
                f"takes llm, embed_model, {', '.join(_RETRIEVER_KEYS)}, {', '.join(_LI_KEYS)}"
            )
            raise ConfigError(msg)
        if "similarity_top_k" in kwargs:  # LlamaIndex's name for k, as RaptorIndex takes it
            if "k" in kwargs:
                msg = "pass k or similarity_top_k, not both"
                raise ConfigError(msg)
            kwargs["k"] = kwargs.pop("similarity_top_k")
        kwargs.setdefault("llm", self._llm)
        kwargs.setdefault("embed_model", self._embed_model)
        return GarlicRetriever(self.garlic_graph, templates=self._source_templates(), **kwargs)

    def _source_templates(self) -> dict[int, BaseNode]:
        """Each source's first stored chunk (source index -> node): it holds the settings the
        chunks took from their Document (hidden metadata keys, templates)."""
        ids = self.index_struct.node_ids
        first: dict[int, str] = {}
        for node in self.garlic_graph.tree:
            if node.kind == NodeKind.CHUNK:
                first.setdefault(int(node.metadata["hrefine_source"]), ids[node.id])
        found = {src: self._docstore.get_node(i, raise_error=False) for src, i in first.items()}
        return {src: node for src, node in found.items() if node is not None}

    def _not_supported(self, what: str) -> NotSupportedError:
        msg = (
            f"GarlicIndex does not support {what}: a change would rewrite every summary level "
            "above it; build a new index over all the documents"
        )
        return NotSupportedError(msg)

    def _insert(self, nodes: Sequence[BaseNode], **insert_kwargs: Any) -> None:
        raise self._not_supported("inserting")

    def _delete_node(self, node_id: str, **delete_kwargs: Any) -> None:
        raise self._not_supported("deleting")

    def delete_ref_doc(
        self, ref_doc_id: str, delete_from_docstore: bool = False, **delete_kwargs: Any
    ) -> None:
        """Not supported (raises NotSupportedError)."""
        raise self._not_supported("deleting")


class GarlicRetriever(QueryCheckedRetriever):
    """Retrieve by GARLIC's LLM-guided search of a graph of summary points (Wang et al., 2024).

    The search starts at the graph's top level and asks the LLM whether what it has read answers
    the query ("Yes"/"No"); while it says No, it reads the next node: the one the read nodes'
    attention to the query points at through the graph's weighted edges, plus its similarity to
    the query. It stops after ``patience`` Yes answers, ``max_steps`` added nodes or
    ``max_tokens`` tokens read. Every node read is returned, best first, or the ``k`` best.

    Parameters
    ----------
    graph:
        A built :class:`~hrefine.garlic.GarlicGraph` (or use :meth:`from_documents`).
    llm:
        The LLM of the search: a LlamaIndex ``LLM`` or a ``str -> str`` callable (prompt-only
        mode: Yes/No read from its text, the whole prompt sent at each step), or an hrefine
        ``LocalLM`` (the KV-cached search with attention, as in the paper); None: the options'
        ``lm``; else SmolLM2 for a graph an LM built (attention edges), and otherwise no model
        (a word-overlap Yes/No). ``Settings.llm`` is never read.
    embed_model:
        The embed model the graph's nodes were embedded with (a LlamaIndex ``BaseEmbedding`` or
        an hrefine ``Embedder``); None: the graph's own.
    patience, max_steps, max_tokens:
        The search's stop rules (default: the graph's options).
    k:
        Most nodes returned, the most relevant of those read (default: the graph's options'
        ``k``; None there: every node read).
    callback_manager, verbose:
        As for any LlamaIndex retriever.
    templates:
        The node or Document each of the graph's sources was (source index -> node): a chunk
        returned keeps the metadata keys it hides from the LLM and embed views, and its
        templates (:meth:`from_documents` and :meth:`GarlicIndex.as_retriever` pass them).

    Notes
    -----
    Returns the nodes read best first (on a tie chunks before summary points, then
    document order), each a new ``TextNode`` with ``score`` its relevance in [0, 1]: its query
    similarity, comparable across chunks and summary points, so a ``SimilarityPostprocessor``
    threshold keeps a source chunk as well as a summary point (the search score is
    ``hrefine_raw_score``). Metadata: the source document's (chunks) plus ``hrefine_raw_score``,
    ``hrefine_level`` (0 = chunk), ``hrefine_kind``, ``hrefine_node_id``, ``hrefine_step``,
    ``hrefine_attention``, ``hrefine_p_yes``, ``hrefine_said_yes``, ``hrefine_tokens``,
    ``hrefine_sources`` (document ids), ``hrefine_start``/``hrefine_end`` (chunks) or
    ``hrefine_children`` (summary points) and ``hrefine_search`` (how the search went); these are
    hidden from the LLM and embed views. The last search's full result is :attr:`last_result`.
    ``aretrieve`` runs the search in the default executor (it never blocks the loop).

    A ``QueryBundle`` is read as LlamaIndex's ``VectorIndexRetriever`` reads it: the query
    similarity is measured from its ``embedding`` when set, else from the mean of the graph
    embedder's embeddings of its ``custom_embedding_strs`` (HyDE's), else from ``query_str``'s;
    the LLM's prompt and the BM25 match read ``query_str``. A given ``embedding`` must come from
    the graph's embedder (a wrong size raises ``ConfigError``; another model of the same size
    is not detected).

    Raises
    ------
    InputTypeError
        ``graph`` is not a GarlicGraph.
    ConfigError
        A stop rule is not valid (raised here, not at the first query).
    """

    def __init__(
        self,
        graph: GarlicGraph,
        *,
        llm: Any = None,
        embed_model: BaseEmbedding | Embedder | None = None,
        patience: int | None = None,
        max_steps: int | None = None,
        max_tokens: int | None = None,
        k: int | None = None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
        templates: Mapping[int, BaseNode] | None = None,
    ) -> None:
        if not isinstance(graph, GarlicGraph):
            msg = (
                f"GarlicRetriever needs a built hrefine GarlicGraph, got {type(graph).__name__}; "
                "build one with GarlicRetriever.from_documents()"
            )
            raise InputTypeError(msg)
        check_int("patience", patience, minimum=1, none=True)
        check_int("max_steps", max_steps, minimum=1, none=True)
        check_int("max_tokens", max_tokens, minimum=1, none=True)
        check_int("k", k, minimum=1, none=True)
        self._graph = graph
        self._templates = dict(templates or {})
        self._k = k
        self._limits = {"patience": patience, "max_steps": max_steps, "max_tokens": max_tokens}
        self._searcher = GarlicSearcher(
            graph,
            lm=to_garlic_llm(llm, graph.options.llm_timeout),
            embedder=to_embedder(embed_model),
        )
        self._last: SearchResult | None = None
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    @classmethod
    def from_documents(
        cls,
        documents: Sequence[BaseNode],
        *,
        llm: Any = None,
        embed_model: BaseEmbedding | Embedder | None = None,
        options: GarlicOptions | None = None,
        progress: bool = False,
        patience: int | None = None,
        max_steps: int | None = None,
        max_tokens: int | None = None,
        **settings: Any,
    ) -> GarlicRetriever:
        """Build a GARLIC graph over ``documents`` (Documents or nodes) and a retriever on it.

        Parameters
        ----------
        documents:
            LlamaIndex Documents or nodes: their text without metadata, a copy of their
            metadata (put on each chunk) and their document id (``hrefine_sources``).
        llm, embed_model:
            As for the retriever; the same LLM writes the summary points.
        options:
            :class:`~hrefine.garlic.GarlicOptions`; ``settings`` change single fields of it
            (``chunk_tokens``, ``batch_tokens``...).
        progress:
            Log each level as it is made.
        patience, max_steps, max_tokens:
            The search's stop rules (kept in the graph's options).

        Raises
        ------
        EmptyInputError
            Every document is empty.
        GenerationError
            The LLM failed, or wrote no summary point for a batch after its retries.
        InputTypeError, ConfigError
            An input or a setting is not valid.
        """
        documents = node_list(documents)  # read twice below: an iterator would be spent
        llm = one_llm(settings.pop("lm", None), llm)  # lm=: GARLIC's earlier name of llm=
        limits = {"patience": patience, "max_steps": max_steps, "max_tokens": max_tokens}
        given = {name: value for name, value in limits.items() if value is not None}
        built = GarlicOptions.build(options, **settings, **given)
        graph = GarlicGraph.build(
            to_sources(documents),
            lm=to_garlic_llm(llm, built.llm_timeout),
            embedder=to_embedder(embed_model),
            options=built,
            progress=progress,
        )
        return cls(graph, llm=llm, embed_model=embed_model, templates=dict(enumerate(documents)))

    @property
    def graph(self) -> GarlicGraph:
        """The core :class:`~hrefine.garlic.GarlicGraph` searched (``save`` it to keep it)."""
        return self._graph

    @property
    def last_result(self) -> SearchResult | None:
        """The core :class:`~hrefine.garlic.SearchResult` of the last query (its trace)."""
        return self._last

    def _search(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        searcher = self._searcher
        vector = bundle_vector(query_bundle, lambda: searcher.embedder)
        result = searcher.search(query_bundle.query_str, query_vector=vector, **self._limits)
        self._last = result
        k = self._k if self._k is not None else self._searcher.options.k
        nodes = visited_to_nodes(result, self._graph.tree, self._templates)
        return nodes if k is None else nodes[:k]

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self._search(query_bundle)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        # The search is a chain of dependent LLM steps over one KV cache: it runs in the
        # default executor, so the event loop is never blocked.
        loop = asyncio.get_running_loop()
        call = functools.partial(self._search, query_bundle)
        return await loop.run_in_executor(None, call)


# The loaders find a stored index's classes by its struct type.
register(GarlicIndexStruct, GarlicIndex, STRUCT_TYPE, OLD_STRUCT_TYPE)
