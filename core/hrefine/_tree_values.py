"""The values a :class:`~hrefine.tree.Tree` is given for its nodes and edges, checked: a
node's document order and an edge's weight."""

from __future__ import annotations

import math
import operator

from hrefine.errors import InputTypeError, TreeError

__all__ = ["as_order", "as_weight"]


def as_order(order: object) -> int:
    """A node's ``order`` as an int (numpy integers too; never a bool)."""
    if type(order) is int:
        return order
    msg = f"order must be an integer (or None to derive it), got {order!r}"
    if isinstance(order, bool):  # True is an int to Python, never a position
        raise InputTypeError(msg)
    try:
        return operator.index(order)  # type: ignore[arg-type]
    except TypeError:
        raise InputTypeError(msg) from None


def as_weight(weight: object, parent: int, child: int) -> float:
    """An edge's weight as a finite float (the edge named in the error)."""
    if type(weight) is float and math.isfinite(weight):
        return weight
    try:
        w = float(weight)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        w = math.nan
    if not math.isfinite(w):
        msg = f"edge {parent} -> {child} has weight {weight!r}; pass a finite number"
        raise TreeError(msg)
    return w
