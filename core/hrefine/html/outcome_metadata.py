"""The metadata HtmlRAG's framework adapters put on each page they return: the
``relevance_score`` and ``hrefine_*`` keys, with the pages left out logged and counted."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from hrefine.results import by_relevance, copy_metadata, log_dropped

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
    """The kept pages, most relevant first (or in input order), each with the metadata of its
    output: a copy of its input's (:func:`copy_metadata`) plus :func:`outcome_metadata`'s keys
    and, when the input had a score, ``hrefine_input_score``. Pages left out are logged and
    counted in every output's ``hrefine_dropped_documents``, so a drop is never silent; pages
    that could not be read are listed with the reason in ``hrefine_failed_documents``.

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
    keep_input_order:
        Keep the pages in input order instead of ordering them by relevance.
    """
    dropped = log_dropped(outcomes, unit, "HtmlRAG")
    # Inputs that could not be read are named on every output, with the reason: the input
    # itself has no output to carry it.
    failed = [{"index": o.index, "error": o.error} for o in outcomes if o.error is not None]
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
        if failed:
            metadata["hrefine_failed_documents"] = copy.deepcopy(failed)
        out.append((outcome, metadata))
    return by_relevance(out, lambda pair: pair[0].relevance, keep_input_order=keep_input_order)
