"""Pruning a list of retrieved pages, one outcome per page: what the framework adapters share.

LangChain compressors and LlamaIndex postprocessors both get a list of HTML pages and must give
back one result per page (or leave the page out, visibly). The splitting of a
:class:`~hrefine.html.PruneResult` into per-page outcomes and the choice between one shared
budget and a budget per page live here once; the adapters only convert types.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hrefine._adapter_jobs import job_settings, merged_by_index
from hrefine._query import check_query as _check_query
from hrefine._top_n import TopNRetry
from hrefine.errors import EmptyInputError, HtmlParseError, InputTypeError
from hrefine.html.outcome_metadata import kept_with_metadata, outcome_metadata
from hrefine.models._loop import gather_or_cancel
from hrefine.results import log_dropped, unit_scores

if TYPE_CHECKING:
    from hrefine.html.prune import HtmlPruner
    from hrefine.html.result import PruneResult

logger = logging.getLogger(__name__)

# kept_with_metadata and outcome_metadata live in outcome_metadata; they are imported from
# here too.
__all__ = [
    "DocumentOutcome",
    "PruneJob",
    "check_query",
    "document_outcomes",
    "empty_outcome",
    "kept_with_metadata",
    "log_dropped",
    "outcome_metadata",
    "warn_fragments",
]


@dataclass(frozen=True)
class DocumentOutcome:
    """What pruning did to one input page."""

    index: int
    """Position of the page in the input."""
    html: str
    """The pruned HTML ("" when every block was dropped)."""
    score: float | None
    """Best first-stage score among the kept blocks, raw (None when none was kept)."""
    stage2_score: float | None
    """Best generative-stage score among the kept blocks, when that stage ran."""
    blocks_kept: int
    """Number of the page's blocks kept."""
    blocks_total: int
    """Number of the page's blocks found."""
    budget: int
    """The token budget the page was pruned under."""
    scope: str = "shared"
    """``"shared"`` (all pages against one budget), ``"document"`` (a budget per page) or
    ``"split"`` (``top_n`` pages, each an equal share of the budget: see :class:`PruneJob`).
    """
    page_score: float | None = None
    """Best first-stage score among all the page's blocks, kept or not (None: no block)."""
    relevance: float | None = None
    """``score`` in [0, 1] (:func:`hrefine.results.unit_scores`); set by :class:`PruneJob`."""
    below_top_n: bool = False
    """The page was left out because ``top_n`` more relevant pages were returned."""
    input_format: str | None = None
    """What the page was read as: ``"html"``, ``"markdown"`` or ``"text"``
    (:func:`hrefine.html.formats.detect_format`; None: not known).
    """
    error: str | None = None
    """Why the page could not be read (binary, too large, of a wrong type...), when it could
    not; the other pages were pruned without it.
    """
    repeat_of: int | None = None
    """The earlier input page this one repeats (the same HTML once cleaned), when it does: the
    page was pruned once, as that one.
    """

    @property
    def kept(self) -> bool:
        """True when some of the page survived pruning."""
        return not self.below_top_n and self.blocks_kept > 0 and bool(self.html.strip())

    @property
    def reason(self) -> str | None:
        """Why the page was left out (None: it was not)."""
        if self.kept:
            return None
        if self.error is not None:
            return "could not be read"
        if self.repeat_of is not None:
            return f"the same page as input {self.repeat_of}"
        if self.blocks_total == 0:
            return "no visible text"
        return "below top_n" if self.below_top_n else "no block fitted the budget"


def check_query(query: object) -> str:
    """The query, checked (see :func:`hrefine._query.check_query`)."""
    return _check_query(query, used_for="HtmlRAG ranks the HTML blocks against the query")


def empty_outcome(index: int, budget: int, error: str | None = None) -> DocumentOutcome:
    """The outcome of a page with no text, or that could not be read (``error``): skipped by
    the pruner, reported as dropped."""
    return DocumentOutcome(
        index=index,
        html="",
        score=None,
        stage2_score=None,
        blocks_kept=0,
        blocks_total=0,
        budget=budget,
        scope="document",
        error=error,
    )


