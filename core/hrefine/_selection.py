"""Budgeted selection: :func:`select` on estimated costs and :func:`fill` on the real output.

Both are pure. :func:`select` picks the best-scored units whose costs fit a budget, expands a
parent that does not fit into its children and returns the choice in document order, with every
unit it did not take listed with the reason. :func:`fill` runs :func:`select` and checks the
choice on the real output (rendered and counted by the caller's ``measure``, since joining units
rarely costs exactly the sum of their costs), then adjusts it until the output fits and no unit
left out would still fit. Both are re-exported by :mod:`hrefine.budget`, their public home.
"""

from __future__ import annotations

import heapq
import numbers
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Generic, NamedTuple, TypeVar

import numpy as np

from hrefine.errors import BudgetTooSmallError, ConfigError, EmptyInputError, InputTypeError

__all__ = [
    "EXPANDED",
    "JOIN_SLACK",
    "LIMIT",
    "MEASURED_OVER",
    "OVER_BUDGET",
    "TRIAL_LIMIT",
    "Fill",
    "Selection",
    "fill",
    "select",
]

# Drop reasons reported in Selection.dropped and Fill.dropped.
OVER_BUDGET = "over_budget"
EXPANDED = "expanded_into_children"
LIMIT = "max_units_reached"
MEASURED_OVER = "over_budget_measured"
TRIAL_LIMIT = "trial_limit_reached"

#: Tokens a join may save (a BPE merge across the junction of two texts: Llama-3 writes "." and
#: the "\n\n" after it as one token), so a unit whose cost is up to this much over the room left
#: is still worth a trial render. Callers whose output joins texts pass it as ``slack``.
JOIN_SLACK = 2

T = TypeVar("T")


class Selection(NamedTuple):
    """Result of :func:`select`."""

    selected: list[int]
    """Ids of chosen units, in document order."""
    scores: np.ndarray
    """The score of every unit (as given), indexed by id."""
    used: int
    """Tokens used by the chosen units, separators included."""
    budget: int
    """The budget that was asked for."""
    dropped: dict[int, str]
    """Every unit not chosen, mapped to why: ``"over_budget"`` (it did not fit when its turn
    came), ``"expanded_into_children"`` (a parent replaced by its children) or
    ``"max_units_reached"``. Children of a chosen parent are neither selected nor dropped.
    """


