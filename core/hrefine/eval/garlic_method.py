"""GARLIC as an evaluated method: one summary graph per document, searched per question.

:class:`GarlicCompressor` builds a :class:`~hrefine.garlic.GarlicGraph` the first time it sees a
document (kept in memory, keyed by the text's hash), so every question and budget on that document
is answered from the same graph. Each ``(question, budget)`` runs a
:class:`~hrefine.garlic.GarlicSearcher` limited to the budget, and returns the visited nodes' texts
(chunks in document order, then summary points), fitted to the budget (never over). Each call is
recorded as a :class:`GarlicCall` (visited nodes, steps, Yes, pre-filled against recomputed tokens,
seconds).

:class:`ExtractiveGarlicLM` is a stand-in LLM that needs no model: its "summary points" are the
leading sentences of its inputs, and it answers the search's Yes/No question by a word-overlap
rule. It is instant, and it is *not* GARLIC's LLM: with it the graph has embedding edges and the
search runs in prompt-only mode (no attention, no KV cache). It is what
:class:`~hrefine.garlic.GarlicGraph` builds with when given no LLM, so it is this method's default
too.

Registered in :mod:`hrefine.eval.methods` as ``"garlic"`` (option
``llm="extractive"|"default"|<model folder>``; ``"default"`` is the embedded SmolLM2).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hrefine.budget import TokenCounter, get_counter
from hrefine.errors import ConfigError
from hrefine.eval.baselines import as_plain_text
from hrefine.eval.store_method import LLM_CHOICES, StoreCompressor, document_digest
from hrefine.eval.text import SEPARATOR, truncate_to_tokens
from hrefine.garlic.extractive import ExtractiveGarlicLM
from hrefine.garlic.options import GarlicOptions
from hrefine.garlic.visited import fit_to_budget
from hrefine.tree_order import chunks_first

__all__ = [
    "LLM_CHOICES",
    "ExtractiveGarlicLM",
    "GarlicCall",
    "GarlicCompressor",
]

#: Settings that change only the search, not the graph (left out of the disk cache key).
_SEARCH_ONLY = frozenset(
    {
        "search_prompt",
        "patience",
        "max_steps",
        "max_tokens",
        "fill",
        "k",
        "embedding_weight",
        "lexical_weight",
        "llm_timeout",
    }
)


@dataclass(frozen=True)
class GarlicCall:
    """One ``compress`` call of :class:`GarlicCompressor`."""

    document: str
    """Hex digest of the document's text."""
    query: str
    """The question."""
    budget: int
    """``max_tokens`` of the call."""
    visited: int
    """Nodes the search read (top level included)."""
    leaves: int
    """How many of them were leaf chunks."""
    steps: int
    """Nodes the search added after the top level."""
    said_yes: bool
    """Whether the LLM said Yes before the search stopped."""
    stopped_by: str
    """Why the search stopped (see :data:`hrefine.garlic.search.STOP_REASONS`)."""
    prefilled_tokens: int
    """Tokens the LLM actually ran (with the KV cache in attention mode)."""
    recompute_tokens: int
    """Tokens recomputing the whole prompt at every step would have run."""
    tokens_out: int
    """Tokens of the returned text."""
    seconds: float
    """Wall time of the search and the fitting (the graph's build is not included)."""
    build_seconds: float
    """Seconds the document's graph took to build in this call (0 when it was reused)."""


