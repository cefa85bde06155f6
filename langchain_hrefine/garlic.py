"""LangChain components over a GARLIC graph (:mod:`hrefine.garlic`): retriever and compressor."""

from __future__ import annotations

import asyncio
import functools
import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hrefine.budget import get_counter
from hrefine.errors import ConfigError, InputTypeError, TreeError
from hrefine.garlic import GarlicGraph, GarlicOptions, GarlicSearcher, SearchResult
from hrefine.garlic.visited import fit_to_budget
from hrefine.models import Embedder
from hrefine.options import adapter_model
from hrefine.raptor import Source
from hrefine.results import by_relevance
from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
    Callbacks,
)
from langchain_core.documents import BaseDocumentCompressor, Document
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field, PrivateAttr

from langchain_hrefine._convert import (
    document_list,
    documents_to_sources,
    texts_to_sources,
    to_embedder,
    to_garlic_llm,
    visited_to_documents,
)

__all__ = ["GarlicCompressor", "GarlicRetriever"]

logger = logging.getLogger(__name__)

#: The settings a call may change: ``invoke(query, patience=..., max_steps=..., max_tokens=...)``.
CALL_SETTINGS = ("patience", "max_steps", "max_tokens")
#: The GARLIC settings that are fields of the components (the models are fields of their own).
FIELD_SETTINGS = tuple(n for n in GarlicOptions.names() if n not in GarlicOptions.adapter_excluded)
#: The compressor's default budget (the one LongRefiner's compressor uses).
DEFAULT_BUDGET = 2048

if TYPE_CHECKING:
    _GarlicRetrieverFields = BaseRetriever
    _GarlicCompressorFields = BaseDocumentCompressor
else:  # one field per GarlicOptions setting (its lm, embedder and tokenizer are declared below)
    _GarlicRetrieverFields = adapter_model(
        BaseRetriever, GarlicOptions, name="_GarlicRetrieverFields"
    )
    _GarlicCompressorFields = adapter_model(
        BaseDocumentCompressor, GarlicOptions, name="_GarlicCompressorFields"
    )


def _options(component: Any, **changes: Any) -> GarlicOptions:
    """A component's fields as GarlicOptions (checked), with ``changes``; the tokenizer is kept
    too, so that a named one (``"cl100k_base"``) is saved with the graph."""
    values = {n: getattr(component, n) for n in FIELD_SETTINGS}
    return GarlicOptions.build(**{**values, **changes}, tokenizer=component.tokenizer)


def _build_graph(component: Any, sources: list[Source], progress: bool = False) -> GarlicGraph:
    """Build a graph over ``sources`` with a component's models and settings."""
    return GarlicGraph.build(
        sources,
        lm=to_garlic_llm(component.llm),
        embedder=to_embedder(component.embeddings),
        options=_options(component),
        progress=progress,
    )


