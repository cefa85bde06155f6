"""GARLIC: a summary graph with attention edges and an LLM-controlled search (Wang et al., 2024).

Documents are cut into ~128-token chunks (the paper: 300); an LLM writes bullet "summary
points" (information points) over batches of them, level after level, and the attention from
each point's tokens to each input gives the weights of a many-to-many graph
(:class:`GarlicGraph`). A search
(:class:`GarlicSearcher`) reads the top level, asks the LLM whether it can answer ("Yes"/"No",
with everything read so far kept in the KV cache), and while it cannot, follows the attention the
read nodes pay to the question through the graph (z = Eᵀa) plus embedding similarity to the next
node. A model that shows no attention (any chat LLM) builds edges from embedding similarity and
answers Yes/No in text. With no LLM given, :class:`ExtractiveGarlicLM` (no model) writes the
summary points from the inputs' first sentences and answers Yes/No by word overlap: measured, an
LLM did not keep more of the evidence (docs/garlic.md), and it costs minutes a document on a CPU.
"""

# Importing the report registers the renderer of SearchResult.to_html (hrefine._renderers).
from hrefine.garlic import report as _report  # noqa: F401
from hrefine.garlic.extractive import ExtractiveGarlicLM
from hrefine.garlic.graph import GarlicGraph
from hrefine.garlic.options import EDGE_MODES, SEARCH_PROMPT, SUMMARY_PROMPT, GarlicOptions
from hrefine.garlic.points import Point, parse_points
from hrefine.garlic.search import GarlicSearcher, SearchResult, SearchStep, VisitedNode

__all__ = [
    "EDGE_MODES",
    "SEARCH_PROMPT",
    "SUMMARY_PROMPT",
    "ExtractiveGarlicLM",
    "GarlicGraph",
    "GarlicOptions",
    "GarlicSearcher",
    "Point",
    "SearchResult",
    "SearchStep",
    "VisitedNode",
    "parse_points",
]