class GarlicCompressor(StoreCompressor):
    """GARLIC for :mod:`hrefine.eval`: a graph per document, searched for each question.

    Parameters
    ----------
    llm:
        ``"extractive"`` (:class:`ExtractiveGarlicLM`, no model: the library's default, and
        this one's), ``"default"`` (the embedded SmolLM2-135M-Instruct, the paper's model:
        attention edges, KV-cached search), a local model
        folder or cached Hugging Face name, or any LLM :class:`~hrefine.garlic.GarlicGraph`
        takes (a LocalLM, a ``str -> str`` callable, a TextGenerator).
    tokenizer:
        The evaluation's token counter; leaves, budgets and outputs are counted in it.
    embedder:
        Anything :func:`hrefine.models.get_embedder` takes (None: the embedded all-MiniLM-L6-v2).
    name:
        Report name (default ``"garlic"``).
    keep_records:
        Keep a :class:`GarlicCall` per call in :attr:`records`.
    cache_dir, llm_name:
        The disk cache of built graphs (see :class:`~hrefine.eval.store_method.StoreCompressor`):
        a rerun with a slow LLM loads each graph instead of building it again.
    **settings:
        :class:`~hrefine.garlic.GarlicOptions` fields (``chunk_tokens``, ``patience``,
        ``summary_tokens``...), with the library's defaults (128-token leaves).
        ``max_tokens`` is each call's budget and cannot be set here.

    Attributes
    ----------
    builds:
        Graphs built so far (one per distinct document while it stays cached).
    loads:
        Graphs loaded from ``cache_dir``.
    build_seconds:
        Seconds spent building graphs.
    llm_calls:
        Summary calls made by the builds.
    records:
        One :class:`GarlicCall` per ``compress`` call.
    graph_stats:
        Each built graph's ``stats`` (its LLM settings left out), by the document's hex
        digest, kept after the graph itself leaves the cache.
    """

    cache_kind = "garlic"
    calls_stat = "calls"

    def __init__(
        self,
        *,
        llm: Any = "extractive",
        tokenizer: Any = None,
        embedder: Any = None,
        name: str = "garlic",
        keep_records: bool = True,
        cache_dir: str | os.PathLike[str] | None = None,
        llm_name: str | None = None,
        **settings: Any,
    ) -> None:
        if "max_tokens" in settings:
            msg = "max_tokens is each call's budget; do not set it as an option of 'garlic'"
            raise ConfigError(msg)
        self.counter: TokenCounter = get_counter(tokenizer)
        self.options = GarlicOptions.build(tokenizer=self.counter, **settings)
        super().__init__(
            llm=llm, embedder=embedder, name=name, cache_dir=cache_dir, llm_name=llm_name
        )
        self.keep_records = keep_records
        self.records: list[GarlicCall] = []
        self.graph_stats: dict[str, dict[str, Any]] = {}

    # -- models ---------------------------------------------------------------------------------
    def extractive_llm(self) -> ExtractiveGarlicLM:
        """GARLIC's no-model stand-in (:class:`ExtractiveGarlicLM`) with the options' prompts."""
        return ExtractiveGarlicLM(self.options.summary_prompt, self.options.search_prompt)

    # -- graphs ---------------------------------------------------------------------------------
    def graph_for(self, document: str) -> Any:
        """The document's :class:`~hrefine.garlic.GarlicGraph`, from memory or built from its
        plain text (HTML is converted first).

        Raises
        ------
        EmptyInputError
            The document has no text.
        GenerationError
            The LLM wrote no summary point for a batch.
        """
        graph, _ = self._graph(document)
        return graph

    def build_settings(self) -> dict[str, Any]:
        """The graph settings (search-only ones left out of the cache key)."""
        return {k: v for k, v in self.options.plain().items() if k not in _SEARCH_ONLY}

    def _graph(self, document: str) -> tuple[Any, float]:
        from hrefine.garlic import GarlicGraph

        def build() -> Any:
            return GarlicGraph.build(
                as_plain_text(document), lm=self.llm, embedder=self.embedder, options=self.options
            )

        def load(folder: Path) -> Any:
            search = {name: getattr(self.options, name) for name in _SEARCH_ONLY}
            return GarlicGraph.load(
                folder, embedder=self.embedder, **search, lm=self.llm, tokenizer=self.counter
            )

        graph, spent = self.stored(document, build, load)
        digest = document_digest(document).hex()
        if digest not in self.graph_stats:  # once per document, not on every memory hit
            self.graph_stats[digest] = {k: v for k, v in graph.stats.items() if k != "llm"}
        return graph, spent

    def compress(self, document: str, query: str, max_tokens: int) -> str:
        """Search the document's graph for ``query`` (reading on until leaves fill
        ``max_tokens`` when the options' ``fill`` is on, else stopping at the LLM's Yes within
        ``max_tokens``); return the visited texts, the chunks in document order and then the
        summary points (:func:`hrefine.tree_order.chunks_first`), joined by blank lines
        and fitted to ``max_tokens`` by :func:`hrefine.garlic.visited.fit_to_budget` (leaves
        first)."""
        from hrefine.garlic import GarlicSearcher

        graph, built = self._graph(document)
        started = time.perf_counter()
        searcher = GarlicSearcher(graph, lm=self.llm, embedder=self.embedder)
        if self.options.fill:
            result = searcher.search(query, fill_tokens=max_tokens)
        else:
            result = searcher.search(query, max_tokens=max_tokens)
        by_id = {v.id: v for v in result.visited}
        kept = fit_to_budget(result, max_tokens, self.counter, SEPARATOR)
        # a join can count a token more than its parts: the cut keeps it within the budget
        joined = SEPARATOR.join(
            by_id[i].text for i in chunks_first(graph.tree, kept or result.document_order)
        )
        text = truncate_to_tokens(joined, self.counter, max_tokens)
        if self.keep_records:
            self.records.append(
                GarlicCall(
                    document=document_digest(document).hex(),
                    query=query,
                    budget=max_tokens,
                    visited=len(result.visited),
                    leaves=sum(v.level == 0 for v in result.visited),
                    steps=len(result.trace) - 1,
                    said_yes=result.said_yes,
                    stopped_by=result.stopped_by,
                    prefilled_tokens=result.prefilled_tokens,
                    recompute_tokens=result.recompute_tokens,
                    tokens_out=self.counter.count(text),
                    seconds=time.perf_counter() - started,
                    build_seconds=built,
                )
            )
        return text
