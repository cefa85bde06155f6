"""GarlicGraph: GARLIC's hierarchical weighted DAG of summary points over leaf chunks.

Leaves are chunks of the documents. Each level packs the nodes below it, in document order, into
batches that fit ``batch_tokens``; the LLM writes bullet "summary points" for each batch, and
each point becomes a node with an edge to every input of its batch. The edge weight is the
attention the point's tokens paid to that input while it was written (a LocalLM), or its
embedding similarity to it (any other LLM), normalised so that a point's weights sum to 1.
Levels are added until one batch holds a whole level (its points are the top level), no level
can shrink, or ``max_levels`` is reached. Every node is embedded for the search.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from hrefine._progress import Progress, reporter
from hrefine._saved import is_count
from hrefine.budget import TokenCounter, get_counter
from hrefine.errors import InputTypeError, PersistenceError
from hrefine.garlic.extractive import COPIES, ExtractiveGarlicLM, copied_inputs
from hrefine.garlic.options import EDGE_MODES, GarlicOptions, one_llm
from hrefine.garlic.summarise import (
    Batch,
    LocalWriter,
    Writer,
    Written,
    edge_mode,
    embedding_weights,
    make_writer,
    one_line,
    pack,
    write_level,
)
from hrefine.models._lm_name import model_or_name
from hrefine.options import named_models
from hrefine.persist import load_tree
from hrefine.raptor.build import SOURCE, TOKENS, Source, add_leaves, as_sources, embed_in_full
from hrefine.raptor.tree_shape import is_pairs
from hrefine.tree import NodeKind, Tree
from hrefine.tree_store import TreeStore

__all__ = ["BATCH", "KIND", "SOURCE_ID", "GarlicGraph"]

#: The ``kind`` of a saved GARLIC graph.
KIND = "garlic"
#: Leaf metadata: the id of the leaf's source (beside ``hrefine_source``, its index, and
#: ``hrefine_start``/``hrefine_end``, its span in the source text).
SOURCE_ID = "hrefine_source_id"
#: Summary point metadata: ``[level, batch index]`` of the call that wrote it.
BATCH = "hrefine_batch"
# How far a summary point's edge weights may sum away from 1 in a loaded graph.
_WEIGHT_TOLERANCE = 1e-4
# The edge modes a built graph records ("auto" is resolved to one of them).
_EDGE_MODES = tuple(mode for mode in EDGE_MODES if mode != "auto")


class GarlicGraph(TreeStore[GarlicOptions]):
    """A GARLIC graph: leaf chunks and levels of summary points, with weighted edges.

    Make one with :meth:`build`, search it with :class:`~hrefine.garlic.search.GarlicSearcher`,
    keep it with :meth:`save` and :meth:`load`.

    Parameters
    ----------
    tree:
        The node graph: leaves are ``"chunk"`` nodes at level 0, summary points ``"summary"``
        nodes at level 1 and up, each with an edge to every input of its batch (the weights
        of a point's edges sum to 1), every node embedded.
    options:
        The settings it was built with.
    embedder:
        The embedder of its node vectors (None: the options', else the embedded default).
    """

    def __init__(
        self, tree: Tree, options: GarlicOptions | None = None, *, embedder: Any = None
    ) -> None:
        if not isinstance(tree, Tree):
            msg = f"tree must be an hrefine.tree.Tree, got {type(tree).__name__}"
            raise InputTypeError(msg)
        self.tree = tree
        # An embedder given by name or folder is the options' too: a save records it.
        self.options = GarlicOptions.build(options, **named_models(embedder=embedder))
        self._embedder_arg = embedder if embedder is not None else self.options.embedder
        #: What the build did (LLM calls, retries, timings, nodes per level; not saved).
        self.stats: dict[str, Any] = {}

    kind = KIND

    # -- building ---------------------------------------------------------------------------
    @classmethod
    def build(
        cls,
        documents: str | Source | Sequence[str | Source],
        *,
        llm: Any = None,
        lm: Any = None,
        embedder: Any = None,
        options: GarlicOptions | None = None,
        progress: Progress = None,
        **settings: Any,
    ) -> GarlicGraph:
        """Build the graph over ``documents``.

        Parameters
        ----------
        documents:
            Texts or :class:`~hrefine.raptor.Source` objects (text, metadata copied onto each
            of its leaves, id).
        llm:
            The LLM: a :class:`~hrefine.models.LocalLM` (attention edges, prompts counted in
            its tokenizer), or a ``str -> str`` callable, sync or async, or a TextGenerator
            (embedding edges, prompts counted with the budget tokenizer). None: the options'
            ``lm``, else :class:`~hrefine.garlic.extractive.ExtractiveGarlicLM` (no model: the
            inputs' first sentences as summary points, embedding edges); ``"smollm2-135m-instruct"``
            or ``default_lm()`` for the embedded SmolLM2 with attention edges.
        lm:
            The same as ``llm`` (its earlier name); give one of them.
        embedder:
            Anything :func:`hrefine.models.get_embedder` takes (None: the embedded model).
        options:
            A :class:`GarlicOptions`; ``settings`` change single fields of it.
        progress:
            True: a line per level on stderr (no logging set-up needed); a callable gets each
            line instead.

        Raises
        ------
        EmptyInputError
            Every document is empty.
        InputTypeError
            ``documents`` is not texts or Sources.
        ConfigError
            A setting is out of range, ``edges="attention"`` with an LLM other than a LocalLM,
            or both ``llm`` and ``lm`` are given.
        GenerationError
            The LLM failed, or wrote no summary point for a batch after its retries.
        """
        started = time.perf_counter()
        given = one_llm(lm, llm)
        opts = GarlicOptions.build(options, **settings)
        sources = as_sources(documents)
        counter = get_counter(opts.tokenizer)
        model = model_or_name(given if given is not None else opts.lm)
        if model is None:
            model = ExtractiveGarlicLM(opts.summary_prompt, opts.search_prompt)
        mode = edge_mode(opts.edges, model)
        tree = Tree(metadata={"sources": [s.id for s in sources], "edge_mode": mode})
        leaves = add_leaves(tree, sources, 0, counter, opts.chunk_tokens)
        for leaf in leaves:
            meta = tree[leaf].metadata
            meta[SOURCE_ID] = sources[int(meta[SOURCE])].id
        writer = make_writer(model, opts, counter)
        self = cls(tree, opts, embedder=embedder)
        tree.set_embeddings(leaves, embed_in_full(self.embedder, [tree[i].text for i in leaves]))
        grown = _Grower(self, writer, mode, counter, _reporter(progress)).grow(leaves)
        tree.metadata["stopped_by"] = grown["stopped_by"]
        self.stats = {
            "edge_mode": mode,
            "llm": writer.name,
            "leaves": len(leaves),
            **grown,
            "build_seconds": round(time.perf_counter() - started, 4),
        }
        return self

    # -- reading ----------------------------------------------------------------------------
    @property
    def levels(self) -> int:
        """Summary levels above the leaves (the top level's number)."""
        return self.tree.top_level

    @property
    def edge_mode(self) -> str:
        """Where the edge weights came from: ``"attention"`` or ``"embedding"``."""
        return str(self.tree.metadata.get("edge_mode", "embedding"))

    def top_level(self) -> list[int]:
        """Ids of the top level's nodes, in document order (where a search starts)."""
        return self.tree.at_level(self.levels)

    def edge_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The sparse adjacency matrix E as ``(parents, children, weights)`` arrays.

        ``weights[k]`` is the weight of the edge ``parents[k] -> children[k]`` (summary point
        to input node); ``E[parents, children] = weights``.
        """
        edges = list(self.tree.edges())
        parents = np.asarray([p for p, _, _ in edges], dtype=np.int64)
        children = np.asarray([c for _, c, _ in edges], dtype=np.int64)
        weights = np.asarray([w for _, _, w in edges], dtype=np.float64)
        return parents, children, weights

    # -- persistence ------------------------------------------------------------------------
    @classmethod
    def load(
        cls, path: str | os.PathLike[str], *, embedder: Any = None, **settings: Any
    ) -> GarlicGraph:
        """Load a graph saved by :meth:`save`; ``settings`` change its saved options (the
        searcher's LLM may be among them, as ``llm`` or ``lm``).

        A model the save names (its tokenizer, embedder) is used only when it is a model name
        or a file inside ``path``; a model given here is used instead, the saved one unread.

        Raises
        ------
        PersistenceError
            The folder is not a saved GARLIC graph, a file in it was edited or truncated, or
            its settings name a model by a path outside it (pass that model here instead).
        """
        tree, config, _ = load_tree(path, kind=KIND)
        given = [*settings, *(["embedder"] if embedder is not None else [])]
        options = GarlicOptions.from_saved(
            config, str(path), folder=path, given=given, load="GarlicGraph.load(path, {name}=...)"
        ).replace(**settings)
        return cls.from_tree(tree, options, embedder=embedder, where=str(path))

    @classmethod
    def from_tree(
        cls,
        tree: Tree,
        options: GarlicOptions | None = None,
        *,
        embedder: Any = None,
        where: str = "the tree",
    ) -> GarlicGraph:
        """A GarlicGraph over a node graph read from storage, checked first.

        Raises
        ------
        PersistenceError
            ``tree`` is not shaped as a GARLIC graph (``where`` names it in the message).
        """
        problem = _problem(tree)
        if problem:
            msg = f"{where} is not a valid GARLIC graph: {problem}"
            raise PersistenceError(msg)
        return cls(tree, options, embedder=embedder)


class _Grower:
    """The level loop of one build."""

    def __init__(
        self,
        graph: GarlicGraph,
        writer: Writer,
        mode: str,
        counter: TokenCounter,
        report: Callable[[str], None],
    ) -> None:
        self.graph, self.tree, self.options = graph, graph.tree, graph.options
        self.writer, self.mode, self.counter, self.report = writer, mode, counter, report

    def grow(self, leaves: list[int]) -> dict[str, Any]:
        """Add levels above ``leaves``; returns the build's statistics."""
        stats: dict[str, Any] = {
            "nodes_per_level": [len(leaves)],
            "batches_per_level": [],
            "level_seconds": [],
            "calls": 0,
            "retries": 0,
            "oversized_batches": 0,
        }
        ids, level = leaves, 0
        while True:
            started = time.perf_counter()
            level += 1
            lines = [one_line(self.tree[i].text) for i in ids]
            batches, oversized = pack(ids, lines, self.writer, self.options)
            self.report(f"level {level}: summarising {len(ids)} nodes in {len(batches)} batches")
            written, calls, retries = write_level(batches, self.writer, self.options, level)
            new = self.add_level(level, batches, written)
            stats["nodes_per_level"].append(len(new))
            stats["batches_per_level"].append(len(batches))
            stats["level_seconds"].append(round(time.perf_counter() - started, 4))
            # The no-model stand-in's extracts are not LLM calls.
            stats["calls"] += 0 if self.writer.extractive else calls
            stats["retries"] += retries
            stats["oversized_batches"] += oversized
            if len(batches) == 1:
                stopped = "single_batch"  # its points are the top level
            elif len(new) >= len(ids):
                stopped = "no_shrink"
            elif level >= self.options.max_levels:
                stopped = "max_levels"
            else:
                ids = new
                continue
            break
        stats["stopped_by"] = stopped
        if isinstance(self.writer, LocalWriter):
            stats["attention_tokens"] = self.writer.prefilled_tokens
        return stats

    def add_level(
        self, level: int, batches: Sequence[Batch], written: Sequence[Written]
    ) -> list[int]:
        """Add the points of every batch as nodes of ``level``, with their edges and vectors."""
        tree = self.tree
        texts = [p.text for w in written for p in w.points]
        vectors = embed_in_full(self.graph.embedder, texts)
        counts = self.counter.count_many(texts)
        below = tree.embeddings
        assert below is not None
        new: list[int] = []
        for k, (batch, out) in enumerate(zip(batches, written, strict=True)):
            row = len(new)
            if self.mode == "attention":
                assert isinstance(self.writer, LocalWriter)
                weights = self.writer.attention(batch.lines, out.answer, out.points)
            else:
                mine = vectors[row : row + len(out.points)]
                weights = embedding_weights(mine, below[list(batch.inputs)])
            first = tree[batch.inputs[0]].order
            # Points take the orders after their batch's first input, kept before the next
            # batch's (a batch may write more points than it had inputs): document order.
            last = tree[batches[k + 1].inputs[0]].order - 1 if k + 1 < len(batches) else None
            copies = (
                copied_inputs(batch.lines, [p.text for p in out.points])
                if getattr(self.writer, "extractive", False)
                else None
            )
            for i, point in enumerate(out.points):
                order = first + i if last is None else max(first, min(first + i, last))
                meta: dict[str, Any] = {TOKENS: int(counts[row + i]), BATCH: [level, k]}
                if copies is not None:  # the inputs it copies: its documents (not its edges)
                    meta[COPIES] = [int(batch.inputs[j]) for j in copies[i]]
                node = tree.add_node(
                    point.text, kind=NodeKind.SUMMARY, level=level, order=order, metadata=meta
                )
                for j, child in enumerate(batch.inputs):
                    tree.add_edge(node, child, float(weights[i, j]))
                new.append(node)
        tree.set_embeddings(new, vectors)
        return new


def _reporter(progress: Progress) -> Callable[[str], None]:
    return reporter(progress, "garlic")


def _problem(tree: Tree) -> str | None:
    """What keeps ``tree`` from being a GARLIC graph, or None."""
    if len(tree) == 0:
        return "it has no nodes"
    if tree.embeddings is None or not bool(np.all(tree.embedding_mask)):
        return "some nodes have no embedding"
    if not isinstance(tree.metadata.get("sources", []), list):
        return "its list of sources is not a list"
    if not is_pairs(tree.metadata.get("repeated_sources", [])):
        return "its repeated sources are not pairs of source indexes"
    if tree.metadata.get("edge_mode", "embedding") not in _EDGE_MODES:
        return f"its edge mode is not one of {', '.join(map(repr, _EDGE_MODES))}"
    for node in tree:
        meta = node.metadata
        if not is_count(meta.get(TOKENS)):
            return f"node {node.id} has no token count"
        if node.kind == NodeKind.CHUNK:
            if node.level != 0 or node.children or not is_count(meta.get(SOURCE)):
                return f"leaf {node.id} is not at level 0, has children or has no source"
        elif node.kind == NodeKind.SUMMARY:
            kids = node.children
            if node.level < 1 or not kids:
                return f"summary point {node.id} summarises nothing"
            if any(tree[c].level != node.level - 1 for c in kids):
                return f"summary point {node.id} has an input that is not on the level below"
            copies = meta.get(COPIES)
            if copies is not None and not (isinstance(copies, list) and set(copies) <= set(kids)):
                return f"summary point {node.id} copies a node it does not summarise"
            weights = [tree.weight(node.id, c) for c in kids]
            if min(weights) < 0 or abs(sum(weights) - 1.0) > _WEIGHT_TOLERANCE:
                return f"the edge weights of summary point {node.id} do not sum to 1"
        else:
            return f"node {node.id} is a {node.kind}, not a chunk or summary"
    return None