def _best(values: list[float | None]) -> float | None:
    present = [float(v) for v in values if v is not None]
    return max(present) if present else None


def document_outcomes(
    result: PruneResult, *, offset: int = 0, scope: str = "shared", indices: Sequence[int] = ()
) -> list[DocumentOutcome]:
    """Split a :class:`~hrefine.html.PruneResult` into one outcome per input page.

    Parameters
    ----------
    result:
        The result of one ``HtmlPruner.prune`` call.
    offset:
        Index of the call's first page among all input pages (per-page pruning).
    scope:
        The budget's scope (see :attr:`DocumentOutcome.scope`).
    indices:
        Index among all input pages of each page of the call (default: ``offset`` onwards).

    Returns
    -------
    list[DocumentOutcome]
        In the order of ``result.documents``.
    """
    outcomes = []
    formats = list(result.stats.get("input_formats") or [])
    failed = {f["document"]: f["error"] for f in result.stats.get("failed_documents", [])}
    repeats = {r["document"]: r["same_as"] for r in result.stats.get("repeated_documents", [])}

    def index(local: int) -> int:
        return indices[local] if indices else offset + local

    for local, html in enumerate(result.documents):
        blocks = [b for b in result.blocks if b.doc == local and b.block_id >= 0]
        kept = [b for b in blocks if b.kept]
        outcomes.append(
            DocumentOutcome(
                index=index(local),
                html=html,
                score=_best([b.stage1_score for b in kept]),
                stage2_score=_best([b.stage2_score for b in kept]),
                blocks_kept=len(kept),
                blocks_total=len(blocks),
                budget=int(result.budget),
                scope=scope,
                page_score=_best([b.stage1_score for b in blocks]),
                input_format=formats[local] if local < len(formats) else None,
                error=failed.get(local),
                repeat_of=index(repeats[local]) if local in repeats else None,
            )
        )
    return outcomes


def score_scale(pruner: HtmlPruner) -> tuple[str, float]:
    """What the pruner's raw block scores are (:func:`hrefine.results.unit_scores`'s
    ``scale``) and how much its BM25 match may add to them."""
    from hrefine.models.lexical import BM25Scorer
    from hrefine.models.scorers import EmbeddingScorer, base_scorer

    scorer = base_scorer(pruner.scorer)
    if isinstance(scorer, BM25Scorer):
        return "relative", 0.0
    extra = float(pruner.options.lexical_weight)
    if isinstance(scorer, EmbeddingScorer):
        return "cosine", extra
    # A scorer may say what its scores are; a cross-encoder's logits are the default guess.
    return str(getattr(scorer, "score_scale", "logit")), extra


