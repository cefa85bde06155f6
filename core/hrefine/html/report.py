"""A self-contained HTML report of a pruning: what was kept, what was dropped, and why.

:func:`render_report` turns a :class:`~hrefine.html.PruneResult` into one HTML file with inline
CSS and JavaScript and no external assets. Each document's cleaned page is drawn with every block
outlined: kept blocks tinted green by score, dropped ones grey with the reason. Hovering or
clicking a block shows its tag path, scores and rank; a side list orders the blocks by rank and
scrolls to them; a switch shows only what the LLM receives.

The page's own content is data, never code: each page is rebuilt from parsed elements with a
fixed set of tags and every text escaped (see ``hrefine.html._report_page``). Block data
reaches the report's script as JSON in a ``<script type="application/json">`` element with
``<``, ``>``, ``&`` and U+2028/U+2029 escaped, so no text can close it. The stylesheet and the
script are package data files (``report_assets/``), read once and written inline; a
Content-Security-Policy allows only them (by hash) and no network at all.

A big page is written in parts, the first drawn and the others inert in ``<template>``
elements that the script draws as they come near the screen, so that a page of any size opens
and answers quickly (see ``hrefine.html._report_page``).
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Sequence
from importlib import resources
from typing import TYPE_CHECKING, Any

from hrefine._renderers import NOTEBOOK, register
from hrefine._report_frame import esc, esc_text, page
from hrefine.html._report_page import PageWriter
from hrefine.html.reasons import EMPTY
from hrefine.html.result import PruneResult

if TYPE_CHECKING:
    from hrefine.html.result import BlockReport

__all__ = ["render_notebook", "render_report"]

# Where the stylesheet and the script live, beside this module.
_ASSETS = "report_assets"
_EMPTY_DOC = '<p class="note">This document is empty: it has no visible text.</p>'
_NOTHING_KEPT = '<p class="note">Nothing from this document reaches the LLM.</p>'
_JSON_ESCAPES = str.maketrans(
    {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
)


def render_report(result: PruneResult, *, title: str | None = None) -> str:
    """Write a self-contained HTML report of ``result`` (one page or several).

    Parameters
    ----------
    result:
        What :meth:`HtmlPruner.prune <hrefine.html.HtmlPruner.prune>` returned.
    title:
        Shown in the browser tab and above the question (e.g. the page's file name).

    Returns
    -------
    str
        A complete HTML document: inline CSS and JavaScript, no external assets, readable
        offline. The page content in it is rebuilt from parsed elements and escaped (see the
        module docstring); its scripts, event handlers and ``javascript:`` links never reach it.
    """
    blocks = result.blocks
    heat = _heat(blocks)
    sections = []
    placed = [False] * len(blocks)
    n_docs = max(
        len(result.cleaned), len(result.documents), 1 + max((b.doc for b in blocks), default=-1)
    )
    by_doc: dict[int, list[int]] = {}
    for i, b in enumerate(blocks):
        by_doc.setdefault(b.doc, []).append(i)
    for d in range(n_docs):
        members = by_doc.get(d, [])
        cleaned = result.cleaned[d] if d < len(result.cleaned) else ""
        sent = result.documents[d] if d < len(result.documents) else ""
        sections.append(_section(d, n_docs, cleaned, sent, blocks, members, heat, placed))
    data = _data(result, placed)
    # Each asset starts on a line of its own after its opening tag.
    css = "\n" + _asset("report.css").replace("__FILL__", f"{_fill_share(result):.2f}")
    js = "\n" + _asset("report.js")
    body = [
        _header(result, title),
        '<div class="layout">\n<main id="docs">\n',
        *sections,
        "</main>\n",
        _SIDEBAR,
        "</div>\n",
        '<div id="tip" class="tip" hidden></div>\n',
        f'<script type="application/json" id="hr-data">{data}</script>\n',
    ]
    return page("Pruning report", title, css, body, script=js, escape=esc_text)


def render_notebook(result: PruneResult, *, title: str | None = None, height: int = 720) -> str:
    """The report inside a sandboxed ``<iframe srcdoc>``, for notebooks (``_repr_html_``).

    The frame keeps the report's styles and script away from the notebook page, and the page's
    content stays as inert as in the file: the sandbox allows scripts (the report's own, which the
    report's Content-Security-Policy pins by hash) but no same-origin access, forms or pop-ups.
    """
    doc = render_report(result, title=title)
    return (
        f'<iframe srcdoc="{esc(doc)}" sandbox="allow-scripts" '
        f'title="hrefine pruning report" width="100%" height="{int(height)}" '
        'style="border:1px solid #e3e7ec;border-radius:8px;background:#fff"></iframe>'
    )


# PruneResult.to_html and _repr_html_ draw through these (hrefine.html imports this module).
register(PruneResult, render_report)
register(PruneResult, render_notebook, kind=NOTEBOOK)


# -- the inline assets ------------------------------------------------------------------------
@functools.cache
def _asset(name: str) -> str:
    """The text of the package data file ``report_assets/<name>``, read once per process."""
    return (resources.files("hrefine.html") / _ASSETS / name).read_text(encoding="utf-8")


# -- the frame around the pages ---------------------------------------------------------------
def _deciding(b: BlockReport) -> float | None:
    score = b.stage2_score if b.stage2_score is not None else b.stage1_score
    if score is None or math.isnan(score):
        return None
    return score


def _heat(blocks: Sequence[BlockReport]) -> dict[int, int]:
    """Tint level 1–5 of each kept block: its score among the kept blocks' scores."""
    scored = [(i, _deciding(b)) for i, b in enumerate(blocks) if b.kept]
    values = [s for _, s in scored if s is not None and math.isfinite(s)]
    lo, hi = (min(values), max(values)) if values else (0.0, 0.0)
    out = {}
    for i, s in scored:
        if s is None or not math.isfinite(s):
            out[i] = 1 if s is None or s < 0 else 5
        elif hi > lo:
            out[i] = 1 + min(4, int((s - lo) / (hi - lo) * 5))
        else:
            out[i] = 5
    return out


def _fill_share(result: PruneResult) -> float:
    return min(100.0, 100.0 * result.tokens / result.budget) if result.budget else 0.0


def _header(result: PruneResult, title: str | None) -> str:
    blocks = result.blocks
    kept = sum(b.kept for b in blocks)
    docs = max(len(result.cleaned), 1)
    share = 100.0 * result.tokens / result.original_tokens if result.original_tokens else 0.0
    scorer = result.stats.get("scorer")
    facts = [
        f"{docs} documents" if docs > 1 else "1 document",
        f"{kept:,} of {len(blocks):,} blocks kept",
    ]
    if scorer:
        facts.append(f"scorer {scorer}")
    if "prompt_tokens" in result.stats:
        facts.append("generative stage 2")
    facts.append(f"tokenizer {result.tokenizer}")
    if result.stats.get("truncated"):
        facts.append("best block truncated to fit")
    meta = " · ".join(esc_text(str(f)) for f in facts)
    name = f'<span class="src">{esc_text(title)}</span>' if title else ""
    return (
        '<header class="top">\n'
        f'<div class="brand">hrefine · HtmlRAG pruning report{name}</div>\n'
        f'<h1 class="q"><span class="ql">Question</span>{esc_text(result.query)}</h1>\n'
        f'<div class="meta">{meta}</div>\n'
        '<div class="row">\n<div class="budget">'
        '<div class="bar" role="img" aria-label="tokens kept out of the budget">'
        '<div class="fill"></div></div>\n'
        f'<div class="nums"><b>{result.tokens:,}</b> tokens kept · budget '
        f"<b>{result.budget:,}</b> · cleaned input <b>{result.original_tokens:,}</b> "
        f'<span class="pct">({share:.1f}% kept)</span></div></div>\n'
        '<div class="controls"><label class="switch"><input type="checkbox" id="only-kept">'
        '<span class="knob" aria-hidden="true"></span>Show only what the LLM receives</label>\n'
        '<div class="legend"><span class="sw sw-k"></span>kept (darker: higher score)'
        '<span class="sw sw-d"></span>dropped<span class="sw sw-s"></span>selected</div>'
        "</div>\n</div>\n</header>\n"
    )


_SIDEBAR = (
    '<aside class="side" aria-label="blocks">\n'
    '<div id="insp" class="insp"><div class="insp-empty">Hover or click a block to see its tag '
    "path, scores and rank.</div></div>\n"
    '<div class="list-h"><span>Blocks by rank</span><span id="list-n"></span></div>\n'
    '<ol id="rank" class="rank"></ol>\n'
    '<button type="button" id="more" class="more" hidden>Show more</button>\n'
    "</aside>\n"
)


def _section(
    d: int,
    n_docs: int,
    cleaned: str,
    sent: str,
    blocks: Sequence[BlockReport],
    members: list[int],
    heat: dict[int, int],
    placed: list[bool],
) -> str:
    kept = sum(blocks[i].kept for i in members)
    real = [i for i in members if blocks[i].reason != EMPTY or blocks[i].element is not None]
    page = ""
    heading = f"Document {d + 1} of {n_docs}" if n_docs > 1 else "The cleaned page"
    lazy = False
    if cleaned:
        writer = PageWriter(cleaned, blocks, members, heat)
        full, kept_view = writer.write()
        lazy = len(full) > 1
        page = (
            f'<div class="page full{" lazy" * lazy}">{_parts(full)}</div>\n'
            f'<div class="page kept-view{" lazy" * (len(kept_view) > 1)}">'
            f"{_parts(kept_view) or _NOTHING_KEPT}</div>"
        )
        for i in writer.placed:
            placed[i] = True
        if writer.title:
            heading += f" · {writer.title}"
    else:
        page = f'<div class="page">{_EMPTY_DOC}</div>'
    counts = f"{kept:,} of {len(real):,} blocks kept"
    if lazy:
        counts += f" · a large page, drawn in {len(full):,} parts as you scroll"
    note = "" if kept or not cleaned else '<span class="none">nothing from it is kept</span>'
    sent_html = (
        f'<details class="sent"><summary>The exact HTML the LLM receives from this document '
        f"({len(sent):,} characters)</summary><pre>{esc_text(sent)}</pre></details>\n"
        if sent
        else ""
    )
    return (
        f'<section class="doc" id="doc-{d}" data-doc="{d}">\n'
        f'<h2 class="doc-h"><span>{esc_text(heading)}</span><span class="cnt">{counts}</span>'
        f"{note}</h2>\n"
        f"{page}\n{sent_html}</section>\n"
    )


def _parts(parts: Sequence[tuple[str, int]]) -> str:
    """A view's markup: its one part as it is; or the first part drawn and each other one
    inert in a ``<template>`` (with its line count, a guess at its height) that the script
    draws when it comes near the screen."""
    if len(parts) <= 1:
        return parts[0][0] if parts else ""
    first, *rest = parts
    return f'<div class="part">{first[0]}</div>' + "".join(
        f'<template data-lines="{lines}">{markup}</template>' for markup, lines in rest
    )


# -- data for the script ----------------------------------------------------------------------
def _round(x: float | None) -> float | None:
    if x is None or not math.isfinite(x):
        return None
    return float(f"{x:.4g}")


def _data(result: PruneResult, placed: Sequence[bool]) -> str:
    """Block data as JSON columns, escaped so that no text can end the script element.

    Flags (kept, own text, not placed) are lists of block indices; columns that would hold one
    value only (``doc`` for one document, ``s2`` without stage 2) are left out, and so are the
    columns the script can work out: ``id`` when each block's id is its index plus one number
    (``id0``), ``rank`` when it is each block's place in ``order``.
    """
    blocks = result.blocks
    paths: dict[str, int] = {}
    reasons: dict[str, int] = {"": 0}
    stage2 = "prompt_tokens" in result.stats

    def order_key(i: int) -> tuple[int, int, int]:
        b = blocks[i]
        later = 1 if stage2 and b.stage2_score is None else 0  # dropped already in stage 1
        return (later, b.rank if b.rank >= 0 else 1 << 30, i)

    order = sorted(range(len(blocks)), key=order_key)
    data: dict[str, Any] = {
        "n": len(blocks),
        "docs": max(len(result.cleaned), 1),
        "stage2": stage2,
        "path": [paths.setdefault(b.tag_path, len(paths)) for b in blocks],
        "tokens": [b.tokens for b in blocks],
        "s1": [_round(b.stage1_score) for b in blocks],
        "reason": [reasons.setdefault(b.reason or "", len(reasons)) for b in blocks],
        "kept": [i for i, b in enumerate(blocks) if b.kept],
        "own": [i for i, b in enumerate(blocks) if b.own_text],
        "unplaced": [i for i, p in enumerate(placed) if not p],
        "order": order,
    }
    # Two columns of a number per block that are most often implied: left out when they are.
    id0 = blocks[0].block_id if blocks else 0
    if all(b.block_id == id0 + i for i, b in enumerate(blocks)):
        data["id0"] = id0
    else:
        data["id"] = [b.block_id for b in blocks]
    if any(blocks[i].rank != k for k, i in enumerate(order)):
        data["rank"] = [b.rank for b in blocks]
    if any(b.stage2_score is not None for b in blocks):
        data["s2"] = [_round(b.stage2_score) for b in blocks]
    if data["docs"] > 1:
        data["doc"] = [b.doc for b in blocks]
    data["paths"] = list(paths)
    data["reasons"] = list(reasons)
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.translate(_JSON_ESCAPES)
