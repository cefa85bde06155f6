"""LangChain components over a GARLIC graph (:mod:`hrefine.garlic`): retriever and compressor."""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hrefine._query import check_query
from hrefine.budget import get_counter
from hrefine.garlic import GarlicGraph, GarlicOptions, GarlicSearcher, SearchResult
from hrefine.garlic.visited import fit
from hrefine.models import Embedder
from hrefine.options import adapter_model
from hrefine.raptor import Source
from hrefine.results import by_relevance
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from pydantic import PrivateAttr

from langchain_hrefine._compressor import CoreCompressor
from langchain_hrefine._convert import (
    compressed_to_documents,
    documents_to_sources,
    to_embedder,
    to_garlic_llm,
    visited_to_documents,
)
from langchain_hrefine._fields import budget_field, field_settings, model_field, options_of
from langchain_hrefine._store_retriever import LoadArgs, StoreRetriever

__all__ = ["GarlicCompressor", "GarlicRetriever"]

logger = logging.getLogger(__name__)

#: The settings a call may change: ``invoke(query, patience=..., max_steps=..., max_tokens=...)``.
CALL_SETTINGS = ("patience", "max_steps", "max_tokens")
#: The GARLIC settings that are fields of the components (the models are fields of their own).
FIELD_SETTINGS = field_settings(GarlicOptions)
#: The compressor's default budget (the one LongRefiner's compressor uses).
DEFAULT_BUDGET = 2048

if TYPE_CHECKING:
    _GarlicRetrieverFields = StoreRetriever
    _GarlicCompressorFields = CoreCompressor
else:  # one field per GarlicOptions setting (its lm, embedder and tokenizer are declared below)
    _GarlicRetrieverFields = adapter_model(
        StoreRetriever, GarlicOptions, name="_GarlicRetrieverFields"
    )
    _GarlicCompressorFields = adapter_model(
        CoreCompressor, GarlicOptions, name="_GarlicCompressorFields"
    )


def _llm_field() -> Any:
    return model_field(
        "The LLM: a chat model, LLM, Runnable or str -> str callable (prompt-only "
        "mode), or a LocalLM or model name (attention); None: no model (first sentences as "
        "summary points, embedding edges, a word-overlap Yes/No)."
    )


def _embeddings_field() -> Any:
    return model_field("Embeddings of nodes and queries; None: the embedded model.")


def _tokenizer_field() -> Any:
    return model_field("Tokenizer of chunk sizes and max_tokens (None: Llama-3.2's).")


def _build_graph(component: Any, sources: list[Source], progress: bool = False) -> GarlicGraph:
    """Build a graph over ``sources`` with a component's models and settings."""
    options = options_of(component, GarlicOptions)
    return GarlicGraph.build(
        sources,
        lm=to_garlic_llm(component.llm, options.llm_timeout),
        embedder=to_embedder(component.embeddings),
        options=options,
        progress=progress,
    )