def select(
    costs: Sequence[int] | np.ndarray,
    scores: Sequence[float] | np.ndarray,
    budget: int,
    *,
    order: Sequence[int] | np.ndarray | None = None,
    children: Mapping[int, Sequence[int]] | None = None,
    candidates: Sequence[int] | None = None,
    separator_cost: int = 0,
    max_units: int | None = None,
    allow_empty: bool = False,
    members: Sequence[frozenset[int]] | None = None,
) -> Selection:
    """Choose the best-scored units that fit ``budget`` tokens, in document order.

    Units are taken best score first; a unit that does not fit the room left is skipped (or, if
    it has children, replaced by them as candidates), and the walk goes on, so a smaller
    lower-ranked unit still fills the room. Hence the result is never over budget and is maximal:
    no unit left out would fit into the room that is left.

    Parameters
    ----------
    costs:
        Token cost of each unit (id = index); a fractional cost is rounded up.
    scores:
        Relevance of each unit; higher is better. NaN counts as the lowest score.
    budget:
        Token budget; ``used`` never exceeds it.
    order:
        Document position of each unit (default: the id).
    children:
        Optional hierarchy: a parent that does not fit is expanded into these children.
    candidates:
        Units considered first (default: every unit that is nobody's child).
    separator_cost:
        Tokens charged per chosen unit for the joiner placed between units.
    max_units:
        Stop after this many units (at least 1; None: no limit).
    allow_empty:
        Return an empty selection instead of raising when nothing fits.
    members:
        What each unit holds, when units nest (a section and its paragraphs, all candidates):
        a unit whose members chosen units hold already is passed over (neither selected nor
        dropped), and a unit that holds chosen units is charged its cost less theirs, and
        replaces them. None: units are separate.

    Raises
    ------
    BudgetTooSmallError
        Nothing fits and ``allow_empty`` is false.
    ConfigError
        One score per cost is not given, a cost or the budget is negative or not finite, or
        ``max_units`` is below 1.
    InputTypeError
        A cost or the budget is not a number.
    """
    cost_arr = _token_costs(costs)
    score_arr = np.asarray(scores, dtype=np.float64)
    n = len(cost_arr)
    _check(cost_arr, score_arr, budget)
    if max_units is not None and (isinstance(max_units, bool) or max_units < 1):
        msg = f"max_units must be at least 1 or None (no limit), got {max_units!r}"
        raise ConfigError(msg)
    pos = np.arange(n) if order is None else np.asarray(order, dtype=np.int64)
    kids = children or {}
    if candidates is None:
        child_ids = {c for cs in kids.values() for c in cs}
        start = [i for i in range(n) if i not in child_ids]
    else:
        start = list(candidates)
    safe = np.where(np.isnan(score_arr), -np.inf, score_arr)

    heap: list[tuple[float, int, int]] = []
    for i in start:
        heapq.heappush(heap, (-safe[i], int(pos[i]), int(i)))
    remaining = int(budget)
    chosen: list[int] = []
    dropped: dict[int, str] = {}
    seen: set[int] = set()
    held: set[int] = set()  # members of the chosen units (with ``members``)
    while heap:
        _, _, i = heapq.heappop(heap)
        if i in seen:
            continue
        seen.add(i)
        if members is not None and members[i] <= held:
            continue  # inside a chosen unit
        if max_units is not None and len(chosen) >= max_units:
            dropped[i] = LIMIT
            continue
        need = int(cost_arr[i]) + separator_cost
        inner: list[int] = []
        if members is not None:
            inner = [c for c in chosen if members[c] <= members[i]]
            need -= sum(int(cost_arr[c]) + separator_cost for c in inner)
        if need <= remaining:
            if inner:
                chosen = [c for c in chosen if c not in set(inner)]
            chosen.append(i)
            remaining -= need
            if members is not None:
                held |= members[i]
        elif kids.get(i):
            dropped[i] = EXPANDED
            for c in kids[i]:
                if c not in seen:
                    heapq.heappush(heap, (-safe[c], int(pos[c]), int(c)))
        else:
            dropped[i] = OVER_BUDGET
    if not chosen and n and not allow_empty:
        smallest = int(cost_arr.min()) + separator_cost
        msg = (
            f"budget of {budget} tokens is smaller than the smallest unit "
            f"({smallest} tokens with separator); raise the budget or use smaller units"
        )
        raise BudgetTooSmallError(msg, budget=budget, smallest=smallest)
    chosen.sort(key=lambda i: (int(pos[i]), i))
    return Selection(chosen, score_arr, int(budget) - remaining, int(budget), dropped)


def _token_costs(costs: Sequence[int] | np.ndarray) -> np.ndarray:
    """``costs`` as whole tokens: a fractional cost is rounded up, so that ``used`` never
    passes the budget (cut down, two costs of 2.9 fitted a budget of 5)."""
    raw = np.asarray(costs)
    if raw.size and raw.dtype.kind not in "iuf":  # text, booleans, objects
        msg = f"token costs must be numbers, got an array of {raw.dtype}"
        raise InputTypeError(msg)
    if raw.dtype.kind == "f":
        if not np.isfinite(raw).all():
            msg = "token costs must be finite numbers"
            raise ConfigError(msg)
        raw = np.ceil(raw)
    return raw.astype(np.int64)


def _check(costs: np.ndarray, scores: np.ndarray, budget: int) -> None:
    """Raise unless there is one score per cost, costs >= 0 and a budget that is a number
    >= 0."""
    if isinstance(budget, bool) or not isinstance(budget, numbers.Real):
        msg = f"budget must be a whole number of tokens, got {budget!r}"
        raise InputTypeError(msg)
    n = len(costs)
    if scores.shape != (n,):
        got = scores.shape[0] if scores.ndim else 0
        msg = f"got {got} scores for {n} units; pass one score per unit"
        raise ConfigError(msg)
    if budget < 0:
        msg = f"budget must be >= 0 tokens, got {budget}"
        raise ConfigError(msg)
    if n and (costs < 0).any():
        msg = f"token costs must be >= 0, got {int(costs.min())}"
        raise ConfigError(msg)


