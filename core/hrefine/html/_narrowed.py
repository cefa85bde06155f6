"""What column projection (:mod:`hrefine.html.columns`) did to each table, and its log line.

A narrowed table's dropped cells are removed before the page is cut into blocks, so unlike a
block left out they appear in no block report: the result's ``stats["narrowed_tables"]`` and
one INFO line per table (logger ``hrefine.html.columns``) are where a caller learns of them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

__all__ = ["ColumnChoice", "log_narrowed"]

# Under the public module's name: the one a caller configures.
logger = logging.getLogger("hrefine.html.columns")

# The log line names this many of a table's dropped columns, each cut to this many characters.
_NAMED = 5
_NAME_CHARS = 40


@dataclass
class ColumnChoice:
    """What :func:`~hrefine.html.columns.project_columns` did to one table."""

    kept: list[int]
    """Grid columns kept (0-based), in order."""
    dropped: list[int]
    """Grid columns removed: their text is not in the output."""
    headers: list[str]
    """Every column's header text (``""`` for a column without one)."""
    tokens_before: int
    tokens_after: int
    scores: list[float] = field(default_factory=list)
    whole_rows: list[int] = field(default_factory=list)
    document: int = 0
    """Index of the input document the table is in."""
    table: int = 0
    """Index of the table among its document's ``<table>`` elements in document order, as
    cleaned (before any table was narrowed or copied)."""


def log_narrowed(choices: list[ColumnChoice]) -> None:
    """Log at INFO, per narrowed table, which table it is and how many (and which) columns it
    lost. INFO, as a skipped empty input is: narrowing is the pruner working as designed."""
    for choice in choices:
        names = [(choice.headers[c] or f"column {c + 1}")[:_NAME_CHARS] for c in choice.dropped]
        more = len(names) - _NAMED
        listed = ", ".join(map(repr, names[:_NAMED])) + (f" and {more} more" if more > 0 else "")
        logger.info(
            "input %d, table %d: narrowed to %d of its %d columns to fit the budget, every row "
            "kept; dropped %d columns: %s",
            choice.document,
            choice.table,
            len(choice.kept),
            len(choice.kept) + len(choice.dropped),
            len(choice.dropped),
            listed,
        )
