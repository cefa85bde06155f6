"""LongRefiner: hierarchical document refinement for long-context RAG (Jin et al., 2025).

A query is analysed as local or global (step 1), each document is structured into sections and
paragraphs (step 2: from its own markup, or by a model whose skeleton is matched back to the
text), a model picks the sections that matter (step 3), and every node is scored as
``w_local * LS + w_global * GS``; the best nodes are kept to an exact token budget, in
document order.
"""

# Importing the report registers the renderer of RefineResult.to_html (hrefine._renderers).
from hrefine.longrefiner import report as _report  # noqa: F401
from hrefine.longrefiner.analyze import QueryAnalysis
from hrefine.longrefiner.document import StructuredDocument, build_document, coverage
from hrefine.longrefiner.options import LongRefinerOptions
from hrefine.longrefiner.pipeline import LongRefiner, RefinedDocument, RefineResult
from hrefine.longrefiner.select import GlobalSelection, Truncation
from hrefine.longrefiner.spans import Span

__all__ = [
    "GlobalSelection",
    "LongRefiner",
    "LongRefinerOptions",
    "QueryAnalysis",
    "RefineResult",
    "RefinedDocument",
    "Span",
    "StructuredDocument",
    "Truncation",
    "build_document",
    "coverage",
]