class GarlicRetriever(_GarlicRetrieverFields):
    """Retrieve by GARLIC's LLM-guided search of a graph of summary points (Wang et al., 2024).

    The documents are cut into ~128-token chunks; the LLM writes bullet "summary points" over
    batches of them, level after level, and each point gets weighted edges to the nodes it
    summarises (from the LLM's attention with a local ``LocalLM``, else from embedding
    similarity). A query starts at the top level; the LLM is asked whether what it has read
    answers the question ("Yes"/"No"), and while it says No the next node is read: the one the
    read nodes' attention to the query points at through the edges, plus its similarity to the
    query. The search stops after ``patience`` Yes answers, ``max_steps`` added nodes or
    ``max_tokens`` tokens read.

    The retriever returns every node the search read (the ``k`` most relevant when ``k`` is
    set), best first (on a tie chunks before summary points, then document order), as new
    Documents (the inputs are never changed).
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
    retriever made empty has no graph and returns no documents. The graph is the ``store``
    field, so a copy LangChain makes from the fields (``configurable_fields``) searches it too
    (that copy's search is its own :attr:`last_result`).

    Every :class:`~hrefine.garlic.GarlicOptions` setting but the models is a field of the same
    name, type, default and description: ``chunk_tokens``, ``batch_tokens``,
    ``summary_tokens``, ``max_levels``, ``summary_prompt``, ``search_prompt``, ``edges``,
    ``retries``, ``patience``, ``max_steps``, ``max_tokens``, ``fill`` (read by
    :class:`GarlicCompressor` only), ``k``, ``embedding_weight``, ``lexical_weight``,
    ``seed``. The building
    settings are used when the graph is built (:meth:`load` sets the fields from the saved
    graph); the search settings are read at each call, and ``invoke(query,
    patience=..., max_steps=..., max_tokens=...)`` changes them for one call.

    Examples
    --------
    >>> from langchain_hrefine import GarlicRetriever
    >>> retriever = GarlicRetriever.from_documents(docs, llm=chat_model)  # doctest: +SKIP
    >>> context = retriever.invoke("Who wrote the book?")  # doctest: +SKIP
    """

    _component = "GarlicRetriever"
    _options_type = GarlicOptions
    _store_type = GarlicGraph
    _call_names = (*CALL_SETTINGS, "k")
    _saved_fields = ("embedding_weight", "lexical_weight", "search_prompt", *CALL_SETTINGS)
    _empty_warning = "GarlicRetriever has no graph; build it with from_documents()"
    _nothing_to_save = "this GarlicRetriever has no graph to save; build it with from_documents()"

    llm: Any = _llm_field()
    """The LLM that writes the summary points and answers Yes/No: a LangChain chat model, LLM
    or Runnable taking a string prompt, or a ``str -> str`` callable (prompt-only mode:
    embedding edges, Yes/No read from its text, the whole prompt sent at each step); an
    hrefine ``LocalLM`` or model name such as ``"smollm2-135m-instruct"`` (attention edges
    and the KV-cached search of the paper); None: no model, as
    :class:`~hrefine.garlic.ExtractiveGarlicLM` (the inputs' first sentences as summary
    points, embedding edges, a word-overlap Yes/No).
    """
    embeddings: Embeddings | Embedder | None = _embeddings_field()
    """LangChain ``Embeddings`` (or an hrefine ``Embedder``) for nodes and queries; None uses
    hrefine's embedded all-MiniLM-L6-v2, offline. Pass the same one to :meth:`load` as the
    graph was built with.
    """
    tokenizer: Any = _tokenizer_field()
    """The tokenizer of ``chunk_tokens`` and ``max_tokens`` (a Hugging Face name or tokenizer,
    a tiktoken encoding name, a ``str -> int`` callable, or None for Llama-3.2's).
    """

    _last: SearchResult | None = PrivateAttr(default=None)

    @property
    def graph(self) -> GarlicGraph | None:
        """The core :class:`~hrefine.garlic.GarlicGraph` (None when made empty): its
        ``stats``, ``levels`` and node tree."""
        graph: GarlicGraph | None = self.store
        return graph

    @property
    def last_result(self) -> SearchResult | None:
        """The core :class:`~hrefine.garlic.SearchResult` of the last call (its trace)."""
        return self._last

    def _build_store(self, sources: list[Source], progress: bool) -> GarlicGraph:
        return _build_graph(self, sources, progress)

    def _retrieve(self, store: GarlicGraph, query: str, settings: dict[str, Any]) -> list[Document]:
        options = self._options(**settings)
        k = options.k
        searcher = GarlicSearcher(
            store,
            lm=to_garlic_llm(self.llm, options.llm_timeout),
            embedder=to_embedder(self.embeddings),
            options=options,
        )
        result = searcher.search(query)
        self._last = result
        # Best first, as every retriever (earlier in the document on a tie); k keeps the first k.
        docs = by_relevance(
            visited_to_documents(result, store.tree), lambda d: d.metadata["relevance_score"]
        )
        return docs if k is None else docs[:k]

    # The search is a sequence of dependent LLM steps on one KV cache: the async call runs it
    # in the default executor (StoreRetriever._aretrieve).

    def _saveable(self, store: GarlicGraph, options: GarlicOptions) -> GarlicGraph:
        return GarlicGraph(store.tree, options)

    @classmethod
    def _load_store(cls, path: str | os.PathLike[str], given: LoadArgs) -> GarlicGraph:
        return GarlicGraph.load(path, embedder=to_embedder(given.embeddings), **given.settings)


