"""An HTML report of a GARLIC search: the Yes/No trace, what was read, and the graph's levels.

:func:`render_report` writes one self-contained page: no script at all, inline CSS allowed by
its hash in a Content-Security-Policy that loads nothing from anywhere, and every text (the
query, the nodes', the LLM's replies) escaped. It shows:

- the query, the search mode, why it stopped, and the tokens the model ran (pre-filled with the
  KV cache) against those that recomputing the whole prompt at every step would have run;
- the trace: one row per Yes/No question (step, the node read before it, P(Yes), P(No), the
  answer, the new tokens pre-filled, seconds, and the text reply in prompt-only mode);
- the visited nodes in document order: level, the step that read them, their score when picked,
  their attention ``a_i`` and the P(Yes) asked right after them, their text;
- the notes (replies that were neither Yes nor No, a context window that ran out);
- with the graph: its levels, top first, with node counts and how many were visited, and the
  first words of up to a few dozen nodes per level (a big graph is summarised, not dumped).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hrefine._renderers import register
from hrefine.errors import InputTypeError
from hrefine.garlic._report_page import draw_report
from hrefine.garlic.search_result import SearchResult

if TYPE_CHECKING:
    from hrefine.garlic.graph import GarlicGraph

__all__ = ["render_report"]


def render_report(
    result: SearchResult, graph: GarlicGraph | None = None, *, title: str | None = None
) -> str:
    """A self-contained, script-free HTML report of a GARLIC search.

    Parameters
    ----------
    result:
        What :meth:`GarlicSearcher.search <hrefine.garlic.GarlicSearcher.search>` returned.
    graph:
        The graph it searched (adds its levels, with node counts and the visited nodes marked);
        None leaves that section out.
    title:
        Shown in the browser tab and above the question.

    Returns
    -------
    str
        A complete HTML document: inline CSS, no script, nothing loaded from anywhere; every
        text in it is escaped.

    Raises
    ------
    InputTypeError
        ``result`` is not a :class:`~hrefine.garlic.SearchResult`.
    """
    if not isinstance(result, SearchResult):
        msg = f"result must be a GARLIC SearchResult, got {type(result).__name__}"
        raise InputTypeError(msg)
    return draw_report(result, graph, title=title)


# SearchResult.to_html draws through this (hrefine.garlic imports this module).
register(SearchResult, render_report)
