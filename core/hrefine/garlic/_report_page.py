"""Draw the page of a GARLIC search report (see :func:`hrefine.garlic.report.render_report`).

:func:`draw_report` writes the page for a :class:`~hrefine.garlic.SearchResult` it is given
without checking its type: :meth:`SearchResult.to_html <hrefine.garlic.SearchResult.to_html>`
calls it directly, and :func:`~hrefine.garlic.report.render_report` checks what it is given and
then calls it. So the result imports only this module, and this module imports the result only
for typing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hrefine._inert_html import csp as _csp
from hrefine._inert_html import esc as _esc
from hrefine._inert_html import first_words as _first_words
from hrefine.raptor.build import TOKENS
from hrefine.tree import NodeKind

if TYPE_CHECKING:
    from hrefine.garlic.graph import GarlicGraph
    from hrefine.garlic.search import SearchResult, VisitedNode

__all__ = ["draw_report"]

# Caps that keep the page readable (and small) for a long search or a big graph.
_MAX_ROWS = 500  # trace rows and visited nodes
_NODES_PER_LEVEL = 40  # nodes listed per level of the graph
_MAX_LEVELS = 20  # levels listed (the top ones)
_LEAF_WORDS = 60  # words of a long visited text shown before the rest is folded away
_GRAPH_WORDS = 14  # words of a graph node shown in the levels section

_CSS = """
body{font:15px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1d2733;
background:#f6f8fa}
header{background:#fff;border-bottom:1px solid #e3e7ec;padding:18px 28px}
main{padding:8px 28px 40px;max-width:1200px}
.brand{color:#5b6776;font-size:13px}
h1{font-size:21px;margin:4px 0 6px}
h2{font-size:17px;margin:26px 0 8px}
.meta{color:#5b6776;font-size:13px}
table{border-collapse:collapse;width:100%;background:#fff;font-size:13.5px}
th,td{border:1px solid #e3e7ec;padding:5px 8px;text-align:left;vertical-align:top}
th{background:#eef2f5}
td.num{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}
tr.yes td{background:#f1faf4}
.yes b{color:#1f6e43}
.text{white-space:pre-wrap;word-wrap:break-word}
.ref{color:#22579a;text-decoration:none}
.seen{font-weight:600;color:#1f6e43}
details summary{cursor:pointer;color:#22579a;font-size:12.5px}
.note{color:#5b6776;font-size:13px}
ul.notes li{margin:2px 0}
"""


def draw_report(
    result: SearchResult, graph: GarlicGraph | None = None, *, title: str | None = None
) -> str:
    """The report's HTML for ``result`` (and ``graph``'s levels); ``result`` is not checked."""
    doc_title = "GARLIC search report" + (f": {title}" if title else "")
    parts = [
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n',
        f'<meta http-equiv="Content-Security-Policy" content="{_csp(_CSS)}">\n',
        '<meta name="referrer" content="no-referrer">\n',
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n',
        f"<title>{_esc(doc_title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n",
        _header(result, graph, title),
        "<main>\n",
        _trace(result),
        _visited(result),
        _notes(result),
        "" if graph is None else _levels(graph, {v.id for v in result.visited}),
        "</main>\n</body></html>\n",
    ]
    return "".join(parts)


# -- pieces -----------------------------------------------------------------------------------


def _ref(node_id: int, seen: bool = False) -> str:
    cls = "ref seen" if seen else "ref"
    return f'<a class="{cls}" href="#n{int(node_id)}">#{int(node_id)}</a>'


def _folded(text: str) -> str:
    """``text`` in full, or its first words with the rest behind a click (no script)."""
    words, more = _first_words(text, _LEAF_WORDS)
    if not more:
        return f'<div class="text">{_esc(text)}</div>'
    return (
        f'<details><summary>{_esc(words)} …</summary><div class="text">{_esc(text)}</div></details>'
    )


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
        + (_esc(share) if saved > 0 else "")
        + ("" if result.mode == "attention" else " (no KV cache: each step sends the whole prompt)")
    )
    name = f" · {_esc(title)}" if title else ""
    return (
        "<header>\n"
        f'<div class="brand">hrefine · GARLIC search report{name}</div>\n'
        f"<h1>{_esc(result.query)}</h1>\n"
        f'<div class="meta">{" · ".join(_esc(f) for f in facts)}</div>\n'
        f'<div class="meta">{tokens}</div>\n'
        "</header>\n"
    )


def _trace(result: SearchResult) -> str:
    prompt = result.mode != "attention"
    rows = []
    for s in result.trace[:_MAX_ROWS]:
        node = "top level" if s.node_id is None else _ref(s.node_id, True)
        reply = f"<td>{_esc(s.answer or '')}</td>" if prompt else ""
        rows.append(
            f'<tr class="{"yes" if s.said_yes else "no"}"><td class="num">{s.step}</td>'
            f'<td>{node}</td><td class="num">{s.p_yes:.4f}</td><td class="num">{s.p_no:.4f}</td>'
            f"<td>{'<b>Yes</b>' if s.said_yes else 'No'}</td>"
            f'<td class="num">{s.new_tokens:,}</td><td class="num">{s.seconds:.3f}</td>'
            f"{reply}</tr>\n"
        )
    head = (
        "<h2>The Yes/No trace</h2>\n<table>\n<tr><th>step</th><th>node read before</th>"
        "<th>P(Yes)</th><th>P(No)</th><th>said</th><th>new tokens pre-filled</th>"
        f"<th>seconds</th>{'<th>reply</th>' if prompt else ''}</tr>\n"
    )
    return head + "".join(rows) + "</table>\n" + _more(len(result.trace), "questions")


def _visited(result: SearchResult) -> str:
    by_id: dict[int, VisitedNode] = {v.id: v for v in result.visited}
    order = [i for i in result.document_order if i in by_id] or list(by_id)
    rows = []
    for i in order[:_MAX_ROWS]:
        v = by_id[i]
        source = v.metadata.get("source", v.metadata.get("hrefine_source_id", ""))
        tokens = v.metadata.get(TOKENS, "")
        rows.append(
            f'<tr id="n{i}"><td>{_ref(i, True)}</td><td class="num">{v.level}</td>'
            f'<td class="num">{"top" if v.step == 0 else v.step}</td>'
            f'<td class="num">{_num(v.score)}</td><td class="num">{_num(v.attention)}</td>'
            f'<td class="num">{_num(v.p_yes)}</td><td class="num">{_esc(tokens)}</td>'
            f"<td>{_esc(source)}</td><td>{_folded(v.text)}</td></tr>\n"
        )
    if not rows:
        return '<h2>Visited nodes</h2>\n<p class="note">No node was read.</p>\n'
    return (
        "<h2>Visited nodes, in document order</h2>\n<table>\n<tr><th>node</th><th>level</th>"
        "<th>read at step</th><th>score when picked</th><th>attention a<sub>i</sub></th>"
        "<th>P(Yes) after</th><th>tokens</th><th>source</th><th>text</th></tr>\n"
        + "".join(rows)
        + "</table>\n"
        + _more(len(order), "visited nodes")
    )


def _notes(result: SearchResult) -> str:
    if not result.notes:
        return ""
    items = "".join(f"<li>{_esc(n)}</li>\n" for n in result.notes[:_MAX_ROWS])
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
        "<h2>The graph, top level first</h2>\n<table>\n<tr><th>level</th><th>kind</th>"
        f"<th>nodes</th><th>visited</th></tr>\n{counts}</table>\n",
        _more(top + 1, "levels", _MAX_LEVELS),
    ]
    for lv in shown:
        ids = tree.at_level(lv)
        rows = []
        for i in ids[:_NODES_PER_LEVEL]:
            node = tree[i]
            words, more = _first_words(node.text, _GRAPH_WORDS)
            kind = "leaf" if node.kind == NodeKind.CHUNK else "point"
            rows.append(
                f"<tr><td>{_ref(i, True) if i in visited else f'#{i}'}</td>"
                f"<td>{kind}</td><td>{_esc(words)}{' …' if more else ''}</td></tr>\n"
            )
        out.append(
            f"<details><summary>level {lv}: {len(ids):,} nodes</summary>\n<table>\n"
            "<tr><th>node</th><th>kind</th><th>first words</th></tr>\n"
            + "".join(rows)
            + "</table>\n"
            + _more(len(ids), "nodes", _NODES_PER_LEVEL)
            + "</details>\n"
        )
    return "".join(out)


def _more(total: int, what: str, cap: int = _MAX_ROWS) -> str:
    rest = total - cap
    return f'<p class="note">and {rest:,} more {what} (not shown).</p>\n' if rest > 0 else ""
