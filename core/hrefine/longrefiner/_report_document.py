"""The part of a LongRefiner report about one document (see
:func:`hrefine.longrefiner.report.render_report`): where its structure came from, step 3's
chosen sections, the kept units in document order, the text sent, and the section tree.

A big document stays quick to write and to open: long texts are cut in the display (and say
so), a section draws at most a few of its dropped paragraphs (its best-scored), and past a
fixed number of nodes per document only what was kept, what holds it and what step 3 chose
is drawn; what is not drawn is counted where it would have been. The small text pieces the
whole page writes alike (:func:`cut`, :func:`raw`, :func:`score`, :func:`plural`) are here too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from hrefine._report_frame import esc, more, opening, ref, table
from hrefine.budget import EXPANDED, MEASURED_OVER, OVER_BUDGET, TRIAL_LIMIT
from hrefine.longrefiner.document import section_path

if TYPE_CHECKING:
    from hrefine.longrefiner.result import RefinedDocument

__all__ = [
    "DROPPED_PER_SECTION",
    "MAX_NOTES",
    "MAX_OPTIONAL_NODES",
    "REASONS",
    "cut",
    "document",
    "note_items",
    "plural",
    "raw",
    "score",
]

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
MAX_NOTES = 100
_MAX_KEPT_ROWS = 500
# Words of a kept unit in the kept-units table.
_FIRST_WORDS = 24
_SELECTION_SOURCES = {
    "lm": "chosen by the local model",
    "llm": "chosen by the text LLM",
    "off": "step 3 off (no model, or no titled sections): every global score is 0",
    "fallback": "the answer named no section of the outline: none chosen",
}


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


# -- small pieces -----------------------------------------------------------------------------
def cut(text: str, limit: int) -> str:
    """``text`` escaped, cut at a word boundary near ``limit`` characters, saying so."""
    if len(text) <= limit:
        return esc(text)
    end = text.rfind(" ", limit // 2, limit)
    end = limit if end < 0 else end
    return (
        f'{esc(text[:end])} <span class="cut">… (display cut: {end:,} of {len(text):,} '
        "characters shown)</span>"
    )


def raw(label: str, text: str | None) -> str:
    """A model's answer, folded, as it came (cut when long)."""
    if text is None:
        return ""
    return (
        f"<details><summary>{esc(label)}</summary>"
        f'<div class="raw">{cut(text, _RAW_CHARS)}</div></details>\n'
    )


def score(value: float) -> str:
    return f"{value:.3f}"


def plural(count: int, noun: str) -> str:
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def note_items(notes: Sequence[str]) -> str:
    """The first :data:`MAX_NOTES` notes as list items, each cut when long."""
    return "".join(f"<li>{cut(n, _NOTE_CHARS)}</li>\n" for n in notes[:MAX_NOTES])


def document(d: RefinedDocument, count: int, name: str, trimmed: bool) -> str:
    s = d.structure
    label = f"Document {d.index + 1} of {count}"
    heading = " · ".join(esc(x) for x in (label, name, s.title) if x)
    out = [f'<section class="doc" id="d{d.index}">\n<h2>{heading}</h2>\n']
    if d.repeat_of is not None:
        again = f"the same text as document {d.repeat_of + 1}: it was read once, there"
        out.append(f'<p class="note">This document is {again}.</p>\n</section>\n')
        return "".join(out)
    if s.source == "empty" or not s.text.strip():
        out.append('<p class="note">This document is empty: it has no text.</p>\n</section>\n')
        return "".join(out)
    state = _prepare(d, trimmed)
    facts = [
        f"structure from {s.source}",
        plural(state.sections[0], "section"),
        plural(state.paragraphs[0], "paragraph"),
        f"{len(s.text):,} characters",
        f"kept {plural(len(d.kept), 'unit')}, {plural(d.tokens, 'token')}",
    ]
    if d.score is not None:
        facts.append(f"best kept score {score(d.score)}")
    out.append(f'<div class="meta">{" · ".join(esc(f) for f in facts)}</div>\n')
    if s.notes:
        out.append(_notes_list("Structure notes", s.notes))
    for i, answer in enumerate(s.raw_outputs):
        out.append(raw(f"the model's structure, window {i + 1}", answer))
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
    return f"<h3>{esc(label)}</h3>\n<ul>\n{note_items(notes)}</ul>\n"


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
    return ref(node_id, prefix=state.prefix)