class Fill(NamedTuple, Generic[T]):
    """Result of :func:`fill`."""

    selected: list[int]
    """Ids of the units kept, in document order (a unit whose members another kept unit
    covers is left out of this list).
    """
    kept: frozenset[int]
    """The members of the kept units (for units without ``members``: their ids)."""
    output: T | None
    """What ``measure`` returned for ``kept``; ``None`` only when nothing fits and
    ``allow_empty`` was given.
    """
    tokens: int
    """Tokens of ``output`` as ``measure`` counted them; never over ``budget``."""
    budget: int
    """The budget that was asked for."""
    renders: int
    """How many times ``measure`` was called."""
    dropped: dict[int, str]
    """Every unit neither kept nor covered by a kept unit, mapped to why:
    ``"over_budget"`` (its cost did not fit the room when its turn came),
    ``"expanded_into_children"`` (a parent replaced by its children),
    ``"over_budget_measured"`` (the real output with it was over budget) or
    ``"trial_limit_reached"`` (it might have fitted but the top-up had spent its renders).
    """


def fill(
    costs: Sequence[int] | np.ndarray,
    scores: Sequence[float] | np.ndarray,
    budget: int,
    measure: Callable[[frozenset[int]], tuple[T, int]],
    *,
    order: Sequence[int] | np.ndarray | None = None,
    children: Mapping[int, Sequence[int]] | None = None,
    candidates: Sequence[int] | None = None,
    members: Sequence[frozenset[int]] | None = None,
    separator_cost: int = 0,
    slack: int = 0,
    rounds: int = 6,
    max_trials: int = 200,
    allow_empty: bool = False,
    nested: bool = False,
) -> Fill[T]:
    """Keep the best-scored units whose real output fits ``budget`` tokens.

    The estimated costs drive :func:`select`; the choice is then measured on the real output
    (``measure``), because joins, enclosing markup and tokenizer merges make the sum of costs
    inexact. While the output is over budget the room is shrunk by the overshoot and the choice
    made again (at most ``rounds`` times), then the lowest-scored kept units are dropped one by
    one. The best-ranked unit that fits on its own is always kept. Finally every unit still
    out whose cost fits the room left (plus ``slack``) is tried, best first (at most
    ``max_trials`` renders). Hence the output is never over budget and, when costs do not
    overstate what a unit adds (by more than ``slack``), no unit left out would still fit.

    Parameters
    ----------
    costs:
        Estimated token cost of each unit (id = index).
    scores:
        Relevance of each unit; higher is better. NaN counts as the lowest score.
    budget:
        Token budget for the measured output.
    measure:
        Renders the output of a set of kept members and counts it:
        ``measure(kept) -> (output, tokens)``. It must be a pure function of ``kept``.
    order:
        Document position of each unit (default: the id).
    children:
        Optional hierarchy: a parent that does not fit is expanded into these children.
    candidates:
        Units :func:`select` starts from (default: every unit that is nobody's child). Only
        these and the units below them are ever kept.
    members:
        What each unit stands for, as passed to ``measure`` (a group of blocks, say); default:
        the unit itself. Keeping a unit keeps its members; a unit whose members are all kept
        is covered.
    separator_cost:
        Tokens charged per unit for the joiner placed between units.
    slack:
        Tokens a unit's cost may exceed the room by and still be tried (tokenizers may merge
        across a join, so the real output can cost less than the sum).
    rounds:
        Most select-and-measure rounds before units are dropped one by one.
    max_trials:
        Most trial renders spent topping up the budget.
    allow_empty:
        When no unit fits on its own, return an empty :class:`Fill` (``output`` ``None``)
        instead of raising.
    nested:
        Units nest (``members`` of a parent hold its children's) and every one may be a
        candidate: :func:`select` then charges a unit only for what chosen units do not hold.

    Returns
    -------
    Fill
        The kept units and members, the measured output and why every other unit is out.

    Raises
    ------
    hrefine.errors.BudgetTooSmallError
        No unit fits on its own and ``allow_empty`` is false.
    hrefine.errors.EmptyInputError
        There are no units and ``allow_empty`` is false.
    hrefine.errors.ConfigError
        Scores, positions or member sets differ in number from costs, or a cost or the budget
        is negative.
    """
    cost_arr = _token_costs(costs)
    score_arr = np.asarray(scores, dtype=np.float64)
    _check(cost_arr, score_arr, budget)
    n = len(cost_arr)
    cost = cost_arr.tolist()
    safe = np.where(np.isnan(score_arr), -np.inf, score_arr).tolist()
    pos = list(range(n)) if order is None else [int(p) for p in order]
    kids = children or {}
    parts = [frozenset({u}) for u in range(n)] if members is None else list(members)
    if len(pos) != n or len(parts) != n:
        msg = f"got {len(pos)} positions and {len(parts)} member sets for {n} units; pass one each"
        raise ConfigError(msg)
    if candidates is None:
        below = {c for cs in kids.values() for c in cs}
        start = [u for u in range(n) if u not in below]
    else:
        start = list(candidates)
    rank = sorted(_reachable(start, kids), key=lambda u: (-safe[u], pos[u], u))
    renders = 0

    def measured(kept: frozenset[int]) -> tuple[T, int]:
        nonlocal renders
        renders += 1
        return measure(kept)

    # 1. Select on estimated costs; shrink the room by the measured overshoot and select again.
    room = int(budget)
    chosen: list[int] = []
    kept: frozenset[int] = frozenset()
    out, tokens = None, 0
    reasons: dict[int, str] = {}
    for _ in range(max(1, rounds)):
        sel = select(
            cost_arr,
            score_arr,
            room,
            order=pos,
            children=kids,
            candidates=start,
            separator_cost=separator_cost,
            allow_empty=True,
            members=parts if nested else None,
        )
        chosen, reasons = list(sel.selected), dict(sel.dropped)
        kept = frozenset().union(*(parts[u] for u in chosen))
        out, tokens = measured(kept)
        if tokens <= budget or not kept:
            break
        room -= max(1, tokens - budget)
        if room <= 0:
            break
    # 2. Still over: drop the lowest-scored kept units (later ones first among equals).
    chosen.sort(key=lambda u: (safe[u], -pos[u]))
    while tokens > budget and chosen:
        worst = chosen.pop(0)
        reasons[worst] = MEASURED_OVER
        kept -= parts[worst]
        out, tokens = measured(kept)
    # 3. The best unit that fits on its own is always kept.
    top = None
    for u in rank:
        if cost[u] > budget + slack:
            continue
        solo = measured(parts[u])
        if solo[1] <= budget:
            top = u
            break
    if top is None:
        return _nothing_fits(rank, cost, budget, renders, allow_empty)
    if not parts[top] <= kept:
        chosen, kept = [top], parts[top]
        out, tokens = solo
    # 4. Top up: try every unit still out, best first, while its cost fits the room left.
    trials = 0
    for u in rank:
        if parts[u] <= kept:
            continue
        if cost[u] + separator_cost > budget - tokens + slack:
            reasons.setdefault(u, OVER_BUDGET)
            continue
        if trials >= max_trials:
            reasons[u] = TRIAL_LIMIT
            continue
        trials += 1
        trial = kept | parts[u]
        trial_out, trial_tokens = measured(trial)
        if trial_tokens <= budget:
            chosen.append(u)
            kept, out, tokens = trial, trial_out, trial_tokens
        else:
            reasons[u] = MEASURED_OVER
    selected = _outermost(chosen, parts)
    selected.sort(key=lambda u: (pos[u], u))
    dropped = {
        u: reasons.get(u, OVER_BUDGET) for u in rank if u not in selected and not parts[u] <= kept
    }
    return Fill(selected, kept, out, tokens, int(budget), renders, dropped)


