"""What the RAPTOR and GARLIC indexes share: the parts of a LlamaIndex ``BaseIndex`` that do not
depend on the method (building, loading, answering through query and chat engines). How a built
tree or graph is stored lives in :mod:`llamaindex_hrefine._tree_storage`."""

from __future__ import annotations

import sys
from abc import abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, ClassVar, Generic, TypeVar

from hrefine.errors import ConfigError, InputTypeError, NotSupportedError, PersistenceError
from hrefine.tree import Tree
from llama_index.core.base.base_query_engine import BaseQueryEngine
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks import CallbackManager
from llama_index.core.chat_engine.types import BaseChatEngine, ChatMode
from llama_index.core.indices.base import BaseIndex
from llama_index.core.ingestion import run_transformations
from llama_index.core.llms import LLM
from llama_index.core.schema import BaseNode, Document, TransformComponent
from llama_index.core.settings import Settings
from llama_index.core.storage.docstore.types import RefDocInfo
from llama_index.core.storage.storage_context import StorageContext

from llamaindex_hrefine._convert import answer_llm, json_problem, node_list, nodes_to_raptor_tree
from llamaindex_hrefine._tree_storage import (
    CheckedStorageContext,
    TreeIndexStruct,
    check_struct,
    digest,
    own_storage,
)


@contextmanager
def progress_bar(show: bool, what: str) -> Iterator[Callable[[str], None] | bool]:
    """While open, the build's progress as LlamaIndex shows it (``show_progress=True``): a
    tqdm bar on stderr, one tick per build step, the step written beside it. Yields the
    ``progress`` argument of the core build (False when not shown)."""
    if not show:
        yield False
        return
    from tqdm.auto import tqdm

    bar = tqdm(desc=what, unit="step", file=sys.stderr)

    def step(line: str) -> None:
        bar.set_postfix_str(line, refresh=False)
        bar.update(1)

    try:
        yield step
    finally:
        bar.close()


__all__ = ["StoredTreeIndex", "progress_bar"]

#: Retriever arguments of other indexes that narrow what may be returned: a tree index cannot
#: honour them, and ignoring them would return what the caller meant to keep out.
_NARROWING = ("filters", "doc_ids", "node_ids")

_S = TypeVar("_S", bound=TreeIndexStruct)
_I = TypeVar("_I", bound="StoredTreeIndex[Any]")


