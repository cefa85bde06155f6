"""A RAPTOR tree kept in LlamaIndex's stores: how it is built into them, loaded from them, and
how the stores are rewritten where an insert changed the tree.

Every tree node is a ``TextNode`` in the docstore and the tree's shape is the index struct (see
:mod:`llamaindex_hrefine._tree_index`). :class:`RaptorStore` holds this machinery;
:class:`~llamaindex_hrefine.raptor.RaptorIndex` is the public index over it.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from hrefine.errors import NotSupportedError
from hrefine.models import Embedder
from hrefine.raptor import RaptorOptions, RaptorTree
from hrefine.raptor.serial_insert import Grown, grow, insert_lock, publish
from hrefine.tree import Tree
from llama_index.core.ingestion import run_transformations
from llama_index.core.schema import BaseNode, Document, TransformComponent

from llamaindex_hrefine._convert import raptor_nodes, to_raptor_llm, to_sources
from llamaindex_hrefine._tree_index import StoredTreeIndex, progress_bar
from llamaindex_hrefine._tree_storage import TreeIndexStruct, digest, fill_struct

__all__ = ["RaptorStore"]

_S = TypeVar("_S", bound=TreeIndexStruct)


class RaptorStore(StoredTreeIndex[_S]):
    """A RAPTOR tree in LlamaIndex's stores (the base of
    :class:`~llamaindex_hrefine.raptor.RaptorIndex`, which sets the attributes below before
    this constructor runs).

    _embedder, _tokenizer:
        The models the caller gave (converted), or None.
    _given_options:
        The options the caller gave (None: loading uses the saved ones).
    _settings:
        Single settings the caller gave; they change the saved ones when loading.
    _own_transformations:
        The caller's transformations, run on each inserted Document.
    """

    _options: RaptorOptions
    """The tree's :class:`~hrefine.raptor.RaptorOptions`, without models."""
    _embedder: Embedder | None
    _tokenizer: Any
    _given_options: RaptorOptions | None
    _settings: dict[str, Any]
    _own_transformations: list[TransformComponent] | None

    def _tree(self) -> RaptorTree:
        """The core tree (built or loaded by now)."""
        assert self._built is not None
        tree: RaptorTree = self._built
        return tree

    # -- building -------------------------------------------------------------------------
    def _build_index_from_nodes(self, nodes: Sequence[BaseNode], **build_kwargs: Any) -> _S:
        with progress_bar(self._show_progress, "RAPTOR tree") as progress:
            raptor = RaptorTree.build(
                to_sources(nodes),
                self._options,
                llm=to_raptor_llm(self._llm, self._options),
                embedder=self._embedder,
                tokenizer=self._tokenizer,
                progress=progress,
            )
        struct = self.index_struct_cls()
        nodes_out, node_ids = self._changes(
            struct, raptor.tree, range(len(raptor)), {}, dict(enumerate(nodes))
        )
        self._docstore.add_documents(nodes_out, allow_update=True)
        fill_struct(struct, raptor.tree, node_ids, raptor.options.plain())
        self._built = raptor
        return struct

    def _changes(
        self,
        struct: _S,
        tree: Tree,
        ids: Sequence[int],
        stored: Mapping[int, BaseNode],
        templates: Mapping[int, BaseNode],
    ) -> tuple[list[Any], list[str]]:
        """The docstore nodes of ``tree``'s nodes ``ids``, and the docstore ids of all of
        ``tree``'s nodes (``struct``'s, new ones for nodes it does not have): ``struct`` is
        brought up to ``tree`` by :func:`fill_struct` with them, once the nodes are written."""
        node_ids = list(struct.node_ids)
        node_ids += [str(uuid.uuid4()) for _ in range(len(tree) - len(node_ids))]
        sources = list(tree.metadata.get("sources", []))
        out = raptor_nodes(tree, list(ids), node_ids, sources, stored=stored, templates=templates)
        return out, node_ids

    # -- inserting ------------------------------------------------------------------------
    # An insert holds the tree's insert lock (inserts run one at a time) and grows a copy of
    # the tree; it writes the docstore, then the index struct, and swaps the tree in last, so a
    # query running meanwhile finds every node of the tree it reads in the struct and docstore.
    def _parsed(self, documents: Sequence[Document]) -> list[BaseNode]:
        if not self._own_transformations:
            return list(documents)
        return list(
            run_transformations(
                list(documents), self._own_transformations, show_progress=self._show_progress
            )
        )

    def _insert(self, nodes: Sequence[BaseNode], **insert_kwargs: Any) -> None:
        raptor = self._tree()
        with insert_lock(raptor):
            grown = grow(raptor, to_sources(nodes))
            changed, old_ids = self._rewritten(grown)
            stored = self._docstore.get_nodes(old_ids)
            out, node_ids = self._written(nodes, grown, changed, stored)
            self._docstore.add_documents(out, allow_update=True)
            self._publish(grown, node_ids)
            self._storage_context.index_store.add_index_struct(self._index_struct)

    def _rewritten(self, grown: Grown) -> tuple[list[int], list[str]]:
        """The tree ids an insert made or changed, and the docstore ids of the changed ones."""
        changed = _changed(grown.base, grown.work)
        ids = self._index_struct.node_ids
        return changed, [ids[i] for i in changed if i < len(grown.base)]

    def _written(
        self,
        nodes: Sequence[BaseNode],
        grown: Grown,
        changed: Sequence[int],
        stored: Sequence[BaseNode],
    ) -> tuple[list[Any], list[str]]:
        """The docstore nodes to write after inserting ``nodes`` (``grown``), and the docstore
        ids of the grown tree's nodes."""
        before = grown.base
        known = len(before.metadata.get("sources", []))
        old = [i for i in changed if i < len(before)]
        templates = {known + j: n for j, n in enumerate(nodes)}
        stored_by_id = dict(zip(old, stored, strict=True))
        return self._changes(self._index_struct, grown.work, changed, stored_by_id, templates)

    def _publish(self, grown: Grown, node_ids: Sequence[str]) -> None:
        """Bring the index struct up to the grown tree (its nodes written), then swap it in."""
        raptor = self._tree()
        fill_struct(self._index_struct, grown.work, node_ids, raptor.options.plain())
        publish(raptor, grown)

    # -- deleting (not supported) ---------------------------------------------------------
    def _refuse(self) -> NotSupportedError:
        msg = (
            "RaptorIndex cannot delete or update documents: the summaries above their leaves "
            "would all have to be rebuilt. Build a new RaptorIndex from the documents you "
            "keep (or insert new ones with insert())"
        )
        return NotSupportedError(msg)

    def _delete_node(self, node_id: str, **delete_kwargs: Any) -> None:
        """Not supported: raises :class:`~hrefine.errors.NotSupportedError`."""
        raise self._refuse()

    # -- loading --------------------------------------------------------------------------
    def _load(self, struct: _S) -> RaptorTree:
        """The tree held by the stores for ``struct``; raises PersistenceError."""
        where, stored, tree = self._stored_tree(struct)
        # A model the caller gives (or all, with options given) is used, the saved one unread;
        # a saved one that is a path is refused (a store may name only model names).
        models = {"llm": self._llm, "embedder": self._embedder, "tokenizer": self._tokenizer}
        given = {*self._settings, *(name for name, m in models.items() if m is not None)}
        if self._given_options is not None:
            given |= RaptorOptions.adapter_excluded
        saved = RaptorOptions.from_saved(
            struct.options, where, given=given, load="RaptorIndex.from_persist_dir(dir, {name}=...)"
        )
        base = self._given_options if self._given_options is not None else saved
        options = base.replace(**self._settings) if self._settings else base
        if self._tokenizer is not None:  # the caller's wins, and is saved in place of the old
            options = options.replace(tokenizer=self._tokenizer)
        self._options = options
        # Checked as a saved tree; token counts made again in a given tokenizer's tokens (or
        # the default's, where the counting one was not named and so not saved).
        raptor = RaptorTree.from_tree(
            tree,
            options,
            llm=to_raptor_llm(self._llm, options),
            embedder=self._embedder,
            tokenizer=self._tokenizer,
            where=where,
        )
        if digest(raptor.tree, struct.options) != struct.digest:
            # Counted again: the stores get the new counts, or the docstore disagrees with the
            # tree and an insert (which writes only the nodes it changed, but a checksum of the
            # whole tree) leaves a store that no longer loads.
            out, node_ids = self._changes(
                struct, raptor.tree, range(len(tree)), dict(enumerate(stored)), {}
            )
            self._docstore.add_documents(out, allow_update=True)
            fill_struct(struct, raptor.tree, node_ids, raptor.options.plain())
            self._storage_context.index_store.add_index_struct(struct)
        return raptor


def _changed(before: Tree, after: Tree) -> list[int]:
    """Ids of the nodes of ``after`` that are new or differ from ``before``'s (text, links,
    metadata): what an insert wrote."""
    out: list[int] = []
    for node in after:
        if node.id >= len(before):
            out.append(node.id)
            continue
        old = before[node.id]
        if (
            old.text != node.text
            or tuple(old.children) != tuple(node.children)
            or tuple(old.parents) != tuple(node.parents)
            or old.metadata != node.metadata
        ):
            out.append(node.id)
    return out