@dataclass(frozen=True)
class PruneJob(TopNRetry[DocumentOutcome]):
    """One adapter call: retrieved pages pruned for a query, against one shared budget or a
    budget each.
    """

    pruner: HtmlPruner
    """The configured pruner."""
    pages: Sequence[str]
    """HTML of each retrieved page, in retrieval order."""
    query: str
    """The question."""
    max_tokens: int
    """The budget: for all pages together (``together=True``, as in the paper) or per page."""
    together: bool = True
    """Whether the pages compete for one budget."""
    top_n: int | None = None
    """Most pages returned (None: every page with something kept). The ``top_n`` pages with
    the best block scores are chosen; pruned together, each must keep at least one block,
    and when one would not, each of them is pruned to an equal share of the budget
    instead (scope ``"split"``), so exactly ``min(top_n, pages with text)`` pages come back.
    """
    strict: bool = False
    """Raise :class:`~hrefine.errors.EmptyInputError` when every page is empty; otherwise
    every outcome comes back empty and the reason is logged.
    """

    @classmethod
    def from_fields(
        cls, pruner: HtmlPruner, pages: Sequence[str], query: str, owner: Any
    ) -> PruneJob:
        """The job an adapter's fields describe: its ``max_tokens`` and ``prune_together``
        fields and its :class:`~hrefine.results.ResultOptions` fields (checked)."""
        return cls(pruner, pages, query, together=bool(owner.prune_together), **job_settings(owner))

    # -- sync ------------------------------------------------------------------------------
    def run(self) -> list[DocumentOutcome]:
        """One outcome per page, in input order, with ``relevance`` set."""
        check_query(self.query)
        warn_fragments(self.pages)
        every = range(len(self.pages))
        try:
            outcomes = self._first()
        except (EmptyInputError, HtmlParseError):  # no page has text: say why for each
            return self._nothing(self._alone_each(every, self.max_tokens))
        self._check_failed(outcomes)
        chosen = self._chosen(outcomes)
        if chosen is not None and not self._complete(outcomes, chosen) and self.together:
            outcomes = self._retry(outcomes, chosen)
        return self._finish(outcomes, chosen)

    def _first(self) -> list[DocumentOutcome]:
        every = range(len(self.pages))
        if self.together:
            return self._together(every)
        return _any_text(self._alone_each(every, self.max_tokens))

    def _together(self, indices: Sequence[int]) -> list[DocumentOutcome]:
        pages = [self.pages[i] for i in indices]
        result = self.pruner.prune(pages, self.query, self.max_tokens)
        return document_outcomes(result, indices=list(indices))

    def _alone_each(self, indices: Sequence[int], budget: int) -> list[DocumentOutcome]:
        return [o for i in indices for o in self._alone(i, budget)]

    def _alone(self, i: int, budget: int) -> list[DocumentOutcome]:
        try:
            result = self.pruner.prune([self.pages[i]], self.query, budget)
        except _UNREADABLE as exc:
            return _unread(i, budget, exc)
        return self._alone_outcomes(result, i, budget)

    # -- async -----------------------------------------------------------------------------
    async def arun(self) -> list[DocumentOutcome]:
        """:meth:`run` on the pruner's async path: pages pruned on their own run concurrently."""
        check_query(self.query)
        warn_fragments(self.pages)
        every = range(len(self.pages))
        try:
            outcomes = await self._afirst()
        except (EmptyInputError, HtmlParseError):  # no page has text: say why for each
            return self._nothing(await self._aalone_each(every, self.max_tokens))
        self._check_failed(outcomes)
        chosen = self._chosen(outcomes)
        if chosen is not None and not self._complete(outcomes, chosen) and self.together:
            outcomes = await self._aretry(outcomes, chosen)
        return self._finish(outcomes, chosen)

    async def _afirst(self) -> list[DocumentOutcome]:
        every = range(len(self.pages))
        if self.together:
            return await self._atogether(every)
        return _any_text(await self._aalone_each(every, self.max_tokens))

    async def _atogether(self, indices: Sequence[int]) -> list[DocumentOutcome]:
        pages = [self.pages[i] for i in indices]
        result = await self.pruner.aprune(pages, self.query, self.max_tokens)
        return document_outcomes(result, indices=list(indices))

    async def _aalone_each(self, indices: Sequence[int], budget: int) -> list[DocumentOutcome]:
        groups = await gather_or_cancel([self._aalone(i, budget) for i in indices])
        return [o for g in groups for o in g]

    async def _aalone(self, i: int, budget: int) -> list[DocumentOutcome]:
        try:
            result = await self.pruner.aprune([self.pages[i]], self.query, budget)
        except _UNREADABLE as exc:
            return _unread(i, budget, exc)
        return self._alone_outcomes(result, i, budget)

    # -- shared steps (pure) ---------------------------------------------------------------
    def _alone_outcomes(self, result: PruneResult, i: int, budget: int) -> list[DocumentOutcome]:
        scope = "document" if budget == self.max_tokens else "split"
        return document_outcomes(result, offset=i, scope=scope)

    def _check_failed(self, outcomes: Sequence[DocumentOutcome]) -> None:
        """With ``strict``, a page that could not be read fails the call, naming it."""
        failed = [o for o in outcomes if o.error is not None]
        if failed and self.strict:
            named = "; ".join(f"page {o.index}: {o.error}" for o in failed)
            msg = f"{len(failed)} of {len(outcomes)} pages could not be read: {named}"
            raise HtmlParseError(msg)

    def _nothing(self, outcomes: list[DocumentOutcome]) -> list[DocumentOutcome]:
        """No page has text to prune: an error with ``strict``, else every page left out and
        the reasons logged."""
        self._check_failed(outcomes)
        msg = f"all {len(self.pages)} pages are empty (no visible text to prune)"
        if self.strict:
            raise EmptyInputError(msg)
        failed = [f"page {o.index}: {o.error}" for o in outcomes if o.error is not None]
        if failed:  # why each page that could not be read was not, not just "no text"
            msg = f"none of the {len(self.pages)} pages has text to prune: " + "; ".join(failed)
        logger.warning("HtmlRAG returns nothing: %s", msg)
        return outcomes

    @staticmethod
    def _rank(outcome: DocumentOutcome) -> float | None:
        """Pages are ranked by their best block score, kept or not."""
        return outcome.page_score

    def _share(self, chosen: Sequence[int]) -> int:
        from hrefine.html.options import MIN_BUDGET

        return max(MIN_BUDGET, self.max_tokens // max(1, len(chosen)))

    # A page pruned again replaces its first outcome.
    _merge = staticmethod(merged_by_index)

    def _finish(
        self, outcomes: Sequence[DocumentOutcome], chosen: Sequence[int] | None
    ) -> list[DocumentOutcome]:
        """Pages outside ``chosen`` marked left out; ``relevance`` set on every outcome."""
        picked = None if chosen is None else set(chosen)
        scale, extra = score_scale(self.pruner)
        units = unit_scores([o.score for o in outcomes], scale=scale, extra=extra)
        return [
            dataclasses.replace(
                o,
                relevance=u,
                below_top_n=picked is not None and o.index not in picked and o.blocks_kept > 0,
            )
            for o, u in zip(outcomes, units, strict=True)
        ]


def warn_fragments(pages: Sequence[str]) -> int:
    """Log a warning when some pages look like pieces of HTML cut mid-tag (a text splitter that
    knows nothing of HTML made them), pointing at the HTML-aware splitters; returns how many.

    Such pieces still prune (the cleaner repairs them), but a table cut in two loses its
    header in one half, and text may be split inside a tag."""
    from hrefine.html.formats import markup_fragment

    found = [
        (i, reason)
        for i, page in enumerate(pages)
        if isinstance(page, str) and (reason := markup_fragment(page)) is not None
    ]
    if found:
        i, reason = found[0]
        logger.warning(
            "%d of %d inputs look like HTML cut mid-tag (input %d: %s); split pages with "
            "llamaindex_hrefine.HtmlPageNodeParser or hrefine.html.split.split_page, or pass "
            "whole pages",
            len(found),
            len(pages),
            i,
            reason,
        )
    return len(found)


_UNREADABLE = (EmptyInputError, HtmlParseError, InputTypeError)


def _unread(i: int, budget: int, exc: Exception) -> list[DocumentOutcome]:
    """Page ``i`` pruned on its own had no text (``EmptyInputError``) or could not be read
    (this page only: the others go on)."""
    if isinstance(exc, EmptyInputError):
        return [empty_outcome(i, budget)]
    return [empty_outcome(i, budget, f"{type(exc).__name__}: {exc}")]


def _any_text(outcomes: list[DocumentOutcome]) -> list[DocumentOutcome]:
    # No page with text is the same error as when pruned together: there is nothing to prune.
    if outcomes and all(o.blocks_total == 0 for o in outcomes):
        msg = f"all {len(outcomes)} pages are empty or unreadable (no visible text to prune)"
        raise EmptyInputError(msg)
    return outcomes