class GarlicRetriever(_GarlicRetrieverFields):
    """Retrieve by GARLIC's LLM-guided search of a graph of summary points (Wang et al., 2024).

    The documents are cut into ~300-token chunks; the LLM writes bullet "summary points" over
    batches of them, level after level, and each point gets weighted edges to the nodes it
    summarises (from the LLM's attention with a local ``LocalLM``, else from embedding
    similarity). A query starts at the top level; the LLM is asked whether what it has read
    answers the question ("Yes"/"No"), and while it says No the next node is read: the one the
    read nodes' attention to the query points at through the edges, plus its similarity to the
    query. The search stops after ``patience`` Yes answers, ``max_steps`` added nodes or
    ``max_tokens`` tokens read.

    The retriever returns every node the search read (the ``k`` most relevant when ``k`` is
    set), best first (document order on a tie), as new Documents (the inputs are never changed).
    ``page_content`` is the node's text; ``metadata`` is, for a chunk, a copy of its document's
    metadata, plus ``relevance_score`` (its query similarity in [0, 1], comparable across chunks
    and summary points, so a threshold keeps a source chunk as well as a summary point),
    ``hrefine_raw_score`` (the search score), ``hrefine_level`` (0 for a chunk),
    ``hrefine_kind`` (``"chunk"`` or ``"summary"``), ``hrefine_node_id``, ``hrefine_step`` (0
    for the top level, ``k`` for the node read at step ``k``), ``hrefine_attention``,
    ``hrefine_p_yes``, ``hrefine_said_yes``, ``hrefine_tokens``, ``hrefine_sources`` (the ids
    of the documents the text comes from where they had ids, else their indexes),
    ``hrefine_start``/``hrefine_end`` (a chunk's character offsets in its document) or
    ``hrefine_children`` (the nodes a summary point summarises), and ``hrefine_search`` (the
    search's ``mode``, ``stopped_by``, ``steps``, ``said_yes_at``, ``prefilled_tokens`` and
    ``recompute_tokens``). The last search's full result is :attr:`last_result`.

    Make one with :meth:`from_texts` or :meth:`from_documents`, or :meth:`load` a saved one. A
    retriever made empty has no graph and returns no documents.

    Every :class:`~hrefine.garlic.GarlicOptions` setting but the models is a field of the same
    name, type, default and description: ``chunk_tokens``, ``batch_tokens``,
    ``summary_tokens``, ``max_levels``, ``summary_prompt``, ``search_prompt``, ``edges``,
    ``retries``, ``patience``, ``max_steps``, ``max_tokens``, ``fill`` (read by
    :class:`GarlicCompressor` only), ``k``, ``embedding_weight``, ``seed``. The building
    settings are used when the graph is built (:meth:`load` sets the fields from the saved
    graph); the search settings are read at each call, and ``invoke(query,
    patience=..., max_steps=..., max_tokens=...)`` changes them for one call.

    Attributes
    ----------
    llm:
        The LLM that writes the summary points and answers Yes/No: a LangChain chat model, LLM
        or Runnable taking a string prompt, or a ``str -> str`` callable (prompt-only mode:
        embedding edges, Yes/No read from its text, the whole prompt sent at each step); an
        hrefine ``LocalLM`` (attention edges and the KV-cached search of the paper); None uses
        the embedded SmolLM2 as a LocalLM.
    embeddings:
        LangChain ``Embeddings`` (or an hrefine ``Embedder``) for nodes and queries; None uses
        hrefine's embedded all-MiniLM-L6-v2, offline. Pass the same one to :meth:`load` as the
        graph was built with.
    tokenizer:
        The tokenizer of ``chunk_tokens`` and ``max_tokens`` (a Hugging Face name or tokenizer,
        a tiktoken encoding name, a ``str -> int`` callable, or None for Llama-3.2's).

    Examples
    --------
    >>> from langchain_hrefine import GarlicRetriever
    >>> retriever = GarlicRetriever.from_documents(docs, llm=chat_model)  # doctest: +SKIP
    >>> context = retriever.invoke("Who wrote the book?")  # doctest: +SKIP
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    llm: Any = Field(
        default=None,
        description="The LLM: a chat model, LLM, Runnable or str -> str callable (prompt-only "
        "mode), or a LocalLM (attention); None: the embedded SmolLM2.",
    )
    embeddings: Embeddings | Embedder | None = Field(
        default=None,
        description="Embeddings of nodes and queries; None: the embedded model.",
    )
    tokenizer: Any = Field(
        default=None,
        description="Tokenizer of chunk sizes and max_tokens (None: Llama-3.2's).",
    )

    _graph: GarlicGraph | None = PrivateAttr(default=None)
    _last: SearchResult | None = PrivateAttr(default=None)

    def model_post_init(self, context: Any, /) -> None:
        """Check the settings now, so that a bad one fails at construction."""
        _options(self)

    @property
    def graph(self) -> GarlicGraph | None:
        """The core :class:`~hrefine.garlic.GarlicGraph` (None when made empty): its
        ``stats``, ``levels`` and node tree."""
        return self._graph

    @property
    def last_result(self) -> SearchResult | None:
        """The core :class:`~hrefine.garlic.SearchResult` of the last call (its trace)."""
        return self._last

    # -- building ---------------------------------------------------------------------------
    @classmethod
    def from_texts(
        cls,
        texts: Iterable[str],
        metadatas: Sequence[Mapping[str, Any]] | None = None,
        *,
        ids: Sequence[str | None] | None = None,
        llm: Any = None,
        embeddings: Embeddings | Embedder | None = None,
        tokenizer: Any = None,
        progress: bool = False,
        **fields: Any,
    ) -> GarlicRetriever:
        """Build a retriever over ``texts``.

        Parameters
        ----------
        texts:
            The documents' texts.
        metadatas:
            One metadata dict per text (copied onto its chunks; JSON-able values if the graph
            is to be saved), or None.
        ids:
            One id per text (reported in ``hrefine_sources``), or None.
        llm, embeddings, tokenizer:
            The models (see the class attributes).
        progress:
            Log each level as it is made.
        **fields:
            Any other field: ``patience``, ``max_tokens``, ``chunk_tokens``...

        Raises
        ------
        EmptyInputError
            Every text is empty.
        GenerationError
            The LLM failed, or wrote no summary point for a batch after its retries.
        ConfigError, InputTypeError
            A setting or an input is not valid.
        """
        sources = texts_to_sources(texts, metadatas, ids)
        return cls._build(sources, llm, embeddings, tokenizer, progress, fields)

    @classmethod
    def from_documents(
        cls,
        documents: Iterable[Document],
        *,
        llm: Any = None,
        embeddings: Embeddings | Embedder | None = None,
        tokenizer: Any = None,
        progress: bool = False,
        **fields: Any,
    ) -> GarlicRetriever:
        """Build a retriever over LangChain ``documents`` (their text, a copy of their metadata
        and their ids); same parameters and errors as :meth:`from_texts`."""
        sources = documents_to_sources(documents)
        return cls._build(sources, llm, embeddings, tokenizer, progress, fields)

    @classmethod
    def _build(
        cls,
        sources: list[Source],
        llm: Any,
        embeddings: Any,
        tokenizer: Any,
        progress: bool,
        fields: dict[str, Any],
    ) -> GarlicRetriever:
        self = cls(llm=llm, embeddings=embeddings, tokenizer=tokenizer, **fields)
        self._graph = _build_graph(self, sources, progress)
        return self

    # -- retrieval --------------------------------------------------------------------------
    def _call_settings(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        allowed = (*CALL_SETTINGS, "k")
        unknown = sorted(set(kwargs) - set(allowed))
        if unknown:
            msg = (
                f"GarlicRetriever.invoke got unknown argument(s) {', '.join(unknown)}; "
                f"a call may set {', '.join(allowed)}"
            )
            raise ConfigError(msg)
        # A bad value (k=0, patience=0) is a ConfigError from the options when the call runs.
        return {n: kwargs.get(n, getattr(self, n)) for n in allowed}

    def _search(self, query: str, settings: dict[str, Any]) -> list[Document]:
        graph = self._graph
        if graph is None:
            logger.warning("GarlicRetriever has no graph; build it with from_documents()")
            return []
        options = _options(self, **settings)
        k = options.k
        searcher = GarlicSearcher(
            graph,
            lm=to_garlic_llm(self.llm),
            embedder=to_embedder(self.embeddings),
            options=options,
        )
        result = searcher.search(query)
        self._last = result
        # Best first, as every retriever (earlier in the document on a tie); k keeps the first k.
        docs = by_relevance(
            visited_to_documents(result, graph.tree), lambda d: d.metadata["relevance_score"]
        )
        return docs if k is None else docs[:k]

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        return self._search(query, self._call_settings(kwargs))

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        # The search is a sequence of dependent LLM steps on one KV cache: it runs in the
        # default executor, so the event loop is never blocked.
        settings = self._call_settings(kwargs)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, functools.partial(self._search, query, settings))

    # -- persistence ------------------------------------------------------------------------
    def save(self, path: str | os.PathLike[str]) -> Path:
        """Save the graph and the settings into folder ``path`` (JSON and .npy, checksummed,
        never pickle); the models are not saved. Returns the folder.

        Raises
        ------
        TreeError
            The retriever has no graph.
        """
        if self._graph is None:
            msg = "this GarlicRetriever has no graph to save; build it with from_documents()"
            raise TreeError(msg)
        graph = self._graph
        # the current search fields, with the graph's own building settings
        searching = ("embedding_weight", "search_prompt", *CALL_SETTINGS)
        options = graph.options.replace(**{n: getattr(self, n) for n in searching})
        return GarlicGraph(graph.tree, options).save(path)

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        *,
        llm: Any = None,
        embeddings: Embeddings | Embedder | None = None,
        tokenizer: Any = None,
        **fields: Any,
    ) -> GarlicRetriever:
        """A retriever over the graph saved in ``path`` by :meth:`save`.

        Parameters
        ----------
        path:
            The folder.
        llm:
            The LLM of the search (None: the embedded SmolLM2).
        embeddings:
            The embeddings the graph was built with (None: the embedded model).
        tokenizer:
            Count tokens with this one; None: the saved tokenizer if it was named, else the
            default.
        **fields:
            Change saved settings (``patience``, ``max_tokens``...) or set the retriever's own
            fields (``tags``, ``metadata``).

        Raises
        ------
        PersistenceError
            ``path`` is not a saved GARLIC graph, or a file in it was edited or truncated.
        ConfigError, InputTypeError
            A setting in ``fields`` is not valid.
        """
        settings = {n: v for n, v in fields.items() if n in FIELD_SETTINGS}
        others = {n: v for n, v in fields.items() if n not in FIELD_SETTINGS}
        GarlicOptions.build(**settings)  # a bad setting of the caller's is theirs to fix
        graph = GarlicGraph.load(path, embedder=to_embedder(embeddings), **settings)
        options = graph.options
        saved = {n: getattr(options, n) for n in FIELD_SETTINGS}
        self = cls(
            llm=llm,
            embeddings=embeddings,
            tokenizer=tokenizer if tokenizer is not None else options.tokenizer,
            **saved,
            **others,
        )
        self._graph = graph
        return self


class GarlicCompressor(_GarlicCompressorFields):
    """Compress retrieved documents to a token budget by a GARLIC search over them.

    Each call builds a GARLIC graph over the given Documents (chunks and LLM summary points,
    see :class:`GarlicRetriever`), searches it for ``query`` and returns what the search read, in
    document order, within ``max_tokens`` (counted with ``tokenizer``; the sum of the returned
    texts' tokens is never over it). With ``fill=True`` (default) the search reads on past the
    LLM's Yes until leaf chunks fill ``max_tokens``; with ``fill=False`` the first Yes stops it,
    as in the paper, and ``max_tokens`` bounds everything it reads. Leaf chunks are kept before
    summary points, each in the order the search read them
    (:func:`hrefine.garlic.visited.fit_to_budget`). Building a graph costs LLM calls on every
    call: for a corpus that is searched again and again, build a :class:`GarlicRetriever` once
    instead.

    The returned Documents are new objects with the metadata of :class:`GarlicRetriever`'s (a
    chunk's copied from its Document); the inputs are untouched. No Document (or only empty
    ones) gives ``[]``.

    Every :class:`~hrefine.garlic.GarlicOptions` setting but the models is a field of the same
    name, type, default and description; ``max_tokens`` is the budget here (default 2048).

    Attributes
    ----------
    max_tokens:
        Token budget of all the returned Documents' text together.
    llm, embeddings, tokenizer:
        The models, as :class:`GarlicRetriever` takes them.

    Examples
    --------
    >>> compressor = GarlicCompressor(max_tokens=512, llm=chat_model)  # doctest: +SKIP
    >>> context = compressor.compress_documents(docs, "Who wrote it?")  # doctest: +SKIP
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    max_tokens: int = Field(  # type: ignore[assignment]
        default=DEFAULT_BUDGET,
        ge=1,
        strict=True,
        description="Token budget of the returned text of all documents together.",
    )
    llm: Any = Field(
        default=None,
        description="The LLM: a chat model, LLM, Runnable or str -> str callable (prompt-only "
        "mode), or a LocalLM (attention); None: the embedded SmolLM2.",
    )
    embeddings: Embeddings | Embedder | None = Field(
        default=None,
        description="Embeddings of nodes and queries; None: the embedded model.",
    )
    tokenizer: Any = Field(
        default=None,
        description="Tokenizer of chunk sizes and max_tokens (None: Llama-3.2's).",
    )

    def model_post_init(self, context: Any, /) -> None:
        """Check the settings now, so that a bad one fails at construction."""
        _options(self)

    def compress_documents(
        self,
        documents: Sequence[Document],
        query: str,
        callbacks: Callbacks | None = None,
    ) -> Sequence[Document]:
        """Build a graph over ``documents``, search it for ``query``, return what it read.

        Parameters
        ----------
        documents:
            The retrieved Documents.
        query:
            The question.
        callbacks:
            Accepted for the LangChain interface.

        Returns
        -------
        Sequence[Document]
            New Documents, in document order, whose texts total at most ``max_tokens``.

        Raises
        ------
        InputTypeError
            An item is not a Document, or the query is not a string.
        EmptyInputError
            The query is empty.
        GenerationError
            The LLM failed.
        """
        if not isinstance(query, str):
            msg = f"query must be a string, got {type(query).__name__}"
            raise InputTypeError(msg)
        sources = documents_to_sources(documents)
        if not any(s.text.strip() for s in sources):
            logger.warning("GarlicCompressor got no text to compress; returning no documents")
            return []
        graph = _build_graph(self, sources)
        options = graph.options
        # filling, the budget bounds the leaves kept, not what the walk reads on its way
        searcher = GarlicSearcher(
            graph,
            lm=to_garlic_llm(self.llm),
            embedder=graph.embedder,
            options=options.replace(max_tokens=None) if options.fill else options,
        )
        if options.fill:
            result = searcher.search(query, fill_tokens=self.max_tokens)
        else:
            result = searcher.search(query, max_tokens=self.max_tokens)
        kept = fit_to_budget(result, self.max_tokens, get_counter(self.tokenizer))
        return visited_to_documents(result, graph.tree, kept)

    async def acompress_documents(
        self,
        documents: Sequence[Document],
        query: str,
        callbacks: Callbacks | None = None,
    ) -> Sequence[Document]:
        """:meth:`compress_documents` in the default executor (the event loop is not
        blocked); same parameters and result."""
        loop = asyncio.get_running_loop()
        docs = document_list(documents)
        call = functools.partial(self.compress_documents, docs, query)
        return await loop.run_in_executor(None, call)
