"""RaptorTree: build, grow, query, save and load a RAPTOR summary tree."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

import hrefine.raptor.build as _build
from hrefine._progress import Progress
from hrefine._query import check_query, check_query_vector
from hrefine.budget import TokenCounter, get_counter
from hrefine.errors import InputTypeError
from hrefine.options import named_models
from hrefine.persist import load_tree
from hrefine.raptor.build import SOURCES, TOKENS, Source, as_sources
from hrefine.raptor.build_progress import reported_grower
from hrefine.raptor.insert import insert_steps
from hrefine.raptor.options import RaptorOptions, check_mode
from hrefine.raptor.retrieve import Picked, RetrievedNode, choose, node_scores, relevance
from hrefine.raptor.serial_insert import agrow, grow, insert_lock, publish
from hrefine.raptor.summarise import Summariser
from hrefine.raptor.tree_shape import check_raptor_shape
from hrefine.results import copy_metadata
from hrefine.tree import NodeKind, Tree
from hrefine.tree_store import TreeStore

__all__ = ["KIND", "RaptorTree"]

#: Settings :meth:`RaptorTree.retrieve` takes for one query beside ``mode``, ``k``, ``max_tokens``.
_PER_QUERY = frozenset({"lexical_weight", "summary_rank"})

#: The ``kind`` of a saved RAPTOR tree.
KIND = "raptor"
#: Tree metadata: the name of the counter of the nodes' token counts (counted again on load
#: with any other counter, so a budget is kept in the loaded tree's tokens).
COUNTER = "hrefine_counter"
#: How to pass a model to a load instead of the one a save names (in messages).
_LOAD_HINT = (
    "RaptorTree.load(path, {name}=...) (hrefine raptor query takes --tokenizer and --embedder)"
)


class RaptorTree(TreeStore[RaptorOptions]):
    """A RAPTOR tree over documents: leaf chunks and layers of cluster summaries.

    Make one with :meth:`build` (or :meth:`abuild`), add documents with :meth:`insert`, query it
    with :meth:`retrieve`, keep it with :meth:`save` and :meth:`load`.

    Parameters
    ----------
    tree:
        The node graph (leaves are ``"chunk"`` nodes at level 0, summaries ``"summary"`` nodes
        at level 1 and up, edges weighted by cluster membership), every node embedded.
    options:
        The settings it was built with (and retrieves with by default).
    llm, embedder, tokenizer:
        The models (see :class:`RaptorOptions`); they override the options' own.
    """

    def __init__(
        self,
        tree: Tree,
        options: RaptorOptions | None = None,
        *,
        llm: Any = None,
        embedder: Any = None,
        tokenizer: Any = None,
    ) -> None:
        if not isinstance(tree, Tree):
            msg = f"tree must be an hrefine.tree.Tree, got {type(tree).__name__}"
            raise InputTypeError(msg)
        named = named_models(tokenizer=tokenizer, embedder=embedder)  # a save records them
        self.options = RaptorOptions.build(options, **named)
        self.tree = tree
        self._llm = llm if llm is not None else self.options.llm
        self._embedder_arg = embedder if embedder is not None else self.options.embedder
        self.counter: TokenCounter = get_counter(
            tokenizer if tokenizer is not None else self.options.tokenizer
        )
        self._summariser: Summariser | None = None
        # What the last build and inserts did (not saved: it holds timings).
        self.stats: dict[str, Any] = {}

    def __getstate__(self) -> dict[str, Any]:
        # The summariser holds wrapped callables and is made again on first use, from the LLM.
        return {**self.__dict__, "_summariser": None}

    kind = KIND

    # -- models (made on first use) ---------------------------------------------------------
    @property
    def summariser(self) -> Summariser:
        """The summariser (the LLM is loaded on first use)."""
        if self._summariser is None:
            # The no-model summaries are measured in the tree's tokens, however it was given.
            self._summariser = Summariser(self._llm, self.options.replace(tokenizer=self.counter))
        return self._summariser

    # -- building ---------------------------------------------------------------------------
    @classmethod
    def _start(
        cls,
        docs: Sequence[str | Source],
        options: RaptorOptions | None,
        llm: Any,
        embedder: Any,
        tokenizer: Any,
        settings: dict[str, Any],
    ) -> tuple[RaptorTree, list[int]]:
        opts = RaptorOptions.build(options, **settings)
        sources = as_sources(docs)
        self = cls(Tree(), opts, llm=llm, embedder=embedder, tokenizer=tokenizer)
        self.tree.metadata["sources"] = [s.id for s in sources]
        self.tree.metadata[COUNTER] = self.counter.name
        leaves = _build.add_leaves(self.tree, sources, 0, self.counter, opts.chunk_tokens)
        return self, leaves

    @classmethod
    def build(
        cls,
        docs: Sequence[str | Source],
        options: RaptorOptions | None = None,
        *,
        llm: Any = None,
        embedder: Any = None,
        tokenizer: Any = None,
        progress: Progress = False,
        **settings: Any,
    ) -> RaptorTree:
        """Build a tree over ``docs`` (texts or :class:`Source` objects).

        Parameters
        ----------
        docs:
            The documents, as strings or :class:`Source` (text, metadata, id).
        options:
            A :class:`RaptorOptions`; ``settings`` change single fields of it.
        llm:
            The summariser: a ``str -> str`` callable (sync or async), a LocalLM or model name
            (``"smollm2-135m-instruct"``, ``"qwen2.5-coder-1.5b"``), a TextGenerator, or None
            for :class:`~hrefine.raptor.ExtractiveSummariser` (no model).
        embedder:
            Anything :func:`hrefine.models.get_embedder` takes (None: the embedded model).
        tokenizer:
            Tokenizer of every count (anything :func:`hrefine.budget.get_counter` takes).
        progress:
            True: one line per step on stderr (no logging set-up needed); a callable: it
            gets each line; False: nothing.

        Raises
        ------
        EmptyInputError
            Every document is empty.
        GenerationError
            The LLM failed, timed out or answered with nothing after its retries.
        """
        started = time.perf_counter()
        self, leaves = cls._start(docs, options, llm, embedder, tokenizer, settings)
        # A build is an insert into a tree of leaves only (insert_steps grows every layer).
        grower = insert_steps(self.tree, leaves, self.options, self.summariser, self.counter)
        stats = _build.run(reported_grower(grower, progress), self.summariser, self.embedder)
        self._finish(stats, started)
        return self

    @classmethod
    async def abuild(
        cls,
        docs: Sequence[str | Source],
        options: RaptorOptions | None = None,
        *,
        llm: Any = None,
        embedder: Any = None,
        tokenizer: Any = None,
        progress: Progress = False,
        **settings: Any,
    ) -> RaptorTree:
        """:meth:`build` without blocking the event loop (the LLM is awaited; models and
        clustering run in the default executor)."""
        started = time.perf_counter()
        loop = asyncio.get_running_loop()
        self, leaves = await loop.run_in_executor(
            None, cls._start, docs, options, llm, embedder, tokenizer, settings
        )
        summariser = await loop.run_in_executor(None, lambda: self.summariser)
        grower = insert_steps(self.tree, leaves, self.options, summariser, self.counter)
        embedder_ = await loop.run_in_executor(None, lambda: self.embedder)
        stats = await _build.arun(reported_grower(grower, progress), summariser, embedder_)
        self._finish(stats, started)
        return self

    def _finish(self, stats: dict[str, Any], started: float) -> None:
        levels = [n.level for n in self.tree]
        self.stats = {
            "leaves": sum(1 for n in self.tree if n.kind == NodeKind.CHUNK),
            "nodes_per_layer": [levels.count(lv) for lv in range(max(levels, default=0) + 1)],
            "clusters_per_layer": stats.get("clusters", []),
            "layer_seconds": stats.get("layer_seconds", []),
            "llm_calls": 0 if self._summariser is None else self._summariser.llm_calls,
            "build_seconds": round(time.perf_counter() - started, 4),
        }

    def insert(self, docs: Sequence[str | Source]) -> RaptorTree:
        """Add ``docs`` to the tree, re-summarising only the nodes their leaves reach.

        The tree is changed only if every summary and embedding succeeds; a query meanwhile
        reads the tree as it was. Inserts into one tree run one at a time: a second waits for
        the first, then inserts into the tree it made. Returns ``self``.

        Raises
        ------
        TreeError
            ``self.tree`` was set to another tree while this insert ran (it added nothing).
        """
        with insert_lock(self):
            publish(self, grow(self, docs))
        return self

    async def ainsert(self, docs: Sequence[str | Source]) -> RaptorTree:
        """:meth:`insert` without blocking the event loop (waiting for another insert too)."""
        async with insert_lock(self).held():
            publish(self, await agrow(self, docs))
        return self

    # -- queries ----------------------------------------------------------------------------
    @property
    def layers(self) -> int:
        """Summary layers above the leaves (0: leaves only)."""
        return self.tree.top_level

    def _scores(self, query_vector: np.ndarray, tree: Tree | None = None) -> np.ndarray:
        vectors = (self.tree if tree is None else tree).embeddings
        assert vectors is not None
        # An embedder of another size than the tree's (loaded with another model): said so.
        fix = "query with the embedder the tree was built with (give it when loading the tree)"
        checked = check_query_vector(query_vector, vectors, nodes="the tree's nodes", fix=fix)
        q = np.asarray(checked, dtype=np.float32).reshape(-1)
        norm = float(np.linalg.norm(q))
        return np.asarray(vectors @ (q / norm if norm else q), dtype=np.float64)

    def _costs(self, tree: Tree | None = None) -> np.ndarray:
        nodes = self.tree if tree is None else tree
        return np.asarray([int(n.metadata[TOKENS]) for n in nodes], dtype=np.int64)

    def retrieve(
        self,
        query: str,
        *,
        mode: str | None = None,
        k: int | str | None = "default",
        max_tokens: int | str | None = "default",
        query_vector: Any = None,
        **settings: Any,
    ) -> list[RetrievedNode]:
        """The nodes most similar to ``query``, best first.

        Parameters
        ----------
        query:
            The question.
        mode:
            ``"collapsed"`` (every layer ranked together) or ``"traversal"`` (top ``k`` per
            layer from the roots down); default: the options' ``mode``.
        k:
            Most nodes returned (collapsed) or kept per layer (traversal); None: no limit.
            Default: the options' ``k``.
        max_tokens:
            Token budget of the returned nodes together (None: none). Default: the options'.
        query_vector:
            The query's embedding, ranked by instead of embedding ``query`` (the BM25 match
            still reads ``query``); it must come from the model the nodes were embedded with.
            None: ``query`` is embedded.
        **settings:
            Other retrieval settings for this query only: ``lexical_weight``,
            ``summary_rank``.

        Raises
        ------
        InputTypeError
            ``query`` is not a string, or ``query_vector`` not a flat vector of numbers.
        EmptyInputError
            ``query`` is empty or only white space.
        ConfigError
            ``query_vector`` is not of the nodes' embedding size, or holds NaN or infinity.
        BudgetTooSmallError
            ``max_tokens`` is smaller than every node.
        """
        text, how, opts = self._query_settings(query, mode, k, max_tokens, settings)
        if query_vector is not None:
            return self._retrieve(how, text, self._given_vector(query_vector), opts)
        vector = self.embedder.embed_query(text)
        return self._retrieve(how, text, vector, opts)

    async def aretrieve(
        self,
        query: str,
        *,
        mode: str | None = None,
        k: int | str | None = "default",
        max_tokens: int | str | None = "default",
        query_vector: Any = None,
        **settings: Any,
    ) -> list[RetrievedNode]:
        """:meth:`retrieve` with the query embedded in the default executor (if at all)."""
        text, how, opts = self._query_settings(query, mode, k, max_tokens, settings)
        if query_vector is not None:
            return self._retrieve(how, text, self._given_vector(query_vector), opts)
        loop = asyncio.get_running_loop()
        embedder = await loop.run_in_executor(None, lambda: self.embedder)
        vector = await loop.run_in_executor(None, embedder.embed_query, text)
        return self._retrieve(how, text, vector, opts)

    def _given_vector(self, query_vector: Any) -> np.ndarray:
        """A caller's query embedding, checked against the nodes' embedding size."""
        return check_query_vector(query_vector, self.tree.embeddings, nodes="the tree's nodes")

    def _query_settings(
        self,
        query: object,
        mode: str | None,
        k: object,
        max_tokens: object,
        settings: dict[str, Any],
    ) -> tuple[str, str, RaptorOptions]:
        """The query ready for the embedder, the mode and the query's options, all checked."""
        unknown = sorted(set(settings) - _PER_QUERY)
        if unknown:
            msg = (
                f"retrieve() got unknown setting(s) {', '.join(unknown)}; per query: mode, k, "
                f"max_tokens, {', '.join(sorted(_PER_QUERY))}"
            )
            raise InputTypeError(msg)
        if not isinstance(query, str):
            msg = f"query must be a str, got {type(query).__name__}"
            raise InputTypeError(msg)
        # A blank query would rank nodes on an empty embedding: refuse it, as every method does.
        text = check_query(query, used_for="RAPTOR ranks the tree's nodes against the query")
        how = check_mode(self.options.mode if mode is None else mode)
        changes: dict[str, Any] = dict(settings)
        if k != "default":
            changes["k"] = k
        if max_tokens != "default":
            changes["max_tokens"] = max_tokens
        opts = self.options.replace(**changes) if changes else self.options
        return text, how, opts

    def _retrieve(
        self, how: str, query: str, vector: np.ndarray, opts: RaptorOptions
    ) -> list[RetrievedNode]:
        tree = self.tree  # one tree for the whole query, whatever an insert does meanwhile
        k, budget = opts.k, opts.max_tokens
        route, scores = node_scores(
            tree,
            query,
            self._scores(vector, tree),
            lexical_weight=opts.lexical_weight,
            summary_rank=opts.summary_rank,
        )
        costs = self._costs(tree)
        got = choose(
            tree, scores, costs, self.counter, mode=how, k=k, max_tokens=budget, route=route
        )
        ids = got.chosen
        rel = relevance([float(scores[i]) for i in ids], extra=opts.lexical_weight)
        return [
            self._result(tree, i, float(scores[i]), r, got) for i, r in zip(ids, rel, strict=True)
        ]

    def _result(
        self, tree: Tree, node_id: int, score: float, rel: float, got: Picked
    ) -> RetrievedNode:
        node = tree[node_id]
        meta = copy_metadata({k: v for k, v in node.metadata.items() if k not in (TOKENS, SOURCES)})
        if node.kind == NodeKind.SUMMARY:
            meta["hrefine_children"] = list(node.children)
        if node_id in got.repeated:
            meta["hrefine_repeated_sentences"] = got.repeated[node_id]
        return RetrievedNode(
            id=node_id,
            text=got.texts[node_id],
            score=score,
            relevance=rel,
            layer=node.level,
            kind=str(node.kind),
            sources=tuple(_build.node_sources(tree, node_id)),
            tokens=got.tokens[node_id],
            metadata=meta,
        )

    # -- persistence ------------------------------------------------------------------------
    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        *,
        llm: Any = None,
        embedder: Any = None,
        tokenizer: Any = None,
        **settings: Any,
    ) -> RaptorTree:
        """Load a tree saved by :meth:`save`; ``settings`` change its saved options.

        Token counts are made again when ``tokenizer`` is given (budgets are in its tokens).
        A model the save names (its tokenizer, embedder) is used only when it is a model name
        or a file inside ``path``; a model given here is used instead, the saved one unread.

        Raises
        ------
        PersistenceError
            The folder is not a saved RAPTOR tree, a file in it was edited or truncated, or its
            settings name a model by a path outside it (pass that model here instead).
        """
        tree, config, _ = load_tree(path, kind=KIND)
        models = {"llm": llm, "embedder": embedder, "tokenizer": tokenizer}
        given = [*settings, *(name for name, model in models.items() if model is not None)]
        options = RaptorOptions.from_saved(
            config, str(path), folder=path, given=given, load=_LOAD_HINT
        ).replace(**settings)
        return cls.from_tree(
            tree, options, llm=llm, embedder=embedder, tokenizer=tokenizer, where=str(path)
        )

    @classmethod
    def from_tree(
        cls,
        tree: Tree,
        options: RaptorOptions,
        *,
        llm: Any = None,
        embedder: Any = None,
        tokenizer: Any = None,
        where: str = "the tree",
    ) -> RaptorTree:
        """A RaptorTree over a node graph read from storage (a folder, a framework's store),
        checked first; token counts are made again when ``tokenizer`` is given.

        Raises
        ------
        PersistenceError
            ``tree`` is not shaped as a RAPTOR tree (``where`` names it in the message).
        """
        check_raptor_shape(tree, where)
        self = cls(tree, options, llm=llm, embedder=embedder, tokenizer=tokenizer)
        if tokenizer is not None or tree.metadata.get(COUNTER) != self.counter.name:
            # Counted by another tokenizer (one given to build as an object is not saved):
            # the budget would be kept in its tokens, not in this tree's.
            tree.metadata[COUNTER] = self.counter.name
            counts = self.counter.count_many([n.text for n in tree])
            for node, n in zip(tree, counts, strict=True):
                node.metadata[TOKENS] = int(n)
        return self
