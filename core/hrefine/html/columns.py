"""Column projection: a table too big for the budget keeps its columns that matter to the query.

Row selection keeps whole rows, so a table much larger than the budget loses most of its rows,
and with them the answer to any question over the whole table (its largest value, its last
entry, a count). Most of a wide table's tokens sit in columns the question never asks about, so
keeping every row of the few columns it does ask about answers such questions, and still holds
the rows a lookup needs. Columns are scored with the pruner's own stage-1 scorer (header and
values against the query), and kept best first while the narrowed table stays within a share of
the budget. Cells spanning columns and rows are followed through the table's grid (the HTML
table model), so a spanning cell stays when any of its columns does.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from copy import deepcopy
from dataclasses import dataclass
from typing import Any

import numpy as np

from hrefine.html._load import drop_tree
from hrefine.html._narrowed import ColumnChoice, log_narrowed
from hrefine.html._text import cell_span, element_text, normalize_space
from hrefine.html.tags import TABLE_SECTION_TAGS

__all__ = ["ColumnChoice", "TableGrid", "is_record_table", "project_columns", "table_grid"]

# Spans beyond these are treated as malformed (browsers cap them at 1000 and 65534).
_MAX_COLSPAN = 1000
_MAX_ROWSPAN = 65534
# A column's scoring text is its header and its first values, which say what the column holds.
# More values only cost embedding: read to 128 word pieces, columns were 16% of the pieces a
# cold call embeds on WTQ pages. 12 values cut that by 37% and 6 by a further 40% (3.5% of a
# cold call's pieces); on all 242 strict WTQ and 78 NQ questions neither lost an answer.
_COLUMN_VALUES = 6
# ...and at most this many characters.
_MAX_COLUMN_CHARS = 2000
# A cell of digits and punctuation only ("12", "1,000", "4:24.6", "—"): a measure, not a name.
_NUMERIC = re.compile(r"^[\d\W_]*$")
# A key column names its rows: most of its values are distinct words, not numbers.
_KEY_DISTINCT = 0.8
_KEY_NUMERIC = 0.5
# Rows the query names (their words match it best): at most this many are also kept whole, in
# a copy of the table with its header rows, within this share of the budget.
_MAX_NAMED_ROWS = 3
_NAMED_SHARE = 0.25
# A row is named when its lexical match is at least this share of the table's best row's.
_NAMED_MATCH = 0.5
# A record table (an infobox) has at least this many rows of one header cell and one value,
# and they are at least this share of its rows holding a value.
_RECORD_MIN_ROWS = 3
_RECORD_SHARE = 0.6
# Relative distance from the room within which a column's cost is summed again exactly.
_TIE = 1e-6


@dataclass
class TableGrid:
    """A table's cells placed on its column grid."""

    table: Any
    """The ``<table>`` element."""
    rows: list[Any]
    """Its rows (``<tr>``, directly or through ``thead``/``tbody``/``tfoot``), in order."""
    cells: list[list[tuple[Any, int, int]]]
    """Per row, each cell with the first and last grid column it covers."""
    n_cols: int
    """Number of grid columns."""

    def spans_all(self, first: int, last: int) -> bool:
        """Whether a cell covering ``first..last`` spans the whole table (a section title)."""
        return first == 0 and last >= self.n_cols - 1


def _rows(table: Any) -> list[Any]:
    rows: list[Any] = []
    for child in table:
        if child.tag == "tr":
            rows.append(child)
        elif child.tag in TABLE_SECTION_TAGS:
            rows.extend(r for r in child if r.tag == "tr")
    return rows


def is_record_table(table: Any) -> bool:
    """Whether ``table`` describes one thing, a field per row (a Wikipedia infobox): most of
    its rows holding a value are one header cell then one value cell (``Author | J.K.
    Rowling``), and at least three are.

    Such a row says what it is by its own header cell, unlike a row of a data table, whose
    meaning is its table's; a section row spanning the table (an image, "Statistics") is
    neither.

    >>> from lxml import html
    >>> box = html.fromstring(
    ...     "<table><tr><th colspan=2>Harry Potter</th></tr><tr><th>Author</th>"
    ...     "<td>J. K. Rowling</td></tr><tr><th>Genre</th><td>Fantasy</td></tr>"
    ...     "<tr><th>Books</th><td>7</td></tr></table>"
    ... )
    >>> is_record_table(box)
    True
    >>> data = html.fromstring(
    ...     "<table><tr><th>Year</th><th>Title</th></tr><tr><td>1997</td><td>Stone</td></tr>"
    ...     "<tr><td>1998</td><td>Chamber</td></tr><tr><td>1999</td><td>Prisoner</td></tr></table>"
    ... )
    >>> is_record_table(data)
    False
    """
    if table.tag != "table":
        return False
    valued = fields = 0
    for row in _rows(table):
        cells = [c for c in row if c.tag in ("td", "th")]
        if not any(c.tag == "td" for c in cells):
            continue
        valued += 1
        fields += len(cells) == 2 and cells[0].tag == "th" and cells[1].tag == "td"
    return fields >= _RECORD_MIN_ROWS and fields >= _RECORD_SHARE * valued