class StoredTreeIndex(BaseIndex[_S], Generic[_S]):
    """A LlamaIndex index whose nodes are those of a tree or graph a method builds itself (the
    RAPTOR and GARLIC indexes): the method-free parts of building, loading and answering.

    Subclasses set ``_llm`` (the LLM the caller gave, which also answers when it is a
    LlamaIndex LLM) and what their build needs before this constructor runs, build their core
    tree or graph in ``_build_index_from_nodes`` (setting ``_built``), and load it from the
    stores in ``_load`` (given an index struct: see :meth:`_stored_tree`).
    """

    _llm: Any
    #: The core tree or graph (None until built or loaded).
    _built: Any
    #: The method's name in messages ("RAPTOR", "GARLIC").
    method: ClassVar[str] = ""
    #: What the method builds, in messages ("tree", "graph").
    _kind: ClassVar[str] = "tree"
    #: The message of a constructor given neither nodes nor an index struct.
    _needs_nodes: ClassVar[str] = ""
    #: The message of a constructor given another method's struct (``{got}``: its type).
    _wrong_struct: ClassVar[str] = ""
    #: The arguments of a query or chat engine that go to :meth:`as_retriever` (the others go
    #: to the engine); ``search_llm`` goes as the retriever's ``llm``.
    _retriever_args: ClassVar[tuple[str, ...]] = ()

    def __init__(
        self,
        nodes: Sequence[BaseNode] | None,
        index_struct: _S | None,
        storage_context: StorageContext | None,
        callback_manager: CallbackManager | None,
        transformations: list[TransformComponent] | None,
        show_progress: bool,
    ) -> None:
        if nodes is None and index_struct is None:
            raise ConfigError(self._needs_nodes)
        if index_struct is not None and not isinstance(index_struct, self.index_struct_cls):
            raise InputTypeError(self._wrong_struct.format(got=type(index_struct).__name__))
        self._built = None
        # Stores made here check JSON before LlamaIndex's writer opens a file (see
        # CheckedStorageContext); the caller's own context is used as it is.
        super().__init__(
            nodes=list(nodes) if nodes is not None else None,
            index_struct=index_struct,
            storage_context=own_storage(storage_context),
            callback_manager=callback_manager,
            transformations=transformations,
            show_progress=show_progress,
        )
        if self._built is None:  # given an index struct: load the tree from the stores
            self._built = self._load(self._index_struct)

    @abstractmethod
    def _load(self, struct: _S) -> Any:
        """The core tree or graph the stores hold for ``struct``; raises PersistenceError."""

    def _built_tree(self) -> Tree:
        """The core tree or graph this index holds."""
        tree: Tree = self._built.tree
        return tree

    def _stored_tree(self, struct: _S) -> tuple[str, list[BaseNode], Tree]:
        """Where ``struct`` is (for messages), its docstore nodes in tree order, and the tree
        they make, checked against the struct's checksum; raises PersistenceError."""
        where = f"{self.method} index {struct.index_id!r}"
        stored = self._stored(struct, where)
        tree = nodes_to_raptor_tree(
            stored, struct.layout, struct.edges, struct.tree_metadata, where=where
        )
        if digest(tree, struct.options) != struct.digest:
            msg = (
                f"{where}: the stored {self._kind} does not match its checksum (edited or "
                "truncated)"
            )
            raise PersistenceError(msg)
        return where, stored, tree

    @classmethod
    def from_documents(  # type: ignore[override]
        cls: type[_I],
        documents: Sequence[Document],
        storage_context: StorageContext | None = None,
        show_progress: bool = False,
        callback_manager: CallbackManager | None = None,
        transformations: list[TransformComponent] | None = None,
        **kwargs: Any,
    ) -> _I:
        """Build an index over ``documents``.

        The method cuts each document into its own leaves, so by default the documents go in
        whole (``Settings.transformations`` are not applied); ``transformations`` given here
        run first, and each resulting node is then chunked.

        Parameters
        ----------
        documents:
            The LlamaIndex Documents (not changed).
        storage_context, show_progress, callback_manager, transformations:
            As for any LlamaIndex index.
        **kwargs:
            The constructor's arguments: ``llm``, ``embed_model``, ``options`` and the
            method's options fields.
        """
        docs = node_list(documents)
        storage_context = own_storage(storage_context)
        callback_manager = callback_manager or Settings.callback_manager
        with callback_manager.as_trace("index_construction"):
            nodes = (
                run_transformations(docs, transformations, show_progress=show_progress)
                if transformations
                else docs
            )
            index = cls(
                nodes=nodes,
                storage_context=storage_context,
                callback_manager=callback_manager,
                transformations=transformations,
                show_progress=show_progress,
                **kwargs,
            )
            for doc in docs:  # after the build: a failed one records no document
                storage_context.docstore.set_document_hash(doc.id_, doc.hash)
        return index

    def persist(self, persist_dir: str) -> None:
        """Save the stores (``self.storage_context.persist(persist_dir=persist_dir)``).

        Raises
        ------
        PersistenceError
            A node's metadata holds a value JSON cannot store (a datetime, a set); nothing is
            written (LlamaIndex's own writer would leave a truncated docstore behind).
        """
        problem = json_problem(self._built_tree())
        if problem:
            msg = (
                f"cannot persist the {self.method} index to {persist_dir}: {problem}; keep "
                "metadata to strings, numbers, booleans, lists and dicts"
            )
            raise PersistenceError(msg)
        self._storage_context.persist(persist_dir=persist_dir)

    @classmethod
    def from_persist_dir(
        cls: type[_I],
        persist_dir: str,
        *,
        index_id: str | None = None,
        **kwargs: Any,
    ) -> _I:
        """Load an index saved with :meth:`persist` (or ``storage_context.persist``).

        Parameters
        ----------
        persist_dir:
            The folder.
        index_id:
            Which index, when the folder holds several.
        **kwargs:
            The constructor's arguments (``llm``, ``embed_model``, settings).

        Raises
        ------
        PersistenceError
            The folder holds no index of this kind, or its files are unreadable, edited or
            truncated.
        """
        try:
            storage = CheckedStorageContext.from_defaults(persist_dir=persist_dir)
            structs = (
                [storage.index_store.get_index_struct(index_id)]
                if index_id is not None
                else storage.index_store.index_structs()
            )
        except (OSError, ValueError, KeyError, TypeError) as exc:
            msg = f"{persist_dir} is not a readable LlamaIndex store: {exc!r}"
            raise PersistenceError(msg) from exc
        found = [s for s in structs if isinstance(s, cls.index_struct_cls)]
        if len(found) != 1:
            which = f" with id {index_id!r}" if index_id is not None else ""
            hint = "; pass index_id= to choose one" if len(found) > 1 else ""
            msg = f"{persist_dir} holds {len(found)} {cls.method} indexes{which}{hint}"
            raise PersistenceError(msg)
        return cls(index_struct=found[0], storage_context=storage, **kwargs)

    def _stored(self, struct: TreeIndexStruct, where: str) -> list[BaseNode]:
        """The docstore nodes of a checked ``struct``, in tree order; PersistenceError when
        one is missing."""
        check_struct(struct, where)
        stored: list[BaseNode] = []
        for node_id in struct.node_ids:
            node = self._docstore.get_node(node_id, raise_error=False)
            if node is None:
                msg = (
                    f"{where}: node {node_id!r} is not in the docstore (a truncated or "
                    "different store?); persist and load the whole storage context"
                )
                raise PersistenceError(msg)
            stored.append(node)
        return stored

    @property
    def ref_doc_info(self) -> dict[str, RefDocInfo]:
        """Each document of the index and its nodes (docstore ids)."""
        ours = set(self._index_struct.node_ids)
        every = self._docstore.get_all_ref_doc_info() or {}
        return {
            doc_id: info
            for doc_id, info in every.items()
            if any(node_id in ours for node_id in info.node_ids)
        }

    def _answer_llm(self, llm: Any) -> LLM:
        """The LLM that answers: ``llm``, else the index's own if it is a LlamaIndex LLM, else
        ``Settings.llm`` if set (a ConfigError otherwise: never a fallback to OpenAI)."""
        return answer_llm(llm, self._llm, self._callback_manager)

    def _refuse_narrowing(self, kwargs: Mapping[str, Any]) -> None:
        """NotSupportedError when ``kwargs`` ask to narrow the results (``_NARROWING``)."""
        asked = [key for key in _NARROWING if kwargs.get(key) is not None]
        if asked:
            msg = (
                f"{type(self).__name__} cannot narrow its results by {', '.join(asked)}: it "
                "searches every node it holds; build an index over only the documents to "
                "search instead"
            )
            raise NotSupportedError(msg)

    def _engine_retriever(self, kwargs: dict[str, Any]) -> BaseRetriever:
        """:meth:`as_retriever` over the retriever's arguments (``_retriever_args``), taken
        out of an engine's ``kwargs``; NotSupportedError for arguments that narrow."""
        self._refuse_narrowing(kwargs)
        args = {
            ("llm" if key == "search_llm" else key): kwargs.pop(key)
            for key in self._retriever_args
            if key in kwargs
        }
        return self.as_retriever(**args)

    def as_query_engine(self, llm: Any = None, **kwargs: Any) -> BaseQueryEngine:
        """A ``RetrieverQueryEngine`` over :meth:`as_retriever`: the retriever's arguments go
        to it, the others to ``RetrieverQueryEngine.from_args``. The answering LLM is ``llm``,
        else the index's own if it is a LlamaIndex LLM, else ``Settings.llm`` if you set it.

        Raises
        ------
        ConfigError
            No LLM to answer with.
        NotSupportedError
            ``filters``, ``doc_ids`` or ``node_ids`` were passed: the index searches every
            node it holds, and a filter ignored would return what it was to keep out.
        """
        from llama_index.core.query_engine.retriever_query_engine import RetrieverQueryEngine

        answer = self._answer_llm(llm)
        retriever = self._engine_retriever(kwargs)
        return RetrieverQueryEngine.from_args(retriever, llm=answer, **kwargs)

    def as_chat_engine(
        self, chat_mode: ChatMode = ChatMode.BEST, llm: Any = None, **kwargs: Any
    ) -> BaseChatEngine:
        """A chat engine over this index, answering with the LLM :meth:`as_query_engine`
        would use.

        In the modes that retrieve context (``"context"``, ``"condense_plus_context"`` and
        ``"best"``), the retriever's arguments go to :meth:`as_retriever` and the others
        (``memory``, ``system_prompt``, ``context_prompt``...) to the engine. LlamaIndex's own
        ``as_chat_engine`` hands every argument to both, which a retriever that names an
        argument it does not know (GARLIC's) cannot take.
        """
        from llama_index.core.chat_engine import (
            CondensePlusContextChatEngine,
            ContextChatEngine,
        )

        answer = self._answer_llm(llm)
        if chat_mode == ChatMode.CONTEXT:
            retriever = self._engine_retriever(kwargs)
            return ContextChatEngine.from_defaults(retriever=retriever, llm=answer, **kwargs)
        if chat_mode in (ChatMode.CONDENSE_PLUS_CONTEXT, ChatMode.BEST):
            retriever = self._engine_retriever(kwargs)
            return CondensePlusContextChatEngine.from_defaults(
                retriever=retriever, llm=answer, **kwargs
            )
        self._refuse_narrowing(kwargs)
        return super().as_chat_engine(chat_mode=chat_mode, llm=answer, **kwargs)
