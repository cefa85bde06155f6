"""What :meth:`~hrefine.longrefiner.LongRefiner.refine` returns: the kept text per document,
every node's scores, what was dropped and why, and the timings."""

from __future__ import annotations

import dataclasses

import numpy as np

from hrefine._renderers import render
from hrefine.longrefiner.analyze import QueryAnalysis
from hrefine.longrefiner.document import StructuredDocument
from hrefine.longrefiner.select import GlobalSelection, Truncation
from hrefine.tree import Tree

__all__ = ["RefineResult", "RefinedDocument"]


@dataclasses.dataclass
class RefinedDocument:
    """One input document's part of a :class:`RefineResult`.

    local, global_, combined:
        Every node's local score, global score and combined score (arrays indexed by node id).
    selection:
        What step 3 chose in this document.
    dropped:
        Every node left out, mapped to why (``"over_budget"``, ``"expanded_into_children"``…).
        A kept node is never in it, not even one cut to fit (see ``truncated``).
    truncated:
        Kept nodes cut to fit the budget, with how much of each was kept and left out (only
        when the budget was below every unit: :attr:`RefineResult.trimmed`).
    """

    index: int
    """Position of the document in the input."""
    text: str
    """The kept text: the kept units in document order, joined by the separator (``""`` when
    nothing of this document was kept).
    """
    kept: list[int]
    """Ids of the kept nodes of ``structure.tree``, in document order."""
    tokens: int
    """Tokens of ``text`` in the budget's tokenizer."""
    score: float | None
    """The best combined score among the kept nodes (None when nothing was kept)."""
    structure: StructuredDocument
    """The document's section tree."""
    local: np.ndarray
    global_: np.ndarray
    combined: np.ndarray
    selection: GlobalSelection
    dropped: dict[int, str]
    truncated: dict[int, Truncation] = dataclasses.field(default_factory=dict)
    repeat_of: int | None = None
    """The earlier input document this one repeats word for word, when it does: it was read
    once, as that one, and keeps nothing of its own."""

    @classmethod
    def skipped(cls, index: int, *, repeat_of: int | None = None) -> RefinedDocument:
        """The part of an input that was not read: it had no text, or it repeats input
        ``repeat_of``. Nothing is kept and no node is scored."""
        tree = Tree()
        tree.add_node("", kind="document", order=0, metadata={"start": 0, "end": 0})
        none = np.zeros(0, dtype=np.float64)
        blank = StructuredDocument("", tree, "empty")
        return cls(
            index, "", [], 0, None, blank, none, none, none, GlobalSelection(), {}, {}, repeat_of
        )


@dataclasses.dataclass
class RefineResult:
    """The outcome of :meth:`LongRefiner.refine`."""

    query: str
    """The question."""
    documents: list[RefinedDocument]
    """One entry per input document, in input order."""
    analysis: QueryAnalysis
    """Step 1's outcome (the weights used)."""
    budget: int
    """The token budget asked for."""
    tokens: int
    """Tokens of the output (all documents' texts joined), never over ``budget``."""
    tokenizer: str
    """Name of the tokenizer that counted them."""
    separator: str
    """What joins kept units and documents in :attr:`text`."""
    timings: dict[str, float]
    """Seconds per step: ``"analysis"``, ``"structure"``, ``"selection"`` (step 3),
    ``"scoring"`` (local scores), ``"fill"`` (the budgeted selection) and ``"total"``.
    """
    trimmed: bool = False
    """The budget was below every unit: the best paragraph was cut to fit (its document's
    ``truncated`` says by how much, and :attr:`notes` has a note)."""
    notes: list[str] = dataclasses.field(default_factory=list)
    """Fallbacks and repairs, in order (also in each structure's ``notes``)."""

    @property
    def text(self) -> str:
        """The kept text of every document, in input order, joined by the separator."""
        return self.separator.join(d.text for d in self.documents if d.text)

    def to_html(self) -> str:
        """A self-contained HTML report: each document's section tree with every section's
        local, global and combined score, what was kept and what was dropped and why."""
        return render(self)
