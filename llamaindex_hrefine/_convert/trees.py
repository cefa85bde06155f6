"""RAPTOR trees and GARLIC graphs in LlamaIndex's stores: tree nodes become docstore
``TextNode`` objects (and back, on loading), and retrieved or visited tree nodes become
``NodeWithScore`` objects. Caller nodes are never mutated."""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from hrefine.errors import PersistenceError, TreeError
from hrefine.results import by_relevance
from hrefine.tree import NodeKind, Tree
from llama_index.core.schema import (
    BaseNode,
    MetadataMode,
    NodeRelationship,
    NodeWithScore,
    RelatedNodeInfo,
    TextNode,
)

from llamaindex_hrefine._convert.outputs import extend_keys, hidden_copy

if TYPE_CHECKING:
    from hrefine.garlic import SearchResult
    from hrefine.raptor import RetrievedNode

__all__ = [
    "RAPTOR_KEYS",
    "json_problem",
    "nodes_to_raptor_tree",
    "raptor_nodes",
    "retrieved_to_nodes",
    "visited_to_nodes",
]


#: Metadata keys of a RAPTOR tree node (stored in the docstore) or of a retrieved one; they are
#: excluded from the LLM and embed views.
RAPTOR_KEYS = (
    "hrefine_source",
    "hrefine_start",
    "hrefine_end",
    "hrefine_tokens",
    "hrefine_sources",
    "hrefine_children",
    "hrefine_repeated_sentences",
    "hrefine_raw_score",
    "hrefine_layer",
    "hrefine_kind",
    "hrefine_node_id",
)
# Private-to-the-tree keys not shown on retrieved nodes: indexes that mean nothing outside it
# (the documents' ids and the related nodes say the same in LlamaIndex's terms).
_TREE_ONLY = ("hrefine_source", "hrefine_children")


def json_problem(tree: Tree) -> str | None:
    """What in ``tree``'s node metadata JSON cannot store (a LlamaIndex docstore is JSON), or
    None when every value can be written."""
    for node in tree:
        try:
            json.dumps(node.metadata, allow_nan=True)
        except (TypeError, ValueError) as exc:
            return f"the metadata of node {node.id} holds a value JSON cannot store ({exc})"
    return None


def _keys_of(like: BaseNode | None, view: str, hidden: Sequence[str]) -> list[str]:
    """The metadata keys ``like`` hides from the ``view`` (``"llm"``/``"embed"``), then
    ``hidden`` (a new list)."""
    keys = getattr(like, f"excluded_{view}_metadata_keys", None) or []
    return extend_keys(keys, hidden)


def _templates_of(like: BaseNode | None) -> dict[str, Any]:
    """The ``TextNode`` fields that make ``like``'s text and metadata views (none: the defaults)."""
    if like is None:
        return {}
    return {
        "metadata_separator": like.metadata_separator,
        "metadata_template": like.metadata_template,
        "text_template": getattr(like, "text_template", TextNode().text_template),
    }


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
        out.append(
            TextNode(
                id_=node_ids[i],
                text=node.text,
                metadata=meta,
                embedding=None if vectors is None else [float(x) for x in vectors[i]],
                excluded_llm_metadata_keys=_keys_of(like, "llm", hidden),
                excluded_embed_metadata_keys=_keys_of(like, "embed", hidden),
                relationships=rel,
                **_templates_of(like),
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
    node it was cut from); a summary shortened to the sentences the other results do not hold
    has that text and ``hrefine_repeated_sentences`` (how many were left out). These keys
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
            node = hidden_copy(old, meta, RAPTOR_KEYS)
            if node.get_content() != result.text:  # a summary without the sentences returned
                node.set_content(result.text)  # already (the copy's; the stored one is kept)
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


def visited_to_nodes(
    result: SearchResult, tree: Tree, templates: Mapping[int, BaseNode] | None = None
) -> list[NodeWithScore]:
    """``NodeWithScore`` objects for the nodes a GARLIC search read, best first (document order
    on a tie), as every retriever returns them.

    Each holds a new ``TextNode`` (a stable id from the graph node and its text) whose metadata
    is described by :func:`hrefine.garlic.visited.visited_with_metadata`; the ``hrefine_*`` keys
    are hidden from the LLM and embed views. A chunk keeps the settings of
    ``templates[source index]`` (the node or Document it was cut from): the metadata keys that
    one hides from the LLM and embed views, and its templates. The score is the node's
    relevance in [0, 1]. A chunk's ``ref_doc_id`` is its document's id, where it had one.
    """
    from hrefine.garlic.visited import METADATA_KEYS as GARLIC_KEYS
    from hrefine.garlic.visited import visited_with_metadata

    out: list[NodeWithScore] = []
    for d in visited_with_metadata(result, tree):
        hidden = [k for k in ("relevance_score", *GARLIC_KEYS) if k in d.metadata]
        rel: dict[NodeRelationship, Any] = {}
        if d.kind == "chunk" and isinstance(d.sources[0], str):
            rel[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=d.sources[0])
        like = None
        if d.kind == "chunk" and templates:
            like = templates.get(int(d.node.metadata["hrefine_source"]))
        node_id = str(uuid.uuid5(uuid.NAMESPACE_OID, f"hrefine-garlic:{d.node.id}:{d.node.text}"))
        node = TextNode(
            id_=node_id,
            text=d.node.text,
            metadata=d.metadata,
            excluded_llm_metadata_keys=_keys_of(like, "llm", hidden),
            excluded_embed_metadata_keys=_keys_of(like, "embed", hidden),
            relationships=rel,
            **_templates_of(like),
        )
        out.append(NodeWithScore(node=node, score=d.relevance))
    return by_relevance(out, lambda n: n.score)
