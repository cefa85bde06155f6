"""Building a RAPTOR tree: leaves from documents, then layers of cluster summaries.

The layer loop (:func:`grow`) is written once as a generator that yields what it needs done
(cluster these vectors, summarise these prompts, embed these texts) and receives the answers;
:func:`run` drives it synchronously and :func:`arun` from an event loop, so the sync and async
builds cannot drift apart. A layer's nodes are added only once its summaries and their
embeddings are all in, so an LLM that fails mid-build leaves the tree as it was before that
layer, never with a half-made one.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import time
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hrefine._encodable import encodable
from hrefine.budget import TokenCounter
from hrefine.chunk import chunks
from hrefine.errors import EmptyInputError, InputTypeError
from hrefine.raptor.cluster import Cluster, cluster_layer
from hrefine.raptor.options import RaptorOptions
from hrefine.raptor.summarise import Summariser
from hrefine.results import copy_metadata
from hrefine.tree import NodeKind, Tree

__all__ = ["Source", "add_leaves", "arun", "as_sources", "grow", "run"]

# Metadata keys of tree nodes.
SOURCE, START, END, TOKENS, SOURCES = (
    "hrefine_source",
    "hrefine_start",
    "hrefine_end",
    "hrefine_tokens",
    "hrefine_sources",
)


@dataclass(frozen=True)
class Source:
    """One input document."""

    text: str
    """Its plain text."""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    """Copied onto each of its leaves (JSON-able values, if the tree is to be saved)."""
    id: str | None = None
    """Optional identifier, kept in the tree's list of sources."""


def as_sources(docs: object) -> list[Source]:
    """``docs`` (a sequence of str or :class:`Source`) as Sources, ready for every model.

    Lone surrogates in a text become U+FFFD (one code point for one, so leaf offsets still
    index the text; only a pair held as two code points becomes its one character): no
    tokenizer or LLM client encodes them. Such a Source is replaced by a new one; the
    caller's is never changed.

    Raises
    ------
    InputTypeError
        ``docs`` is not a sequence of str or Source, or a Source's text is not a str or its
        metadata not a mapping.
    """
    if isinstance(docs, (str, Source)):
        docs = [docs]
    if not isinstance(docs, Sequence):
        msg = f"documents must be a list of str or Source, got {type(docs).__name__}"
        raise InputTypeError(msg)
    out: list[Source] = []
    for i, doc in enumerate(docs):
        if isinstance(doc, str):
            doc = Source(doc)
        elif not isinstance(doc, Source):
            msg = f"document {i} is a {type(doc).__name__}; pass str or hrefine.raptor.Source"
            raise InputTypeError(msg)
        elif not isinstance(doc.text, str) or not isinstance(doc.metadata, Mapping):
            msg = (
                f"document {i} is a Source whose text is a {type(doc.text).__name__} and "
                f"metadata a {type(doc.metadata).__name__}; give a str and a dict"
            )
            raise InputTypeError(msg)
        clean = encodable(doc.text)
        out.append(doc if clean is doc.text else dataclasses.replace(doc, text=clean))
    return out


def add_leaves(
    tree: Tree, sources: Sequence[Source], first: int, counter: TokenCounter, chunk_tokens: int
) -> list[int]:
    """Chunk each source into leaves of ``tree``; returns the new leaf ids in document order.

    ``first`` is the index the first of ``sources`` gets in the tree's list of sources. Empty
    documents add no leaf (they are counted in ``tree.metadata["empty_sources"]``), and nor
    does a document whose chunks are word for word those of one already in the tree or
    earlier in ``sources``: its text would be stored, summarised and returned twice
    (``tree.metadata["repeated_sources"]`` holds ``[index, index of the first]`` pairs, and the
    first copy's metadata stands for both).
    """
    start_order = len(tree.leaves)
    ids: list[int] = []
    empty = list(tree.metadata.get("empty_sources", []))
    repeated = [list(pair) for pair in tree.metadata.get("repeated_sources", [])]
    seen = _chunked_sources(tree)
    for offset, source in enumerate(sources):
        index = first + offset
        pieces = (
            chunks(source.text, counter, chunk_tokens, join_short=True)
            if source.text.strip()
            else []
        )
        if not pieces:
            empty.append(index)
            continue
        texts = tuple(piece.text for piece in pieces)
        if texts in seen:
            repeated.append([index, seen[texts]])
            continue
        seen[texts] = index
        for piece in pieces:
            meta = copy_metadata(source.metadata)  # the caller's nested values stay its own
            meta.update({SOURCE: index, START: piece.start, END: piece.end, TOKENS: piece.tokens})
            ids.append(
                tree.add_node(
                    piece.text,
                    kind=NodeKind.CHUNK,
                    level=0,
                    order=start_order + len(ids),
                    metadata=meta,
                )
            )
    tree.metadata["empty_sources"] = empty
    if repeated:  # written only when there is one: a tree of distinct documents is as before
        tree.metadata["repeated_sources"] = repeated
    if not ids and not tree.leaves:
        msg = f"nothing to build a tree from: all {len(sources)} documents are empty"
        raise EmptyInputError(msg)
    return ids


