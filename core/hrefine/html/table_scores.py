"""How the blocks of a table share its score in stage 1: a row scores at least as its table
as a whole, the rows next to one a question names by order come just after it, and a table's
last row of values may be kept with it (see ``keep_last_rows`` and ``neighbour_rows``)."""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence

import numpy as np

from hrefine.html._text import count_words, element_text
from hrefine.html.blocks import BlockForest

__all__ = [
    "asks_order",
    "enclosing_tables",
    "inherit_table_scores",
    "is_prose",
    "last_rows",
    "neighbour_scores",
]

# A block of a table with more words than this is prose: it neither borrows nor inherits its
# table's score (short rows are data, whose meaning is their table's).
_PROSE_WORDS = 64


def is_prose(forest: BlockForest, node_id: int) -> bool:
    """Whether a block inside a table is prose: more than :data:`_PROSE_WORDS` words in one
    cell (a row of many short cells is data, however wide)."""
    node = forest.tree.nodes[node_id]
    if node.metadata["words"] <= _PROSE_WORDS:
        return False
    if node.metadata["tag"] != "tr":
        return True
    cells = [c for c in forest.elements[node_id] if c.tag in ("td", "th")]
    return not cells or max(count_words(element_text(c)) for c in cells) > _PROSE_WORDS


def enclosing_tables(forest: BlockForest, ids: Sequence[int], tables: set[int]) -> dict[int, int]:
    """Block id -> its nearest enclosing table, for blocks inside a table of ``tables``.

    A block is never inside a table kept whole (a leaf), so its nearest table is split and
    scored as a group: one of ``tables``.
    """
    tree = forest.tree
    out: dict[int, int] = {}
    for i in ids:
        node = tree.nodes[i]
        while node.parents:
            node = tree.nodes[node.parents[0]]
            if node.metadata["tag"] == "table":
                if node.id in tables:
                    out[i] = node.id
                break
    return out


# A score moved by this share (at least this much) to come just before or after another: far
# below any difference between two blocks' scores, and above float32 rounding (the fill ranks
# in float32).
_NUDGE = 1e-5


def _nudged(score: float, sign: int) -> float:
    """``score`` moved just up (``sign`` 1) or down (-1), by more than float32 rounding."""
    return float(score + sign * _NUDGE * max(1.0, abs(score)))


def _value_rows(
    forest: BlockForest, ids: Sequence[int], tables: Mapping[int, int]
) -> dict[int, list[int]]:
    """Each table of ``tables`` -> the positions in ``ids`` of its rows of values (two cells
    or more, one a value cell), in document order."""
    nodes = forest.tree.nodes
    rows: dict[int, list[int]] = {}
    for k, i in enumerate(ids):
        table = tables.get(i)
        if table is None or nodes[i].metadata["tag"] != "tr":
            continue
        cells = [c for c in forest.elements[i] if c.tag in ("td", "th")]
        # A row spanning the table (a note, an episode's summary) holds no values.
        if len(cells) >= 2 and any(c.tag == "td" for c in cells):
            rows.setdefault(table, []).append(k)
    for found in rows.values():
        found.sort(key=lambda k: nodes[ids[k]].order)
    return rows


def last_rows(forest: BlockForest, ids: Sequence[int], tables: Mapping[int, int]) -> set[int]:
    """The last row of values (see :func:`_value_rows`) of each table of ``tables``: the block
    ids."""
    return {ids[ks[-1]] for ks in _value_rows(forest, ids, tables).values()}


# Words by which a question asks for what comes before or after something it names.
_ORDER_CUE = re.compile(
    r"\b(after|before|prior|next|previous|preceding|following|succeed(?:ed|s)?|preceded)\b",
    re.I,
)


def asks_order(query: str) -> bool:
    """Whether ``query`` asks for what comes before or after something ("who played after
    X", "the one prior to X").

    >>> asks_order("who was ambassador after Jeanette W. Hyde?"), asks_order("who won?")
    (True, False)
    """
    return _ORDER_CUE.search(query) is not None


def neighbour_scores(
    forest: BlockForest,
    ids: Sequence[int],
    tables: Mapping[int, int],
    scores: np.ndarray,
    groups: Mapping[int, float],
) -> np.ndarray:
    """``scores`` with the rows right before and after each table's best row scoring just
    below it, where that row scores above its table (it matches the question by its own
    words): "who played after X", "the one before X" read the named row's neighbours.
    ``scores`` are the rows' own, before they inherit their table's."""
    out = scores.copy()
    for table, ks in _value_rows(forest, ids, tables).items():
        own = np.asarray([scores[k] for k in ks], dtype=np.float64)
        if not len(own) or np.isnan(own).all():
            continue
        best = int(np.nanargmax(own))
        top = float(own[best])
        if not top > groups[table]:
            continue
        below = _nudged(top, -1)
        for j in (best - 1, best + 1):
            if 0 <= j < len(ks) and not out[ks[j]] >= below:
                out[ks[j]] = below
    return out


def inherit_table_scores(
    ids: Sequence[int],
    scores: np.ndarray,
    tables: Mapping[int, int],
    groups: Mapping[int, float],
    lead: Collection[int] = (),
) -> np.ndarray:
    """Each block inside a table (``tables``: block -> its table) scores at least as high as
    that table as a whole (``groups``: table -> its score).

    A table too big for the budget is then kept as far as it goes: the rows that match the
    question best first, then its other rows in document order, rather than a few scattered
    rows of it among blocks from elsewhere. The blocks of ``lead`` (see ``keep_last_rows``)
    then score just above that, so they come before the rows they tie with.
    """
    out = scores.copy()
    for k, i in enumerate(ids):
        table = tables.get(i)
        if table is None:
            continue
        score = groups[table]
        if score > out[k] or (np.isnan(out[k]) and not np.isnan(score)):
            out[k] = score
        if i in lead and not np.isnan(out[k]):
            out[k] = _nudged(out[k], 1)
    return out
