"""Pruning a list of retrieved pages, one outcome per page: what the framework adapters share.

LangChain compressors and LlamaIndex postprocessors both get a list of HTML pages and must give
back one result per page (or leave the page out, visibly). The splitting of a
:class:`~hrefine.html.PruneResult` into per-page outcomes and the choice between one shared
budget and a budget per page live here once; the adapters only convert types.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hrefine.errors import EmptyInputError, InputTypeError

if TYPE_CHECKING:
    from hrefine.html.prune import HtmlPruner
    from hrefine.html.result import PruneResult

logger = logging.getLogger(__name__)

__all__ = [
    "DocumentOutcome",
    "PruneJob",
    "check_query",
    "document_outcomes",
    "empty_outcome",
    "kept_with_metadata",
    "log_dropped",
    "outcome_metadata",
]


@dataclass(frozen=True)
class DocumentOutcome:
    """What pruning did to one input page.

    Attributes
    ----------
    index:
        Position of the page in the input.
    html:
        The pruned HTML ("" when every block was dropped).
    score:
        Best first-stage score among the kept blocks (None when none was kept).
    stage2_score:
        Best generative-stage score among the kept blocks, when that stage ran.
    blocks_kept:
        Number of the page's blocks kept.
    blocks_total:
        Number of the page's blocks found.
    budget:
        The token budget the page was pruned under.
    shared_budget:
        True when all pages were pruned against one budget.
    """

    index: int
    html: str
    score: float | None
    stage2_score: float | None
    blocks_kept: int
    blocks_total: int
    budget: int
    shared_budget: bool

    @property
    def kept(self) -> bool:
        """True when some of the page survived pruning."""
        return self.blocks_kept > 0 and bool(self.html.strip())


def check_query(query: object) -> str:
    """The query, or a clear error when it is not a non-empty string."""
    if not isinstance(query, str):
        msg = f"query must be a str, got {type(query).__name__}"
        raise InputTypeError(msg)
    if not query.strip():
        msg = "the query is empty; HtmlRAG ranks the HTML blocks against the query"
        raise EmptyInputError(msg)
    return query


def empty_outcome(index: int, budget: int) -> DocumentOutcome:
    """The outcome of a page with no text (skipped by the pruner, reported as dropped)."""
    return DocumentOutcome(
        index=index,
        html="",
        score=None,
        stage2_score=None,
        blocks_kept=0,
        blocks_total=0,
        budget=budget,
        shared_budget=False,
    )


def _best(values: list[float | None]) -> float | None:
    present = [float(v) for v in values if v is not None]
    return max(present) if present else None


def document_outcomes(
    result: PruneResult, *, offset: int = 0, shared_budget: bool = True
) -> list[DocumentOutcome]:
    """Split a :class:`~hrefine.html.PruneResult` into one outcome per input page.

    Parameters
    ----------
    result:
        The result of one ``HtmlPruner.prune`` call.
    offset:
        Index of the call's first page among all input pages (per-page pruning).
    shared_budget:
        Whether the call pruned several pages against one budget.

    Returns
    -------
    list[DocumentOutcome]
        In the order of ``result.documents``.
    """
    outcomes = []
    for local, html in enumerate(result.documents):
        blocks = [b for b in result.blocks if b.doc == local and b.block_id >= 0]
        kept = [b for b in blocks if b.kept]
        outcomes.append(
            DocumentOutcome(
                index=offset + local,
                html=html,
                score=_best([b.stage1_score for b in kept]),
                stage2_score=_best([b.stage2_score for b in kept]),
                blocks_kept=len(kept),
                blocks_total=len(blocks),
                budget=int(result.budget),
                shared_budget=shared_budget,
            )
        )
    return outcomes


def _flatten(per_page: Sequence[list[DocumentOutcome]]) -> list[DocumentOutcome]:
    # Every page empty is the same error as when pruned together: there is nothing to prune.
    outcomes = [o for group in per_page for o in group]
    if outcomes and all(o.blocks_total == 0 for o in outcomes):
        msg = f"all {len(outcomes)} pages are empty (no visible text to prune)"
        raise EmptyInputError(msg)
    return outcomes


@dataclass(frozen=True)
class PruneJob:
    """One adapter call: retrieved pages pruned for a query, against one shared budget or a
    budget each.

    Attributes
    ----------
    pruner:
        The configured pruner.
    pages:
        HTML of each retrieved page, in retrieval order.
    query:
        The question.
    max_tokens:
        The budget: for all pages together (``together=True``, as in the paper) or per page.
    together:
        Whether the pages compete for one budget.
    """

    pruner: HtmlPruner
    pages: Sequence[str]
    query: str
    max_tokens: int
    together: bool = True

    def run(self) -> list[DocumentOutcome]:
        """One outcome per page, in input order.

        With per-page budgets a page with no text gets an empty outcome; all pages empty
        raises :class:`~hrefine.errors.EmptyInputError`.
        """
        check_query(self.query)
        if self.together:
            return document_outcomes(
                self.pruner.prune(list(self.pages), self.query, self.max_tokens)
            )
        return _flatten([self._alone(i, page) for i, page in enumerate(self.pages)])

    async def arun(self) -> list[DocumentOutcome]:
        """:meth:`run` on the pruner's async path: pages pruned on their own run concurrently."""
        check_query(self.query)
        if self.together:
            pages = list(self.pages)
            return document_outcomes(await self.pruner.aprune(pages, self.query, self.max_tokens))

        async def one(i: int, page: str) -> list[DocumentOutcome]:
            try:
                result = await self.pruner.aprune([page], self.query, self.max_tokens)
            except EmptyInputError:
                return [empty_outcome(i, self.max_tokens)]
            return document_outcomes(result, offset=i, shared_budget=False)

        return _flatten(await asyncio.gather(*(one(i, p) for i, p in enumerate(self.pages))))

    def _alone(self, i: int, page: str) -> list[DocumentOutcome]:
        try:
            result = self.pruner.prune([page], self.query, self.max_tokens)
        except EmptyInputError:
            return [empty_outcome(i, self.max_tokens)]
        return document_outcomes(result, offset=i, shared_budget=False)