class GarlicCompressor(_GarlicCompressorFields):
    """Compress retrieved documents to a token budget by a GARLIC search over them.

    Each call builds a GARLIC graph over the given Documents (chunks and LLM summary points, see
    :class:`GarlicRetriever`), searches it for ``query`` and returns what the search read, the
    chunks in document order and then the summary points, within ``max_tokens`` (counted with
    ``tokenizer``; the sum of the returned texts' tokens is never over it). With ``fill=True``
    (default) the search reads on past the LLM's Yes until leaf chunks fill ``max_tokens``; with
    ``fill=False`` the first Yes stops it, as in the paper, and ``max_tokens`` bounds everything it
    reads. Leaf chunks are kept before summary points, each in the order the search read them
    (:func:`hrefine.garlic.visited.fit`; a summary point whose every sentence a returned chunk
    holds is left out, and logged). Building a graph costs LLM calls on every call:
    for a corpus that is searched again and again, build a :class:`GarlicRetriever` once instead.

    The returned Documents are new objects with the metadata of :class:`GarlicRetriever`'s (a
    chunk's copied from its Document) plus the keys every compressor writes:
    ``hrefine_method`` (``"garlic"``), ``hrefine_budget``, ``hrefine_tokenizer`` and
    ``hrefine_dropped_documents``, the number of input Documents none of whose chunks is
    returned (a summary point over one only restates it; each reason is logged). The inputs
    are untouched. No Document (or only empty ones) gives ``[]``.

    Every :class:`~hrefine.garlic.GarlicOptions` setting but the models is a field of the same
    name, type, default and description; ``max_tokens`` is the budget here (default 2048).

    llm, embeddings, tokenizer:
        The models, as :class:`GarlicRetriever` takes them.

    Examples
    --------
    >>> compressor = GarlicCompressor(max_tokens=512, llm=chat_model)  # doctest: +SKIP
    >>> context = compressor.compress_documents(docs, "Who wrote it?")  # doctest: +SKIP
    """

    max_tokens: int = budget_field(  # type: ignore[assignment]
        DEFAULT_BUDGET, "Token budget of the returned text of all documents together."
    )
    """Token budget of all the returned Documents' text together."""
    llm: Any = _llm_field()
    embeddings: Embeddings | Embedder | None = _embeddings_field()
    tokenizer: Any = _tokenizer_field()

    def model_post_init(self, context: Any, /) -> None:
        """Check the settings and load the token counter now, so that a bad setting or a
        tokenizer that is not there fails at construction (as the other compressors do)."""
        options_of(self, GarlicOptions)
        get_counter(self.tokenizer)

    def _compress(self, documents: Sequence[Document], query: str) -> list[Document]:
        # Checked before the graph is built: a build costs LLM calls.
        query = check_query(query, used_for="GARLIC searches the documents for the question")
        sources = documents_to_sources(documents)
        if not any(s.text.strip() for s in sources):
            logger.warning("GarlicCompressor got no text to compress; returning no documents")
            return []
        graph = _build_graph(self, sources)
        options = graph.options
        # filling, the budget bounds the leaves kept, not what the walk reads on its way
        searcher = GarlicSearcher(
            graph,
            lm=to_garlic_llm(self.llm, options.llm_timeout),
            embedder=graph.embedder,
            options=options.replace(max_tokens=None) if options.fill else options,
        )
        if options.fill:
            result = searcher.search(query, fill_tokens=self.max_tokens)
        else:
            result = searcher.search(query, max_tokens=self.max_tokens)
        counter = get_counter(self.tokenizer)
        fitted = fit(result, self.max_tokens, counter)
        return compressed_to_documents(
            result,
            graph.tree,
            fitted,
            inputs=len(sources),
            budget=self.max_tokens,
            tokenizer=counter.name,
        )
