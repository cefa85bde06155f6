"""What GARLIC's search returns: the visited nodes, the trace of Yes/No steps, why it stopped
and what it cost (:class:`SearchResult`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hrefine._renderers import render

__all__ = ["SearchResult", "SearchStep", "VisitedNode"]


@dataclass(frozen=True)
class VisitedNode:
    """One node the search read, in the order it was read."""

    id: int
    """Node id in the graph's tree."""
    text: str
    """The node's text."""
    level: int
    """0 for a leaf chunk, 1 and up for summary points."""
    step: int
    """0 for the top-level nodes the search starts with, ``k`` for the node added at step ``k``."""
    score: float | None
    """``z_n + embedding_weight * s_n`` when it was picked; ``None`` for the top-level nodes."""
    attention: float
    """Its ``a_i``: attention mass to the query times its position in the prompt (attention
    mode), or its query similarity (prompt-only mode).
    """
    p_yes: float
    """P("Yes") asked right after it was read (the top level's shared step-0 answer)."""
    metadata: dict[str, Any] = field(default_factory=dict)
    """A copy of the node's metadata (a leaf's source and character offsets)."""
    similarity: float = 0.0
    """Its ``s``: the query's cosine similarity to it (negative values at 0), in [0, 1] and
    comparable across nodes and searches (``score`` is relative to the step's candidates).
    """


@dataclass(frozen=True)
class SearchStep:
    """One Yes/No question of the search.

    p_yes, p_no:
        Probabilities of "Yes" and "No" as the next token, renormalised over the two (1 and 0
        from a text reply in prompt-only mode).
    said_yes:
        ``p_yes > p_no``.
    new_tokens:
        Tokens this step ran through the model: the new node and the end-of-turn suffix with a
        KV cache; the whole prompt in prompt-only mode (budget tokenizer).
    seconds:
        Wall time of the step (reading the node and asking).
    answer:
        The LLM's text reply (prompt-only mode), else ``None``.
    """

    step: int
    """0 after the top level, then 1, 2, ... after each added node."""
    node_id: int | None
    """The node added before this question (``None`` at step 0)."""
    p_yes: float
    p_no: float
    said_yes: bool
    new_tokens: int
    seconds: float
    answer: str | None = None


@dataclass(frozen=True)
class SearchResult:
    """What :meth:`GarlicSearcher.search` read, and why it stopped."""

    query: str
    """The question."""
    visited: list[VisitedNode]
    """The nodes read, in reading order (the top level first)."""
    trace: list[SearchStep]
    """One :class:`SearchStep` per Yes/No question."""
    prefilled_tokens: int
    """Tokens the model actually ran (the KV-cached session's total; the sum of every whole
    prompt in prompt-only mode).
    """
    recompute_tokens: int
    """Tokens that recomputing the whole prompt at every step would have run."""
    stopped_by: str
    """One of :data:`STOP_REASONS`."""
    seconds: float
    """Wall time of the whole search."""
    mode: str
    """``"attention"`` or ``"prompt"``."""
    notes: list[str] = field(default_factory=list)
    """Anything worth knowing (replies that were neither Yes nor No)."""
    document_order: list[int] = field(default_factory=list)
    """The visited ids in document order."""

    @property
    def said_yes(self) -> bool:
        """Whether the LLM said Yes at least once."""
        return any(s.said_yes for s in self.trace)

    def texts_in_document_order(self) -> list[str]:
        """The visited nodes' texts, in document order (a summary before its first chunk)."""
        by_id = {v.id: v.text for v in self.visited}
        return [by_id[i] for i in self.document_order]

    def to_html(self, graph: Any = None) -> str:
        """A self-contained, script-free HTML report of this search (and ``graph``'s levels)."""
        return render(self, graph)
