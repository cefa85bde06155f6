"""Every conversion between LangChain and the hrefine core, in one place.

This is the only module of ``langchain_hrefine`` that sees both worlds: LangChain ``Embeddings``
become a core :class:`~hrefine.models.Embedder`, chat models, LLMs and Runnables become a core
:class:`~hrefine.models.TextGenerator`, and ``Document`` objects go in as HTML strings and come
back as new ``Document`` objects. For LongRefiner, Documents go in as texts and titles and
come back as new Documents holding the refined text. For RAPTOR, Documents and texts go in as
:class:`~hrefine.raptor.Source` objects and retrieved nodes come back as new Documents. For
GARLIC, the same Sources go in and the nodes a search read come back as new Documents. Caller
objects are never mutated: metadata is always copied.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from hrefine.errors import ConfigError, InputTypeError
from hrefine.garlic import SearchResult
from hrefine.garlic.visited import visited_with_metadata
from hrefine.html.outcome import DocumentOutcome, kept_with_metadata
from hrefine.longrefiner.outcome import DocumentOutcome as RefineOutcome
from hrefine.longrefiner.outcome import kept_with_metadata as refined_with_metadata
from hrefine.models import (
    CallableEmbedder,
    Embedder,
    TextGenerator,
    as_text_generator,
    get_embedder,
)
from hrefine.raptor import RaptorOptions, RetrievedNode, Source
from hrefine.tree import Tree
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.runnables import Runnable, RunnableLambda

__all__ = [
    "HrefineEmbeddings",
    "as_list",
    "document_list",
    "documents_to_html",
    "documents_to_sources",
    "documents_to_texts",
    "nodes_to_documents",
    "outcomes_to_documents",
    "refined_to_documents",
    "texts_to_sources",
    "to_embedder",
    "to_garlic_llm",
    "to_refiner_llm",
    "to_summariser",
    "to_text_generator",
    "visited_to_documents",
]

logger = logging.getLogger(__name__)


def to_embedder(embeddings: Embeddings | Embedder | None) -> Embedder | None:
    """Turn LangChain ``Embeddings`` into a core :class:`~hrefine.models.Embedder`.

    Parameters
    ----------
    embeddings:
        A LangChain ``Embeddings``, an object that already implements the core ``Embedder``
        protocol (through :func:`~hrefine.models.get_embedder`: hrefine's own as is), or None
        (returned as None: the core picks its default model).

    Returns
    -------
    Embedder or None
        An embedder whose rows are L2-normalised, whatever the LangChain model returns, that
        keeps vectors by text and awaits ``aembed_documents``/``aembed_query`` on the async
        path (:class:`~hrefine.models.CallableEmbedder`).
    """
    if embeddings is None:
        return None
    if isinstance(embeddings, HrefineEmbeddings):
        return embeddings.embedder
    if isinstance(embeddings, Embeddings):
        # Vectors are cached by text (a page asked again embeds only the query); the async
        # methods run on the caller's loop on the async path, when the class has its own
        # (the base class's only runs the sync method in a thread).
        cls = type(embeddings)
        own_async = cls.aembed_documents is not Embeddings.aembed_documents
        own_aquery = cls.aembed_query is not Embeddings.aembed_query
        return CallableEmbedder(
            embeddings.embed_documents,
            embeddings.embed_query,
            name=f"langchain:{cls.__name__}",
            aembed_documents=embeddings.aembed_documents if own_async else None,
            aembed_query=embeddings.aembed_query if own_aquery else None,
        )
    if hasattr(embeddings, "embed") and hasattr(embeddings, "embed_query"):
        # The core protocol, with or without its ``name``: hrefine's own as is, any other
        # named and with its vectors checked (see get_embedder).
        return get_embedder(embeddings)
    msg = (
        f"cannot use {type(embeddings).__name__} as embeddings: pass a LangChain Embeddings, "
        "an hrefine Embedder, or None for the embedded default model"
    )
    raise InputTypeError(msg)


class HrefineEmbeddings(Embeddings):
    """A core :class:`~hrefine.models.Embedder` as LangChain ``Embeddings``.

    Lets a LangChain vector store use the same embedder as hrefine (by default the embedded
    all-MiniLM-L6-v2, offline). :func:`to_embedder` unwraps it again, so hrefine never embeds
    through the LangChain layer twice.

    Parameters
    ----------
    embedder:
        A core ``Embedder``; None uses :func:`hrefine.models.default_embedder`.
    """

    def __init__(self, embedder: Embedder | None = None) -> None:
        self.embedder = get_embedder(embedder)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed documents as lists of floats (unit length)."""
        return [[float(x) for x in row] for row in self.embedder.embed(texts)]

    def embed_query(self, text: str) -> list[float]:
        """Embed one query as a list of floats (unit length)."""
        return [float(x) for x in self.embedder.embed_query(text)]


def to_text_generator(llm: Any, **options: Any) -> TextGenerator:
    """Turn a LangChain chat model, LLM or Runnable into a core ``TextGenerator``.

    The model is called as ``llm | StrOutputParser()``: ``invoke`` on the sync path and
    ``ainvoke`` on the async path, so the event loop is never blocked by a model with native async.

    Parameters
    ----------
    llm:
        A ``BaseChatModel``, ``BaseLLM`` or any ``Runnable`` taking a string prompt; a core
        ``TextGenerator``, a ``LocalLM`` or a plain ``str -> str`` callable is accepted too.
    **options:
        Passed to :class:`~hrefine.models.TextGenerator` (``max_concurrency``, ``retries``,
        ``timeout``...).

    Returns
    -------
    TextGenerator
        The wrapped model.
    """
    if isinstance(llm, TextGenerator):
        return llm
    if isinstance(llm, Runnable):
        chain = llm | StrOutputParser()

        def _invoke(prompt: str) -> str:
            return str(chain.invoke(prompt))

        async def _ainvoke(prompt: str) -> str:
            return str(await chain.ainvoke(prompt))

        options.setdefault("name", f"langchain:{type(llm).__name__}")
        return TextGenerator(_invoke, afn=_ainvoke, **options)
    if callable(llm) or hasattr(llm, "session"):  # a str -> str callable, or a LocalLM
        return as_text_generator(llm, **options)
    msg = (
        f"cannot use {type(llm).__name__} as an LLM: pass a LangChain chat model, LLM or "
        "Runnable, or a str -> str callable"
    )
    raise InputTypeError(msg)


def documents_to_html(documents: Sequence[Document]) -> list[str]:
    """The HTML (``page_content``) of each Document, in order."""
    return [doc.page_content for doc in documents]


def outcomes_to_documents(
    documents: Sequence[Document],
    outcomes: Sequence[DocumentOutcome],
    *,
    token_counts: Sequence[int],
    tokenizer: str,
    keep_input_order: bool = False,
) -> list[Document]:
    """The new Documents a compressor returns for ``documents`` (most relevant first, or in
    input order), from one outcome per input and each outcome's token count under the
    pruner's ``tokenizer``.

    Documents with nothing kept are left out and counted in every output's
    ``hrefine_dropped_documents``. Each output gets a copy of its input's metadata plus the
    hrefine keys (:func:`hrefine.html.outcome.kept_with_metadata`); an input's own
    ``relevance_score`` (a reranker's) is kept as ``hrefine_input_score``.
    """
    kept = kept_with_metadata(
        outcomes,
        token_counts,
        tokenizer=tokenizer,
        keep_input_order=keep_input_order,
        **_inputs(documents),
    )
    return [Document(page_content=o.html, metadata=m, id=documents[o.index].id) for o, m in kept]


def _inputs(documents: Sequence[Document]) -> dict[str, Any]:
    """How the core's ``kept_with_metadata`` reads the input Documents: their metadata, and
    their own score (a reranker's ``relevance_score``, before ours)."""
    return {
        "unit": "documents",
        "metadata_of": lambda i: documents[i].metadata,
        "input_score_of": lambda i: documents[i].metadata.get("relevance_score"),
    }


# -- LongRefiner ----------------------------------------------------------------------------


def documents_to_texts(documents: Sequence[Document]) -> tuple[list[str], list[str] | None]:
    """The text (``page_content``) of each Document, and each one's ``metadata["title"]``
    (for LongRefiner's outline; None when no Document has a title).

    Raises
    ------
    InputTypeError
        An item is not a LangChain ``Document``.
    """
    texts: list[str] = []
    titles: list[str] = []
    for i, doc in enumerate(documents):
        if not isinstance(doc, Document):
            msg = (
                f"document {i} is a {type(doc).__name__}; pass a list of LangChain Documents "
                "(wrap a text as Document(page_content=text))"
            )
            raise InputTypeError(msg)
        texts.append(doc.page_content)
        title = doc.metadata.get("title")
        titles.append(title.strip() if isinstance(title, str) else "")
    return texts, (titles if any(titles) else None)


def refined_to_documents(
    documents: Sequence[Document],
    outcomes: Sequence[RefineOutcome],
    *,
    keep_input_order: bool = False,
) -> list[Document]:
    """The new Documents a LongRefiner compressor returns for ``documents`` (most relevant
    first, or in input order), from one outcome per input.

    Documents with nothing kept are left out and counted in every output's
    ``hrefine_dropped_documents``. Each output gets a copy of its input's metadata plus the
    hrefine keys (:func:`hrefine.longrefiner.outcome.kept_with_metadata`); an input's own
    ``relevance_score`` (a reranker's) is kept as ``hrefine_input_score``.
    """
    kept = refined_with_metadata(outcomes, keep_input_order=keep_input_order, **_inputs(documents))
    return [Document(page_content=o.text, metadata=m, id=documents[o.index].id) for o, m in kept]


def to_refiner_llm(
    llm: Any, *, llm_concurrency: int, llm_retries: int, llm_timeout: float | None
) -> TextGenerator | Any:
    """The prompt-only LLM a :class:`~hrefine.longrefiner.LongRefiner` takes for ``llm``.

    A LangChain chat model, LLM or Runnable becomes a core ``TextGenerator``
    (:func:`to_text_generator`) with the given concurrency, retries and timeout (the options'
    ``llm_concurrency``, ``llm_retries``, ``llm_timeout``); anything else (None, a
    ``str -> str`` callable, a TextGenerator) goes to the core as it is, where a callable gets
    the same settings.

    Raises
    ------
    InputTypeError
        ``llm`` is none of these.
    """
    if llm is None or isinstance(llm, TextGenerator):
        return llm
    if isinstance(llm, Runnable):
        return to_text_generator(
            llm,
            max_concurrency=llm_concurrency,
            retries=llm_retries,
            timeout=llm_timeout,
            name=f"langchain:{type(llm).__name__}",
        )
    if callable(llm):
        return llm
    msg = (
        f"cannot use {type(llm).__name__} as LongRefiner's llm: pass a LangChain chat model, "
        "LLM or Runnable, or a str -> str callable (or lm= for a local model)"
    )
    raise InputTypeError(msg)


# -- RAPTOR ---------------------------------------------------------------------------------


def to_summariser(llm: Any, options: RaptorOptions) -> Any:
    """The summariser a :class:`~hrefine.raptor.RaptorTree` takes for ``llm``.

    A LangChain chat model, LLM or Runnable becomes a core ``TextGenerator``
    (:func:`to_text_generator`: ``invoke`` on the sync path, ``ainvoke`` on the async one) with
    the options' ``llm_concurrency``, ``llm_retries`` and ``llm_timeout``; a chat model gets the
    options' ``system_prompt`` as a system message before the prompt (as the paper's
    summariser did). Anything else (None for the embedded model, a ``str -> str`` callable, a
    LocalLM, a TextGenerator) goes to the core as it is: there a callable's empty answers are
    retried and a LocalLM gets the system prompt and the summary length.
    """
    if not isinstance(llm, Runnable):
        return llm
    name = f"langchain:{type(llm).__name__}"
    system = options.system_prompt
    if isinstance(llm, BaseChatModel) and system:

        def with_system(prompt: str) -> list[BaseMessage]:
            return [SystemMessage(content=system), HumanMessage(content=prompt)]

        llm = RunnableLambda(with_system) | llm
    return to_text_generator(
        llm,
        max_concurrency=options.llm_concurrency,
        retries=options.llm_retries,
        timeout=options.llm_timeout,
        name=name,
    )


def _copied(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """A deep copy of ``metadata`` (a shallow one where a value cannot be deep-copied)."""
    try:
        return copy.deepcopy(dict(metadata))
    except Exception:  # a value that refuses deepcopy (a lock, a client): share it
        logger.debug("metadata could not be deep-copied; copying it shallowly")
        return dict(metadata)


def as_list(items: object, what: str) -> list[Any]:
    """``items`` as a list; InputTypeError (``what``, and the type got) when not iterable."""
    if not isinstance(items, Iterable) or isinstance(items, (bytes, Mapping)):
        msg = f"{what}, got {type(items).__name__}"
        raise InputTypeError(msg)
    return list(items)


def document_list(documents: object) -> list[Any]:
    """``documents`` as a list: InputTypeError for None, a str, a mapping or one Document (a
    pydantic model iterates over its fields). The items are checked by the conversion."""
    if isinstance(documents, (str, Document)):
        msg = (
            f"documents must be a list of LangChain Documents, got one {type(documents).__name__}"
            "; wrap it in a list"
        )
        raise InputTypeError(msg)
    return as_list(documents, "documents must be a list of LangChain Documents")


def texts_to_sources(
    texts: Iterable[str],
    metadatas: Sequence[Mapping[str, Any]] | None = None,
    ids: Sequence[str | None] | None = None,
) -> list[Source]:
    """RAPTOR sources from texts, with a copy of each metadata dict and each id.

    Raises
    ------
    InputTypeError
        A text is not a string or a metadata is not a mapping.
    ConfigError
        ``metadatas`` or ``ids`` is not one per text.
    """
    if isinstance(texts, str):
        msg = "texts must be a list of strings, got one str; wrap it in a list"
        raise InputTypeError(msg)
    items = as_list(texts, "texts must be a list of strings")
    for name, values in (("metadatas", metadatas), ("ids", ids)):
        if values is not None and len(values) != len(items):
            msg = f"got {len(values)} {name} for {len(items)} texts; pass one per text or None"
            raise ConfigError(msg)
    out: list[Source] = []
    for i, text in enumerate(items):
        meta = metadatas[i] if metadatas is not None else {}
        if not isinstance(text, str) or not isinstance(meta, Mapping):
            msg = (
                f"text {i} must be a str with a dict of metadata, got "
                f"{type(text).__name__} and {type(meta).__name__}"
            )
            raise InputTypeError(msg)
        out.append(Source(text, _copied(meta), None if ids is None else ids[i]))
    return out


def documents_to_sources(documents: Iterable[Document]) -> list[Source]:
    """RAPTOR sources from Documents: ``page_content``, a copy of ``metadata``, ``id``.

    Raises
    ------
    InputTypeError
        ``documents`` is not a list, or an item is not a LangChain ``Document``.
    """
    docs = document_list(documents)
    for i, doc in enumerate(docs):
        if not isinstance(doc, Document):
            msg = f"document {i} is a {type(doc).__name__}; pass LangChain Documents"
            raise InputTypeError(msg)
    return [Source(doc.page_content, _copied(doc.metadata), doc.id) for doc in docs]


def nodes_to_documents(
    nodes: Sequence[RetrievedNode], source_ids: Sequence[str | None]
) -> list[Document]:
    """New Documents for retrieved RAPTOR nodes, in their order (most relevant first).

    ``page_content`` is the node's text. ``metadata`` is, for a leaf chunk, a copy of its
    source document's metadata, plus ``relevance_score`` (the node's relevance in [0, 1]),
    ``hrefine_raw_score`` (cosine similarity), ``hrefine_layer`` (0 for a leaf),
    ``hrefine_kind`` (``"chunk"`` or ``"summary"``), ``hrefine_node_id``, ``hrefine_tokens``,
    ``hrefine_sources`` (the ids of the source documents the text comes from, where they were
    given, else their indexes), and ``hrefine_start``/``hrefine_end`` (character offsets in the
    source) for a leaf or ``hrefine_children`` (node ids) for a summary.

    Parameters
    ----------
    nodes:
        The tree's results.
    source_ids:
        The id of each source document, by index (None where none was given).
    """
    out: list[Document] = []
    for node in nodes:
        meta = _copied(node.metadata)
        meta.pop("hrefine_source", None)  # replaced by hrefine_sources
        meta.update(
            {
                "relevance_score": float(node.relevance),
                "hrefine_raw_score": float(node.score),
                "hrefine_layer": int(node.layer),
                "hrefine_kind": str(node.kind),
                "hrefine_node_id": int(node.id),
                "hrefine_tokens": int(node.tokens),
                "hrefine_sources": [_source_id(i, source_ids) for i in node.sources],
            }
        )
        out.append(Document(page_content=node.text, metadata=meta))
    return out


def _source_id(index: int, source_ids: Sequence[str | None]) -> str | int:
    """The id the caller gave source ``index``, else the index itself."""
    given = source_ids[index] if 0 <= index < len(source_ids) else None
    return index if given is None else given


# -- GARLIC ---------------------------------------------------------------------------------


def to_garlic_llm(llm: Any, timeout: float | None) -> Any:
    """The LLM a :class:`~hrefine.garlic.GarlicGraph` and its searcher take for ``llm``.

    A LangChain chat model, LLM or Runnable becomes a core ``TextGenerator``
    (:func:`to_text_generator`) whose every try gives up after ``timeout`` seconds (the options'
    ``llm_timeout``; the core uses a TextGenerator's own settings, so it is set here): GARLIC
    runs in prompt-only mode with it (embedding edges, Yes/No read from text). Anything else goes
    to the core as it is: a ``LocalLM`` (attention edges and the KV-cached search), a
    ``str -> str`` callable (the core applies ``llm_timeout``), a TextGenerator, or None for the
    embedded SmolLM2.
    """
    if isinstance(llm, Runnable):
        return to_text_generator(llm, name=f"langchain:{type(llm).__name__}", timeout=timeout)
    return llm


def visited_to_documents(
    result: SearchResult, tree: Tree, ids: Sequence[int] | None = None
) -> list[Document]:
    """New Documents for the nodes a GARLIC search read: the chunks in document order, then the
    summary points (:func:`hrefine.tree_order.chunks_first`).

    ``page_content`` is the node's text; ``metadata`` is described by
    :func:`hrefine.garlic.visited.visited_with_metadata` (a chunk's holds a copy of its
    document's metadata, every one ``relevance_score`` in [0, 1] and the ``hrefine_*`` keys).

    Parameters
    ----------
    result:
        The search's result.
    tree:
        The graph's node tree (for sources and children).
    ids:
        The visited ids to return (default: all); kept in that order.
    """
    described = visited_with_metadata(result, tree, ids)
    return [Document(page_content=d.node.text, metadata=d.metadata) for d in described]
