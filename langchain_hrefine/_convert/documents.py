"""LangChain Documents in and out of the core: Documents go in as HTML strings (HtmlRAG), as
texts and titles (LongRefiner) or as :class:`~hrefine.raptor.Source` objects (RAPTOR, GARLIC),
and what the core kept comes back as new Documents (pruned pages, refined texts, retrieved tree
nodes, the nodes a GARLIC search read). Metadata is always copied.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hrefine.errors import ConfigError, InputTypeError
from hrefine.garlic import SearchResult
from hrefine.garlic.visited import Described, Fitted, source_indexes, visited_with_metadata
from hrefine.html.outcome import DocumentOutcome, kept_with_metadata
from hrefine.longrefiner.outcome import DocumentOutcome as RefineOutcome
from hrefine.longrefiner.outcome import kept_with_metadata as refined_with_metadata
from hrefine.raptor import RetrievedNode, Source
from hrefine.raptor.build import SOURCE
from hrefine.results import log_dropped
from hrefine.tree import NodeKind, Tree
from langchain_core.documents import Document

logger = logging.getLogger(__name__)


def documents_to_html(documents: Sequence[Document]) -> list[str]:
    """The HTML (``page_content``) of each Document, in order.

    Raises
    ------
    InputTypeError
        An item is not a LangChain ``Document``.
    """
    return [doc.page_content for doc in document_list(documents)]


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
    for doc in document_list(documents):
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


# -- RAPTOR ---------------------------------------------------------------------------------


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


def document_list(documents: object) -> list[Document]:
    """``documents`` as a list of Documents: InputTypeError for None, a str, a mapping or one
    Document (a pydantic model iterates over its fields), and for an item that is not a
    Document (a list of HTML strings is a common slip)."""
    if isinstance(documents, (str, Document)):
        msg = (
            f"documents must be a list of LangChain Documents, got one {type(documents).__name__}"
            "; wrap it in a list"
        )
        raise InputTypeError(msg)
    docs = as_list(documents, "documents must be a list of LangChain Documents")
    for i, doc in enumerate(docs):
        if not isinstance(doc, Document):
            msg = (
                f"document {i} is a {type(doc).__name__}; pass a list of LangChain Documents "
                "(wrap a text as Document(page_content=text))"
            )
            raise InputTypeError(msg)
    return docs


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


@dataclass(frozen=True)
class _InputOutcome:
    """What became of one input Document of a GARLIC compressor call, as
    :func:`hrefine.results.log_dropped` reads it."""

    index: int
    reason: str | None


def compressed_to_documents(
    result: SearchResult,
    tree: Tree,
    fitted: Fitted,
    *,
    inputs: int,
    budget: int,
    tokenizer: str,
) -> list[Document]:
    """The new Documents a GARLIC compressor returns: the kept nodes of its search, as
    :func:`visited_to_documents` makes them, each with the keys every compressor writes:
    ``hrefine_method`` (``"garlic"``), ``hrefine_budget``, ``hrefine_tokenizer`` and
    ``hrefine_dropped_documents``.

    As every compressor's outputs, each keeps the ``id`` of the input Document it comes from:
    a chunk its Document's; a summary point its Document's when it comes from exactly one
    (:func:`hrefine.garlic.visited.source_indexes`), else None.

    An input Document is dropped when none of its chunks is returned (a summary point over it
    only restates it), and a summary point when it repeats returned chunks
    (:attr:`hrefine.garlic.visited.Fitted.dropped`): each reason is logged and every output
    counts the dropped Documents (:func:`hrefine.results.log_dropped`), so a drop is never
    silent.

    Parameters
    ----------
    result:
        The search's result.
    tree:
        The graph's node tree, built over the call's Documents in order.
    fitted:
        What the compressor returns of the search (:func:`hrefine.garlic.visited.fit`).
    inputs:
        How many Documents the call was given.
    budget:
        The call's token budget.
    tokenizer:
        The budget tokenizer's name.
    """
    kept = fitted.kept
    described = visited_with_metadata(result, tree, kept)
    source_ids = list(tree.metadata.get("sources", []))
    documents = [
        Document(page_content=d.node.text, metadata=d.metadata, id=_garlic_id(d, tree, source_ids))
        for d in described
    ]
    empty = {int(i) for i in tree.metadata.get("empty_sources", [])}
    same = {int(i): int(j) for i, j in tree.metadata.get("repeated_sources", [])}
    returned = {int(tree[i].metadata[SOURCE]) for i in kept if tree[i].kind == NodeKind.CHUNK}

    def why(i: int) -> str | None:
        if i in returned:
            return None
        if i in same:  # its chunks are the first copy's: it was read once, as that one
            return f"the same text as input {same[i]}"
        return "no text" if i in empty else "no chunk within the budget"

    outcomes = [_InputOutcome(i, why(i)) for i in range(inputs)]
    dropped = log_dropped(outcomes, "documents", "GARLIC")
    points = [_InputOutcome(node_id, why) for node_id, why in fitted.dropped.items()]
    log_dropped(points, "summary points (node ids)", "GARLIC")
    for doc in documents:
        doc.metadata.update(
            {
                "hrefine_method": "garlic",
                "hrefine_budget": budget,
                "hrefine_tokenizer": tokenizer,
                "hrefine_dropped_documents": dropped,
            }
        )
    return documents


def _garlic_id(described: Described, tree: Tree, source_ids: Sequence[Any]) -> str | None:
    """The id of the one input Document a returned node comes from, else None."""
    indexes = source_indexes(tree, described.node.id)
    if len(indexes) != 1 or not 0 <= indexes[0] < len(source_ids):
        return None
    given = source_ids[indexes[0]]
    return None if given is None else str(given)