def _reachable(start: Sequence[int], children: Mapping[int, Sequence[int]]) -> list[int]:
    """``start`` and every unit below it, each once."""
    seen: set[int] = set()
    stack = [int(u) for u in start]
    while stack:
        u = stack.pop()
        if u not in seen:
            seen.add(u)
            stack.extend(int(c) for c in children.get(u, ()))
    return list(seen)


def _outermost(chosen: Sequence[int], parts: Sequence[frozenset[int]]) -> list[int]:
    """The units of ``chosen`` not covered by larger ones chosen with them."""
    covered: set[int] = set()
    out: list[int] = []
    for u in sorted(chosen, key=lambda u: (-len(parts[u]), u)):
        if not parts[u] <= covered:
            out.append(u)
            covered |= parts[u]
    return out


def _nothing_fits(
    rank: Sequence[int], cost: Sequence[int], budget: int, renders: int, allow_empty: bool
) -> Fill[Any]:
    """The empty :class:`Fill`, or the error that says why there is none."""
    if allow_empty:
        dropped = dict.fromkeys(rank, OVER_BUDGET)
        return Fill([], frozenset(), None, 0, int(budget), renders, dropped)
    if not rank:
        msg = "there are no units to fill the budget with; pass at least one unit or candidate"
        raise EmptyInputError(msg)
    smallest = min(cost[u] for u in rank)
    msg = (
        f"budget of {budget} tokens is smaller than every unit measured alone (the smallest "
        f"costs about {smallest} tokens); raise the budget or use smaller units"
    )
    raise BudgetTooSmallError(msg, budget=int(budget), smallest=smallest)
