"""Every conversion between LlamaIndex and the hrefine core, in one place.

This is the only module of ``llamaindex_hrefine`` that sees both worlds: LlamaIndex embed models
become a core :class:`~hrefine.models.Embedder` (and a core embedder becomes a LlamaIndex embed
model, :class:`HrefineEmbedding`), an explicitly given LlamaIndex LLM becomes a core
:class:`~hrefine.models.TextGenerator`, and ``NodeWithScore`` objects go in as HTML strings and come
back as new ``NodeWithScore`` objects holding new nodes; for LongRefiner they go in as texts and
titles and come back the same way, holding the refined text. For RAPTOR, nodes and Documents become
the tree's sources, tree nodes become docstore ``TextNode`` objects (and back, on loading), and
retrieved tree nodes become ``NodeWithScore`` objects. For GARLIC, the same sources go in and the
nodes a search read come back as ``NodeWithScore`` objects. Caller nodes are never mutated.
"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from hrefine.errors import ConfigError, InputTypeError, PersistenceError, TreeError
from hrefine.html.outcome import DocumentOutcome, kept_with_metadata
from hrefine.longrefiner.outcome import METADATA_KEYS as REFINER_KEYS
from hrefine.longrefiner.outcome import DocumentOutcome as RefineOutcome
from hrefine.longrefiner.outcome import kept_with_metadata as refined_with_metadata
from hrefine.models import (
    CallableEmbedder,
    Embedder,
    TextGenerator,
    as_text_generator,
    get_embedder,
)
from hrefine.results import by_relevance
from hrefine.tree import NodeKind, Tree
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.llms import LLM
from llama_index.core.schema import (
    BaseNode,
    MetadataMode,
    NodeRelationship,
    NodeWithScore,
    QueryBundle,
    QueryType,
    RelatedNodeInfo,
    TextNode,
)
from pydantic import PrivateAttr

if TYPE_CHECKING:
    from hrefine.garlic import SearchResult
    from hrefine.raptor import RaptorOptions, RetrievedNode, Source

__all__ = [
    "METADATA_KEYS",
    "HrefineEmbedding",
    "QueryCheckedRetriever",
    "answer_llm",
    "check_query_type",
    "json_problem",
    "node_list",
    "nodes_to_html",
    "nodes_to_raptor_tree",
    "nodes_to_texts",
    "outcomes_to_nodes",
    "pieces_to_nodes",
    "raptor_nodes",
    "refined_to_nodes",
    "retrieved_to_nodes",
    "to_embedder",
    "to_garlic_llm",
    "to_raptor_llm",
    "to_refiner_llm",
    "to_sources",
    "to_text_generator",
    "visited_to_nodes",
]

logger = logging.getLogger(__name__)


def answer_llm(llm: Any, index_llm: Any, callback_manager: Any = None) -> LLM:
    """The LLM an index's query or chat engine answers with: ``llm``, else the index's own when
    it is a LlamaIndex LLM, else ``Settings.llm`` when the caller set one; never LlamaIndex's
    OpenAI default (it needs a key and the network).

    Raises
    ------
    ConfigError
        No LLM to answer with.
    """
    from llama_index.core.llms.utils import resolve_llm
    from llama_index.core.settings import Settings

    if llm is not None:
        return resolve_llm(llm, callback_manager=callback_manager)
    if isinstance(index_llm, LLM):
        return index_llm
    if getattr(Settings, "_llm", None) is not None:
        return Settings.llm
    msg = (
        "no LLM to answer with: pass llm= (a LlamaIndex LLM) to as_query_engine, or build "
        "the index with a LlamaIndex LLM (hrefine never falls back to the default "
        "Settings.llm, which needs an OpenAI key)"
    )
    raise ConfigError(msg)


#: Metadata keys written on every returned node; they are excluded from the LLM and embed views.
METADATA_KEYS = (
    "relevance_score",
    "hrefine_raw_score",
    "hrefine_input_format",
    "hrefine_failed_documents",
    "hrefine_method",
    "hrefine_tokens",
    "hrefine_budget",
    "hrefine_budget_scope",
    "hrefine_tokenizer",
    "hrefine_blocks_kept",
    "hrefine_blocks_total",
    "hrefine_dropped_documents",
    "hrefine_input_score",
    "hrefine_stage2_score",
)


def to_embedder(embed_model: BaseEmbedding | Embedder | None) -> Embedder | None:
    """Turn a LlamaIndex embed model into a core :class:`~hrefine.models.Embedder`.

    Parameters
    ----------
    embed_model:
        A LlamaIndex ``BaseEmbedding``, an object that already implements the core ``Embedder``
        protocol (through :func:`~hrefine.models.get_embedder`: hrefine's own as is), or None
        (returned as None: the core picks its default model).
        ``Settings.embed_model`` is never read.

    Returns
    -------
    Embedder or None
        An embedder whose rows are L2-normalised, that keeps vectors by text and awaits
        ``aget_text_embedding_batch``/``aget_query_embedding`` on the async path
        (:class:`~hrefine.models.CallableEmbedder`).
    """
    if embed_model is None:
        return None
    if isinstance(embed_model, HrefineEmbedding):
        return embed_model.embedder
    if isinstance(embed_model, BaseEmbedding):
        # Vectors are cached by text; the async methods run on the caller's loop on the async
        # path when the model has async code of its own (the base class's runs the sync code
        # on the loop, blocking it).
        cls = type(embed_model)
        own_async = cls._aget_text_embeddings is not BaseEmbedding._aget_text_embeddings
        own_aquery = cls._aget_query_embedding is not BaseEmbedding._aget_query_embedding
        return CallableEmbedder(
            embed_model.get_text_embedding_batch,
            embed_model.get_query_embedding,
            name=f"llamaindex:{embed_model.model_name}",
            aembed_documents=embed_model.aget_text_embedding_batch if own_async else None,
            aembed_query=embed_model.aget_query_embedding if own_aquery else None,
        )
    if hasattr(embed_model, "embed") and hasattr(embed_model, "embed_query"):
        # The core protocol, with or without its ``name``: hrefine's own as is, any other
        # named and with its vectors checked (see get_embedder).
        return get_embedder(embed_model)
    msg = (
        f"cannot use {type(embed_model).__name__} as an embed model: pass a LlamaIndex "
        "BaseEmbedding, an hrefine Embedder, or None for the embedded default model"
    )
    raise InputTypeError(msg)


def to_text_generator(llm: Any, **options: Any) -> TextGenerator:
    """Turn an explicitly given LlamaIndex LLM into a core :class:`~hrefine.models.TextGenerator`.

    ``Settings.llm`` is never read: its default is a hosted model that fails without an API key,
    so hrefine only uses the LLM it is handed.

    Parameters
    ----------
    llm:
        A LlamaIndex ``LLM`` (called with ``complete``/``acomplete``), a core
        ``TextGenerator``, a ``LocalLM`` or a ``str -> str`` callable.
    **options:
        Passed to :class:`~hrefine.models.TextGenerator`.

    Returns
    -------
    TextGenerator
        The wrapped model.
    """
    if llm is None:
        msg = (
            "no LLM given: pass llm= explicitly (hrefine never falls back to Settings.llm, "
            "whose default needs an OpenAI key)"
        )
        raise ConfigError(msg)
    if isinstance(llm, TextGenerator):
        return llm
    if isinstance(llm, LLM):
        model = llm

        def _complete(prompt: str) -> str:
            return str(model.complete(prompt).text)

        async def _acomplete(prompt: str) -> str:
            return str((await model.acomplete(prompt)).text)

        options.setdefault("name", f"llamaindex:{type(llm).__name__}")
        return TextGenerator(_complete, afn=_acomplete, **options)
    if callable(llm) or hasattr(llm, "session"):  # a str -> str callable, or a LocalLM
        return as_text_generator(llm, **options)
    msg = f"cannot use {type(llm).__name__} as an LLM: pass a LlamaIndex LLM or a callable"
    raise InputTypeError(msg)


def complete_state(component: Any, state: dict[str, Any]) -> dict[str, Any]:
    """``state`` from LlamaIndex's ``BaseComponent.__getstate__``, or TypeError when it left out a
    field that does not pickle: the copy would be rebuilt without it (another embed model, or
    an object missing the field) rather than fail."""
    lost = sorted(set(component.__dict__) - set(state["__dict__"]))
    if lost:
        msg = (
            f"cannot pickle this {type(component).__name__}: {', '.join(lost)} cannot be "
            "pickled (an embedding model or LLM holding a client, a lock or a local function)"
        )
        raise InputTypeError(msg)
    return state


class HrefineEmbedding(BaseEmbedding):
    """A core :class:`~hrefine.models.Embedder` as a LlamaIndex embed model.

    Lets an index use the same embedder as hrefine (by default the embedded all-MiniLM-L6-v2,
    offline), so a ``VectorStoreIndex`` needs no hosted embedding service.

    Parameters
    ----------
    embedder:
        A core ``Embedder`` (e.g. :func:`hrefine.models.default_embedder` or
        :class:`hrefine.testing.KeywordEmbedder`); None uses the embedded default.
    **kwargs:
        Passed to ``BaseEmbedding`` (``embed_batch_size``...).
    """

    _embedder: Embedder = PrivateAttr()

    def __init__(self, embedder: Embedder | None = None, **kwargs: Any) -> None:
        resolved = get_embedder(embedder)
        kwargs.setdefault("model_name", f"hrefine:{resolved.name}")
        super().__init__(**kwargs)
        self._embedder = resolved

    @classmethod
    def class_name(cls) -> str:
        """Stable name used by LlamaIndex serialisation."""
        return "HrefineEmbedding"

    def __getstate__(self) -> dict[str, Any]:
        # LlamaIndex leaves out what does not pickle and rebuilds from the fields, which would
        # put the default embedder in place of this one, under this one's name.
        state = complete_state(self, super().__getstate__())
        if "_embedder" not in (state.get("__pydantic_private__") or {}):
            msg = (
                f"cannot pickle this HrefineEmbedding: its embedder "
                f"({type(self._embedder).__name__}) cannot be pickled"
            )
            raise InputTypeError(msg)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(embedder=state["__pydantic_private__"]["_embedder"], **state["__dict__"])  # type: ignore[misc]

    @property
    def embedder(self) -> Embedder:
        """The wrapped core embedder."""
        return self._embedder

    def _get_query_embedding(self, query: str) -> list[float]:
        return [float(x) for x in self._embedder.embed_query(query)]

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return await asyncio.to_thread(self._get_query_embedding, query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._get_text_embeddings([text])[0]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return [[float(x) for x in row] for row in self._embedder.embed(texts)]

    async def _aget_text_embedding(self, text: str) -> list[float]:
        return await asyncio.to_thread(self._get_text_embedding, text)

    async def _aget_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return await asyncio.to_thread(self._get_text_embeddings, texts)


def nodes_to_html(nodes: Sequence[NodeWithScore]) -> list[str]:
    """The HTML content of each node (without metadata), in order."""
    return [n.node.get_content(metadata_mode=MetadataMode.NONE) for n in nodes]


def outcomes_to_nodes(
    nodes: Sequence[NodeWithScore],
    outcomes: Sequence[DocumentOutcome],
    *,
    token_counts: Sequence[int],
    tokenizer: str,
    keep_input_order: bool = False,
) -> list[NodeWithScore]:
    """The new ``NodeWithScore`` objects a postprocessor returns for ``nodes`` (most relevant
    first, or in input order), from one outcome per input and each outcome's token count under
    the pruner's ``tokenizer``.

    Nodes with nothing kept are left out and counted in every output's
    ``hrefine_dropped_documents``. Each output holds a copy of its input node with the pruned
    HTML as content, no stale embedding, and a copied metadata dict plus the hrefine keys
    (:func:`hrefine.html.outcome.kept_with_metadata`), hidden from the LLM and embed views so
    they do not eat the budget; its score is the best kept block's, in [0, 1] (the raw score is
    ``hrefine_raw_score``, the input score ``hrefine_input_score``).
    """
    kept = kept_with_metadata(
        outcomes,
        token_counts,
        tokenizer=tokenizer,
        unit="nodes",
        metadata_of=lambda i: nodes[i].node.metadata,
        input_score_of=lambda i: nodes[i].score,
        keep_input_order=keep_input_order,
    )
    return [
        _scored_copy(nodes[o.index].node, metadata, METADATA_KEYS, o.html, o.relevance)
        for o, metadata in kept
    ]


def _scored_copy(
    source: BaseNode, metadata: dict[str, Any], keys: Sequence[str], text: str, score: Any
) -> NodeWithScore:
    """A new node like ``source`` with ``text`` and ``metadata``, the hrefine ``keys`` it got
    hidden from the LLM and embed views, scored ``score`` (``source`` is untouched)."""
    added = [k for k in keys if k in metadata]
    node = source.model_copy(
        update={
            "metadata": metadata,
            "embedding": None,
            "excluded_llm_metadata_keys": _extend(source.excluded_llm_metadata_keys, added),
            "excluded_embed_metadata_keys": _extend(source.excluded_embed_metadata_keys, added),
            "relationships": copy.copy(source.relationships),
        }
    )
    node.set_content(text)
    return NodeWithScore(node=node, score=score)


def pieces_to_nodes(
    source: BaseNode, pieces: Sequence[str], id_func: Callable[[int, BaseNode], str]
) -> list[TextNode]:
    """New ``TextNode`` objects holding ``pieces`` of ``source``'s content, as a LlamaIndex node
    parser makes them: each with a copy of ``source``'s metadata and its metadata settings
    (excluded keys, templates), a SOURCE relationship to ``source``, no embedding, and an id
    from ``id_func(i, source)``. ``source`` is not changed."""
    related = source.as_related_node_info()  # hashes the whole page: once for all pieces
    return [
        TextNode(
            id_=id_func(i, source),
            text=piece,
            metadata=dict(source.metadata),
            excluded_embed_metadata_keys=list(source.excluded_embed_metadata_keys),
            excluded_llm_metadata_keys=list(source.excluded_llm_metadata_keys),
            metadata_separator=source.metadata_separator,
            metadata_template=source.metadata_template,
            text_template=getattr(source, "text_template", TextNode().text_template),
            relationships={NodeRelationship.SOURCE: related},
        )
        for i, piece in enumerate(pieces)
    ]


def _extend(keys: Sequence[str], extra: Sequence[str]) -> list[str]:
    return list(dict.fromkeys([*keys, *extra]))


# -- LongRefiner ----------------------------------------------------------------------------


def nodes_to_texts(nodes: Sequence[NodeWithScore]) -> tuple[list[str], list[str] | None]:
    """The content of each node (without metadata), and each one's ``metadata["title"]`` (for
    LongRefiner's outline; None when no node has a title).

    Raises
    ------
    InputTypeError
        An item is not a ``NodeWithScore``.
    """
    texts: list[str] = []
    titles: list[str] = []
    for i, item in enumerate(nodes):
        if not isinstance(item, NodeWithScore):
            msg = (
                f"node {i} is a {type(item).__name__}; pass a list of NodeWithScore (wrap a "
                "node as NodeWithScore(node=node))"
            )
            raise InputTypeError(msg)
        texts.append(item.node.get_content(metadata_mode=MetadataMode.NONE))
        title = item.node.metadata.get("title")
        titles.append(title.strip() if isinstance(title, str) else "")
    return texts, (titles if any(titles) else None)


def refined_to_nodes(
    nodes: Sequence[NodeWithScore],
    outcomes: Sequence[RefineOutcome],
    *,
    keep_input_order: bool = False,
) -> list[NodeWithScore]:
    """The new ``NodeWithScore`` objects a LongRefiner postprocessor returns for ``nodes`` (most
    relevant first, or in input order), from one outcome per input.

    Nodes with nothing kept are left out and counted in every output's
    ``hrefine_dropped_documents``. Each output holds a copy of its input node with the refined
    text as content, no stale embedding, and a copied metadata dict plus the hrefine keys
    (:func:`hrefine.longrefiner.outcome.kept_with_metadata`), hidden from the LLM and embed
    views so they do not eat the budget; its score is the relevance in [0, 1] (the input score
    is ``hrefine_input_score``).
    """
    kept = refined_with_metadata(
        outcomes,
        unit="nodes",
        metadata_of=lambda i: nodes[i].node.metadata,
        input_score_of=lambda i: nodes[i].score,
        keep_input_order=keep_input_order,
    )
    return [
        _scored_copy(nodes[o.index].node, metadata, REFINER_KEYS, o.text, o.relevance)
        for o, metadata in kept
    ]


def to_refiner_llm(
    llm: Any, *, llm_concurrency: int, llm_retries: int, llm_timeout: float | None
) -> TextGenerator | Any:
    """The prompt-only LLM a :class:`~hrefine.longrefiner.LongRefiner` takes for ``llm``.

    A LlamaIndex ``LLM`` becomes a core ``TextGenerator`` (:func:`to_text_generator`) with the
    given concurrency, retries and timeout (the options' ``llm_concurrency``, ``llm_retries``,
    ``llm_timeout``); anything else (None, a ``str -> str`` callable, a TextGenerator) goes to
    the core as it is, where a callable gets the same settings. ``Settings.llm`` is never read.

    Raises
    ------
    InputTypeError
        ``llm`` is none of these.
    """
    if llm is None or isinstance(llm, TextGenerator):
        return llm
    if isinstance(llm, LLM):
        return to_text_generator(
            llm,
            max_concurrency=llm_concurrency,
            retries=llm_retries,
            timeout=llm_timeout,
        )
    if callable(llm):
        return llm
    msg = (
        f"cannot use {type(llm).__name__} as LongRefiner's llm: pass a LlamaIndex LLM or a "
        "str -> str callable (or lm= for a local model)"
    )
    raise InputTypeError(msg)


# -- RAPTOR ---------------------------------------------------------------------------------

#: Metadata keys of a RAPTOR tree node (stored in the docstore) or of a retrieved one; they are
#: excluded from the LLM and embed views.
RAPTOR_KEYS = (
    "hrefine_source",
    "hrefine_start",
    "hrefine_end",
    "hrefine_tokens",
    "hrefine_sources",
    "hrefine_children",
    "hrefine_raw_score",
    "hrefine_layer",
    "hrefine_kind",
    "hrefine_node_id",
)
# Private-to-the-tree keys not shown on retrieved nodes: indexes that mean nothing outside it
# (the documents' ids and the related nodes say the same in LlamaIndex's terms).
_TREE_ONLY = ("hrefine_source", "hrefine_children")


def to_sources(nodes: Sequence[BaseNode]) -> list[Source]:
    """One RAPTOR :class:`~hrefine.raptor.Source` per LlamaIndex node or ``Document``.

    The text is the node's content without metadata, the metadata a deep copy of the node's, and
    the id the node's ``ref_doc_id`` (the document a parsed chunk came from), or the node's own
    id (a ``Document``). The nodes are not changed.
    """
    from hrefine.raptor import Source

    out: list[Source] = []
    for i, node in enumerate(node_list(nodes)):
        if not isinstance(node, BaseNode):
            msg = (
                f"item {i} is a {type(node).__name__}; pass LlamaIndex Documents or nodes "
                "(llama_index.core.schema.BaseNode)"
            )
            raise InputTypeError(msg)
        try:
            metadata = copy.deepcopy(dict(node.metadata))
        except Exception as exc:  # a lock, a client: the docstore could not hold it either
            msg = (
                f"the metadata of item {i} ({node.node_id}) cannot be copied ({exc}); keep "
                "metadata to plain values (strings, numbers, lists, dicts)"
            )
            raise InputTypeError(msg) from exc
        out.append(
            Source(
                text=node.get_content(metadata_mode=MetadataMode.NONE),
                metadata=metadata,
                id=node.ref_doc_id or node.node_id,
            )
        )
    return out


def node_list(nodes: object) -> list[Any]:
    """``nodes`` as a list; InputTypeError when it is not a collection of items (None, one
    node, a string)."""
    one = isinstance(nodes, (BaseNode, NodeWithScore))  # pydantic models iterate their fields
    if one or isinstance(nodes, (str, bytes, Mapping)) or not isinstance(nodes, Iterable):
        msg = f"pass a list of LlamaIndex Documents or nodes, got {type(nodes).__name__}" + (
            "; wrap it in a list" if one else ""
        )
        raise InputTypeError(msg)
    return list(nodes)


def check_query_type(query: object) -> None:
    """Raise InputTypeError unless ``query`` is a str or a QueryBundle holding one.

    A retriever's ``retrieve`` checks this first: LlamaIndex's own would fail on its event
    model with a pydantic ValidationError before the query reached hrefine.
    """
    text = query.query_str if isinstance(query, QueryBundle) else query
    if not isinstance(text, str):
        msg = f"query must be a str or a QueryBundle, got {type(query).__name__}"
        raise InputTypeError(msg)


class QueryCheckedRetriever(BaseRetriever):
    """A LlamaIndex retriever that refuses a query which is not text with an
    :class:`~hrefine.errors.InputTypeError` before LlamaIndex's own event model (which would
    fail with a pydantic ValidationError) sees it; subclasses implement ``_retrieve``."""

    def retrieve(self, str_or_query_bundle: QueryType) -> list[NodeWithScore]:
        """The retrieved nodes; see the subclass for their order and scores.

        Raises
        ------
        InputTypeError
            The query is not a str (or a QueryBundle holding one).
        EmptyInputError
            The query is empty.
        """
        check_query_type(str_or_query_bundle)
        return super().retrieve(str_or_query_bundle)

    async def aretrieve(self, str_or_query_bundle: QueryType) -> list[NodeWithScore]:
        """:meth:`retrieve` without blocking the event loop."""
        check_query_type(str_or_query_bundle)
        return await super().aretrieve(str_or_query_bundle)


def json_problem(tree: Tree) -> str | None:
    """What in ``tree``'s node metadata JSON cannot store (a LlamaIndex docstore is JSON), or
    None when every value can be written."""
    for node in tree:
        try:
            json.dumps(node.metadata, allow_nan=True)
        except (TypeError, ValueError) as exc:
            return f"the metadata of node {node.id} holds a value JSON cannot store ({exc})"
    return None


def to_raptor_llm(llm: Any, options: RaptorOptions) -> Any:
    """The summariser a RAPTOR tree takes for ``llm``.

    A LlamaIndex ``LLM`` becomes a :class:`~hrefine.models.TextGenerator` with the options'
    ``llm_concurrency``, ``llm_retries`` and ``llm_timeout``; anything else (a ``str -> str``
    callable, a LocalLM, a TextGenerator, or None for the embedded SmolLM2) is returned as it is,
    for the core to check and wrap. ``Settings.llm`` is never read.
    """
    if isinstance(llm, LLM):
        return to_text_generator(
            llm,
            max_concurrency=options.llm_concurrency,
            retries=options.llm_retries,
            timeout=options.llm_timeout,
            retry_on=(Exception,),
        )
    return llm


def raptor_nodes(
    tree: Tree,
    ids: Sequence[int],
    node_ids: Sequence[str],
    source_ids: Sequence[str | None],
    *,
    stored: Mapping[int, BaseNode] | None = None,
    templates: Mapping[int, BaseNode] | None = None,
) -> list[TextNode]:
    """The docstore ``TextNode`` of each tree node in ``ids``.

    Each holds the node's text, a copy of its metadata (the tree's own keys hidden from the LLM
    and embed views), its embedding, and its relationships: ``SOURCE`` the document of a leaf,
    ``PARENT`` its strongest parent, ``CHILD`` its children. A node already ``stored`` (tree id
    -> its old ``TextNode``) keeps that one's settings (excluded keys, templates); a new leaf
    takes those of ``templates[source index]`` (the node or Document it was cut from).
    """
    vectors = tree.embeddings
    out: list[TextNode] = []
    for i in ids:
        node = tree[i]
        meta = copy.deepcopy(node.metadata)
        rel: dict[NodeRelationship, Any] = {}
        if node.kind == NodeKind.CHUNK:
            source = source_ids[int(meta["hrefine_source"])]
            if source is not None:
                rel[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=source)
        if node.parents:
            best = max(node.parents, key=lambda p, c=i: tree.weight(p, c))  # type: ignore[misc]
            rel[NodeRelationship.PARENT] = RelatedNodeInfo(node_id=node_ids[best])
        if node.children:
            rel[NodeRelationship.CHILD] = [
                RelatedNodeInfo(node_id=node_ids[c]) for c in node.children
            ]
        like = (stored or {}).get(i)
        if like is None and node.kind == NodeKind.CHUNK:
            like = (templates or {}).get(int(meta["hrefine_source"]))
        hidden = [k for k in RAPTOR_KEYS if k in meta]
        fields: dict[str, Any] = {}
        if like is not None:
            fields = {
                "metadata_separator": like.metadata_separator,
                "metadata_template": like.metadata_template,
                "text_template": getattr(like, "text_template", TextNode().text_template),
            }
        out.append(
            TextNode(
                id_=node_ids[i],
                text=node.text,
                metadata=meta,
                embedding=None if vectors is None else [float(x) for x in vectors[i]],
                excluded_llm_metadata_keys=_extend(
                    like.excluded_llm_metadata_keys if like is not None else [], hidden
                ),
                excluded_embed_metadata_keys=_extend(
                    like.excluded_embed_metadata_keys if like is not None else [], hidden
                ),
                relationships=rel,
                **fields,
            )
        )
    return out


def nodes_to_raptor_tree(
    stored: Sequence[BaseNode],
    layout: Sequence[Sequence[Any]],
    edges: Sequence[Sequence[Any]],
    metadata: Mapping[str, Any],
    *,
    where: str,
) -> Tree:
    """The RAPTOR :class:`~hrefine.tree.Tree` held by docstore nodes ``stored`` (in tree id
    order), with each node's ``[kind, level, order, order_derived]`` from ``layout``, the
    ``[parent, child, weight]`` ``edges`` and the tree's ``metadata``.

    Raises
    ------
    PersistenceError
        The nodes, layout and edges do not fit together (``where`` names the store).
    """
    if len(layout) != len(stored):
        msg = f"{where}: the index lists {len(layout)} nodes but {len(stored)} were found"
        raise PersistenceError(msg)
    rows: list[list[float]] = []
    nodes: list[dict[str, Any]] = []
    try:
        for node, (kind, level, order, derived) in zip(stored, layout, strict=True):
            if node.embedding is None:
                msg = f"{where}: node {node.node_id} has no embedding"
                raise PersistenceError(msg)
            rows.append(list(node.embedding))
            nodes.append(
                {
                    "text": node.get_content(metadata_mode=MetadataMode.NONE),
                    "kind": kind,
                    "level": level,
                    "order": order,
                    "order_derived": derived,
                    "metadata": copy.deepcopy(dict(node.metadata)),
                }
            )
        matrix = np.asarray(rows, dtype=np.float32)
        data = {"metadata": copy.deepcopy(dict(metadata)), "nodes": nodes, "edges": edges}
        return Tree.from_dict(data, embeddings=matrix if len(rows) else None)
    except (TreeError, TypeError, ValueError) as exc:
        if isinstance(exc, PersistenceError):
            raise
        msg = f"{where}: the stored RAPTOR tree is malformed: {exc}"
        raise PersistenceError(msg) from exc


def retrieved_to_nodes(
    results: Sequence[RetrievedNode],
    node_ids: Sequence[str] | None,
    source_ids: Sequence[str | None],
    stored: Sequence[BaseNode] | None = None,
) -> list[NodeWithScore]:
    """``NodeWithScore`` objects for RAPTOR results (best first, as they come).

    Each node is a copy of its ``stored`` docstore node when given (a new ``TextNode`` with a
    stable id otherwise: ``node_ids[id]`` or one derived from the text). Its score is the
    relevance in [0, 1]; its metadata is the source document's (leaves) plus
    ``hrefine_raw_score`` (cosine similarity), ``hrefine_layer`` (0 = leaf),
    ``hrefine_kind`` (``"chunk"``/``"summary"``), ``hrefine_node_id`` (id in the tree),
    ``hrefine_sources`` (ids of the documents the text comes from), ``hrefine_tokens`` and, on a
    leaf, ``hrefine_start``/``hrefine_end`` (character offsets into the text of the Document or
    node it was cut from). These keys
    are hidden from the LLM and embed views. A leaf's ``ref_doc_id`` is its document's id.
    """
    out: list[NodeWithScore] = []
    for k, result in enumerate(results):
        meta = {key: v for key, v in result.metadata.items() if key not in _TREE_ONLY}
        meta = copy.deepcopy(meta)
        meta.update(
            {
                "hrefine_raw_score": float(result.score),
                "hrefine_layer": int(result.layer),
                "hrefine_kind": str(result.kind),
                "hrefine_node_id": int(result.id),
                "hrefine_sources": list(
                    dict.fromkeys(s for i in result.sources if (s := source_ids[i]) is not None)
                ),
                "hrefine_tokens": int(result.tokens),
            }
        )
        hidden = [key for key in RAPTOR_KEYS if key in meta]
        old = stored[k] if stored is not None else None
        if old is not None:
            node = old.model_copy(
                update={
                    "metadata": meta,
                    "embedding": None,
                    "excluded_llm_metadata_keys": _extend(old.excluded_llm_metadata_keys, hidden),
                    "excluded_embed_metadata_keys": _extend(
                        old.excluded_embed_metadata_keys, hidden
                    ),
                    "relationships": copy.copy(old.relationships),
                }
            )
        else:
            rel: dict[NodeRelationship, Any] = {}
            source = source_ids[result.sources[0]] if result.kind == "chunk" else None
            if source is not None:
                rel[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=source)
            node_id = (
                node_ids[result.id]
                if node_ids is not None
                else str(
                    uuid.uuid5(uuid.NAMESPACE_OID, f"hrefine-raptor:{result.id}:{result.text}")
                )
            )
            node = TextNode(
                id_=node_id,
                text=result.text,
                metadata=meta,
                excluded_llm_metadata_keys=list(hidden),
                excluded_embed_metadata_keys=list(hidden),
                relationships=rel,
            )
        out.append(NodeWithScore(node=node, score=float(result.relevance)))
    return out


# -- GARLIC ---------------------------------------------------------------------------------


def to_garlic_llm(llm: Any) -> Any:
    """The LLM a GARLIC graph and its searcher take for ``llm``.

    A LlamaIndex ``LLM`` becomes a :class:`~hrefine.models.TextGenerator` (prompt-only mode:
    embedding edges, Yes/No read from its text); anything else (a ``LocalLM`` for attention
    edges and the KV-cached search, a ``str -> str`` callable, a TextGenerator, or None for the
    embedded SmolLM2) is returned as it is. ``Settings.llm`` is never read.
    """
    if isinstance(llm, LLM):
        return to_text_generator(llm)
    return llm


def visited_to_nodes(result: SearchResult, tree: Tree) -> list[NodeWithScore]:
    """``NodeWithScore`` objects for the nodes a GARLIC search read, best first (document order
    on a tie), as every retriever returns them.

    Each holds a new ``TextNode`` (a stable id from the graph node and its text) whose metadata
    is described by :func:`hrefine.garlic.visited.visited_with_metadata`; the ``hrefine_*`` keys
    are hidden from the LLM and embed views. The score is the node's relevance in [0, 1]. A
    chunk's ``ref_doc_id`` is its document's id, where it had one.
    """
    from hrefine.garlic.visited import METADATA_KEYS as GARLIC_KEYS
    from hrefine.garlic.visited import visited_with_metadata

    out: list[NodeWithScore] = []
    for d in visited_with_metadata(result, tree):
        hidden = [k for k in ("relevance_score", *GARLIC_KEYS) if k in d.metadata]
        rel: dict[NodeRelationship, Any] = {}
        if d.kind == "chunk" and isinstance(d.sources[0], str):
            rel[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=d.sources[0])
        node_id = str(uuid.uuid5(uuid.NAMESPACE_OID, f"hrefine-garlic:{d.node.id}:{d.node.text}"))
        node = TextNode(
            id_=node_id,
            text=d.node.text,
            metadata=d.metadata,
            excluded_llm_metadata_keys=hidden,
            excluded_embed_metadata_keys=list(hidden),
            relationships=rel,
        )
        out.append(NodeWithScore(node=node, score=d.relevance))
    return by_relevance(out, lambda n: n.score)
