"""The metadata LongRefiner's framework adapters put on each document they return: the
``relevance_score`` and ``hrefine_*`` keys (:data:`METADATA_KEYS`), with the documents left
out logged and counted."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from hrefine.results import kept_with_input_metadata

if TYPE_CHECKING:
    from hrefine.longrefiner.outcome import DocumentOutcome

__all__ = ["METADATA_KEYS", "kept_with_metadata", "outcome_metadata"]

#: Metadata keys written on every returned Document or node (a LlamaIndex node hides them
#: from its LLM and embed views).
METADATA_KEYS = (
    "relevance_score",
    "hrefine_raw_score",
    "hrefine_method",
    "hrefine_tokens",
    "hrefine_budget",
    "hrefine_budget_scope",
    "hrefine_tokenizer",
    "hrefine_structure",
    "hrefine_sections_kept",
    "hrefine_sections_selected",
    "hrefine_query_type",
    "hrefine_dropped_documents",
    "hrefine_notes",
    "hrefine_input_score",
)


def outcome_metadata(outcome: DocumentOutcome, *, dropped: int) -> dict[str, Any]:
    """The ``relevance_score`` and ``hrefine_*`` keys both adapters add to a returned document.

    Parameters
    ----------
    outcome:
        The document's outcome.
    dropped:
        Documents of the same call left out (so a drop is never silent).
    """
    analysis = outcome.analysis
    query_type = (
        None
        if analysis is None
        else {
            "label": analysis.label,
            "w_local": float(analysis.w_local),
            "w_global": float(analysis.w_global),
            "source": analysis.source,
        }
    )
    return {
        "relevance_score": outcome.relevance,
        "hrefine_raw_score": outcome.score,
        "hrefine_method": "longrefiner",
        "hrefine_tokens": outcome.tokens,
        "hrefine_budget": outcome.budget,
        "hrefine_budget_scope": outcome.scope,
        "hrefine_tokenizer": outcome.tokenizer,
        "hrefine_structure": outcome.structure,
        "hrefine_sections_kept": list(outcome.sections_kept),
        "hrefine_sections_selected": list(outcome.sections_selected),
        "hrefine_query_type": query_type,
        "hrefine_dropped_documents": dropped,
        "hrefine_notes": list(outcome.notes),
    }


def kept_with_metadata(
    outcomes: Sequence[DocumentOutcome],
    *,
    unit: str,
    metadata_of: Callable[[int], Mapping[str, Any]],
    input_score_of: Callable[[int], Any],
    keep_input_order: bool = False,
) -> list[tuple[DocumentOutcome, dict[str, Any]]]:
    """:func:`hrefine.results.kept_with_input_metadata` of LongRefiner's documents, with
    :func:`outcome_metadata`'s keys. Documents left out are counted in every output's
    ``hrefine_dropped_documents``, so a drop is never silent."""
    return kept_with_input_metadata(
        outcomes,
        "LongRefiner",
        unit=unit,
        own=lambda o, dropped: outcome_metadata(o, dropped=dropped),
        metadata_of=metadata_of,
        input_score_of=input_score_of,
        keep_input_order=keep_input_order,
    )
