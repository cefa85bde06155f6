"""HtmlRAG: clean HTML, split it into a block tree and prune it to a token budget.

>>> from hrefine.html import HtmlPruner
>>> result = HtmlPruner().prune(page_html, "who directed the film?", max_tokens=1024)
>>> result.html  # valid HTML with the original tag names, at most 1024 tokens
>>> Path("report.html").write_text(result.to_html())  # what was kept and why, in a browser

Importing this package loads neither lxml nor any model; both load on first use.
"""

from __future__ import annotations

from hrefine.html.blocks import build_block_tree
from hrefine.html.clean import DEFAULT_KEEP_ATTRS, clean_html
from hrefine.html.options import DEFAULT_BUDGET, MIN_BUDGET, HtmlPrunerOptions
from hrefine.html.prune import HtmlPruner
from hrefine.html.report import render_report
from hrefine.html.result import BlockReport, PruneResult

__all__ = [
    "DEFAULT_BUDGET",
    "DEFAULT_KEEP_ATTRS",
    "MIN_BUDGET",
    "BlockReport",
    "HtmlPruner",
    "HtmlPrunerOptions",
    "PruneResult",
    "build_block_tree",
    "clean_html",
    "render_report",
]