def _chunked_sources(tree: Tree) -> dict[tuple[str, ...], int]:
    """The chunk texts of each source with leaves in ``tree``, in document order -> its index."""
    by_source: dict[int, list[tuple[int, str]]] = {}
    for leaf in tree.leaves:
        node = tree[leaf]
        if node.kind == NodeKind.CHUNK:
            by_source.setdefault(int(node.metadata[SOURCE]), []).append((node.order, node.text))
    out: dict[tuple[str, ...], int] = {}
    for i in sorted(by_source):
        out.setdefault(tuple(t for _, t in sorted(by_source[i])), i)
    return out


# -- the layer loop -------------------------------------------------------------------------


# Each request does itself: ``do`` in this thread, ``ado`` from an event loop (the LLM
# awaited, CPU-bound work in the loop's default executor).


@dataclass
class ClusterWork:
    """Request: run ``fn`` (clustering, CPU-bound) and send back its clusters."""

    fn: Callable[[], list[Cluster]]

    def do(self, summariser: Summariser, embedder: Any) -> list[Cluster]:
        return self.fn()

    async def ado(self, summariser: Summariser, embedder: Any, loop: Loop) -> list[Cluster]:
        return await loop.run_in_executor(None, self.fn)


@dataclass
class SummariseWork:
    """Request: summarise ``prompts`` and send back the summaries."""

    prompts: list[str]

    def do(self, summariser: Summariser, embedder: Any) -> list[str]:
        return summariser.summarise(self.prompts)

    async def ado(self, summariser: Summariser, embedder: Any, loop: Loop) -> list[str]:
        return await summariser.asummarise(self.prompts)


@dataclass
class EmbedWork:
    """Request: embed ``texts`` and send back their unit vectors."""

    texts: list[str]

    def do(self, summariser: Summariser, embedder: Any) -> np.ndarray:
        return embed_in_full(embedder, self.texts)

    async def ado(self, summariser: Summariser, embedder: Any, loop: Loop) -> np.ndarray:
        return await loop.run_in_executor(None, embed_in_full, embedder, self.texts)


Work = ClusterWork | SummariseWork | EmbedWork
Grower = Generator[Work, Any, dict[str, Any]]
Loop = asyncio.AbstractEventLoop


def step(grower: Grower, answer: Any) -> tuple[Work | None, dict[str, Any]]:
    """Send ``answer`` to ``grower``: its next request, or None and its statistics when done."""
    try:
        return grower.send(answer), {}
    except StopIteration as stop:
        return None, dict(stop.value)


def cluster_fn(
    tree: Tree, ids: Sequence[int], options: RaptorOptions
) -> Callable[[], list[Cluster]]:
    """The clustering of nodes ``ids`` (in document order) as a call without arguments."""
    vectors = tree.embeddings
    assert vectors is not None
    x = vectors[list(ids)]
    tokens = [int(tree[i].metadata[TOKENS]) for i in ids]
    return functools.partial(
        cluster_layer,
        x,
        tokens,
        dim=options.reduction_dim,
        threshold=options.membership_threshold,
        max_clusters=options.max_clusters,
        max_tokens=options.cluster_max_tokens,
        seed=options.seed,
        group_size=options.cluster_group_size,
    )


