"""The ``top_n`` step of the adapters' jobs (HtmlRAG's ``PruneJob``, LongRefiner's ``RefineJob``).

The ``top_n`` inputs with the best ranking scores are chosen; when the first call did not leave
each of them something, they are compressed again together (when that is a different call),
and when one would still keep nothing, each on its own to an equal share of the budget, so
exactly ``min(top_n, inputs with text)`` come back. Each job says how it ranks an input and how
it compresses some of them; the choice and the order of the retries live here once.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Generic, TypeVar

from hrefine.results import Outcome

__all__ = ["TopNRetry"]

_O = TypeVar("_O", bound=Outcome)


class TopNRetry(ABC, Generic[_O]):
    """The ``top_n`` choice and its retries, over a job's own compressor calls.

    A job sets ``top_n`` and ``max_tokens`` and gives the abstract :meth:`_rank`,
    :meth:`_together`, :meth:`_atogether`, :meth:`_alone_each`, :meth:`_aalone_each`,
    :meth:`_share` and :meth:`_merge`.
    """

    top_n: int | None
    max_tokens: int

    # -- what a job gives ------------------------------------------------------------------
    @staticmethod
    @abstractmethod
    def _rank(outcome: _O) -> float | None:
        """The score ``top_n`` ranks an input by (None: the input has no text)."""

    @abstractmethod
    def _together(self, indices: Sequence[int]) -> list[_O]:
        """The inputs ``indices`` compressed together against the whole budget."""

    @abstractmethod
    async def _atogether(self, indices: Sequence[int]) -> list[_O]:
        """:meth:`_together` on the async path."""

    @abstractmethod
    def _alone_each(self, indices: Sequence[int], budget: int) -> list[_O]:
        """Each input of ``indices`` compressed on its own against ``budget``."""

    @abstractmethod
    async def _aalone_each(self, indices: Sequence[int], budget: int) -> list[_O]:
        """:meth:`_alone_each` on the async path."""

    @abstractmethod
    def _share(self, chosen: Sequence[int]) -> int:
        """Each chosen input's equal share of the budget."""

    @abstractmethod
    def _merge(self, first: Sequence[_O], again: Sequence[_O], chosen: Sequence[int]) -> list[_O]:
        """``first`` with the outcomes of ``again`` in place of the chosen inputs'."""

    # -- the shared steps ------------------------------------------------------------------
    def _chosen(self, outcomes: Sequence[_O]) -> list[int] | None:
        """Indices of the ``top_n`` inputs with the best ranking scores (None: no top_n)."""
        if self.top_n is None:
            return None
        scored = [(score, o.index) for o in outcomes if (score := self._rank(o)) is not None]
        best = sorted(scored, key=lambda pair: (-pair[0], pair[1]))
        return sorted(index for _, index in best[: self.top_n])

    def _fewer(self, outcomes: Sequence[_O], chosen: Sequence[int]) -> bool:
        """Whether ``chosen`` leaves out an input with text (compressing the chosen ones
        together again can then give a different result; otherwise it is the same call)."""
        return len(chosen) < sum(self._rank(o) is not None for o in outcomes)

    @staticmethod
    def _complete(outcomes: Sequence[_O], chosen: Sequence[int]) -> bool:
        kept = {o.index for o in outcomes if o.kept}
        return all(i in kept for i in chosen)

    def _retry(self, outcomes: Sequence[_O], chosen: Sequence[int]) -> list[_O]:
        """The chosen inputs compressed again: together, else each to an equal share."""
        again = self._together(chosen) if self._fewer(outcomes, chosen) else []
        if not self._complete(again, chosen):
            again = self._alone_each(chosen, self._share(chosen))
        return self._merge(outcomes, again, chosen)

    async def _aretry(self, outcomes: Sequence[_O], chosen: Sequence[int]) -> list[_O]:
        """:meth:`_retry` on the async path."""
        again = await self._atogether(chosen) if self._fewer(outcomes, chosen) else []
        if not self._complete(again, chosen):
            again = await self._aalone_each(chosen, self._share(chosen))
        return self._merge(outcomes, again, chosen)
