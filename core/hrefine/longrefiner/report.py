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

A big document stays quick to write and to open (see
:mod:`hrefine.longrefiner._report_document`, which draws each document's part).
"""

from __future__ import annotations

from collections.abc import Sequence

from hrefine._renderers import register
from hrefine._report_frame import (
    CELL_CSS,
    METER_CSS,
    PAGE_CSS,
    esc,
    header,
    meter,
    more,
    page,
    table,
)
from hrefine.longrefiner._report_document import (
    DROPPED_PER_SECTION,
    MAX_NOTES,
    MAX_OPTIONAL_NODES,
    REASONS,
    document,
    note_items,
    plural,
    raw,
    score,
)
from hrefine.longrefiner.result import RefineResult

__all__ = [
    "DROPPED_PER_SECTION",
    "MAX_OPTIONAL_NODES",
    "REASONS",
    "render_report",
]

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

# Tables here are as wide as their text, with tighter cells than the other reports'.
_CSS = (
    PAGE_CSS
    + """h2{font-size:18px;margin:28px 0 8px}
h3{font-size:15px;margin:18px 0 6px;color:#38424f}
.meta,.note{color:#5b6776;font-size:13px}
"""
    + METER_CSS
    + """table{border-collapse:collapse;background:#fff;font-size:13.5px}
th,td{border:1px solid #e3e7ec;padding:4px 8px;text-align:left;vertical-align:top}
"""
    + CELL_CSS
    + """.doc{background:#fff;border:1px solid #d5dbe2;border-radius:8px;padding:4px 18px 14px;
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
)


def render_report(
    result: RefineResult, *, title: str | None = None, sources: Sequence[str] | None = None
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
        The whole page, inert and self-contained (see the module docstring).
    """
    names = list(sources) if sources is not None else []
    parts = [
        _header(result, title),
        "<main>\n",
        _analysis(result),
        _timings(result),
        _notes(result.notes),
        _legend(result),
    ]
    for d in result.documents:
        name = names[d.index] if d.index < len(names) else ""
        parts.append(document(d, len(result.documents), name, result.trimmed))
    parts.append("</main>\n")
    return page("LongRefiner report", title, _CSS, parts)


# RefineResult.to_html draws through this (hrefine.longrefiner imports this module).
register(RefineResult, render_report)


# -- page parts ---------------------------------------------------------------------------------
def _header(result: RefineResult, title: str | None) -> str:
    kept_docs = sum(1 for d in result.documents if d.text)
    facts = [
        plural(len(result.documents), "document"),
        f"budget {result.budget:,} tokens",
        f"tokenizer {result.tokenizer}",
        f"{result.timings.get('total', 0.0):.2f} s",
    ]
    bar = ""
    if result.budget > 0:
        bar = meter(result.tokens, result.budget, "tokens kept out of the budget")
    trimmed = (
        '<div class="meta"><b>The budget was below every unit:</b> the best paragraph was cut '
        "to fit.</div>\n"
        if result.trimmed
        else ""
    )
    rest = (
        f'{bar}<div class="meta"><b>{result.tokens:,}</b> tokens kept of '
        f"<b>{result.budget:,}</b>, from {kept_docs} of {len(result.documents)} documents</div>\n"
        f"{trimmed}"
    )
    return header("LongRefiner report", title, result.query, facts, rest)


def _analysis(result: RefineResult) -> str:
    a = result.analysis
    how = _ANALYSIS_SOURCES.get(a.source, a.source)
    row = (
        f'<tr><td><b>{esc(a.label)}</b></td><td class="num">{score(a.p_local)}</td>'
        f'<td class="num">{score(a.p_global)}</td><td class="num">{score(a.w_local)}</td>'
        f'<td class="num">{score(a.w_global)}</td><td>{esc(a.source)}: {esc(how)}</td></tr>\n'
    )
    heads = ["label", "P(local)", "P(global)", "local weight", "global weight", "from"]
    return (
        "<h2>Step 1: query analysis</h2>\n" + table(heads, [row]) + raw("the model's answer", a.raw)
    )


def _timings(result: RefineResult) -> str:
    keys = [k for k in _STEPS if k in result.timings]
    keys += [k for k in result.timings if k not in _STEPS]
    rows = (
        f'<tr><td>{esc(_STEP_NAMES.get(k, k))}</td><td class="num">'
        f"{result.timings[k]:.3f} s</td></tr>\n"
        for k in keys
    )
    return "<h2>Timings</h2>\n" + table(["step", "time"], rows)


def _notes(notes: Sequence[str]) -> str:
    if not notes:
        return ""
    items = note_items(notes)
    return f"<h2>Notes</h2>\n<ul>\n{items}</ul>\n" + more(len(notes) - MAX_NOTES, "notes")


def _legend(result: RefineResult) -> str:
    a = result.analysis
    reasons = "".join(
        f'<li><span class="tag dropped">dropped: {esc(k)}</span> {esc(v)}</li>\n'
        for k, v in REASONS.items()
    )
    return (
        "<h2>How to read the trees</h2>\n"
        '<p class="note">Each node shows its local score LS (the scorer\'s match with the '
        "query; a section's is the mean of its parts'), its global score GS (1 for a section "
        "step 3 chose, split evenly among the children below it) and, in bold, its combined "
        f"score = {score(a.w_local)} × LS + {score(a.w_global)} × GS. The best-scored units "
        'that fit were kept, then put back in document order.</p>\n<ul class="note">\n'
        '<li><span class="tag kept">kept</span> sent to the LLM whole</li>\n'
        '<li><span class="tag inside">inside kept</span> part of a kept section</li>\n'
        '<li><span class="tag holds">holds kept parts</span> a section some of whose parts '
        "were kept</li>\n"
        '<li><span class="tag chosen">chosen</span> chosen by step 3</li>\n'
        f"{reasons}</ul>\n"
    )
