"""What a compressor hands back to a framework: how many results, in which order, scored how.

Every method's adapters (LangChain compressors and retrievers, LlamaIndex postprocessors) follow
the conventions users know from rerankers, decided here once:

- ``top_n`` results at most, the most relevant ones;
- results ordered by relevance across documents (text inside one document stays in document
  order), or in input order with ``keep_input_order``;
- a ``relevance_score`` in [0, 1] that composes with score cut-offs downstream (LlamaIndex's
  ``SimilarityPostprocessor``, a retriever's threshold), the method's raw score kept beside it;
- a call whose inputs are all empty returns no results and logs why, rather than break the
  chain, unless ``strict``.
"""

from __future__ import annotations

import copy
import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import numpy as np

from hrefine.errors import ConfigError
from hrefine.options import Options, check_bool, check_int, setting

__all__ = [
    "Outcome",
    "ResultOptions",
    "by_relevance",
    "copy_metadata",
    "kept_with_input_metadata",
    "log_dropped",
    "unit_scores",
]

logger = logging.getLogger(__name__)

_T = TypeVar("_T")


class Outcome(Protocol):
    """What became of one input of a call (each method's ``DocumentOutcome``)."""

    @property
    def index(self) -> int:
        """Position of the input in the call."""

    @property
    def kept(self) -> bool:
        """Whether some of the input is returned."""

    @property
    def reason(self) -> str | None:
        """Why the input was left out (None: it was not)."""

    @property
    def relevance(self) -> float | None:
        """The output's ``relevance_score`` in [0, 1]."""


_O = TypeVar("_O", bound=Outcome)


@dataclass(frozen=True, kw_only=True)
class ResultOptions(Options):
    """How many results an adapter returns, in which order, and what an all-empty call does."""

    top_n: int | None = setting(
        None, help="Most results returned, the most relevant first; None: all that kept text."
    )
    """Most results returned: the ``top_n`` most relevant inputs, each compressed (None: every
    input with something kept). Inputs pruned against one shared budget each keep at least
    their best unit when ``top_n`` is set (see the method's page for how).
    """
    keep_input_order: bool = setting(
        False, help="Return results in input order instead of by relevance."
    )
    """Return the results in the order of their inputs instead of by relevance."""
    strict: bool = setting(
        False, help="Raise when every input is empty; False: return [] and log why."
    )
    """Raise :class:`~hrefine.errors.EmptyInputError` when every input is empty (no visible
    text). False (default): return no results and log the reason, so one empty retrieval
    does not break a chain.
    """

    @classmethod
    def of(cls, owner: object) -> ResultOptions:
        """The settings read from an adapter's fields of the same names (checked)."""
        return cls.build(**{n: getattr(owner, n) for n in cls.names()})

    def __post_init__(self) -> None:
        check_int("top_n", self.top_n, minimum=1, none=True)
        check_bool("keep_input_order", self.keep_input_order)
        check_bool("strict", self.strict)


def _logistic(x: float) -> float:
    # Split by sign so that exp never overflows.
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)
    return z / (1.0 + z)


def unit_scores(
    raw: Sequence[float | None],
    *,
    scale: str,
    extra: float = 0.0,
) -> list[float | None]:
    """Raw scores mapped into [0, 1], order kept (None stays None).

    Parameters
    ----------
    raw:
        One call's raw scores (e.g. each document's best block score).
    scale:
        What the raw scores are:

        - ``"cosine"``: a similarity of at most 1 (embeddings) plus up to ``extra`` added on
          top (HtmlRAG's weighted BM25 match): divided by ``1 + extra``, negatives at 0.
        - ``"relative"``: a score with no absolute scale (BM25): divided by the call's best,
          so the best result scores 1.
        - ``"unit"``: already in [0, 1] before ``extra`` was added: divided by ``1 + extra``.
        - ``"logit"``: anything else (a cross-encoder's logits): the logistic function, so a
          raw 0 scores 0.5.
    extra:
        Largest amount the method may have added to a ``"cosine"`` or ``"unit"`` score.

    Returns
    -------
    list[float | None]
        In the order of ``raw``.
    """
    values = [None if v is None or not math.isfinite(float(v)) else float(v) for v in raw]
    present = [v for v in values if v is not None]
    if scale in ("cosine", "unit"):
        top = 1.0 + max(0.0, float(extra))
        return [None if v is None else min(1.0, max(0.0, v / top)) for v in values]
    if scale == "relative":
        best = max(present, default=0.0)
        if best <= 0:
            return [None if v is None else 0.0 for v in values]
        return [None if v is None else min(1.0, max(0.0, v / best)) for v in values]
    if scale == "logit":
        return [None if v is None else _logistic(v) for v in values]
    msg = f"unknown score scale {scale!r}; use 'cosine', 'relative', 'unit' or 'logit'"
    raise ConfigError(msg)