def grow(
    tree: Tree,
    layer: Sequence[int],
    options: RaptorOptions,
    summariser: Summariser,
    counter: TokenCounter,
) -> Grower:
    """Add summary layers above the nodes ``layer`` (all embedded) until none reduces further.

    A generator of work requests (see the module docstring); returns per-layer statistics.
    """
    stats: dict[str, Any] = {"clusters": [], "layer_seconds": []}
    ids = list(layer)
    level = max((tree[i].level for i in ids), default=0)
    while level < options.max_layers and len(ids) > 1:
        started = time.perf_counter()
        clusters: list[Cluster] = yield ClusterWork(cluster_fn(tree, ids, options))
        if len(clusters) >= len(ids):
            break  # no reduction: every node would be its own cluster
        groups = [[ids[m] for m in c.members] for c in clusters]
        prompts = summariser.prompts(
            [[tree[i].text for i in tree.sort_by_order(g)] for g in groups]
        )
        summaries: list[str] = yield SummariseWork(prompts)
        vectors: np.ndarray = yield EmbedWork(summaries)
        counts = counter.count_many(summaries)
        level += 1
        new_ids = [
            add_summary(tree, text, level, n, group, cluster.weights)
            for text, n, group, cluster in zip(summaries, counts, groups, clusters, strict=True)
        ]
        tree.set_embeddings(new_ids, vectors)
        stats["clusters"].append(len(clusters))
        stats["layer_seconds"].append(round(time.perf_counter() - started, 4))
        ids = new_ids
    return stats


def add_summary(
    tree: Tree,
    text: str,
    level: int,
    tokens: int,
    children: Sequence[int],
    weights: Sequence[float],
) -> int:
    """Add a summary node over ``children`` (edge weights = membership probabilities)."""
    sources = sorted({s for c in children for s in node_sources(tree, c)})
    node = tree.add_node(
        text, kind=NodeKind.SUMMARY, level=level, metadata={TOKENS: int(tokens), SOURCES: sources}
    )
    for child, weight in zip(children, weights, strict=True):
        tree.add_edge(node, child, float(max(weight, 1e-6)))
    return node


def node_sources(tree: Tree, node_id: int) -> list[int]:
    """Indexes of the sources a node's text comes from."""
    meta = tree[node_id].metadata
    if SOURCE in meta:
        return [int(meta[SOURCE])]
    return [int(s) for s in meta.get(SOURCES, [])]


# -- drivers --------------------------------------------------------------------------------


#: Words per embedded window: about 200 word pieces, inside the 256 that small sentence
#: embedders read, so a long summary is embedded in full rather than cut at the model's limit.
EMBED_WINDOW = 150


def embed_in_full(embedder: Any, texts: Sequence[str]) -> np.ndarray:
    """Unit vectors of ``texts``, each the mean of its windows' vectors (one batched call)."""
    pieces: list[str] = []
    owner: list[int] = []
    for i, text in enumerate(texts):
        words = text.split()
        if len(words) <= EMBED_WINDOW:
            pieces.append(text)
            owner.append(i)
            continue
        for j in range(0, len(words), EMBED_WINDOW):
            pieces.append(" ".join(words[j : j + EMBED_WINDOW]))
            owner.append(i)
    vectors = np.asarray(embedder.embed(pieces), dtype=np.float32)
    if len(pieces) != len(texts):
        summed = np.zeros((len(texts), vectors.shape[1]), dtype=np.float32)
        np.add.at(summed, np.asarray(owner), vectors)
        vectors = summed
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1.0, norms)


def run(grower: Grower, summariser: Summariser, embedder: Any) -> dict[str, Any]:
    """Drive ``grower`` in this thread; returns its statistics."""
    work, stats = step(grower, None)
    while work is not None:
        work, stats = step(grower, work.do(summariser, embedder))
    return stats


async def arun(grower: Grower, summariser: Summariser, embedder: Any) -> dict[str, Any]:
    """Drive ``grower`` from an event loop: the LLM awaited, models and clustering in the
    default executor, so the loop is never blocked."""
    loop = asyncio.get_running_loop()
    work, stats = step(grower, None)
    while work is not None:
        work, stats = step(grower, await work.ado(summariser, embedder, loop))
    return stats
