"""Why a block of a pruned page is not in the output, or not whole: the reason codes.

:attr:`BlockReport.reason <hrefine.html.BlockReport.reason>` holds one of these, or
``OVER_BUDGET`` (the budget's own, from :mod:`hrefine.budget`), or None for a block kept whole.
They live apart from :mod:`hrefine.html.result` so that the report that draws a result can use
them without importing the result.
"""

from __future__ import annotations

from hrefine.budget import OVER_BUDGET as OVER_BUDGET

__all__ = ["EMPTY", "FAILED", "HEADING_ALONE", "OVER_BUDGET", "REPEAT", "TRUNCATED"]

#: The block's document had no text.
EMPTY = "empty"
#: A kept block cut to fit the budget.
TRUNCATED = "truncated"
#: A heading left out because none of the text of its section was kept (it would stand alone).
HEADING_ALONE = "heading_alone"
#: The block's document could not be read (``stats["failed_documents"]`` says why).
FAILED = "failed"
#: The block's document is the same page as an earlier one, pruned once
#: (``stats["repeated_documents"]`` names it).
REPEAT = "repeat"
