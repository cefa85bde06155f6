"""An HTML report of a LongRefiner refinement: each document's section tree, what was kept, why.

:func:`render_report` writes one self-contained page with no script at all (it reads the same
with scripts off): inline CSS allowed by its hash in a Content-Security-Policy that loads
nothing from anywhere, and every text (the documents', the model's answers, the query) escaped.
It shows:

- the query, the budget, the tokens kept and the tokenizer, the time of each step, the notes;
- step 1: the query's label, the two probabilities, the weights they gave and where they came
  from;
- per document: where its structure came from, step 3's chosen sections (the names the model
  wrote, those that matched nothing, its raw answer), the kept units in document order, the
  text sent, and the section tree: every section folded (open where something was kept) with
  its local, global and combined score and its status (kept, inside a kept section, or
  dropped and why), and its paragraphs with their scores and status.

A big document stays quick to write and to open: long texts are cut in the display (and say
so), a section draws at most a few of its dropped paragraphs (its best-scored), and past a
fixed number of nodes per document only what was kept, what holds it and what step 3 chose
is drawn; what is not drawn is counted where it would have been.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from hrefine._inert_html import csp as _csp
from hrefine._inert_html import esc as _esc
from hrefine._inert_html import first_words
from hrefine.budget import EXPANDED, MEASURED_OVER, OVER_BUDGET, TRIAL_LIMIT

if TYPE_CHECKING:
    from hrefine.longrefiner.pipeline import RefinedDocument, RefineResult

__all__ = [
    "DROPPED_PER_SECTION",
    "MAX_OPTIONAL_NODES",
    "REASONS",
    "render_report",
]

#: What each drop reason of :attr:`RefinedDocument.dropped
#: <hrefine.longrefiner.RefinedDocument.dropped>` means, as the report says it.
REASONS = {
    OVER_BUDGET: "did not fit the room left in the budget when its turn came",
    EXPANDED: "too big as a whole: its parts competed for the budget instead",
    MEASURED_OVER: "the real output with it was over the budget",
    TRIAL_LIMIT: "it might have fitted, but the top-up had used up its trials",
}
#: Most dropped paragraphs drawn per section (its best-scored ones); the others are counted.
DROPPED_PER_SECTION = 8
#: Most nodes per document drawn besides the essential ones (kept, inside or holding a kept
#: node, chosen by step 3); past it they are counted, not drawn.
MAX_OPTIONAL_NODES = 1500
# Most nodes drawn per document in all: even a budget that keeps a whole book draws this many.
_MAX_NODES = 6000
# Characters of a paragraph shown when it was kept, and when it was dropped.
_KEPT_CHARS = 3000
_DROPPED_CHARS = 320
# Characters of the kept text (per document), a model's answer and a note shown.
_TEXT_CHARS = 40_000
_RAW_CHARS = 4000
_NOTE_CHARS = 600
# Most notes listed, and most rows of a document's kept-units table.
_MAX_NOTES = 100
_MAX_KEPT_ROWS = 500
# Words of a kept unit in the kept-units table.
_FIRST_WORDS = 24
_STEPS = ("analysis", "structure", "selection", "scoring", "fill", "total")
_STEP_NAMES = {
    "analysis": "step 1: query analysis",
    "structure": "step 2: structuring",
    "selection": "step 3: global selection",
    "scoring": "local scoring",
    "fill": "budgeted selection",
    "total": "total",
}
_ANALYSIS_SOURCES = {
    "lm": "the model's probabilities of [Local] and [Global]",
    "llm": "the label a text LLM answered",
    "off": "step 1 off: the configured weights",
    "fallback": "the model's answer named neither label: the configured weights",
}
_SELECTION_SOURCES = {
    "lm": "chosen by the local model",
    "llm": "chosen by the text LLM",
    "off": "step 3 off (no model, or no titled sections): every global score is 0",
    "fallback": "the answer named no section of the outline: none chosen",
}

_CSS = """
body{font:15px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1d2733;
background:#f6f8fa}
header{background:#fff;border-bottom:1px solid #e3e7ec;padding:18px 28px}
main{padding:8px 28px 40px;max-width:1200px}
.brand{color:#5b6776;font-size:13px}
h1{font-size:21px;margin:4px 0 6px}
h2{font-size:18px;margin:28px 0 8px}
h3{font-size:15px;margin:18px 0 6px;color:#38424f}
.meta,.note{color:#5b6776;font-size:13px}
.bar{display:block;width:420px;max-width:100%;height:12px;margin:8px 0 2px}
table{border-collapse:collapse;background:#fff;font-size:13.5px}
th,td{border:1px solid #e3e7ec;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#eef2f5}
td.num{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}
.doc{background:#fff;border:1px solid #d5dbe2;border-radius:8px;padding:4px 18px 14px;
margin:22px 0}
.text,.raw{white-space:pre-wrap;word-wrap:break-word}
.raw{font:12.5px/1.4 ui-monospace,Menlo,Consolas,monospace;background:#f6f8fa;padding:6px 8px;
border-radius:5px}
details summary{cursor:pointer}
details.sec{margin:3px 0;border-left:3px solid #d5dbe2;padding-left:8px}
details.sec>summary{font-size:14px}
details.sec.kept{border-left-color:#2f8f5b}
details.sec.holds{border-left-color:#8fc9a6}
.in{margin-left:14px}
.t{font-weight:600}
.k{color:#5b6776;font-size:12px}
.sc{font-size:12px;color:#38424f;font-variant-numeric:tabular-nums;margin-left:6px}
.par{margin:4px 0;padding:4px 8px;border:1px solid #e3e7ec;border-radius:5px;font-size:13.5px}
.par.kept{border:2px solid #2f8f5b;background:#f1faf4}
.par.inside{border-color:#8fc9a6;background:#f7fcf9}
.par.dropped{color:#5b6776;background:#fafbfc}
.par .h{font-size:12px;color:#5b6776}
.tag{display:inline-block;border-radius:4px;padding:0 5px;font-size:11.5px;margin-left:6px}
.tag.kept{background:#2f8f5b;color:#fff}
.tag.inside,.tag.holds{background:#d8efe1;color:#1f6e43}
.tag.dropped{background:#e3e7ec;color:#38424f}
.tag.chosen{background:#22579a;color:#fff}
.cut,.skip{color:#8a6d1f;font-size:12px}
.skip{margin:3px 0 3px 4px}
a.ref{color:#22579a;text-decoration:none}
"""


@dataclass
class _Doc:
    """What the tree drawing of one document needs, computed once."""

    doc: RefinedDocument
    prefix: str
    kept: set[int]
    inside: dict[int, int]  # node -> the kept node above it
    holds: set[int]  # sections with a kept node below them
    chosen: set[int]
    essential: set[int]
    sections: list[int]  # per node: sections in its subtree, itself included
    paragraphs: list[int]
    best: list[float]  # per node: best combined score in its subtree
    trimmed: bool  # the one kept unit was cut to fit the budget
    optional_left: int = MAX_OPTIONAL_NODES
    drawn: int = 0
    skipped: list[int] = field(default_factory=lambda: [0, 0])  # sections, paragraphs


def render_report(
    result: RefineResult,
    *,
    title: str | None = None,
    sources: Sequence[str] | None = None,
) -> str:
    """A self-contained, script-free HTML report of ``result``.

    Parameters
    ----------
    result:
        What :meth:`LongRefiner.refine <hrefine.longrefiner.LongRefiner.refine>` returned.
    title:
        Shown in the browser tab and above the question (e.g. the file name).
    sources:
        A name per document (e.g. its file), shown beside its title.

    Returns
    -------
    str
        A complete HTML document: inline CSS, no script, nothing loaded from anywhere; every
        text in it is escaped.
    """
    names = list(sources) if sources is not None else []
    css = _CSS
    doc_title = "LongRefiner report" + (f": {title}" if title else "")
    parts = [
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n',
        f'<meta http-equiv="Content-Security-Policy" content="{_csp(css)}">\n',
        '<meta name="referrer" content="no-referrer">\n',
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n',
        f"<title>{_esc(doc_title)}</title>\n<style>{css}</style>\n</head>\n<body>\n",
        _header(result, title),
        "<main>\n",
        _analysis(result),
        _timings(result),
        _notes(result.notes),
        _legend(result),
    ]
    for d in result.documents:
        name = names[d.index] if d.index < len(names) else ""
        parts.append(_document(d, len(result.documents), name, result.trimmed))
    parts.append("</main>\n</body></html>\n")
    return "".join(parts)


# -- small pieces -----------------------------------------------------------------------------


def _cut(text: str, limit: int) -> str:
    """``text`` escaped, cut at a word boundary near ``limit`` characters, saying so."""
    if len(text) <= limit:
        return _esc(text)
    end = text.rfind(" ", limit // 2, limit)
    end = limit if end < 0 else end
    return (
        f'{_esc(text[:end])} <span class="cut">… (display cut: {end:,} of {len(text):,} '
        "characters shown)</span>"
    )


def _raw(label: str, text: str | None) -> str:
    """A model's answer, folded, as it came (cut when long)."""
    if text is None:
        return ""
    return (
        f"<details><summary>{_esc(label)}</summary>"
        f'<div class="raw">{_cut(text, _RAW_CHARS)}</div></details>\n'
    )


def _score(value: float) -> str:
    return f"{value:.3f}"


def _plural(count: int, noun: str) -> str:
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def _opening(text: str) -> str:
    """The first words of ``text``, with an ellipsis when there are more."""
    shown, more = first_words(text, _FIRST_WORDS)
    return shown + (" …" if more else "")


# -- page parts ---------------------------------------------------------------------------------
def _header(result: RefineResult, title: str | None) -> str:
    kept_docs = sum(1 for d in result.documents if d.text)
    facts = [
        _plural(len(result.documents), "document"),
        f"budget {result.budget:,} tokens",
        f"tokenizer {result.tokenizer}",
        f"{result.timings.get('total', 0.0):.2f} s",
    ]
    bar = ""
    if result.budget > 0:
        # A meter draws itself: no style attribute, which the page's policy would block.
        bar = (
            f'<meter class="bar" min="0" max="{result.budget}" '
            f'value="{min(result.tokens, result.budget)}" '
            'title="tokens kept out of the budget"></meter>\n'
        )
    trimmed = (
        '<div class="meta"><b>The budget was below every unit:</b> the best paragraph was cut '
        "to fit.</div>\n"
        if result.trimmed
        else ""
    )
    name = f" · {_esc(title)}" if title else ""
    return (
        "<header>\n"
        f'<div class="brand">hrefine · LongRefiner report{name}</div>\n'
        f"<h1>{_esc(result.query)}</h1>\n"
        f'<div class="meta">{" · ".join(_esc(f) for f in facts)}</div>\n'
        f"{bar}"
        f'<div class="meta"><b>{result.tokens:,}</b> tokens kept of <b>{result.budget:,}</b>, '
        f"from {kept_docs} of {len(result.documents)} documents</div>\n"
        f"{trimmed}</header>\n"
    )


def _analysis(result: RefineResult) -> str:
    a = result.analysis
    how = _ANALYSIS_SOURCES.get(a.source, a.source)
    return (
        "<h2>Step 1: query analysis</h2>\n<table>\n"
        "<tr><th>label</th><th>P(local)</th><th>P(global)</th><th>local weight</th>"
        "<th>global weight</th><th>from</th></tr>\n"
        f'<tr><td><b>{_esc(a.label)}</b></td><td class="num">{_score(a.p_local)}</td>'
        f'<td class="num">{_score(a.p_global)}</td><td class="num">{_score(a.w_local)}</td>'
        f'<td class="num">{_score(a.w_global)}</td><td>{_esc(a.source)}: {_esc(how)}</td>'
        "</tr>\n</table>\n" + _raw("the model's answer", a.raw)
    )


def _timings(result: RefineResult) -> str:
    keys = [k for k in _STEPS if k in result.timings]
    keys += [k for k in result.timings if k not in _STEPS]
    rows = "".join(
        f'<tr><td>{_esc(_STEP_NAMES.get(k, k))}</td><td class="num">'
        f"{result.timings[k]:.3f} s</td></tr>\n"
        for k in keys
    )
    return f"<h2>Timings</h2>\n<table>\n<tr><th>step</th><th>time</th></tr>\n{rows}</table>\n"


def _notes(notes: Sequence[str]) -> str:
    if not notes:
        return ""
    items = "".join(f"<li>{_cut(n, _NOTE_CHARS)}</li>\n" for n in notes[:_MAX_NOTES])
    more = (
        f'<p class="note">and {len(notes) - _MAX_NOTES:,} more notes.</p>\n'
        if len(notes) > _MAX_NOTES
        else ""
    )
    return f"<h2>Notes</h2>\n<ul>\n{items}</ul>\n{more}"


def _legend(result: RefineResult) -> str:
    a = result.analysis
    reasons = "".join(
        f'<li><span class="tag dropped">dropped: {_esc(k)}</span> {_esc(v)}</li>\n'
        for k, v in REASONS.items()
    )
    return (
        "<h2>How to read the trees</h2>\n"
        '<p class="note">Each node shows its local score LS (the scorer\'s match with the '
        "query; a section's is the mean of its parts'), its global score GS (1 for a section "
        "step 3 chose, split evenly among the children below it) and, in bold, its combined "
        f"score = {_score(a.w_local)} × LS + {_score(a.w_global)} × GS. The best-scored units "
        'that fit were kept, then put back in document order.</p>\n<ul class="note">\n'
        '<li><span class="tag kept">kept</span> sent to the LLM whole</li>\n'
        '<li><span class="tag inside">inside kept</span> part of a kept section</li>\n'
        '<li><span class="tag holds">holds kept parts</span> a section some of whose parts '
        "were kept</li>\n"
        '<li><span class="tag chosen">chosen</span> chosen by step 3</li>\n'
        f"{reasons}</ul>\n"
    )


# -- one document -----------------------------------------------------------------------------
def _document(d: RefinedDocument, count: int, name: str, trimmed: bool) -> str:
    s = d.structure
    label = f"Document {d.index + 1} of {count}"
    heading = " · ".join(_esc(x) for x in (label, name, s.title) if x)
    out = [f'<section class="doc" id="d{d.index}">\n<h2>{heading}</h2>\n']
    if s.source == "empty" or not s.text.strip():
        out.append('<p class="note">This document is empty: it has no text.</p>\n</section>\n')
        return "".join(out)
    state = _prepare(d, trimmed)
    facts = [
        f"structure from {s.source}",
        _plural(state.sections[0], "section"),
        _plural(state.paragraphs[0], "paragraph"),
        f"{len(s.text):,} characters",
        f"kept {_plural(len(d.kept), 'unit')}, {_plural(d.tokens, 'token')}",
    ]
    if d.score is not None:
        facts.append(f"best kept score {_score(d.score)}")
    out.append(f'<div class="meta">{" · ".join(_esc(f) for f in facts)}</div>\n')
    if s.notes:
        out.append(_notes_list("Structure notes", s.notes))
    for i, answer in enumerate(s.raw_outputs):
        out.append(_raw(f"the model's structure, window {i + 1}", answer))
    out.append(_selection(state))
    out.append(_kept_table(state))
    out.append(_kept_text(d))
    out.append("<h3>Section tree</h3>\n")
    out.append(_children(state, 0))
    hidden_sections, hidden_paragraphs = state.skipped
    if hidden_sections or hidden_paragraphs:
        out.append(
            f'<p class="note">Not drawn, to keep the report small: {hidden_sections:,} sections '
            f"and {hidden_paragraphs:,} paragraphs (all dropped; counted where they would be)."
            "</p>\n"
        )
    out.append("</section>\n")
    return "".join(out)


def _notes_list(label: str, notes: Sequence[str]) -> str:
    items = "".join(f"<li>{_cut(n, _NOTE_CHARS)}</li>\n" for n in notes[:_MAX_NOTES])
    return f"<h3>{_esc(label)}</h3>\n<ul>\n{items}</ul>\n"


def _prepare(d: RefinedDocument, trimmed: bool) -> _Doc:
    tree = d.structure.tree
    size = len(tree)
    kept = set(d.kept)
    inside: dict[int, int] = {}
    for k in d.kept:
        for c in tree.descendants(k):
            inside.setdefault(c, k)
    holds: set[int] = set()
    chosen = set(d.selection.selected)
    above: set[int] = set()
    for k in kept:
        holds.update(tree.ancestors(k))
    for c in chosen:
        above.update(tree.ancestors(c))
    holds.discard(0)
    essential = kept | set(inside) | holds | chosen | above
    sections = [0] * size
    paragraphs = [0] * size
    best = [float(d.combined[i]) if i < len(d.combined) else 0.0 for i in range(size)]
    for node in reversed(tree.nodes):  # children come after their parents
        if node.kind == "section":
            sections[node.id] += 1
        elif node.kind == "paragraph":
            paragraphs[node.id] += 1
        for p in node.parents:
            sections[p] += sections[node.id]
            paragraphs[p] += paragraphs[node.id]
            best[p] = max(best[p], best[node.id])
    return _Doc(
        d,
        f"d{d.index}-n",
        kept,
        inside,
        holds,
        chosen,
        essential,
        sections,
        paragraphs,
        best,
        trimmed,
    )


def _anchor(state: _Doc, node_id: int) -> str:
    return f'<a class="ref" href="#{state.prefix}{node_id}">#{node_id}</a>'


def _selection(state: _Doc) -> str:
    sel = state.doc.selection
    how = _SELECTION_SOURCES.get(sel.source, sel.source)
    tree = state.doc.structure.tree
    rows = [f'<p class="note">{_esc(sel.source)}: {_esc(how)}</p>\n']
    if sel.selected:
        picked = ", ".join(
            f"{_anchor(state, i)} {_esc(tree[i].metadata.get('title', ''))}" for i in sel.selected
        )
        rows.append(f"<p>Chosen sections: {picked}</p>\n")
    if sel.names:
        rows.append(f"<p>Names in the answer: {', '.join(_esc(repr(n)) for n in sel.names)}</p>\n")
    if sel.unmatched:
        rows.append(
            "<p>Named but matching no title of the outline: "
            f"{', '.join(_esc(repr(n)) for n in sel.unmatched)}</p>\n"
        )
    rows.append(_raw("the model's answer", sel.raw))
    return "<h3>Step 3: global selection</h3>\n" + "".join(rows)


def _where(state: _Doc, node_id: int) -> str:
    """The titles of the sections above a node (itself included), outermost first."""
    tree = state.doc.structure.tree
    titles: list[str] = []
    node = tree[node_id]
    while True:
        if node.kind == "section":
            titles.append(str(node.metadata.get("title", "")))
        if not node.parents:
            break
        node = tree[node.parents[0]]
    return " › ".join(reversed(titles))


def _kept_table(state: _Doc) -> str:
    d = state.doc
    if not d.kept:
        return '<h3>Kept</h3>\n<p class="note">Nothing from this document reaches the LLM.</p>\n'
    tree = d.structure.tree
    rows = []
    for k in d.kept[:_MAX_KEPT_ROWS]:
        node = tree[k]
        rows.append(
            f"<tr><td>{_anchor(state, k)}</td><td>{_esc(node.kind)}</td>"
            f"<td>{_esc(_where(state, k))}</td>"
            f'<td class="num"><b>{_score(float(d.combined[k]))}</b></td>'
            f"<td>{_esc(_opening(d.structure.node_text(k)))}</td></tr>\n"
        )
    more = (
        f'<p class="note">and {len(d.kept) - _MAX_KEPT_ROWS:,} more kept units.</p>\n'
        if len(d.kept) > _MAX_KEPT_ROWS
        else ""
    )
    return (
        "<h3>Kept, in document order</h3>\n<table>\n<tr><th>node</th><th>kind</th>"
        "<th>in</th><th>score</th><th>first words</th></tr>\n" + "".join(rows) + "</table>\n" + more
    )


def _kept_text(d: RefinedDocument) -> str:
    if not d.text:
        return ""
    return (
        f"<details><summary>The kept text as sent ({d.tokens:,} tokens)</summary>"
        f'<div class="raw">{_cut(d.text, _TEXT_CHARS)}</div></details>\n'
    )


def _status(state: _Doc, node_id: int) -> tuple[str, str]:
    """``(css class, badge)`` of a node: kept, inside kept, holding kept parts, or dropped."""
    tags = ""
    if node_id in state.chosen:
        tags = '<span class="tag chosen">chosen</span>'
    if node_id in state.kept:
        cut = ", cut to fit the budget" if state.trimmed else ""
        return "kept", f'<span class="tag kept">kept{cut}</span>' + tags
    if node_id in state.inside:
        owner = state.inside[node_id]
        return "inside", f'<span class="tag inside">inside kept #{owner}</span>' + tags
    why = state.doc.dropped.get(node_id)
    if node_id in state.holds:
        extra = f" ({_esc(why)})" if why else ""
        return "holds", f'<span class="tag holds">holds kept parts{extra}</span>' + tags
    if why is None:
        return "dropped", '<span class="tag dropped">not kept</span>' + tags
    # The reason's meaning is in the legend and the badge's tooltip: not repeated per node.
    return "dropped", (
        f'<span class="tag dropped" title="{_esc(REASONS.get(why, why))}">dropped: '
        f"{_esc(why)}</span>" + tags
    )


def _scores(state: _Doc, node_id: int) -> str:
    d = state.doc
    if node_id >= len(d.combined):
        return ""
    return (
        f'<span class="sc">LS {_score(float(d.local[node_id]))} · GS '
        f"{_score(float(d.global_[node_id]))} · <b>{_score(float(d.combined[node_id]))}</b></span>"
    )


def _children(state: _Doc, parent: int) -> str:
    """The children of ``parent`` drawn in document order, within the report's limits."""
    tree = state.doc.structure.tree
    kids = sorted(tree[parent].children, key=lambda c: (int(tree[c].metadata["start"]), c))
    # Of the dropped paragraphs here, only the best-scored few are drawn.
    loose = [c for c in kids if not tree[c].children and c not in state.essential]
    shown = set(sorted(loose, key=lambda c: -state.best[c])[:DROPPED_PER_SECTION])
    out: list[str] = []
    run = [0, 0, float("-inf")]  # sections, paragraphs, best score of a run not drawn

    def flush() -> None:
        if run[0] or run[1]:
            what = []
            if run[0]:
                what.append(_plural(int(run[0]), "section"))
            if run[1]:
                what.append(_plural(int(run[1]), "paragraph"))
            out.append(
                f'<div class="skip">… {" and ".join(what)} not drawn (dropped; best combined '
                f"score {_score(run[2])})</div>\n"
            )
            state.skipped[0] += int(run[0])
            state.skipped[1] += int(run[1])
            run[:] = [0, 0, float("-inf")]

    for c in kids:
        essential = c in state.essential
        leaf = not tree[c].children
        draw = state.drawn < _MAX_NODES and (
            essential or (state.optional_left > 0 and (not leaf or c in shown))
        )
        if not draw:
            run[0] += state.sections[c]
            run[1] += state.paragraphs[c]
            run[2] = max(run[2], state.best[c])
            continue
        flush()
        state.drawn += 1
        if not essential:
            state.optional_left -= 1
        out.append(_section(state, c) if tree[c].kind == "section" else _paragraph(state, c))
    flush()
    return "".join(out)


def _section(state: _Doc, node_id: int) -> str:
    node = state.doc.structure.tree[node_id]
    meta = node.metadata
    cls, badge = _status(state, node_id)
    lead = " (the lead text)" if meta.get("abstract") else ""
    facts = (
        f"#{node_id} · depth {int(meta.get('depth', 1))}{lead} · "
        f"{_plural(state.paragraphs[node_id], 'paragraph')}"
    )
    opened = " open" if cls in ("kept", "holds") else ""
    return (
        f'<details class="sec {cls}" id="{state.prefix}{node_id}"{opened}><summary>'
        f'<span class="t">{_esc(meta.get("title", ""))}</span> <span class="k">{facts}</span>'
        f"{_scores(state, node_id)}{badge}</summary>\n"
        f'<div class="in">\n{_children(state, node_id)}</div></details>\n'
    )


def _paragraph(state: _Doc, node_id: int) -> str:
    text = state.doc.structure.node_text(node_id)
    cls, badge = _status(state, node_id)
    limit = _KEPT_CHARS if cls in ("kept", "inside") else _DROPPED_CHARS
    kind = state.doc.structure.tree[node_id].kind
    return (
        f'<div class="par {cls}" id="{state.prefix}{node_id}"><div class="h">'
        f"{_esc(kind)} #{node_id} · {len(text):,} characters{_scores(state, node_id)}{badge}"
        f'</div><div class="text">{_cut(text, limit)}</div></div>\n'
    )