def table_grid(table: Any) -> TableGrid | None:
    """The grid of ``table``, or None for a table that holds another table, has no columns, or
    has more columns than cells (its width made by spans: a few cells spanning a thousand
    columns each would make the grid, and the work on it, a thousand times the page)."""
    if next(table.iterdescendants("table"), None) is not None:
        return None
    rows = _rows(table)
    n_cells = sum(1 for row in rows for cell in row if cell.tag in ("td", "th"))
    taken: dict[int, int] = {}  # grid column -> last row a cell spanning down from above covers
    placed: list[list[tuple[Any, int, int]]] = []
    n_cols = 0
    for r, row in enumerate(rows):
        col = 0
        here: list[tuple[Any, int, int]] = []
        for cell in row:
            if cell.tag not in ("td", "th"):
                continue
            while taken.get(col, -1) >= r:
                col += 1
            span = cell_span(cell, "colspan", _MAX_COLSPAN)
            if col + span > n_cells:
                return None
            down = cell_span(cell, "rowspan", _MAX_ROWSPAN)
            here.append((cell, col, col + span - 1))
            if down > 1:
                for c in range(col, col + span):
                    taken[c] = r + down - 1
            col += span
        n_cols = max(n_cols, col)
        placed.append(here)
    if n_cols < 2:
        return None
    return TableGrid(table=table, rows=rows, cells=placed, n_cols=n_cols)


def _columns(grid: TableGrid) -> tuple[list[str], list[str], int]:
    """Each column's scoring text (header, then its cells in row order), its header, and the
    key column: the leftmost whose values mostly differ and are mostly not numbers (the one
    that names the rows; column 0 when none does).
    """
    values: list[list[str]] = [[] for _ in range(grid.n_cols)]
    headers: list[list[str]] = [[] for _ in range(grid.n_cols)]
    for row in grid.cells:
        for cell, first, last in row:
            if grid.spans_all(first, last):
                continue  # a section title says nothing about one column
            text = normalize_space(element_text(cell))
            if not text:
                continue
            for c in range(first, last + 1):
                if cell.tag == "th":
                    if len(headers[c]) < 3:
                        headers[c].append(text)
                else:
                    values[c].append(text)
    texts = []
    key = None
    for c in range(grid.n_cols):
        head = " / ".join(headers[c])
        body = " | ".join(values[c][:_COLUMN_VALUES])
        texts.append((f"{head}: {body}" if head else body)[:_MAX_COLUMN_CHARS])
        vals = values[c]
        if key is None and vals:
            numeric = sum(1 for v in vals if _NUMERIC.match(v)) / len(vals)
            if len(set(vals)) >= _KEY_DISTINCT * len(vals) and numeric < _KEY_NUMERIC:
                key = c
    return texts, [" / ".join(h) for h in headers], 0 if key is None else key


def _project(grid: TableGrid, kept: set[int]) -> None:
    """Remove every cell outside the kept columns; rows left without cells go too."""
    for row, cells in zip(grid.rows, grid.cells, strict=True):
        for cell, first, last in cells:
            inside = sum(1 for c in range(first, last + 1) if c in kept)
            if inside == 0:
                drop_tree(cell)
            elif last > first:
                if inside > 1:
                    cell.set("colspan", str(inside))
                elif "colspan" in cell.attrib:
                    del cell.attrib["colspan"]
        if not any(c.tag in ("td", "th") for c in row):
            drop_tree(row)


@dataclass
class _Candidate:
    """A table too big for the budget whose cells lie on a grid, before its columns are scored."""

    grid: TableGrid
    cells: list[tuple[Any, int, int]]
    cell_tokens: list[float]
    texts: list[str]
    headers: list[str]
    key: int
    tokens: int
    document: int
    table: int


