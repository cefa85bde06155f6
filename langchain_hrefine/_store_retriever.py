"""The base of the hrefine LangChain retrievers over a built store (RAPTOR's tree, GARLIC's
graph): building it from texts or Documents, the per-call settings, saving and loading.

What differs per method is how the store is built, searched, saved and loaded; a subclass
implements those hooks and names its options class and its messages.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from hrefine.errors import ConfigError, InputTypeError, TreeError
from hrefine.models import Embedder
from hrefine.options import Options
from hrefine.raptor import Source
from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field

from langchain_hrefine._convert import documents_to_sources, texts_to_sources
from langchain_hrefine._fields import field_settings, options_of
from langchain_hrefine._runs import arun_in, run_in

__all__ = ["LoadArgs", "StoreRetriever"]

_R = TypeVar("_R", bound="StoreRetriever")


@dataclass(frozen=True)
class LoadArgs:
    """What :meth:`StoreRetriever.load` was given: the models (as the caller gave them) and
    the saved settings to change."""

    llm: Any
    embeddings: Any
    tokenizer: Any
    settings: dict[str, Any]


class StoreRetriever(BaseRetriever):
    """A LangChain retriever over a store an hrefine method builds from documents.

    Its fields are the method's options (``adapter_model``), its models: ``llm``,
    ``embeddings`` and ``tokenizer``, and ``store``, the built store. A retriever made empty
    holds no store and returns no documents.

    Subclasses set the class variables and implement :meth:`_build_store`, :meth:`_retrieve`,
    :meth:`_saveable` and :meth:`_load_store` (and :meth:`_abuild_store` and
    :meth:`_aretrieve` for a native async build and search; the defaults run the sync ones in
    the default executor).
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    #: The public class's name, as messages give it.
    _component: ClassVar[str]
    #: The method's options class; its settings outside ``adapter_excluded`` are fields.
    _options_type: ClassVar[type[Options]]
    #: The class of the method's store (``store`` holds one or None).
    _store_type: ClassVar[type]
    #: The settings a call may change (``invoke(query, **settings)``).
    _call_names: ClassVar[tuple[str, ...]]
    #: The fields :meth:`save` writes over the store's own settings (the search settings).
    _saved_fields: ClassVar[tuple[str, ...]]
    #: Logged when a retriever with no store is called.
    _empty_warning: ClassVar[str]
    #: The message of :meth:`save` on a retriever with no store.
    _nothing_to_save: ClassVar[str]

    # A field, not a private attribute: LangChain makes a configured copy
    # (``configurable_fields``) from the declared fields alone, and a private store was lost.
    store: Any = Field(
        default=None,
        exclude=True,
        repr=False,
        description="The built store (set by from_documents and load); None: none yet.",
    )
    """The built store (None until one is built or loaded); :meth:`from_documents`,
    :meth:`load` (and RAPTOR's ``add_documents``) set it. It is shared, not copied, by a copy
    LangChain makes from the fields (``configurable_fields``), and left out of ``model_dump``
    and ``repr``; :meth:`save` writes it.
    """

    if TYPE_CHECKING:  # declared by each subclass, with its own description
        llm: Any
        embeddings: Any
        tokenizer: Any

    def model_post_init(self, context: Any, /) -> None:
        """Check the settings (and a given store's class) now, so that a bad one fails at
        construction."""
        self._options()
        if self.store is not None and not isinstance(self.store, self._store_type):
            msg = (
                f"{self._component}.store must be a {self._store_type.__name__} or None, got "
                f"{type(self.store).__name__}; build one with from_documents() or load()"
            )
            raise InputTypeError(msg)

    def _options(self, **changes: Any) -> Any:
        """The fields as the method's options (checked), with ``changes``."""
        return options_of(self, self._options_type, **changes)

    # -- building ---------------------------------------------------------------------------
    @classmethod
    def from_texts(
        cls: type[_R],
        texts: Iterable[str],
        metadatas: Sequence[Mapping[str, Any]] | None = None,
        *,
        ids: Sequence[str | None] | None = None,
        llm: Any = None,
        embeddings: Embeddings | Embedder | None = None,
        tokenizer: Any = None,
        progress: bool = False,
        **fields: Any,
    ) -> _R:
        """Build a retriever over ``texts``.

        Parameters
        ----------
        texts:
            The documents' texts.
        metadatas:
            One metadata dict per text (copied onto its chunks; JSON-able values if the store
            is to be saved), or None.
        ids:
            One id per text (reported in ``hrefine_sources``), or None.
        llm, embeddings, tokenizer:
            The models (see the class attributes).
        progress:
            Log each layer or level as it is made.
        **fields:
            Any other field: the search settings (``k``, ``max_tokens``...) or the building
            ones (``chunk_tokens``...).

        Raises
        ------
        EmptyInputError
            Every text is empty.
        GenerationError
            The LLM failed, timed out or wrote nothing usable after its retries (no retriever
            is made).
        ConfigError, InputTypeError
            A setting or an input is not valid.
        """
        sources = texts_to_sources(texts, metadatas, ids)
        return cls._build(
            sources, progress, dict(fields, llm=llm, embeddings=embeddings, tokenizer=tokenizer)
        )

    @classmethod
    def from_documents(
        cls: type[_R],
        documents: Iterable[Document],
        *,
        llm: Any = None,
        embeddings: Embeddings | Embedder | None = None,
        tokenizer: Any = None,
        progress: bool = False,
        **fields: Any,
    ) -> _R:
        """Build a retriever over LangChain ``documents`` (their text, a copy of their metadata
        and their ids); same parameters and errors as :meth:`from_texts`."""
        sources = documents_to_sources(documents)
        return cls._build(
            sources, progress, dict(fields, llm=llm, embeddings=embeddings, tokenizer=tokenizer)
        )

    @classmethod
    def _build(cls: type[_R], sources: list[Source], progress: bool, fields: dict[str, Any]) -> _R:
        """A retriever with ``fields`` (its models among them), its store built over
        ``sources``."""
        self = cls(**fields)
        self.store = self._build_store(sources, progress)
        return self

    def _build_store(self, sources: list[Source], progress: bool) -> Any:
        """The method's store built over ``sources`` with this retriever's models and fields."""
        raise NotImplementedError

    @classmethod
    async def afrom_texts(
        cls: type[_R],
        texts: Iterable[str],
        metadatas: Sequence[Mapping[str, Any]] | None = None,
        *,
        ids: Sequence[str | None] | None = None,
        llm: Any = None,
        embeddings: Embeddings | Embedder | None = None,
        tokenizer: Any = None,
        progress: bool = False,
        **fields: Any,
    ) -> _R:
        """:meth:`from_texts` without blocking the event loop (a native async build awaits
        the LLM; otherwise the build runs in the default executor)."""
        sources = texts_to_sources(texts, metadatas, ids)
        return await cls._abuild(
            sources, progress, dict(fields, llm=llm, embeddings=embeddings, tokenizer=tokenizer)
        )

    @classmethod
    async def afrom_documents(
        cls: type[_R],
        documents: Iterable[Document],
        *,
        llm: Any = None,
        embeddings: Embeddings | Embedder | None = None,
        tokenizer: Any = None,
        progress: bool = False,
        **fields: Any,
    ) -> _R:
        """:meth:`from_documents` without blocking the event loop."""
        sources = documents_to_sources(documents)
        return await cls._abuild(
            sources, progress, dict(fields, llm=llm, embeddings=embeddings, tokenizer=tokenizer)
        )

    @classmethod
    async def _abuild(
        cls: type[_R], sources: list[Source], progress: bool, fields: dict[str, Any]
    ) -> _R:
        self = cls(**fields)
        self.store = await self._abuild_store(sources, progress)
        return self

    async def _abuild_store(self, sources: list[Source], progress: bool) -> Any:
        """:meth:`_build_store` without blocking the event loop; the default runs it in the
        default executor (a method with an async build awaits its LLM instead)."""
        return await asyncio.to_thread(self._build_store, sources, progress)

    # -- retrieval --------------------------------------------------------------------------
    def _call_settings(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        """The call's settings: each of ``_call_names`` from ``kwargs``, else the field."""
        allowed = self._call_names
        unknown = sorted(set(kwargs) - set(allowed))
        if unknown:
            msg = (
                f"{self._component}.invoke got unknown argument(s) {', '.join(unknown)}; "
                f"a call may set {', '.join(allowed)}"
            )
            raise ConfigError(msg)
        # A bad value (k=0) is a ConfigError from the options when the call runs.
        return {n: kwargs.get(n, getattr(self, n)) for n in allowed}

    def _empty(self) -> list[Document]:
        logging.getLogger(type(self).__module__).warning(self._empty_warning)
        return []

    def _retrieve(self, store: Any, query: str, settings: dict[str, Any]) -> list[Document]:
        """The Documents the store gives for ``query`` under the call's ``settings``."""
        raise NotImplementedError

    async def _aretrieve(self, store: Any, query: str, settings: dict[str, Any]) -> list[Document]:
        # No async search of its own: it runs in the default executor, so the event loop is
        # never blocked.
        return await asyncio.to_thread(self._retrieve, store, query, settings)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        settings = self._call_settings(kwargs)
        if self.store is None:
            return self._empty()
        # The LLM calls of the search are this run's children (callbacks, tracing).
        return run_in(run_manager.get_child(), self._retrieve, self.store, query, settings)

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        settings = self._call_settings(kwargs)
        if self.store is None:
            return self._empty()
        search = self._aretrieve(self.store, query, settings)
        return await arun_in(run_manager.get_child(), search)

    # -- persistence ------------------------------------------------------------------------
    def save(self, path: str | os.PathLike[str]) -> Path:
        """Save the store and the settings into folder ``path`` (JSON and .npy, checksummed,
        never pickle); the models are not saved. Returns the folder.

        Raises
        ------
        TreeError
            The retriever has no store yet.
        """
        store = self.store
        if store is None:
            raise TreeError(self._nothing_to_save)
        # the current search fields, with the store's own building settings
        options = store.options.replace(**{n: getattr(self, n) for n in self._saved_fields})
        path_out: Path = self._saveable(store, options).save(path)
        return path_out

    def _saveable(self, store: Any, options: Any) -> Any:
        """``store`` with ``options``, as it is saved."""
        raise NotImplementedError

    @classmethod
    def load(
        cls: type[_R],
        path: str | os.PathLike[str],
        *,
        llm: Any = None,
        embeddings: Embeddings | Embedder | None = None,
        tokenizer: Any = None,
        **fields: Any,
    ) -> _R:
        """A retriever over the store saved in ``path`` by :meth:`save`.

        Parameters
        ----------
        path:
            The folder.
        llm:
            The LLM (None: the method's no-model default): see the class attributes.
        embeddings:
            The embeddings the store was built with (None: the embedded model).
        tokenizer:
            Count tokens with this one; None: the saved tokenizer if it was named, else the
            default.
        **fields:
            Change saved settings (``k``, ``max_tokens``...) or set the retriever's own fields
            (``tags``, ``metadata``).

        Raises
        ------
        PersistenceError
            ``path`` is not a saved store of this method, or a file in it was edited or
            truncated.
        ConfigError, InputTypeError
            A setting in ``fields`` is not valid.
        """
        names = field_settings(cls._options_type)
        settings = {n: v for n, v in fields.items() if n in names}
        others = {n: v for n, v in fields.items() if n not in names}
        cls._options_type.build(**settings)  # a bad setting of the caller's is theirs to fix
        store = cls._load_store(path, LoadArgs(llm, embeddings, tokenizer, settings))
        options = store.options
        saved = {n: getattr(options, n) for n in names}
        self = cls(
            llm=llm,
            embeddings=embeddings,
            tokenizer=tokenizer if tokenizer is not None else options.tokenizer,
            **saved,
            **others,
        )
        self.store = store
        return self

    @classmethod
    def _load_store(cls, path: str | os.PathLike[str], given: LoadArgs) -> Any:
        """The store saved in ``path``, with the ``given`` models and changed settings."""
        raise NotImplementedError
