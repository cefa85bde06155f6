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
from hrefine.html.reasons import TRUNCATED as TRUNCATED

__all__ = ["BlockReport", "PruneResult"]


@dataclass
class BlockReport:
    """One block of the input and what became of it.

    Attributes
    ----------
    block_id:
        Node id in the block tree of the stage that decided about the block.
    doc:
        Index of the input document the block comes from.
    tag_path:
        Real tag names from the root, e.g. ``"html>body>div>table"``.
    text:
        The block's plain text.
    tokens:
        Token cost of the block's HTML (budget tokenizer).
    stage1_score:
        Score of the embedding/BM25 stage (None if not scored).
    stage2_score:
        Score of the generative stage (None if not scored).
    rank:
        0 for the best-scored block of the deciding stage, 1 for the next, and so on.
    kept:
        Whether the block is in the output.
    reason:
        Why it is not: ``"over_budget"`` (it did not fit when its turn came),
        ``"heading_alone"`` (a heading none of whose section's text was kept), ``"empty"`` (its
        document had no text); ``"truncated"`` for a kept block cut to fit; None when kept
        whole.
    element:
        Where the block lies in ``PruneResult.cleaned[doc]``: the index of its element among
        that document's elements in document order (0 is ``<html>``), as
        ``lxml``'s ``root.iter()`` lists them after parsing ``cleaned[doc]``. None when the
        block has no element (an empty document) or could not be placed.
    own_text:
        True when the block is only its element's own text (an element too big to be one block,
        whose children are blocks of their own); False when it is the element's whole content.
    """

    block_id: int
    doc: int
    tag_path: str
    text: str
    tokens: int
    stage1_score: float | None
    stage2_score: float | None
    rank: int
    kept: bool
    reason: str | None
    element: int | None = None
    own_text: bool = False


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
    documents:
        Pruned HTML per input document (``""`` for a document all of whose blocks were
        outranked; the set as a whole is never empty).
    blocks:
        A report on every block, outer blocks first (a table's rows after the blocks beside
        the table); ``element`` gives a block's place in the document, where it has one.
    query:
        The question the output was pruned for.
    budget:
        The token budget asked for.
    tokenizer:
        Name of the tokenizer that counted the budget.
    tokens:
        Tokens of ``html``.
    original_tokens:
        Tokens of the cleaned input documents.
    cleaned:
        Cleaned HTML per input document.
    stats:
        Extra numbers: ``"stage1_tokens"``, ``"renders"``, ``"truncated"`` (the best block was
        cut to fit), and for the generative stage ``"prefilled_tokens"``, ``"prompt_tokens"``,
        ``"lm_calls"``.
    """

    html: str
    documents: list[str]
    blocks: list[BlockReport]
    query: str
    budget: int
    tokens: int
    original_tokens: int
    cleaned: list[str]
    tokenizer: str
    stats: dict[str, Any] = field(default_factory=dict)

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