def project_columns(
    roots: Sequence[Any],
    query: str,
    *,
    budget: int,
    share: float,
    score_groups: Callable[[str, list[list[str]]], Sequence[np.ndarray]],
    match: Callable[[str, list[str]], np.ndarray],
    count_many: Callable[[Sequence[str]], list[int]],
    serialize: Callable[[Any], str],
    before_change: Callable[[], None] | None = None,
    documents: Sequence[int] | None = None,
) -> list[ColumnChoice]:
    """Narrow each table of ``roots`` whose HTML exceeds ``budget`` tokens, in place.

    A table keeps its key column (the one naming its rows) and its best-scored column, then
    its next best columns while the narrowed table's estimated tokens stay within
    ``share * budget``; columns keep their order. A table whose key and best column alone
    exceed that, whose cells do not lie on a grid, or that fits the budget is left alone:
    it is better served by whole rows.

    The rows the query names (the best lexical matches, up to three, within a quarter of the
    budget) lose no cell: they are kept whole in a copy of the table, with its header rows,
    placed right before it, so a lookup ("who scored on 23 October 2005?") still finds every
    field of its row. A table with cells spanning rows is left alone when it has such rows
    (a copy of some of its rows would shift their cells).

    Parameters
    ----------
    roots:
        Cleaned documents.
    query:
        What the columns are scored against.
    budget:
        Token budget of the pruning.
    share:
        Largest share of ``budget`` a narrowed table may take.
    score_groups:
        ``(query, groups) -> one score array per group``: the pruner's stage-1 scorer, given
        the column texts of every big table at once (one group per table), so that a model
        scores them in one batch.
    match:
        ``(query, texts) -> scores``: a lexical match (BM25), 0 for no shared word.
    count_many:
        Tokens of each of several HTML strings, as the budget counts them.
    serialize:
        An element's HTML as the budget sees it (without its tail).
    before_change:
        Called before a table is changed (so a caller can record the documents as they were,
        only when they will change).
    documents:
        The input document index of each root (default: its place in ``roots``), which
        names the table in the result and the log.

    Returns
    -------
    list[ColumnChoice]
        One per narrowed table, in document order. Each is also logged at INFO (logger
        ``hrefine.html.columns``), naming the table and the columns it lost: their text is
        not in the output, and no block report lists it.
    """
    found = _candidates(roots, budget, count_many, serialize, documents)
    if not found:
        return []
    # Candidates never nest (a table holding another has no grid), so narrowing one leaves
    # the others' cells, texts and counts as they were collected.
    groups = score_groups(query, [c.texts for c in found])
    out: list[ColumnChoice] = []
    for cand, raw in zip(found, groups, strict=True):
        grid, cells, cell_tokens = cand.grid, cand.cells, cand.cell_tokens
        scores = np.asarray(raw, dtype=np.float64)
        scores = np.where(np.isnan(scores), -np.inf, scores)
        kept = _choose(scores, cand.key, cells, cell_tokens, int(share * budget))
        if kept is None or len(kept) >= grid.n_cols:
            continue
        heads = _header_rows(grid)
        named = _named_rows(grid, heads, query, match, cell_tokens, int(_NAMED_SHARE * budget))
        if named is None:
            continue
        if before_change is not None:
            before_change()
        if named:
            _copy_rows(grid, heads + named)
        _project(grid, kept)
        out.append(
            ColumnChoice(
                kept=sorted(kept),
                dropped=[c for c in range(grid.n_cols) if c not in kept],
                headers=cand.headers,
                tokens_before=cand.tokens,
                tokens_after=round(_cost(cells, cell_tokens, kept)),
                scores=[float(s) for s in scores],
                whole_rows=named,
                document=cand.document,
                table=cand.table,
            )
        )
    log_narrowed(out)
    return out


def _candidates(
    roots: Sequence[Any],
    budget: int,
    count_many: Callable[[Sequence[str]], list[int]],
    serialize: Callable[[Any], str],
    documents: Sequence[int] | None = None,
) -> list[_Candidate]:
    """The tables of ``roots`` over ``budget`` tokens whose cells lie on a grid."""
    big: list[tuple[Any, str, int, int]] = []
    for r, root in enumerate(roots):
        doc = r if documents is None else documents[r]
        for n, table in enumerate(list(root.iter("table"))):
            html = serialize(table)
            # A token covers at least one byte: a table of no more bytes than the budget fits.
            if len(html.encode("utf-8")) > budget:
                big.append((table, html, doc, n))
    if not big:
        return []
    found: list[_Candidate] = []
    tokens_of = count_many([h for _, h, _, _ in big])
    for (table, _, doc, n), tokens in zip(big, tokens_of, strict=True):
        if tokens <= budget:
            continue
        grid = table_grid(table)
        if grid is None:
            continue
        cells = [(cell, first, last) for row in grid.cells for cell, first, last in row]
        # Each cell's share of the table's tokens: cells counted alone carry end tags and
        # their row's tags are not counted, so the parts are scaled to sum to the whole.
        alone = count_many([serialize(cell) for cell, _, _ in cells])
        scale = tokens / max(1, sum(alone))
        texts, headers, key = _columns(grid)
        found.append(
            _Candidate(grid, cells, [k * scale for k in alone], texts, headers, key, tokens, doc, n)
        )
    return found


