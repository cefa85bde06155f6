"""A self-contained HTML report of a pruning: what was kept, what was dropped, and why.

:func:`render_report` turns a :class:`~hrefine.html.PruneResult` into one HTML file with inline
CSS and JavaScript and no external assets. Each document's cleaned page is drawn with every block
outlined: kept blocks tinted green by score, dropped ones grey with the reason. Hovering or
clicking a block shows its tag path, scores, rank and tokens; a side list orders the blocks by
rank and scrolls to them; a switch shows only what the LLM receives.

The page's own content is data, never code. The report never copies page markup: it rebuilds
each page from parsed elements, writing only tag names from a fixed list (anything else becomes
a ``div`` or ``span``), no attribute but validated ``colspan``/``rowspan``, and every text and
attribute value escaped. Scripts, styles, frames and embedded objects are left out with their
content, event-handler attributes never pass, links lose their targets (an ``http(s)`` address
is shown as a tooltip, any other scheme is dropped) and images become their alt text. Block data
reaches the report's script as JSON in a ``<script type="application/json">`` element with
``<``, ``>``, ``&`` and U+2028/U+2029 escaped, so no text can close it. A Content-Security-Policy
allows only the report's own inline script and style (by hash) and no network at all.
"""

from __future__ import annotations

import base64
import hashlib
import html as html_lib
import json
import math
import re
from collections.abc import Sequence
from copy import deepcopy
from typing import Any

from hrefine.html._load import LIBXML_MAX_DEPTH, parse_document, text_content
from hrefine.html._text import BLOCK_TAGS, normalize_space
from hrefine.html.paragraphs import split_element
from hrefine.html.result import (
    BELOW_THRESHOLD,
    EMPTY,
    OVER_BUDGET,
    TRUNCATED,
    BlockReport,
    PruneResult,
)

__all__ = ["render_notebook", "render_report"]