def copy_metadata(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a document's metadata for its pruned output: a deep one, so that changing the
    output's nested values leaves the input's alone, or a shallow one (only keys are added to
    it) where a value cannot be deep-copied (a lock, a client, a generator)."""
    try:
        return copy.deepcopy(dict(metadata))
    except Exception:  # deepcopy of arbitrary objects can raise anything
        logger.debug("metadata cannot be deep-copied; its values are shared with the input")
        return dict(metadata)


def log_dropped(outcomes: Sequence[DocumentOutcome], unit: str = "documents") -> int:
    """Log the pages left out (none of their blocks fitted) and return how many there are."""
    dropped = [o.index for o in outcomes if not o.kept]
    if dropped:
        logger.info(
            "HtmlRAG left out %d of %d %s (no block fitted the budget): indices %s",
            len(dropped),
            len(outcomes),
            unit,
            dropped,
        )
    return len(dropped)


def outcome_metadata(
    outcome: DocumentOutcome, *, tokens: int, tokenizer: str, dropped: int
) -> dict[str, Any]:
    """The ``relevance_score`` and ``hrefine_*`` keys both adapters add to a returned page.

    Parameters
    ----------
    outcome:
        The page's outcome.
    tokens:
        Tokens of its pruned HTML, counted by ``tokenizer``.
    tokenizer:
        Name of the budget tokenizer.
    dropped:
        Pages of the same call left out (so a drop is never silent).
    """
    meta: dict[str, Any] = {
        "relevance_score": outcome.score,
        "hrefine_method": "htmlrag",
        "hrefine_tokens": int(tokens),
        "hrefine_budget": outcome.budget,
        "hrefine_budget_scope": "shared" if outcome.shared_budget else "document",
        "hrefine_tokenizer": tokenizer,
        "hrefine_blocks_kept": outcome.blocks_kept,
        "hrefine_blocks_total": outcome.blocks_total,
        "hrefine_dropped_documents": dropped,
    }
    if outcome.stage2_score is not None:
        meta["hrefine_stage2_score"] = outcome.stage2_score
    return meta


def kept_with_metadata(
    outcomes: Sequence[DocumentOutcome],
    token_counts: Sequence[int],
    *,
    tokenizer: str,
    unit: str,
    metadata_of: Callable[[int], Mapping[str, Any]],
    input_score_of: Callable[[int], Any],
) -> list[tuple[DocumentOutcome, dict[str, Any]]]:
    """The kept pages, each with the metadata of its output: a copy of its input's
    (:func:`copy_metadata`) plus :func:`outcome_metadata`'s keys and, when the input had a
    score, ``hrefine_input_score``. Pages left out are logged and counted in every output's
    ``hrefine_dropped_documents``, so a drop is never silent.

    Parameters
    ----------
    outcomes:
        One outcome per input page.
    token_counts:
        Tokens of each outcome's pruned HTML, with the pruner's tokenizer named ``tokenizer``.
    unit:
        What the inputs are called in the log ("documents", "nodes").
    metadata_of, input_score_of:
        The input's metadata and score (None: none), by input index.
    """
    dropped = log_dropped(outcomes, unit)
    out: list[tuple[DocumentOutcome, dict[str, Any]]] = []
    for outcome, tokens in zip(outcomes, token_counts, strict=True):
        if not outcome.kept:
            continue
        metadata = copy_metadata(metadata_of(outcome.index))
        metadata.update(
            outcome_metadata(outcome, tokens=tokens, tokenizer=tokenizer, dropped=dropped)
        )
        prior = input_score_of(outcome.index)
        if prior is not None:
            metadata["hrefine_input_score"] = prior
        out.append((outcome, metadata))
    return out
