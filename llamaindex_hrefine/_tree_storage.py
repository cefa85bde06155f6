"""How a RAPTOR or GARLIC index is stored: the shape of its built tree or graph in the index
store (checked by a checksum against the docstore's nodes), a storage context that refuses what
JSON cannot store before writing, and the registration that lets LlamaIndex's loaders find the
index classes."""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
from hrefine.errors import PersistenceError
from hrefine.tree import Tree
from llama_index.core.data_structs.data_structs import IndexStruct
from llama_index.core.data_structs.registry import INDEX_STRUCT_TYPE_TO_INDEX_STRUCT_CLASS
from llama_index.core.indices.base import BaseIndex
from llama_index.core.indices.registry import INDEX_STRUCT_TYPE_TO_INDEX_CLASS
from llama_index.core.storage.docstore.simple_docstore import SimpleDocumentStore
from llama_index.core.storage.storage_context import DEFAULT_PERSIST_DIR, StorageContext

__all__ = [
    "FORMAT",
    "CheckedStorageContext",
    "TreeIndexStruct",
    "check_struct",
    "digest",
    "docstore_json_problem",
    "fill_struct",
    "own_storage",
    "register",
]

#: Version of the stored layout.
FORMAT = 1


@dataclass
class TreeIndexStruct(IndexStruct):
    """The shape of a built tree or graph, kept in LlamaIndex's index store (each method's
    struct subclasses it and names its own type).

    The nodes themselves (text, metadata, embedding) are in the docstore under ``node_ids``.
    """

    node_ids: list[str] = field(default_factory=list)
    """Docstore id of node ``i`` at position ``i``."""
    layout: list[list[Any]] = field(default_factory=list)
    """``[kind, level, order, order_derived]`` of each node."""
    edges: list[list[Any]] = field(default_factory=list)
    """``[parent, child, weight]`` of each edge (node positions)."""
    tree_metadata: dict[str, Any] = field(default_factory=dict)
    """The tree's own metadata (document ids, empty documents, build statistics)."""
    options: dict[str, Any] = field(default_factory=dict)
    """The method's options it was built with (plain values)."""
    digest: str = ""
    """SHA-256 of the tree and options, to tell an edited or truncated store."""
    format: int = FORMAT
    """Version of this layout."""


def digest(tree: Tree, options: Mapping[str, Any]) -> str:
    """SHA-256 of ``tree`` (graph, texts, metadata, embeddings) and ``options``."""
    body = json.dumps(
        {"tree": tree.to_dict(), "options": dict(options)},
        sort_keys=True,
        ensure_ascii=False,
        default=str,
    )
    h = hashlib.sha256(body.encode("utf-8"))
    if tree.embeddings is not None:
        h.update(np.ascontiguousarray(tree.embeddings, dtype=np.float32).tobytes())
    return h.hexdigest()


def fill_struct(
    struct: TreeIndexStruct, tree: Tree, node_ids: Sequence[str], options: Mapping[str, Any]
) -> None:
    """Write ``tree``'s shape, its docstore ids, ``options`` and their checksum into
    ``struct``."""
    data = tree.to_dict()
    struct.node_ids = list(node_ids)
    struct.layout = [[n["kind"], n["level"], n["order"], n["order_derived"]] for n in data["nodes"]]
    struct.edges = [list(e) for e in data["edges"]]
    struct.tree_metadata = copy.deepcopy(data["metadata"])
    struct.options = dict(options)
    struct.digest = digest(tree, options)
    struct.format = FORMAT


def check_struct(struct: TreeIndexStruct, where: str) -> None:
    """Raise PersistenceError unless ``struct``'s fields have the stored layout's shape."""
    problem = ""
    if struct.format != FORMAT:
        problem = f"it is in format {struct.format!r}; this hrefine reads format {FORMAT}"
    elif not struct.node_ids or not all(isinstance(i, str) for i in struct.node_ids):
        problem = "its node ids are missing"
    elif len(struct.layout) != len(struct.node_ids) or not all(
        isinstance(row, list) and len(row) == 4 for row in struct.layout
    ):
        problem = "its node layout does not match its node ids"
    elif not all(isinstance(e, list) and len(e) == 3 for e in struct.edges):
        problem = "its edges are malformed"
    elif not isinstance(struct.tree_metadata, dict) or not isinstance(struct.options, dict):
        problem = "its tree metadata or settings are malformed"
    elif not isinstance(struct.digest, str) or not struct.digest:
        problem = "it has no checksum"
    if problem:
        msg = f"{where} cannot be loaded: {problem}"
        raise PersistenceError(msg)


class CheckedStorageContext(StorageContext):
    """A ``StorageContext`` whose ``persist`` refuses, before writing anything, a docstore that
    JSON cannot store.

    LlamaIndex's writer opens ``docstore.json`` for writing and then serialises: a node whose
    metadata holds a datetime or a set raises a raw ``TypeError`` and leaves the file empty.
    The RAPTOR and GARLIC indexes make their stores with this class (when the caller gives no
    ``storage_context``, and on ``from_persist_dir``), so ``index.storage_context.persist``
    refuses as ``index.persist`` does. A context the caller made is not replaced (it is the
    caller's object): ``index.persist(folder)`` checks it.
    """

    def persist(self, persist_dir: Any = DEFAULT_PERSIST_DIR, *args: Any, **kwargs: Any) -> None:
        """``StorageContext.persist``, once the docstore is known to be JSON.

        Raises
        ------
        PersistenceError
            A node's metadata holds a value JSON cannot store; nothing is written.
        """
        problem = docstore_json_problem(self.docstore)
        if problem:
            msg = (
                f"cannot persist to {persist_dir}: {problem}; keep metadata to strings, "
                "numbers, booleans, lists and dicts"
            )
            raise PersistenceError(msg)
        super().persist(persist_dir, *args, **kwargs)


def own_storage(storage_context: StorageContext | None) -> StorageContext:
    """``storage_context``, or a new :class:`CheckedStorageContext` when None."""
    return storage_context if storage_context is not None else CheckedStorageContext.from_defaults()


def docstore_json_problem(docstore: Any) -> str | None:
    """What in an in-memory docstore JSON cannot store (its first node that fails), or None.
    Other docstores write as they go (a database): they are not checked."""
    if not isinstance(docstore, SimpleDocumentStore):
        return None
    try:
        json.dumps(docstore.to_dict())
    except (TypeError, ValueError, RecursionError):
        for node_id, node in docstore.docs.items():
            try:
                json.dumps(node.metadata)
            except (TypeError, ValueError, RecursionError) as exc:
                return f"the metadata of node {node_id!r} holds a value JSON cannot store ({exc})"
        return "the docstore holds a value JSON cannot store"
    return None


def register(
    struct_cls: type[TreeIndexStruct], index_cls: type[BaseIndex[Any]], *types: str
) -> None:
    """Let LlamaIndex's loaders find a stored index's classes by its struct ``types``."""
    for struct_type in types:
        cast(dict[Any, Any], INDEX_STRUCT_TYPE_TO_INDEX_STRUCT_CLASS)[struct_type] = struct_cls
        cast(dict[Any, Any], INDEX_STRUCT_TYPE_TO_INDEX_CLASS)[struct_type] = index_cls