# Elements left out with everything inside them: code, styling, embedded content and controls.
_DROPPED = frozenset(
    [
        "script",
        "style",
        "noscript",
        "template",
        "iframe",
        "frame",
        "frameset",
        "noframes",
        "object",
        "embed",
        "applet",
        "param",
        "canvas",
        "svg",
        "math",
        "audio",
        "video",
        "source",
        "track",
        "picture",
        "map",
        "area",
        "link",
        "meta",
        "base",
        "input",
        "select",
        "option",
        "optgroup",
        "textarea",
        "button",
        "datalist",
        "output",
        "progress",
        "meter",
        "dialog",
        "form",
        "portal",
        "xmp",
        "plaintext",
        "listing",
        "noembed",
        "colgroup",
        "col",
    ]
)
# Tags written under their own name (in a context where the browser keeps them as they are).
_INLINE_SAME = frozenset(
    [
        "b",
        "i",
        "u",
        "s",
        "em",
        "strong",
        "small",
        "sub",
        "sup",
        "mark",
        "code",
        "kbd",
        "samp",
        "var",
        "abbr",
        "cite",
        "dfn",
        "q",
        "time",
        "del",
        "ins",
    ]
)
_FLOW_SAME = frozenset(["ul", "ol", "dl", "pre", "blockquote", "figure", "figcaption"])
_HEADINGS = frozenset(["h1", "h2", "h3", "h4", "h5", "h6"])
_TABLE_SECTIONS = frozenset(["thead", "tbody", "tfoot"])
_TABLE_PARTS = frozenset(["table", "thead", "tbody", "tfoot", "tr"])
_VOID = frozenset(["br", "hr"])
# Written as a div or span with a class, whatever the context.
_RENAMED = {
    "html": ("div", "p-html"),
    "head": ("div", "p-head"),
    "title": ("div", "p-title"),
    "body": ("div", "p-body"),
    "p": ("div", "p-p"),
    "a": ("span", "p-a"),
}
# Dropped blocks whose element is a paragraph-like box get a reason badge after their text.
_BADGED = frozenset(["p-p", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote"])
_REASONS = {OVER_BUDGET: "ob", BELOW_THRESHOLD: "bt", EMPTY: "em", TRUNCATED: "tr"}
# Pages with more elements get content-visibility: auto on their top parts.
_BIG_PAGE = 20_000
_EMPTY_DOC = '<p class="note">This document is empty: it has no visible text.</p>'
_NOTHING_KEPT = '<p class="note">Nothing from this document reaches the LLM.</p>'
_SAFE_URL = re.compile(r"^https?://[^\s\x00-\x1f\x7f]+$", re.I)
_SPAN_LIMIT = 1000
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
    doc_title = f"Pruning report: {title}" if title else "Pruning report"
    css = _CSS.replace("__FILL__", f"{_fill_share(result):.2f}")
    csp = (
        "default-src 'none'; "
        f"script-src {_hash(_JS)}; style-src {_hash(css)}; "
        "img-src 'none'; font-src 'none'; connect-src 'none'; media-src 'none'; "
        "object-src 'none'; frame-src 'none'; base-uri 'none'; form-action 'none'"
    )
    return "".join(
        [
            '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n',
            f'<meta http-equiv="Content-Security-Policy" content="{csp}">\n',
            '<meta name="referrer" content="no-referrer">\n',
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n',
            f"<title>{_esc(doc_title)}</title>\n<style>{css}</style>\n</head>\n<body>\n",
            _header(result, title),
            '<div class="layout">\n<main id="docs">\n',
            *sections,
            "</main>\n",
            _SIDEBAR,
            "</div>\n",
            '<div id="tip" class="tip" hidden></div>\n',
            f'<script type="application/json" id="hr-data">{data}</script>\n',
            f"<script>{_JS}</script>\n</body></html>\n",
        ]
    )


def render_notebook(result: PruneResult, *, title: str | None = None, height: int = 720) -> str:
    """The report inside a sandboxed ``<iframe srcdoc>``, for notebooks (``_repr_html_``).

    The frame keeps the report's styles and script away from the notebook page, and the page's
    content stays as inert as in the file: the sandbox allows scripts (the report's own, which the
    report's Content-Security-Policy pins by hash) but no same-origin access, forms or pop-ups.
    """
    doc = render_report(result, title=title)
    return (
        f'<iframe srcdoc="{html_lib.escape(doc, quote=True)}" sandbox="allow-scripts" '
        f'title="hrefine pruning report" width="100%" height="{int(height)}" '
        'style="border:1px solid #e3e7ec;border-radius:8px;background:#fff"></iframe>'
    )


# -- the page ---------------------------------------------------------------------------------
def _esc(text: str) -> str:
    return html_lib.escape(text, quote=False)


def _hash(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return f"'sha256-{base64.b64encode(digest).decode('ascii')}'"


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
    meta = " · ".join(_esc(str(f)) for f in facts)
    name = f'<span class="src">{_esc(title)}</span>' if title else ""
    return (
        '<header class="top">\n'
        f'<div class="brand">hrefine · HtmlRAG pruning report{name}</div>\n'
        f'<h1 class="q"><span class="ql">Question</span>{_esc(result.query)}</h1>\n'
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
    if cleaned:
        writer = _PageWriter(cleaned, blocks, members, heat)
        full, kept_view = writer.write()
        # On big pages, parts out of view are neither laid out nor painted until scrolled to.
        big = " big" if writer.size > _BIG_PAGE else ""
        page = (
            f'<div class="page full{big}">{full}</div>\n<div class="page kept-view">'
            f"{kept_view or _NOTHING_KEPT}</div>"
        )
        for i in writer.placed:
            placed[i] = True
        if writer.title:
            heading += f" · {writer.title}"
    else:
        page = f'<div class="page">{_EMPTY_DOC}</div>'
    counts = f"{kept:,} of {len(real):,} blocks kept"
    note = "" if kept or not cleaned else '<span class="none">nothing from it is kept</span>'
    sent_html = (
        f'<details class="sent"><summary>The exact HTML the LLM receives from this document '
        f"({len(sent):,} characters)</summary><pre>{_esc(sent)}</pre></details>\n"
        if sent
        else ""
    )
    return (
        f'<section class="doc" id="doc-{d}" data-doc="{d}">\n'
        f'<h2 class="doc-h"><span>{_esc(heading)}</span><span class="cnt">{counts}</span>'
        f"{note}</h2>\n"
        f"{page}\n{sent_html}</section>\n"
    )


class _PageWriter:
    """Rebuild one cleaned page as safe report markup with block markers, in two views.

    The full view draws every element; the kept view only what the renderer would write for
    the LLM (kept blocks and their ancestors). The switch hides the full view with
    ``content-visibility: hidden``, which keeps its layout, so turning it back is quick.
    """

    def __init__(
        self,
        cleaned: str,
        blocks: Sequence[BlockReport],
        members: Sequence[int],
        heat: dict[int, int],
    ) -> None:
        self.root = parse_document(cleaned, max_depth=LIBXML_MAX_DEPTH)
        elements = [e for e in self.root.iter() if isinstance(e.tag, str)]
        self.size = len(elements)
        self.blocks = blocks
        self.heat = heat
        self.leaf: dict[Any, list[int]] = {}
        self.own: dict[Any, list[int]] = {}
        for i in members:
            b = blocks[i]
            if b.element is None or not 0 <= b.element < len(elements):
                continue
            el = elements[b.element]
            (self.own if b.own_text else self.leaf).setdefault(el, []).append(i)
        # Elements with a kept block at or below them: the kept view's skeleton.
        self.alive: set[Any] = set()
        for table in (self.leaf, self.own):
            for el, ids in table.items():
                if any(blocks[i].kept for i in ids):
                    cur = el
                    while cur is not None and cur not in self.alive:
                        self.alive.add(cur)
                        cur = cur.getparent()
        self.placed: list[int] = []
        self._cuts: dict[Any, list[Any] | None] = {}  # split paragraph -> its drawn pieces
        title = self.root.find("head/title")
        self.title = normalize_space(text_content(title))[:120] if title is not None else ""
        self.out: list[str] = []
        self.kept_only = False

    def write(self) -> tuple[str, str]:
        """The full view's and the kept view's markup."""
        self.out = []
        self.kept_only = False
        self._element(self.root, "", False, False)
        full = "".join(self.out)
        self.out = []
        self.kept_only = True
        if self.root in self.alive:
            self._element(self.root, "", False, False)
        return full, "".join(self.out)

    def _classes(self, i: int) -> list[str]:
        b = self.blocks[i]
        cls = ["kept", f"k{self.heat.get(i, 1)}"] if b.kept else ["drop"]
        if b.reason in _REASONS:
            cls.append(f"r-{_REASONS[b.reason]}")
        return cls

    def _element(self, el: Any, parent: str, in_heading: bool, inherited: bool) -> None:
        """Write ``el``; ``inherited``: it lies inside a kept block's element."""
        tag = el.tag.lower() if isinstance(el.tag, str) else ""
        if not tag or tag in _DROPPED:
            return
        leaf = self.leaf.get(el, ())
        own = self.own.get(el, ())
        kept_here = any(self.blocks[i].kept for i in (*leaf, *own))
        dropped_here = bool(leaf or own) and not kept_here
        if self.kept_only and not (el in self.alive or (inherited and not dropped_here)):
            return
        out = self.out
        name, cls = self._tag(tag, parent, in_heading)
        classes = [cls] if cls else []
        if len(leaf) > 1:  # the pieces of a split paragraph
            made = self._cut(el, leaf)
            if made is None:
                self._pieces(name, cls, leaf)
            for piece in made or ():
                self._element(piece, parent, in_heading, inherited)
            return
        attrs = ""
        primary = leaf[0] if leaf else (own[0] if own else None)
        if primary is not None:
            if not self.kept_only:
                self.placed.append(primary)
            b = self.blocks[primary]
            classes += ["hb", *self._classes(primary)]
            if not leaf:
                classes.append("own")
            elif not b.kept and (cls or name) in _BADGED:
                classes.append("bdg")  # a reason badge after the text
            attrs = f' data-b="{primary}"'
        if name in ("td", "th"):
            attrs += _spans(el)
        elif tag == "a":
            href = (el.get("href") or "").strip()
            if _SAFE_URL.match(href):
                attrs += f' title="{html_lib.escape(href, quote=True)}"'
        if classes:
            attrs = f' class="{" ".join(classes)}"' + attrs
        out.append(f"<{name}{attrs}>")
        if tag == "img":
            alt = normalize_space(el.get("alt") or "")
            if alt:
                out.append(f"[image: {_esc(alt)}]")
        if name in _VOID:
            return
        inside = any(self.blocks[i].kept for i in leaf) or (inherited and not dropped_here)
        own_id = own[0] if own else None
        if own_id is not None:
            own_cls = " ".join(["ot", *self._classes(own_id)])
            # The kept view writes text the LLM receives: kept own text, or a kept block's.
            text_shown = not self.kept_only or self.blocks[own_id].kept
        else:
            own_cls = ""
            text_shown = not self.kept_only or inside
        if text_shown:
            self._text(el.text, own_id, own_cls)
        heading = in_heading or name in _HEADINGS
        for child in el:
            self._element(child, name, heading, inside)
            if text_shown:
                self._text(child.tail, own_id, own_cls)
        out.append(f"</{name}>")

    def _cut(self, el: Any, pieces: Sequence[int]) -> list[Any] | None:
        """Copies of paragraph ``el`` cut where the pruner cut it, one element per piece (its
        links and emphasis inside), each marked as its piece's block; None when no cut
        gives the pieces' texts (they are then drawn as text, see :meth:`_pieces`).

        The pruner asked for as many pieces as the paragraph's tokens over its limit, and
        got fewer where sentence ends were too few: each count from the pieces' number up
        is tried until one gives the same texts."""
        if el in self._cuts:
            return self._cuts[el]
        want = [normalize_space(self.blocks[i].text) for i in pieces]
        made: list[Any] | None = None
        for count in range(len(pieces), 4 * len(pieces) + 1):
            copy = deepcopy(el)
            el.makeelement("div", {}).append(copy)  # a paragraph is replaced in its parent
            cut = split_element(copy, count)
            if cut is None:
                break
            if [normalize_space(text_content(c)) for c in cut] == want:
                made = cut
                break
        for piece, i in zip(made or (), pieces, strict=False):
            self.leaf[piece] = [i]
            if self.blocks[i].kept:
                self.alive.add(piece)
        self._cuts[el] = made
        return made

    def _pieces(self, name: str, cls: str, pieces: Sequence[int]) -> None:
        """A split paragraph whose cut could not be redone: each piece a marked span of its
        text (inline tags not drawn)."""
        attrs = f' class="{cls}"' if cls else ""
        spans = []
        for i in pieces:
            b = self.blocks[i]
            if self.kept_only and not b.kept:
                continue
            if not self.kept_only:
                self.placed.append(i)
            marks = ["hb", *self._classes(i)]
            if not b.kept and (cls or name) in _BADGED:
                marks.append("bdg")
            spans.append(f'<span class="{" ".join(marks)}" data-b="{i}">{_esc(b.text)}</span>')
        self.out.append(f"<{name}{attrs}>{' '.join(spans)}</{name}>")

    def _text(self, text: str | None, own_id: int | None, own_cls: str) -> None:
        if not text:
            return
        if own_id is not None and text.strip():
            self.out.append(f'<span class="{own_cls}" data-o="{own_id}">{_esc(text)}</span>')
        else:
            self.out.append(_esc(text))

    @staticmethod
    def _tag(tag: str, parent: str, in_heading: bool) -> tuple[str, str]:
        """The tag written for ``tag`` under a written ``parent``, and a class if renamed."""
        if tag in _RENAMED:
            return _RENAMED[tag]
        if tag == "img":
            return "span", "p-img"
        if tag in _VOID or tag in _INLINE_SAME or tag in _FLOW_SAME:
            return tag, ""
        if tag in _HEADINGS:
            return (tag, "") if not in_heading else ("span", f"p-{tag}")
        if tag == "table":
            return ("table", "") if parent not in _TABLE_PARTS else ("div", "p-table")
        if tag in _TABLE_SECTIONS or tag == "caption":
            return (tag, "") if parent == "table" else ("div", f"p-{tag}")
        if tag == "tr":
            return ("tr", "") if parent in ("table", *_TABLE_SECTIONS) else ("div", "p-tr")
        if tag in ("td", "th"):
            return (tag, "") if parent == "tr" else ("div", f"p-{tag}")
        if tag == "li":
            return ("li", "") if parent in ("ul", "ol") else ("div", "p-li")
        if tag in ("dt", "dd"):
            return (tag, "") if parent == "dl" else ("div", f"p-{tag}")
        return ("div", "") if tag in BLOCK_TAGS else ("span", "")


def _spans(el: Any) -> str:
    out = ""
    for name in ("colspan", "rowspan"):
        value = (el.get(name) or "").strip()
        if value.isdigit() and 1 < int(value) <= _SPAN_LIMIT:
            out += f' {name}="{int(value)}"'
    return out


# -- data for the script ----------------------------------------------------------------------
def _round(x: float | None) -> float | None:
    if x is None or not math.isfinite(x):
        return None
    return float(f"{x:.4g}")


def _data(result: PruneResult, placed: Sequence[bool]) -> str:
    """Block data as JSON columns, escaped so that no text can end the script element.

    Flags (kept, own text, not placed) are lists of block indices; columns that would hold one
    value only (``doc`` for one document, ``s2`` without stage 2) are left out.
    """
    blocks = result.blocks
    paths: dict[str, int] = {}
    reasons: dict[str, int] = {"": 0}
    stage2 = "prompt_tokens" in result.stats

    def order_key(i: int) -> tuple[int, int, int]:
        b = blocks[i]
        later = 1 if stage2 and b.stage2_score is None else 0  # dropped already in stage 1
        return (later, b.rank if b.rank >= 0 else 1 << 30, i)

    data: dict[str, Any] = {
        "n": len(blocks),
        "docs": max(len(result.cleaned), 1),
        "stage2": stage2,
        "id": [b.block_id for b in blocks],
        "path": [paths.setdefault(b.tag_path, len(paths)) for b in blocks],
        "tokens": [b.tokens for b in blocks],
        "s1": [_round(b.stage1_score) for b in blocks],
        "rank": [b.rank for b in blocks],
        "reason": [reasons.setdefault(b.reason or "", len(reasons)) for b in blocks],
        "kept": [i for i, b in enumerate(blocks) if b.kept],
        "own": [i for i, b in enumerate(blocks) if b.own_text],
        "unplaced": [i for i, p in enumerate(placed) if not p],
        "order": sorted(range(len(blocks)), key=order_key),
    }
    if any(b.stage2_score is not None for b in blocks):
        data["s2"] = [_round(b.stage2_score) for b in blocks]
    if data["docs"] > 1:
        data["doc"] = [b.doc for b in blocks]
    data["paths"] = list(paths)
    data["reasons"] = list(reasons)
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.translate(_JSON_ESCAPES)


_CSS = """
:root{--bg:#f5f6f8;--card:#fff;--ink:#1d2530;--mute:#667281;--line:#e2e6eb;--green:#17924c;
--drop:#9aa4b0;--dropbg:#f3f4f6;--accent:#2563eb;--sel:#f59e0b}
*{box-sizing:border-box}
[hidden]{display:none!important}
html{font:15px/1.55 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,
"Noto Sans","DejaVu Sans",sans-serif;color:var(--ink);background:var(--bg)}
body{margin:0;height:100vh;display:flex;flex-direction:column}
header.top{flex:none;background:var(--card);border-bottom:1px solid var(--line);
padding:14px 28px 12px;box-shadow:0 1px 3px rgba(16,24,40,.05);z-index:2}
.brand{font-size:12px;letter-spacing:.06em;text-transform:uppercase;color:var(--mute);
font-weight:600}
.brand .src{text-transform:none;letter-spacing:0;font-weight:500;margin-left:10px;
padding:1px 8px;border-radius:10px;background:#eef1f5;color:#3d4753}
h1.q{font-size:21px;line-height:1.35;margin:6px 0 4px;font-weight:650;max-width:1100px}
.ql{display:inline-block;font-size:11px;text-transform:uppercase;letter-spacing:.06em;
color:#fff;background:var(--accent);border-radius:4px;padding:2px 7px;margin-right:10px;
vertical-align:3px}
.meta{color:var(--mute);font-size:13px}
.row{display:flex;flex-wrap:wrap;gap:14px 40px;align-items:center;margin-top:12px}
.budget{flex:1 1 420px;max-width:640px}
.bar{height:10px;background:#e6eaef;border-radius:6px;overflow:hidden}
.fill{height:100%;width:__FILL__%;background:linear-gradient(90deg,#4cc985,#17924c);
border-radius:6px}
.nums{font-size:13px;color:#3d4753;margin-top:5px}.nums b{color:var(--ink)}
.pct{color:var(--mute)}
.controls{display:flex;flex-wrap:wrap;align-items:center;gap:10px 26px;font-size:13px}
.switch{display:inline-flex;align-items:center;gap:9px;cursor:pointer;font-weight:600;
user-select:none}
.switch input{position:absolute;opacity:0;width:1px;height:1px}
.knob{width:36px;height:20px;border-radius:10px;background:#cdd3da;position:relative;
transition:background .15s}
.knob:after{content:"";position:absolute;top:2px;left:2px;width:16px;height:16px;
border-radius:50%;background:#fff;box-shadow:0 1px 2px rgba(0,0,0,.25);transition:left .15s}
.switch input:checked+.knob{background:var(--green)}
.switch input:checked+.knob:after{left:18px}
.switch input:focus-visible+.knob{outline:2px solid var(--accent);outline-offset:2px}
.legend{color:var(--mute);display:flex;align-items:center;gap:6px;flex-wrap:wrap}
.sw{display:inline-block;width:26px;height:12px;border-radius:3px;margin-left:10px}
.sw-k{background:linear-gradient(90deg,rgba(52,199,123,.15),rgba(23,146,76,.55));
border:1px solid rgba(23,146,76,.6)}
.sw-d{background:var(--dropbg);border:1px dashed #b8c0c9}
.sw-s{border:2px solid var(--sel)}
.layout{flex:1;min-height:0;display:grid;grid-template-columns:minmax(0,1fr) 350px}
main#docs{overflow:auto;padding:20px 24px 20px 28px;min-height:0}
@media (max-width:900px){body{display:block;height:auto}.layout{display:block}
main#docs{overflow:visible}.side{border-left:0;border-top:1px solid var(--line)}}
.doc{background:var(--card);border:1px solid var(--line);border-radius:10px;margin:0 0 22px;
box-shadow:0 1px 2px rgba(16,24,40,.04)}
.doc-h{display:flex;flex-wrap:wrap;gap:4px 14px;align-items:baseline;margin:0;
padding:12px 20px;border-bottom:1px solid var(--line);font-size:15px;font-weight:650}
.doc-h .cnt{font-weight:500;font-size:13px;color:var(--mute)}
.doc-h .none{font-weight:500;font-size:12px;color:#8a5a00;background:#fff4db;
border-radius:10px;padding:1px 8px}
.page{padding:14px 20px 18px;overflow-x:auto}
.page .p-head{margin:0 0 6px}
.page .p-title{font-size:13px;color:var(--mute);margin:0 0 6px;padding:1px 4px}
.page .p-p{margin:.45em 0}
.page h1,.page h2,.page h3,.page h4,.page h5,.page h6{line-height:1.3;margin:.8em 0 .35em}
.page h1{font-size:1.5em}.page h2{font-size:1.25em}.page h3{font-size:1.1em}
.page h4,.page h5,.page h6{font-size:1em}
.page ul,.page ol{padding-left:1.5em;margin:.4em 0}
.page table{border-collapse:collapse;margin:10px 0;font-size:14px}
.page td,.page th{border:1px solid #dfe3e8;padding:3px 9px;vertical-align:top;text-align:left}
.page th{background:#f1f3f6;font-weight:600}
.page pre{white-space:pre-wrap;font-size:13px}
.page .p-a{color:#1d4ed8;text-decoration:underline;text-decoration-color:#9db4f5}
.page .p-img{color:var(--mute);font-style:italic}
.hb{outline:1px dashed #c3cad3;outline-offset:-1px;border-radius:3px;cursor:pointer}
.hb.kept{outline:1.5px solid rgba(23,146,76,.75);color:var(--ink)}
.kept.k1{background:rgba(52,199,123,.10)}.kept.k2{background:rgba(52,199,123,.18)}
.kept.k3{background:rgba(52,199,123,.27)}.kept.k4{background:rgba(52,199,123,.37)}
.kept.k5{background:rgba(40,180,105,.48)}
.hb.drop{color:var(--drop);background:var(--dropbg)}
.hb.drop th,.hb.drop td{border-color:#eceff2}.hb.drop th{background:#f6f7f8}
.hb.own{background:none;outline-style:dashed}.hb.own.kept{outline-color:rgba(23,146,76,.55)}
.hb.own.drop{outline-color:#d3d8de}
.ot.drop{color:var(--drop)}.ot{border-radius:2px}
.bdg:after{content:"over budget";display:inline-block;margin-left:8px;padding:0 6px;
font-size:10px;line-height:16px;letter-spacing:.04em;text-transform:uppercase;
color:#7b8794;background:#e9ecef;border-radius:8px;vertical-align:1px;font-weight:600}
.bdg.r-bt:after{content:"below threshold"}.bdg.r-em:after{content:"empty"}
.hb.hl,.ot.hl{outline:2px solid var(--accent)!important;outline-offset:-2px}
.hb.sel{outline:2px solid var(--sel)!important;outline-offset:-2px;
box-shadow:0 0 0 3px rgba(245,158,11,.25)}
.full.big .p-body>*,.full.big .p-body>*>*{content-visibility:auto;
contain-intrinsic-size:auto 200px}
.kept-view{display:none}body.only-kept .kept-view{display:block}
body.only-kept .full{content-visibility:hidden;padding-top:0;padding-bottom:0}
.note{color:var(--mute)}
details.sent{border-top:1px solid var(--line);padding:8px 20px 12px;font-size:13px}
details.sent summary{cursor:pointer;color:#3d4753;font-weight:600}
details.sent pre{white-space:pre-wrap;word-break:break-word;background:#f7f8fa;
border:1px solid var(--line);border-radius:6px;padding:10px;max-height:420px;overflow:auto;
font-size:12px}
.side{overflow:auto;min-height:0;background:var(--card);border-left:1px solid var(--line)}
.insp{padding:14px 16px;border-bottom:1px solid var(--line);font-size:13px;min-height:118px}
.insp-empty{color:var(--mute)}
.insp .st{display:inline-block;font-size:11px;font-weight:700;letter-spacing:.05em;
text-transform:uppercase;border-radius:10px;padding:1px 9px;margin-bottom:6px}
.st.kept{background:#dcf5e6;color:#116b37}.st.drop{background:#eceff2;color:#59636e}
.insp .path{font:12px/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,"DejaVu Sans Mono",
monospace;color:#3d4753;word-break:break-all;margin:2px 0 8px}
.insp dl{display:grid;grid-template-columns:auto 1fr;gap:2px 12px;margin:0 0 8px}
.insp dt{color:var(--mute)}.insp dd{margin:0;font-variant-numeric:tabular-nums}
.insp .snip{color:#3d4753;border-left:3px solid var(--line);padding-left:8px;
max-height:4.6em;overflow:hidden}
.list-h{display:flex;justify-content:space-between;padding:10px 16px 6px;font-size:12px;
font-weight:700;letter-spacing:.05em;text-transform:uppercase;color:var(--mute)}
.rank{list-style:none;margin:0;padding:0 8px 8px}
.rank button{display:grid;grid-template-columns:44px 10px 58px 1fr;gap:6px;align-items:center;
width:100%;text-align:left;background:none;border:0;border-radius:6px;padding:4px 8px;
font:inherit;font-size:12.5px;color:var(--ink);cursor:pointer}
.rank button:hover,.rank button.on{background:#eef3ff}
.rank .rk{color:var(--mute);font-variant-numeric:tabular-nums}
.rank .dot{width:9px;height:9px;border-radius:50%;background:#c3cad3}
.rank .dot.kept{background:var(--green)}
.rank .sc{font-variant-numeric:tabular-nums;color:#3d4753}
.rank .sn{white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.rank .drop .sn{color:var(--mute)}
.more{display:block;margin:0 16px 14px;width:calc(100% - 32px);padding:6px;border-radius:6px;
border:1px solid var(--line);background:#f7f8fa;font:inherit;font-size:12.5px;cursor:pointer}
.tip{position:fixed;z-index:10;pointer-events:none;max-width:380px;background:#1d2530;
color:#f3f5f8;font-size:12px;line-height:1.45;padding:6px 9px;border-radius:6px;
box-shadow:0 4px 14px rgba(0,0,0,.2)}
.tip code{font:11px ui-monospace,Menlo,Consolas,"DejaVu Sans Mono",monospace;color:#b9c3cf}
@keyframes flash{from{box-shadow:0 0 0 7px rgba(245,158,11,.5)}to{box-shadow:0 0 0 3px
rgba(245,158,11,.25)}}
.hb.flash{animation:flash .8s ease-out}
"""

_JS = r"""
(function(){'use strict';
var D=JSON.parse(document.getElementById('hr-data').textContent),N=D.n;
function flags(list){var a=new Uint8Array(N);for(var k=0;k<list.length;k++)a[list[k]]=1;
return a;}
var KEPT=flags(D.kept),OWN=flags(D.own);
function s2(i){return D.s2?D.s2[i]:null;}
function docOf(i){return D.doc?D.doc[i]:0;}
var docs=document.getElementById('docs'),tip=document.getElementById('tip');
var insp=document.getElementById('insp'),list=document.getElementById('rank');
var more=document.getElementById('more'),sw=document.getElementById('only-kept');
var REASON={over_budget:'over budget',below_threshold:'below threshold',empty:'empty document',
truncated:'truncated to fit'};
var full=null,kept=null,hot=null,pinned=-1,shown=0,src=D.order,CHUNK=200,tipI=-1;
function build(sel){var a=new Array(N),all=docs.querySelectorAll(sel);
for(var k=0;k<all.length;k++)a[+all[k].getAttribute('data-b')]=all[k];return a;}
function fullEl(i){if(!full)full=build('.full [data-b]');return full[i]||null;}
function keptEl(i){if(!kept)kept=build('.kept-view [data-b]');return kept[i]||null;}
function copies(i){return [fullEl(i),keptEl(i)].filter(Boolean);}
function rk(i){return D.rank[i]<0?'\u2013':'#'+(D.rank[i]+1);}
function num(x){return x===null?'\u2013':(Math.abs(x)>=1000?x.toFixed(0):x.toFixed(3));}
function status(i){var r=D.reasons[D.reason[i]];return KEPT[i]?(r==='truncated'?
'kept, truncated':'kept'):'dropped: '+(REASON[r]||r||'not kept');}
var SEP=/^(TD|TH|TR|LI|DIV|H[1-6]|DT|DD|BR|TABLE|UL|OL|DL|CAPTION|BLOCKQUOTE|PRE)$/;
function textOf(e,limit){var out=[],n=0;(function walk(x){
for(var c=x.firstChild;c&&n<limit;c=c.nextSibling){if(c.nodeType===3){out.push(c.data);
n+=c.data.length;}else if(c.nodeType===1){var b=SEP.test(c.tagName);if(b)out.push(' ');
walk(c);if(b)out.push(' ');}}})(e);return out.join('');}
function snippet(i){var e=fullEl(i);if(!e)return '';var t='';
if(OWN[i]){var o=e.querySelectorAll('[data-o="'+i+'"]');
for(var k=0;k<o.length&&t.length<200;k++)t+=o[k].textContent+' ';}
else t=textOf(e,240);return t.replace(/\s+/g,' ').trim().slice(0,200);}
function add(p,tag,cls,text){var e=document.createElement(tag);if(cls)e.className=cls;
if(text!==undefined)e.textContent=text;p.appendChild(e);return e;}
function show(i){insp.textContent='';
add(insp,'span','st '+(KEPT[i]?'kept':'drop'),status(i));
add(insp,'div','path',D.paths[D.path[i]]);var dl=add(insp,'dl');
function row(k,v){add(dl,'dt','',k);add(dl,'dd','',v);}
row('rank',rk(i)+(D.stage2?(s2(i)===null?' (stage 1)':' (stage 2)'):''));
row('stage-1 score',num(D.s1[i]));if(D.stage2)row('stage-2 score',num(s2(i)));
row('tokens',String(D.tokens[i]));if(D.docs>1)row('document',String(docOf(i)+1));
row('block id',String(D.id[i]));var s=snippet(i);if(s)add(insp,'div','snip',s);}
function clear(){insp.textContent='';add(insp,'div','insp-empty',
'Hover or click a block to see its tag path, scores and rank.');}
function tipFor(i,x,y){if(i!==tipI){tipI=i;tip.textContent='';
add(tip,'b','',rk(i)+' \u00b7 '+status(i));add(tip,'div','','stage-1 '+num(D.s1[i])+
(D.stage2?' \u00b7 stage-2 '+num(s2(i)):'')+' \u00b7 '+D.tokens[i]+' tokens');
add(tip,'code','',D.paths[D.path[i]]);}tip.hidden=false;
var w=tip.offsetWidth,h=tip.offsetHeight,vw=window.innerWidth,vh=window.innerHeight;
tip.style.left=Math.max(4,Math.min(x+14,vw-w-4))+'px';
tip.style.top=(y+18+h>vh?Math.max(4,y-h-12):y+18)+'px';}
function blockAt(t){var e=t&&t.closest?t.closest('[data-b],[data-o]'):null;
return e&&docs.contains(e)?e:null;}
function idOf(e){var v=e.getAttribute('data-b');return +(v===null?e.getAttribute('data-o'):v);}
function unhot(){if(hot){hot.classList.remove('hl');hot=null;}}
docs.addEventListener('mousemove',function(ev){var e=blockAt(ev.target);
if(!e){unhot();tip.hidden=true;if(pinned<0)clear();return;}var i=idOf(e);
if(e!==hot){unhot();hot=e;e.classList.add('hl');if(pinned<0)show(i);}
tipFor(i,ev.clientX,ev.clientY);});
docs.addEventListener('mouseleave',function(){unhot();tip.hidden=true;if(pinned<0)clear();});
docs.addEventListener('click',function(ev){var e=blockAt(ev.target);
if(e){ev.preventDefault();select(idOf(e),false);}});
function unselect(){if(pinned<0)return;copies(pinned).forEach(function(e){
e.classList.remove('sel');});var on=list.querySelector('button.on');
if(on)on.classList.remove('on');pinned=-1;}
function select(i,scroll){var again=pinned===i;unselect();if(again&&!scroll){clear();return;}
pinned=i;show(i);copies(i).forEach(function(e){e.classList.add('sel');});
var b=list.querySelector('button[data-i="'+i+'"]');if(b)b.classList.add('on');
var e=sw.checked?keptEl(i):fullEl(i);if(scroll&&e){reveal(e);
e.classList.remove('flash');void e.offsetWidth;e.classList.add('flash');}}
function reveal(e){var n=0,calm=0;(function go(){
var r=e.getBoundingClientRect(),v=docs.getBoundingClientRect();
var off=Math.abs((r.top+r.bottom)/2-(v.top+Math.min(v.bottom,window.innerHeight))/2);
if(off>40&&r.height<v.height){e.scrollIntoView({block:'center'});calm=0;}else calm++;
if(++n<30&&calm<3)requestAnimationFrame(go);})();}
function item(i){var li=document.createElement('li');
var b=add(li,'button',KEPT[i]?'kept':'drop');b.type='button';
b.setAttribute('data-i',String(i));add(b,'span','rk',rk(i));
add(b,'span','dot'+(KEPT[i]?' kept':''));
add(b,'span','sc',num(s2(i)!==null?s2(i):D.s1[i]));
add(b,'span','sn',(D.docs>1?'D'+(docOf(i)+1)+' \u00b7 ':'')+(snippet(i)||D.paths[D.path[i]]));
b.title=status(i);if(i===pinned)b.classList.add('on');return li;}
function fill(reset){if(reset){src=sw.checked?D.order.filter(function(i){return KEPT[i];}):
D.order;list.textContent='';shown=0;}var end=Math.min(src.length,shown+CHUNK);
var f=document.createDocumentFragment();for(var k=shown;k<end;k++)f.appendChild(item(src[k]));
list.appendChild(f);shown=end;var left=src.length-shown;more.hidden=left<=0;
more.textContent='Show '+Math.min(CHUNK,left)+' more ('+left+' left)';
document.getElementById('list-n').textContent=src.length+(sw.checked?' kept':' blocks');}
list.addEventListener('click',function(ev){var b=ev.target.closest('button[data-i]');
if(b)select(+b.getAttribute('data-i'),true);});
more.addEventListener('click',function(){fill(false);});
sw.addEventListener('change',function(){unhot();tip.hidden=true;
document.body.classList.toggle('only-kept',sw.checked);fill(true);});
document.addEventListener('keydown',function(ev){if(ev.key==='Escape'){unselect();clear();}});
if(sw.checked)document.body.classList.add('only-kept');fill(true);
document.body.setAttribute('data-ready','1');
})();
"""