def by_relevance(
    items: Sequence[_T],
    score: Callable[[_T], float | None],
    *,
    keep_input_order: bool = False,
) -> list[_T]:
    """``items`` best first (ties and unscored items keep their input order), or as given.

    Parameters
    ----------
    items:
        Results in input order.
    score:
        Each result's relevance (None sorts last).
    keep_input_order:
        Return ``items`` unchanged in order.
    """
    out = list(items)
    if keep_input_order:
        return out

    def key(pair: tuple[int, Any]) -> tuple[float, int]:
        value = score(pair[1])
        return (-(value if value is not None else -np.inf), pair[0])

    return [item for _, item in sorted(enumerate(out), key=key)]


def copy_metadata(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of an input's metadata for its output: a deep one, so that changing the output's
    nested values leaves the input's alone, or a shallow one (only keys are added to it) where
    a value cannot be deep-copied (a lock, a client, a generator)."""
    try:
        return copy.deepcopy(dict(metadata))
    except Exception:  # deepcopy of arbitrary objects can raise anything
        logger.debug("metadata cannot be deep-copied; its values are shared with the input")
        return dict(metadata)


def log_dropped(outcomes: Sequence[Any], unit: str, method: str) -> int:
    """Log the inputs a call left out, by reason (each outcome's ``reason``, None when kept;
    its ``index`` names it), and return how many there are: a drop is never silent."""
    reasons: dict[str, list[int]] = {}
    for o in outcomes:
        if o.reason is not None:
            reasons.setdefault(o.reason, []).append(o.index)
    for reason, indices in reasons.items():
        logger.info(
            "%s left out %d of %d %s (%s): indices %s",
            method,
            len(indices),
            len(outcomes),
            unit,
            reason,
            indices,
        )
    return sum(len(v) for v in reasons.values())


def kept_with_input_metadata(
    outcomes: Sequence[_O],
    method: str,
    *,
    unit: str,
    own: Callable[[_O, int], Mapping[str, Any]],
    metadata_of: Callable[[int], Mapping[str, Any]],
    input_score_of: Callable[[int], Any],
    keep_input_order: bool = False,
    also: Mapping[str, Any] | None = None,
) -> list[tuple[_O, dict[str, Any]]]:
    """The kept outcomes (each one's ``kept``, ``index``, ``reason`` and ``relevance``), most
    relevant first (or in input order), each with the metadata of its output: a copy of its
    input's (:func:`copy_metadata`), the method's own keys and, when the input had a score (a
    reranker's), ``hrefine_input_score``. Outcomes left out are logged and counted
    (:func:`log_dropped`), so a drop is never silent.

    Parameters
    ----------
    outcomes:
        One outcome per input (none at all for a call whose inputs were all empty).
    method:
        The method's name in the log.
    unit:
        What the inputs are called in the log ("documents", "nodes").
    own:
        The method's keys for an outcome, given how many outcomes were left out.
    metadata_of, input_score_of:
        The input's metadata and score (None: none), by input index.
    keep_input_order:
        Keep the outputs in input order instead of ordering them by relevance.
    also:
        Keys added last to every output (a deep copy each).
    """
    dropped = log_dropped(outcomes, unit, method)
    out: list[tuple[_O, dict[str, Any]]] = []
    for outcome in outcomes:
        if not outcome.kept:
            continue
        index = outcome.index
        metadata = copy_metadata(metadata_of(index))
        metadata.update(own(outcome, dropped))
        prior = input_score_of(index)
        if prior is not None:
            metadata["hrefine_input_score"] = prior
        if also:
            metadata.update(copy.deepcopy(dict(also)))
        out.append((outcome, metadata))
    return by_relevance(out, lambda pair: pair[0].relevance, keep_input_order=keep_input_order)
