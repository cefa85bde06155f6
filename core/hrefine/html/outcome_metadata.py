"""The metadata HtmlRAG's framework adapters put on each page they return: the
``relevance_score`` and ``hrefine_*`` keys, with the pages left out logged and counted."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from hrefine.results import kept_with_input_metadata

if TYPE_CHECKING:
    from hrefine.html.outcome import DocumentOutcome

__all__ = ["kept_with_metadata", "outcome_metadata"]


def outcome_metadata(
    outcome: DocumentOutcome, *, tokens: int, tokenizer: str, dropped: int
) -> dict[str, Any]:
    """The ``relevance_score`` and ``hrefine_*`` keys both adapters add to a returned page.

    ``relevance_score`` is in [0, 1] (:attr:`DocumentOutcome.relevance`); the pruner's raw
    score is ``hrefine_raw_score``.

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
        "relevance_score": outcome.relevance,
        "hrefine_raw_score": outcome.score,
        "hrefine_method": "htmlrag",
        "hrefine_tokens": int(tokens),
        "hrefine_budget": outcome.budget,
        "hrefine_budget_scope": outcome.scope,
        "hrefine_tokenizer": tokenizer,
        "hrefine_blocks_kept": outcome.blocks_kept,
        "hrefine_blocks_total": outcome.blocks_total,
        "hrefine_dropped_documents": dropped,
    }
    if outcome.stage2_score is not None:
        meta["hrefine_stage2_score"] = outcome.stage2_score
    if outcome.input_format is not None:
        meta["hrefine_input_format"] = outcome.input_format
    return meta


def kept_with_metadata(
    outcomes: Sequence[DocumentOutcome],
    token_counts: Sequence[int],
    *,
    tokenizer: str,
    unit: str,
    metadata_of: Callable[[int], Mapping[str, Any]],
    input_score_of: Callable[[int], Any],
    keep_input_order: bool = False,
) -> list[tuple[DocumentOutcome, dict[str, Any]]]:
    """:func:`hrefine.results.kept_with_input_metadata` of HtmlRAG's pages, with
    :func:`outcome_metadata`'s keys (``token_counts``: tokens of each outcome's pruned HTML,
    with the pruner's tokenizer named ``tokenizer``). Pages left out are counted in every
    output's ``hrefine_dropped_documents``, so a drop is never silent; pages that could not be
    read are listed with the reason in ``hrefine_failed_documents``."""
    # Inputs that could not be read are named on every output, with the reason: the input
    # itself has no output to carry it.
    failed = [{"index": o.index, "error": o.error} for o in outcomes if o.error is not None]
    tokens_of = dict(zip([o.index for o in outcomes], token_counts, strict=True))
    return kept_with_input_metadata(
        outcomes,
        "HtmlRAG",
        unit=unit,
        own=lambda o, dropped: outcome_metadata(
            o, tokens=tokens_of[o.index], tokenizer=tokenizer, dropped=dropped
        ),
        metadata_of=metadata_of,
        input_score_of=input_score_of,
        keep_input_order=keep_input_order,
        also={"hrefine_failed_documents": failed} if failed else None,
    )
