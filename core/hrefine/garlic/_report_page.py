"""Draw the page of a GARLIC search report (see :func:`hrefine.garlic.report.render_report`).

:func:`draw_report` writes the page for a :class:`~hrefine.garlic.SearchResult` it is given
without checking its type; :func:`~hrefine.garlic.report.render_report` checks what it is given
and then calls it (and :meth:`SearchResult.to_html <hrefine.garlic.SearchResult.to_html>`
reaches it through ``render_report``, registered in :mod:`hrefine._renderers`). This module
imports the result only for typing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hrefine import _report_frame as frame
from hrefine.raptor.build import TOKENS
from hrefine.tree import NodeKind

if TYPE_CHECKING:
    from hrefine.garlic.graph import GarlicGraph
    from hrefine.garlic.search_result import SearchResult, VisitedNode

__all__ = ["draw_report"]

# Caps that keep the page readable (and small) for a long search or a big graph.
_MAX_ROWS = 500  # trace rows and visited nodes
_NODES_PER_LEVEL = 40  # nodes listed per level of the graph
_MAX_LEVELS = 20  # levels listed (the top ones)
_LEAF_WORDS = 60  # words of a long visited text shown before the rest is folded away
_GRAPH_WORDS = 14  # words of a graph node shown in the levels section

# A visited node's link is drawn bold and green.
_SEEN = "ref seen"

_CSS = (
    frame.PAGE_CSS
    + "h2{font-size:17px;margin:26px 0 8px}\n.meta{color:#5b6776;font-size:13px}\n"
    + frame.TABLE_CSS
    + """tr.yes td{background:#f1faf4}
.yes b{color:#1f6e43}
.text{white-space:pre-wrap;word-wrap:break-word}
.ref{color:#22579a;text-decoration:none}
.seen{font-weight:600;color:#1f6e43}
details summary{cursor:pointer;color:#22579a;font-size:12.5px}
.note{color:#5b6776;font-size:13px}
ul.notes li{margin:2px 0}
"""
)


def draw_report(
    result: SearchResult, graph: GarlicGraph | None = None, *, title: str | None = None
) -> str:
    """The report's HTML for ``result`` (and ``graph``'s levels); ``result`` is not checked."""
    body = [
        _header(result, graph, title),
        "<main>\n",
        _trace(result),
        _visited(result),
        _notes(result),
        "" if graph is None else _levels(graph, {v.id for v in result.visited}),
        "</main>\n",
    ]
    return frame.page("GARLIC search report", title, _CSS, body)


# -- pieces -----------------------------------------------------------------------------------


def _num(value: float | None, digits: int = 4) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _header(result: SearchResult, graph: GarlicGraph | None, title: str | None) -> str:
    added = sum(1 for v in result.visited if v.step > 0)
    top = len(result.visited) - added
    yes = sum(1 for s in result.trace if s.said_yes)
    facts = [
        f"{'attention' if result.mode == 'attention' else 'prompt-only'} mode",
        f"stopped by {result.stopped_by}",
        f"{len(result.trace)} Yes/No questions, {yes} answered Yes",
        f"{top} top-level nodes read, {added} added",
        f"{result.seconds:.2f} s",
    ]
    if graph is not None:
        facts.append(
            f"graph of {len(graph):,} nodes, {graph.levels} summary levels, {graph.edge_mode} edges"
        )
    saved = result.recompute_tokens - result.prefilled_tokens
    share = f" ({saved / result.recompute_tokens:.0%} fewer)" if result.recompute_tokens else ""
    tokens = (
        f"<b>{result.prefilled_tokens:,}</b> tokens pre-filled; recomputing the whole prompt "
        f"at every step would have run <b>{result.recompute_tokens:,}</b>"
        + (frame.esc(share) if saved > 0 else "")
        + ("" if result.mode == "attention" else " (no KV cache: each step sends the whole prompt)")
    )
    rest = f'<div class="meta">{tokens}</div>\n'
    return frame.header("GARLIC search report", title, result.query, facts, rest)


def _trace(result: SearchResult) -> str:
    prompt = result.mode != "attention"
    rows = []
    for s in result.trace[:_MAX_ROWS]:
        node = "top level" if s.node_id is None else frame.ref(s.node_id, _SEEN)
        reply = f"<td>{frame.esc(s.answer or '')}</td>" if prompt else ""
        rows.append(
            f'<tr class="{"yes" if s.said_yes else "no"}"><td class="num">{s.step}</td>'
            f'<td>{node}</td><td class="num">{s.p_yes:.4f}</td><td class="num">{s.p_no:.4f}</td>'
            f"<td>{'<b>Yes</b>' if s.said_yes else 'No'}</td>"
            f'<td class="num">{s.new_tokens:,}</td><td class="num">{s.seconds:.3f}</td>'
            f"{reply}</tr>\n"
        )
    heads = ["step", "node read before", "P(Yes)", "P(No)", "said", "new tokens pre-filled"]
    heads += ["seconds", "reply"] if prompt else ["seconds"]
    return (
        "<h2>The Yes/No trace</h2>\n"
        + frame.table(heads, rows)
        + _more(len(result.trace), "questions")
    )


def _visited(result: SearchResult) -> str:
    by_id: dict[int, VisitedNode] = {v.id: v for v in result.visited}
    order = [i for i in result.document_order if i in by_id] or list(by_id)
    rows = []
    for i in order[:_MAX_ROWS]:
        v = by_id[i]
        source = v.metadata.get("source", v.metadata.get("hrefine_source_id", ""))
        tokens = v.metadata.get(TOKENS, "")
        rows.append(
            f'<tr id="n{i}"><td>{frame.ref(i, _SEEN)}</td><td class="num">{v.level}</td>'
            f'<td class="num">{"top" if v.step == 0 else v.step}</td>'
            f'<td class="num">{_num(v.score)}</td><td class="num">{_num(v.attention)}</td>'
            f'<td class="num">{_num(v.p_yes)}</td><td class="num">{frame.esc(tokens)}</td>'
            f"<td>{frame.esc(source)}</td><td>{frame.folded(v.text, _LEAF_WORDS)}</td></tr>\n"
        )
    if not rows:
        return '<h2>Visited nodes</h2>\n<p class="note">No node was read.</p>\n'
    heads = ["node", "level", "read at step", "score when picked", "attention a<sub>i</sub>"]
    heads += ["P(Yes) after", "tokens", "source", "text"]
    return (
        "<h2>Visited nodes, in document order</h2>\n"
        + frame.table(heads, rows)
        + _more(len(order), "visited nodes")
    )


def _notes(result: SearchResult) -> str:
    if not result.notes:
        return ""
    items = "".join(f"<li>{frame.esc(n)}</li>\n" for n in result.notes[:_MAX_ROWS])
    return f'<h2>Notes</h2>\n<ul class="notes">\n{items}</ul>\n' + _more(len(result.notes), "notes")


def _levels(graph: GarlicGraph, visited: set[int]) -> str:
    tree = graph.tree
    top = graph.levels
    shown = list(range(top, -1, -1))[:_MAX_LEVELS]
    counts = "".join(
        f'<tr><td class="num">{lv}</td><td>{"leaves" if lv == 0 else "summary points"}</td>'
        f'<td class="num">{len(ids):,}</td><td class="num">{sum(i in visited for i in ids)}</td>'
        "</tr>\n"
        for lv in shown
        for ids in [tree.at_level(lv)]
    )
    out = [
        "<h2>The graph, top level first</h2>\n",
        frame.table(["level", "kind", "nodes", "visited"], [counts]),
        _more(top + 1, "levels", _MAX_LEVELS),
    ]
    for lv in shown:
        ids = tree.at_level(lv)
        rows = []
        for i in ids[:_NODES_PER_LEVEL]:
            node = tree[i]
            kind = "leaf" if node.kind == NodeKind.CHUNK else "point"
            words = frame.esc(frame.opening(node.text, _GRAPH_WORDS))
            rows.append(
                f"<tr><td>{frame.ref(i, _SEEN) if i in visited else f'#{i}'}</td>"
                f"<td>{kind}</td><td>{words}</td></tr>\n"
            )
        out.append(
            f"<details><summary>level {lv}: {len(ids):,} nodes</summary>\n"
            + frame.table(["node", "kind", "first words"], rows)
            + _more(len(ids), "nodes", _NODES_PER_LEVEL)
            + "</details>\n"
        )
    return "".join(out)


def _more(total: int, what: str, cap: int = _MAX_ROWS) -> str:
    return frame.more(total - cap, f"{what} (not shown)")
