"""The metadata LongRefiner's framework adapters put on each document they return: the
``relevance_score`` and ``hrefine_*`` keys (:data:`METADATA_KEYS`), with the documents left
out logged and counted."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from hrefine.results import by_relevance, copy_metadata, log_dropped

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
    """The kept documents, most relevant first (or in input order), each with the metadata of
    its output: a copy of its input's plus :func:`outcome_metadata`'s keys and, when the input
    had a score (a reranker's), ``hrefine_input_score``. Documents left out are logged and
    counted in every output's ``hrefine_dropped_documents``.

    Parameters
    ----------
    outcomes:
        One outcome per input document (none at all for a call whose inputs were all empty).
    unit:
        What the inputs are called in the log ("documents", "nodes").
    metadata_of, input_score_of:
        The input's metadata and score (None: none), by input index.
    keep_input_order:
        Keep the documents in input order instead of ordering them by relevance.
    """
    dropped = log_dropped(outcomes, unit, "LongRefiner")
    out: list[tuple[DocumentOutcome, dict[str, Any]]] = []
    for outcome in outcomes:
        if not outcome.kept:
            continue
        metadata = copy_metadata(metadata_of(outcome.index))
        metadata.update(outcome_metadata(outcome, dropped=dropped))
        prior = input_score_of(outcome.index)
        if prior is not None:
            metadata["hrefine_input_score"] = prior
        out.append((outcome, metadata))
    return by_relevance(out, lambda pair: pair[0].relevance, keep_input_order=keep_input_order)
