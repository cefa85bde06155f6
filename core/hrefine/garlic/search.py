"""GARLIC's dynamic graph search (the paper's section 3.2): read the graph top-down until the LLM
says the question can be answered.

The visited set starts with the graph's top-level nodes. The LLM reads the first-turn prompt of
the paper's Table 5 (instruction, question, then the visited nodes) and says "Yes" or "No";
while it says No, the next node is appended and the LLM is asked again. The next node is the
unvisited one with the highest ``z_n + embedding_weight * s_n``: ``z = Eᵀa`` spreads the
query attention ``a`` of the visited nodes down their weighted edges, ``s`` is the
query-node cosine similarity (negative values at 0; with ``lexical_weight``, the BM25 match of
the node's words added by :func:`~hrefine.models.lexical.fuse`), both normalised to sum 1 over
the unvisited nodes. The search stops after ``patience`` Yes answers, at ``max_steps`` added
nodes, at ``max_tokens`` tokens of visited nodes, or when every node has been visited.

**Filling a budget** (``fill_tokens``, what a compressor asks for): a Yes before the visited
leaf chunks hold ``fill_tokens`` tokens is recorded in the trace but does not stop the search;
a leaf that no longer fits is passed over unread, as chunk retrieval passes a chunk that does
not fit, and it stops when no unread leaf fits the room left (``"filled"``). The
LLM's attention still steers which nodes are read; its Yes/No no longer decides when to stop.
A small model that says Yes after reading only the top-level summaries (the embedded
SmolLM2-135M does on most HotpotQA questions) would otherwise hand a compressor a few
summary points and no source text.

Two modes, picked from the LLM:

- **Attention mode** (a :class:`~hrefine.models.LocalLM`): one
  :class:`~hrefine.models.LMSession` holds the prompt in its KV cache. Each visited node is
  pre-filled once, as its own segment, and its attention to the query segment is measured on
  that pass (``a_i``, multiplied by the node's position in the prompt, the query being
  position 1, to undo the bias against late nodes). The Yes/No question appends the short end
  of the user turn, compares P("Yes") with P("No") at the next position, and rolls it back:
  each step pre-fills only the new node's tokens and that suffix.
- **Prompt-only mode** (any ``str -> str`` LLM, sync or async, e.g. an API model): each step
  sends the whole first-turn prompt and reads Yes/No from the first word of the reply (anything
  else counts as No and is noted). It keeps the visited-set growth, the stop patience, the
  budgets and the graph walk ``z = Eᵀa`` over the graph's edges; it drops the attention of the
  visited nodes to the query (``a_i`` is their embedding similarity instead, with no position
  factor), the Yes/No probabilities (P(Yes) is 1 or 0) and the KV cache (every step pays for
  the whole prompt).

The graph the searcher reads needs only three things (a
:class:`~hrefine.garlic.GarlicGraph` has them, a hand-built object will do):

- ``tree``: a :class:`~hrefine.tree.Tree` whose nodes carry the texts, levels and document
  order, with embeddings set (rows never set count as similarity 0);
- ``top_level() -> list[int]``: the ids the visited set starts with;
- ``edge_arrays() -> (parents, children, weights)``: 1-D arrays of the same length, one entry
  per edge of ``E`` (``E[parent, child] = weight``).

Optional: ``options`` (a :class:`GarlicOptions`, the searcher's defaults) and ``embedder`` (the
model the node embeddings came from, used for the query).
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import numpy as np

from hrefine._query import check_query, check_query_vector
from hrefine.budget import TokenCounter, get_counter
from hrefine.errors import EmptyInputError, InputTypeError, TreeError
from hrefine.garlic.extractive import default_search_lm
from hrefine.garlic.options import GarlicOptions, one_llm

# The readers are named here as they were when they lived in this module (tests use them).
from hrefine.garlic.readers import PromptReader as _PromptReader
from hrefine.garlic.readers import Reader as _Reader
from hrefine.garlic.readers import SessionReader as _SessionReader
from hrefine.garlic.readers import Verdict as _Verdict  # noqa: F401
from hrefine.garlic.readers import parse_yes_no, search_prompt
from hrefine.garlic.search_result import SearchResult, SearchStep, VisitedNode
from hrefine.garlic.summarise import llm_generator
from hrefine.garlic.walk import candidate_scores
from hrefine.models._lm_name import model_or_name
from hrefine.models.lexical import with_match
from hrefine.models.text_generator import TextGenerator
from hrefine.options import check_int
from hrefine.results import copy_metadata
from hrefine.tree import Tree

__all__ = [
    "STOP_REASONS",
    "GarlicSearcher",
    "SearchResult",
    "SearchStep",
    "VisitedNode",
    "candidate_scores",
    "parse_yes_no",
    "search_prompt",
]

#: Why a search stopped: the LLM said Yes ``patience`` times, ``max_steps`` nodes were added,
#: the next node would pass ``max_tokens`` (or the LocalLM's context window), the next leaf would
#: pass ``fill_tokens``, or no unvisited node was left.
STOP_REASONS = ("patience", "max_steps", "max_tokens", "filled", "exhausted")


class GarlicSearcher:
    """GARLIC's dynamic graph search over a built graph (see the module docstring).

    Parameters
    ----------
    graph:
        A :class:`~hrefine.garlic.GarlicGraph`, or any object with ``tree``, ``top_level()`` and
        ``edge_arrays()`` (see the module docstring).
    llm:
        A :class:`~hrefine.models.LocalLM` (attention mode), or a ``str -> str`` callable (sync
        or async) or :class:`~hrefine.models.TextGenerator` (prompt-only mode). ``None``: the
        options' ``lm``; else, for a graph with attention edges, the embedded
        :func:`~hrefine.models.default_lm`, and otherwise the no-model
        :class:`~hrefine.garlic.extractive.ExtractiveGarlicLM`.
    lm:
        The same as ``llm`` (its earlier name); give one of them.
    embedder:
        Embeds the query; it must be the model the node embeddings came from. ``None``: the
        graph's ``embedder`` when it has one, else the options', else the embedded default.
    options:
        A :class:`GarlicOptions`; default the graph's ``options`` (or the defaults).
    **settings:
        Single fields of the options to change (``patience``, ``embedding_weight``...).

    Raises
    ------
    InputTypeError
        When ``graph`` lacks ``tree``, ``top_level`` or ``edge_arrays``.
    TreeError
        When the edge arrays do not fit the tree.
    ConfigError
        When both ``llm`` and ``lm`` are given, or a setting is out of range.
    """

    def __init__(
        self,
        graph: Any,
        *,
        llm: Any = None,
        lm: Any = None,
        embedder: Any = None,
        options: GarlicOptions | None = None,
        **settings: Any,
    ) -> None:
        missing = [n for n in ("tree", "top_level", "edge_arrays") if not hasattr(graph, n)]
        if missing or not isinstance(graph.tree, Tree):
            msg = (
                f"graph must be a GarlicGraph or have tree (an hrefine Tree), top_level() and "
                f"edge_arrays(); {type(graph).__name__} lacks {', '.join(missing) or 'a Tree'}"
            )
            raise InputTypeError(msg)
        model = one_llm(lm, llm)
        base = options if options is not None else getattr(graph, "options", None)
        self.options = GarlicOptions.build(base, **settings)
        self.graph = graph
        self._lm_arg = model_or_name(model if model is not None else self.options.lm)
        self._embedder_arg = embedder
        self.counter: TokenCounter = get_counter(self.options.tokenizer)
        self.edges = self._edge_arrays(graph)
        self._lm: Any = None
        self._generator: TextGenerator | None = None
        self._embedder: Any = None

    @staticmethod
    def _edge_arrays(graph: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        parents, children, weights = (np.asarray(x).reshape(-1) for x in graph.edge_arrays())
        n = len(graph.tree)
        if not len(parents) == len(children) == len(weights):
            msg = (
                f"edge_arrays() gave {len(parents)} parents, {len(children)} children and "
                f"{len(weights)} weights; expected one of each per edge"
            )
            raise TreeError(msg)
        ids = np.concatenate([parents, children]).astype(np.int64)
        if ids.size and (ids.min() < 0 or ids.max() >= n):
            msg = f"edge_arrays() names node {int(ids.max())} outside the tree of {n} nodes"
            raise TreeError(msg)
        return parents.astype(np.int64), children.astype(np.int64), weights.astype(np.float64)

    # -- models (made on first use) ---------------------------------------------------------
    @property
    def lm(self) -> Any:
        """The LLM (made on first use: see ``llm`` in the class docstring)."""
        if self._lm is None:
            given = self._lm_arg
            self._lm = given if given is not None else default_search_lm(self.graph, self.options)
        return self._lm

    @property
    def mode(self) -> str:
        """``"attention"`` for a LocalLM, ``"prompt"`` for any other LLM."""
        lm = self.lm
        return "attention" if hasattr(lm, "session") and hasattr(lm, "chat_prompt") else "prompt"

    @property
    def embedder(self) -> Any:
        """The query embedder (loaded on first use)."""
        if self._embedder is None:
            from hrefine.models import get_embedder

            if self._embedder_arg is not None:
                self._embedder = get_embedder(self._embedder_arg)
            elif getattr(self.graph, "embedder", None) is not None:
                self._embedder = self.graph.embedder  # the model of the node vectors
            else:
                self._embedder = get_embedder(self.options.embedder)
        return self._embedder

    def _text_generator(self) -> TextGenerator:
        if self._generator is None:
            self._generator = llm_generator(self.lm, self.options.llm_timeout)
        return self._generator

    # -- the search -------------------------------------------------------------------------
    def similarities(self, query: str, query_vector: Any = None) -> np.ndarray:
        """``s``: cosine similarity of ``query`` to every node, negative values at 0.

        Parameters
        ----------
        query:
            The question.
        query_vector:
            Its embedding, used instead of embedding ``query`` (see :meth:`search`).

        Returns
        -------
        numpy.ndarray
            ``float64`` array with one value per node (0 for nodes never embedded).
        """
        tree = self.graph.tree
        matrix = tree.embeddings
        fix = None  # a caller's vector: the message asks for one from the nodes' model
        if query_vector is None and matrix is not None:
            query_vector = self.embedder.embed_query(query)
            fix = "search with the embedder the graph was built with"
        if query_vector is not None:  # a caller's is checked even when no node is embedded
            q = check_query_vector(query_vector, matrix, nodes="the graph's nodes", fix=fix)
        if matrix is None:
            return np.zeros(len(tree), dtype=np.float64)
        rows = np.asarray(matrix, dtype=np.float64)
        norms = np.linalg.norm(rows, axis=1) * (np.linalg.norm(q) or 1.0)
        cos = np.divide(rows @ q, norms, out=np.zeros(len(rows)), where=norms > 0)
        return np.asarray(np.maximum(cos, 0.0))

    def _open_reader(self, query: str, similarity: np.ndarray) -> _Reader:
        """The source of attention and Yes/No answers for one search (tests replace it)."""
        if self.mode == "attention":
            return _SessionReader(self.lm, self.options.search_prompt, query)
        return _PromptReader(
            self._text_generator(), self.options.search_prompt, query, similarity, self.counter
        )

    def search(
        self,
        query: str,
        *,
        patience: int | None = None,
        max_steps: int | None = None,
        max_tokens: int | None = None,
        fill_tokens: int | None = None,
        query_vector: Any = None,
    ) -> SearchResult:
        """Search the graph for what answers ``query``.

        Parameters
        ----------
        query:
            The question.
        patience:
            Stop after this many Yes answers (default: the options').
        max_steps:
            Most nodes to add to the visited set (default: the options').
        max_tokens:
            Most tokens of visited nodes, top level included (budget tokenizer; default: the
            options'). The top level is always read (``notes`` says when it alone passes the
            limit); a node that would pass the limit stops the search. In attention mode a node
            that would overflow the LM's context window (``max_position_embeddings``) stops it
            the same way, with a note.
        fill_tokens:
            Read on past Yes answers until the visited leaf chunks hold this many tokens: the
            search stops (``"filled"``) when the next node is a leaf that would pass it. None
            (default): the LLM's Yes stops the search, as in the paper.
        query_vector:
            The query's embedding, which the similarity ``s`` is measured from instead of
            embedding ``query`` (the LLM and the BM25 match still read ``query``); it must
            come from the model the nodes were embedded with. None: ``query`` is embedded.

        Returns
        -------
        SearchResult
            The visited nodes, the Yes/No trace, token counts and why it stopped.

        Raises
        ------
        InputTypeError
            When ``query`` is not a string, or ``query_vector`` not a flat vector of numbers.
        EmptyInputError
            When ``query`` is blank or the graph has no top-level node.
        ConfigError
            When ``query_vector`` is not of the nodes' embedding size, or holds NaN or infinity.
        """
        if not isinstance(query, str):
            msg = f"query must be a string, got {type(query).__name__}"
            raise InputTypeError(msg)
        # Lone surrogates become U+FFFD here: the query goes into every prompt, and no LLM
        # client or tokenizer encodes them.
        query = check_query(query, used_for="pass the question to search for")
        limits = self._limits(patience, max_steps, max_tokens)
        check_int("fill_tokens", fill_tokens, minimum=1, none=True)
        started = time.perf_counter()
        tree: Tree = self.graph.tree
        top = tree.sort_by_order(dict.fromkeys(int(i) for i in self.graph.top_level()))
        if not top:
            msg = "the graph has no top-level node to start the search from; build it first"
            raise EmptyInputError(msg)
        similarity = self.similarities(query, query_vector)
        reader = self._open_reader(query, similarity)
        texts = [n.text for n in tree]
        match = with_match(query, texts, similarity, self.options.lexical_weight)
        run = _Run(self, tree, reader, similarity, match)
        for node_id in top:
            run.read(node_id, step=0, score=None)
        run.ask(None)
        stopped_by = run.walk(*limits, fill_tokens)
        order = tree.sort_by_order(v.id for v in run.visited)
        return SearchResult(
            query=query,
            visited=run.finished(),
            trace=run.trace,
            prefilled_tokens=reader.prefilled_tokens,
            recompute_tokens=run.recompute_tokens,
            stopped_by=stopped_by,
            seconds=time.perf_counter() - started,
            mode="attention" if reader.positional else "prompt",
            notes=run.notes,
            document_order=order,
        )

    def _limits(
        self, patience: int | None, max_steps: int | None, max_tokens: int | None
    ) -> tuple[int, int, int | None]:
        opts = self.options
        patience = opts.patience if patience is None else patience
        max_steps = opts.max_steps if max_steps is None else max_steps
        max_tokens = opts.max_tokens if max_tokens is None else max_tokens
        check_int("patience", patience, minimum=1)
        check_int("max_steps", max_steps, minimum=1)
        check_int("max_tokens", max_tokens, minimum=1, none=True)
        return patience, max_steps, max_tokens


class _Run:
    """The state of one search: the visited set, ``a``, the trace and the counts."""

    def __init__(
        self,
        searcher: GarlicSearcher,
        tree: Tree,
        reader: _Reader,
        similarity: np.ndarray,
        relevance: np.ndarray,
    ) -> None:
        self.searcher = searcher
        self.tree = tree
        self.reader = reader
        self.similarity = similarity  # s: the cosine (also prompt mode's a)
        self.relevance = relevance  # s with the BM25 match fused in: what candidates rank by
        self._costs: dict[int, int] = {}  # tokens of each node, counted once
        self.attention = np.zeros(len(tree), dtype=np.float64)
        self.visited: list[VisitedNode] = []
        self.seen: set[int] = set()
        self.trace: list[SearchStep] = []
        self.notes: list[str] = []
        self.tokens = 0
        self.leaf_tokens = 0
        self.recompute_tokens = 0
        self.document_order = tree.sort_by_order(range(len(tree)))
        self._step_start = time.perf_counter()
        self._prefilled_before = 0

    def read(self, node_id: int, *, step: int, score: float | None) -> None:
        node = self.tree[node_id]
        raw = self.reader.add(node_id, node.text)
        position = len(self.visited) + 2  # the query is position 1
        value = raw * position if self.reader.positional else raw
        self.attention[node_id] = value
        self.seen.add(node_id)
        cost = self.cost(node_id)
        self.tokens += cost
        if node.level == 0:
            self.leaf_tokens += cost
        self.visited.append(
            VisitedNode(
                node_id,
                node.text,
                node.level,
                step,
                score,
                value,
                float("nan"),
                copy_metadata(node.metadata),
                min(1.0, float(self.similarity[node_id])),
            )
        )

    def ask(self, node_id: int | None) -> bool:
        verdict = self.reader.ask()
        step = len(self.trace)
        said_yes = verdict.p_yes > verdict.p_no
        if verdict.answer is not None and parse_yes_no(verdict.answer) is None:
            self.notes.append(
                f"step {step}: the reply {verdict.answer[:60]!r} is neither Yes nor No; taken as No"
            )
        prefilled = self.reader.prefilled_tokens
        now = time.perf_counter()
        self.trace.append(
            SearchStep(
                step,
                node_id,
                verdict.p_yes,
                verdict.p_no,
                said_yes,
                prefilled - self._prefilled_before,
                now - self._step_start,
                verdict.answer,
            )
        )
        self._prefilled_before, self._step_start = prefilled, now
        self.recompute_tokens += verdict.recompute_tokens
        return said_yes

    def walk(
        self, patience: int, max_steps: int, max_tokens: int | None, fill_tokens: int | None
    ) -> str:
        """Add nodes until a stop rule holds; return which one."""
        yes = sum(s.said_yes for s in self.trace)
        steps = 0
        opts = self.searcher.options
        if max_tokens is not None and self.tokens > max_tokens:  # read whatever the budget
            self.notes.append(f"the top level alone holds {self.tokens} tokens, over {max_tokens}")
        while True:
            if yes >= patience and fill_tokens is None:
                return "patience"
            if steps >= max_steps:
                return "max_steps"
            candidates = [i for i in self.document_order if i not in self.seen]
            if not candidates:
                return "exhausted"
            scores = candidate_scores(
                self.searcher.edges,
                self.attention,
                self.relevance,
                candidates,
                opts.embedding_weight,
            )
            best = int(np.argmax(scores))  # the first of equal scores: document order
            node_id = candidates[best]
            cost = self.cost(node_id)
            if max_tokens is not None and self.tokens + cost > max_tokens:
                return "max_tokens"
            is_leaf = self.tree[node_id].level == 0
            if fill_tokens is not None and is_leaf and self.leaf_tokens + cost > fill_tokens:
                # Passed over unread, as chunk retrieval passes a chunk that does not fit; the
                # search reads on while a shorter leaf still fits the room left.
                self.seen.add(node_id)
                if self._leaf_fits(fill_tokens - self.leaf_tokens):
                    continue
                if yes:
                    self.notes.append(
                        f"read on past {yes} Yes answer(s) to fill {fill_tokens} tokens of leaves"
                    )
                return "filled"
            if not self.reader.fits(self.tree[node_id].text):
                self.notes.append(
                    f"stopped before node {node_id}: it does not fit the LM's context window"
                )
                return "max_tokens"
            steps += 1
            self.read(node_id, step=steps, score=float(scores[best]))
            yes += self.ask(node_id)

    def cost(self, node_id: int) -> int:
        """Tokens of a node's text (budget tokenizer), counted on first use."""
        if node_id not in self._costs:
            self._costs[node_id] = self.searcher.counter.count(self.tree[node_id].text)
        return self._costs[node_id]

    def _leaf_fits(self, room: int) -> bool:
        """Whether a leaf not yet read or passed over is at most ``room`` tokens."""
        tree = self.tree
        return any(
            tree[i].level == 0 and self.cost(i) <= room
            for i in self.document_order
            if i not in self.seen
        )

    def finished(self) -> list[VisitedNode]:
        """The visited nodes with the P(Yes) of the question asked right after each."""
        p_of = {s.step: s.p_yes for s in self.trace}
        return [dataclasses.replace(v, p_yes=p_of[v.step]) for v in self.visited]
