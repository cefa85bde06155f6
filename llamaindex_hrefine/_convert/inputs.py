"""What callers hand the LlamaIndex components, checked and turned into the core's inputs:
node lists, queries, the HTML or texts (and titles) of retrieved nodes, and the RAPTOR and
GARLIC sources of Documents and nodes. The nodes are never changed."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from hrefine.errors import InputTypeError
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import (
    BaseNode,
    MetadataMode,
    NodeWithScore,
    QueryBundle,
    QueryType,
)

if TYPE_CHECKING:
    from hrefine.raptor import Source

__all__ = [
    "QueryCheckedRetriever",
    "check_query_type",
    "node_list",
    "nodes_to_html",
    "nodes_to_texts",
    "to_sources",
]


def _scored(nodes: Sequence[object]) -> list[NodeWithScore]:
    """``nodes``, each checked to be a ``NodeWithScore`` (what a postprocessor is given).

    Raises
    ------
    InputTypeError
        An item is not one (a bare ``TextNode`` would otherwise fail on ``.node`` with a raw
        ``AttributeError``); the message says how to wrap it.
    """
    out: list[NodeWithScore] = []
    for i, item in enumerate(nodes):
        if not isinstance(item, NodeWithScore):
            msg = (
                f"node {i} is a {type(item).__name__}; pass a list of NodeWithScore (wrap a "
                "node as NodeWithScore(node=node))"
            )
            raise InputTypeError(msg)
        out.append(item)
    return out


def nodes_to_html(nodes: Sequence[NodeWithScore]) -> list[str]:
    """The HTML content of each node (without metadata), in order.

    Raises
    ------
    InputTypeError
        An item is not a ``NodeWithScore``.
    """
    return [item.node.get_content(metadata_mode=MetadataMode.NONE) for item in _scored(nodes)]


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
    for item in _scored(nodes):
        texts.append(item.node.get_content(metadata_mode=MetadataMode.NONE))
        title = item.node.metadata.get("title")
        titles.append(title.strip() if isinstance(title, str) else "")
    return texts, (titles if any(titles) else None)


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
