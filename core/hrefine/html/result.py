"""What :class:`~hrefine.html.HtmlPruner` returns: the pruned HTML and a report on every block."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from hrefine._renderers import NOTEBOOK, render

# Reasons a block is not in the output (see hrefine.html.reasons), importable from here too.
from hrefine.html.reasons import EMPTY as EMPTY
from hrefine.html.reasons import FAILED as FAILED
from hrefine.html.reasons import HEADING_ALONE as HEADING_ALONE
from hrefine.html.reasons import OVER_BUDGET as OVER_BUDGET
from hrefine.html.reasons import REPEAT as REPEAT
from hrefine.html.reasons import TRUNCATED as TRUNCATED

__all__ = ["BlockReport", "PruneResult"]


@dataclass
class BlockReport:
    """One block of the input and what became of it."""

    block_id: int
    """Node id in the block tree of the stage that decided about the block."""
    doc: int
    """Index of the input document the block comes from."""
    tag_path: str
    """Real tag names from the root, e.g. ``"html>body>div>table"``."""
    text: str
    """The block's plain text."""
    tokens: int
    """Token cost of the block's HTML (budget tokenizer)."""
    stage1_score: float | None
    """Score of the embedding/BM25 stage (None if not scored)."""
    stage2_score: float | None
    """Score of the generative stage (None if not scored)."""
    rank: int
    """0 for the best-scored block of the deciding stage, 1 for the next, and so on."""
    kept: bool
    """Whether the block is in the output."""
    reason: str | None
    """Why it is not: ``"over_budget"`` (it did not fit when its turn came),
    ``"heading_alone"`` (a heading none of whose section's text was kept), ``"empty"`` (its
    document had no text), ``"failed"`` (its document could not be read), ``"repeat"`` (its
    document is the same page as an earlier one, pruned once); ``"truncated"`` for a kept
    block cut to fit; None when kept whole.
    """
    element: int | None = None
    """Where the block lies in ``PruneResult.cleaned[doc]``: the index of its element among
    that document's elements in document order (0 is ``<html>``), as
    ``lxml``'s ``root.iter()`` lists them after parsing ``cleaned[doc]``. None when the
    block has no element (an empty document) or could not be placed.
    """
    own_text: bool = False
    """True when the block is only its element's own text (an element too big to be one block,
    whose children are blocks of their own); False when it is the element's whole content.
    """


@dataclass
class PruneResult:
    """The pruned HTML of one or more documents, with provenance.

    :meth:`to_html` writes a self-contained HTML report of the result (each block outlined on
    the cleaned page, kept or dropped, with its scores and rank); in a notebook the result
    shows that report inline.

    Attributes
    ----------
    html:
        All kept documents' pruned HTML, joined with ``"\\n"``; ``tokens`` of it never exceed
        ``budget``.
    """

    html: str
    documents: list[str]
    """Pruned HTML per input document (``""`` for a document all of whose blocks were
    outranked; the set as a whole is never empty).
    """
    blocks: list[BlockReport]
    """A report on every block, outer blocks first (a table's rows after the blocks beside
    the table); ``element`` gives a block's place in the document, where it has one.
    """
    query: str
    """The question the output was pruned for."""
    budget: int
    """The token budget asked for."""
    tokens: int
    """Tokens of ``html``."""
    original_tokens: int
    """Tokens of the cleaned input documents."""
    cleaned: list[str]
    """Cleaned HTML per input document."""
    tokenizer: str
    """Name of the tokenizer that counted the budget."""
    stats: dict[str, Any] = field(default_factory=dict)
    """Extra numbers: ``"stage1_tokens"``, ``"renders"``, ``"truncated"`` (the best block was
    cut to fit), and for the generative stage ``"prefilled_tokens"``, ``"prompt_tokens"``,
    ``"lm_calls"``.
    """

    @property
    def kept_blocks(self) -> list[BlockReport]:
        """Reports of the blocks in the output, in the order of ``blocks``."""
        return [b for b in self.blocks if b.kept]

    @property
    def compression(self) -> float:
        """Output tokens over cleaned input tokens."""
        return self.tokens / self.original_tokens if self.original_tokens else 0.0

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form (for reports and the CLI)."""
        return asdict(self)

    def to_html(self, *, title: str | None = None) -> str:
        """A self-contained HTML report of what was kept and why.

        See :func:`hrefine.html.render_report`; write it to a file and open it in a browser.
        """
        return render(self, title=title)

    def _repr_html_(self) -> str:
        """The report in a sandboxed frame, shown inline by Jupyter and other notebooks."""
        return render(self, kind=NOTEBOOK)
