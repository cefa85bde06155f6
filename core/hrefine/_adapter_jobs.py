"""What the adapters' per-call jobs (HtmlRAG's ``PruneJob``, LongRefiner's ``RefineJob``) share
besides the ``top_n`` step (:mod:`hrefine._top_n`): the settings every job takes from its
adapter's fields, and the outcomes of inputs compressed again put in place of the first ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from hrefine.options import check_int
from hrefine.results import Outcome, ResultOptions

__all__ = ["job_settings", "merged_by_index"]

_O = TypeVar("_O", bound=Outcome)


def job_settings(owner: Any) -> dict[str, Any]:
    """A job's ``max_tokens``, ``top_n`` and ``strict`` from an adapter's fields: its
    ``max_tokens`` field and its :class:`~hrefine.results.ResultOptions` fields (checked
    first; ``max_tokens`` is checked again, as a field set after construction is not)."""
    results = ResultOptions.of(owner)
    check_int("max_tokens", owner.max_tokens, minimum=1)
    return {"max_tokens": int(owner.max_tokens), "top_n": results.top_n, "strict": results.strict}


def merged_by_index(first: Sequence[_O], again: Sequence[_O], chosen: Sequence[int]) -> list[_O]:
    """``first`` with each outcome ``again`` has for the same input in its place (the inputs
    ``chosen`` were compressed again; those ``again`` lacks keep their first outcome)."""
    redone = {o.index: o for o in again}
    return [redone.get(o.index, o) for o in first]
