"""Fixed, id-based choices of evaluation items: the tuning and checking halves of the dev
data (:func:`half_of`) and the deterministic subset of a run (:func:`subset`)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Literal

from hrefine.errors import ConfigError
from hrefine.eval.items import EvalItem

__all__ = ["Half", "half_of", "subset"]

Half = Literal["tune", "check"]


def _id_hash(item_id: str) -> str:
    return hashlib.sha1(item_id.encode("utf-8")).hexdigest()


def half_of(doc_id: str) -> Half:
    """The half of the dev data a page belongs to: ``"tune"`` or ``"check"``.

    The rule, fixed before any result was looked at: the first byte of the SHA-1 of the page id
    (UTF-8) is even for the tuning half and odd for the checking half. Every question on a page
    falls in the page's half, so a change tuned on one half is checked on pages it never saw.
    Decisions (defaults, new settings) are made on the tuning half only; both are reported.

    Parameters
    ----------
    doc_id:
        The page's id (:attr:`EvalItem.doc_id`).

    Returns
    -------
    Half
        ``"tune"`` or ``"check"``.

    >>> half_of("203-342"), half_of("203-124")
    ('tune', 'check')
    """
    first = hashlib.sha1(doc_id.encode("utf-8")).digest()[0]
    return "tune" if first % 2 == 0 else "check"


def subset(items: Sequence[EvalItem], limit: int | None) -> list[EvalItem]:
    """A deterministic subset, grouped by document.

    Documents are ordered by the SHA-1 of their ``doc_id``, questions within a document by the
    SHA-1 of their ``id``, and the first ``limit`` questions are kept. The choice depends only on
    the ids, so the same limit always gives the same items and a larger limit contains every item
    of a smaller one. Grouping keeps the number of distinct documents (and so the cost of
    methods that index each document) small; where every question has its own document
    (HotpotQA, articles) this is simply the order of the id hashes.

    Parameters
    ----------
    items:
        All items.
    limit:
        How many to keep (None or >= len(items): all, in subset order).

    Returns
    -------
    list[EvalItem]
        The subset, in subset order.
    """
    if limit is not None and limit < 0:
        msg = f"limit must be >= 0, got {limit}"
        raise ConfigError(msg)
    ranked = sorted(items, key=lambda it: (_id_hash(it.doc_id), _id_hash(it.id), it.id))
    return ranked if limit is None else ranked[:limit]