def _cost(cells: list[tuple[Any, int, int]], cell_tokens: list[float], cols: set[int]) -> float:
    """Estimated tokens of the table narrowed to ``cols``."""
    total = 0.0
    for (_, first, last), n in zip(cells, cell_tokens, strict=True):
        if any(c in cols for c in range(first, last + 1)):
            total += n
    return total


def _choose(
    scores: np.ndarray,
    key: int,
    cells: list[tuple[Any, int, int]],
    cell_tokens: list[float],
    room: int,
) -> set[int] | None:
    """The key and best columns, then the next best that fit ``room``; None if those two do not."""
    order = sorted(range(len(scores)), key=lambda c: (-scores[c], c))
    kept = {key, order[0]}
    cost = _cost(cells, cell_tokens, kept)
    if cost > room:
        return None
    # Each column's cells: a column tried costs only its own cells not already kept, so the
    # choice is linear in the table (rescanning every cell per column took minutes at 10,000
    # columns).
    by_col: list[list[int]] = [[] for _ in range(len(scores))]
    inside = [False] * len(cells)
    for i, (_, first, last) in enumerate(cells):
        for c in range(first, last + 1):
            by_col[c].append(i)
            inside[i] = inside[i] or c in kept
    for c in order:
        if c in kept:
            continue
        new = [i for i in by_col[c] if not inside[i]]
        total = cost + sum(cell_tokens[i] for i in new)
        if abs(total - room) <= _TIE * max(1.0, room):
            # Summed in another order than _cost sums: at the boundary, decide as it does.
            total = _cost(cells, cell_tokens, kept | {c})
        if total <= room:
            kept.add(c)
            cost = total
            for i in new:
                inside[i] = True
    return kept


def _header_rows(grid: TableGrid) -> list[int]:
    """The rows before the first row with a data cell (``<td>``)."""
    out = []
    for r, cells in enumerate(grid.cells):
        if any(cell.tag == "td" for cell, _, _ in cells):
            break
        out.append(r)
    return out


def _named_rows(
    grid: TableGrid,
    header_rows: list[int],
    query: str,
    match: Callable[[str, list[str]], np.ndarray],
    cell_tokens: list[float],
    room: int,
) -> list[int] | None:
    """Rows of ``grid`` the query names, best match first (see :func:`project_columns`).

    None when the table has such rows but cells spanning rows, so it should be left whole.
    """
    heads = set(header_rows)
    data = [r for r in range(len(grid.rows)) if r not in heads]
    if not data:
        return []
    texts = [normalize_space(element_text(grid.rows[r])) for r in data]
    found = np.asarray(match(query, texts), dtype=np.float64)
    top = float(found.max()) if len(found) else 0.0
    if not top > 0:
        return []
    if any(cell_span(c, "rowspan", _MAX_ROWSPAN) > 1 for row in grid.cells for c, _, _ in row):
        return None
    # cell_tokens follows the cells row by row; each row's total:
    sizes = [len(row) for row in grid.cells]
    bounds = np.cumsum([0, *sizes])
    row_tokens = [sum(cell_tokens[bounds[r] : bounds[r + 1]]) for r in range(len(sizes))]
    spent = sum((row_tokens[r] for r in heads), 0.0)
    named: list[int] = []
    for k in sorted(range(len(data)), key=lambda k: (-found[k], k))[:_MAX_NAMED_ROWS]:
        if found[k] < _NAMED_MATCH * top:
            break
        r = data[k]
        if spent + row_tokens[r] > room:
            break
        spent += row_tokens[r]
        named.append(r)
    return named


def _copy_rows(grid: TableGrid, rows: list[int]) -> None:
    """Insert before the table a copy of it holding only ``rows``."""
    wanted = set(rows)
    copy = deepcopy(grid.table)
    copy.tail = None
    for r, row in enumerate(_rows(copy)):
        if r not in wanted:
            drop_tree(row)
    grid.table.addprevious(copy)