def _selection(state: _Doc) -> str:
    sel = state.doc.selection
    how = _SELECTION_SOURCES.get(sel.source, sel.source)
    tree = state.doc.structure.tree
    rows = [f'<p class="note">{esc(sel.source)}: {esc(how)}</p>\n']
    if sel.selected:
        picked = ", ".join(
            f"{_anchor(state, i)} {esc(tree[i].metadata.get('title', ''))}" for i in sel.selected
        )
        rows.append(f"<p>Chosen sections: {picked}</p>\n")
    if sel.names:
        rows.append(f"<p>Names in the answer: {', '.join(esc(repr(n)) for n in sel.names)}</p>\n")
    if sel.unmatched:
        rows.append(
            "<p>Named but matching no title of the outline: "
            f"{', '.join(esc(repr(n)) for n in sel.unmatched)}</p>\n"
        )
    rows.append(raw("the model's answer", sel.raw))
    return "<h3>Step 3: global selection</h3>\n" + "".join(rows)


def _where(state: _Doc, node_id: int) -> str:
    """The titles of the sections above a node (itself included), outermost first."""
    return " › ".join(section_path(state.doc.structure, node_id))


def _kept_table(state: _Doc) -> str:
    d = state.doc
    if not d.kept:
        return '<h3>Kept</h3>\n<p class="note">Nothing from this document reaches the LLM.</p>\n'
    tree = d.structure.tree
    rows = []
    for k in d.kept[:_MAX_KEPT_ROWS]:
        node = tree[k]
        rows.append(
            f"<tr><td>{_anchor(state, k)}</td><td>{esc(node.kind)}</td>"
            f"<td>{esc(_where(state, k))}</td>"
            f'<td class="num"><b>{score(float(d.combined[k]))}</b></td>'
            f"<td>{esc(opening(d.structure.node_text(k), _FIRST_WORDS))}</td></tr>\n"
        )
    return (
        "<h3>Kept, in document order</h3>\n"
        + table(["node", "kind", "in", "score", "first words"], rows)
        + more(len(d.kept) - _MAX_KEPT_ROWS, "kept units")
    )


def _kept_text(d: RefinedDocument) -> str:
    if not d.text:
        return ""
    return (
        f"<details><summary>The kept text as sent ({d.tokens:,} tokens)</summary>"
        f'<div class="raw">{cut(d.text, _TEXT_CHARS)}</div></details>\n'
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
        extra = f" ({esc(why)})" if why else ""
        return "holds", f'<span class="tag holds">holds kept parts{extra}</span>' + tags
    if why is None:
        return "dropped", '<span class="tag dropped">not kept</span>' + tags
    # The reason's meaning is in the legend and the badge's tooltip: not repeated per node.
    return "dropped", (
        f'<span class="tag dropped" title="{esc(REASONS.get(why, why))}">dropped: '
        f"{esc(why)}</span>" + tags
    )


def _scores(state: _Doc, node_id: int) -> str:
    d = state.doc
    if node_id >= len(d.combined):
        return ""
    return (
        f'<span class="sc">LS {score(float(d.local[node_id]))} · GS '
        f"{score(float(d.global_[node_id]))} · <b>{score(float(d.combined[node_id]))}</b></span>"
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
                what.append(plural(int(run[0]), "section"))
            if run[1]:
                what.append(plural(int(run[1]), "paragraph"))
            out.append(
                f'<div class="skip">… {" and ".join(what)} not drawn (dropped; best combined '
                f"score {score(run[2])})</div>\n"
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
        f"{plural(state.paragraphs[node_id], 'paragraph')}"
    )
    opened = " open" if cls in ("kept", "holds") else ""
    return (
        f'<details class="sec {cls}" id="{state.prefix}{node_id}"{opened}><summary>'
        f'<span class="t">{esc(meta.get("title", ""))}</span> <span class="k">{facts}</span>'
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
        f"{esc(kind)} #{node_id} · {len(text):,} characters{_scores(state, node_id)}{badge}"
        f'</div><div class="text">{cut(text, limit)}</div></div>\n'
    )
