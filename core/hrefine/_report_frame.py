"""The frame every HTML report page shares, written once for every method.

A report is one self-contained, inert page: nothing is loaded from anywhere, and the only code
that runs (if any) is the page's own inline script and stylesheet, which a
Content-Security-Policy allows by their hashes. Every text a page shows (documents, the query,
a model's answers) is escaped. This module holds what the reports of HtmlRAG, RAPTOR, GARLIC
and LongRefiner have in common:

- :func:`page`: the document around a report's body (head, policy, title, style, script);
- :func:`content_policy`: the policy itself;
- :func:`esc` and :func:`esc_text`: escaping for attributes and for element content;
- :data:`PAGE_CSS`, :data:`TABLE_CSS`, :data:`CELL_CSS`, :data:`METER_CSS`: the style rules
  the script-free pages share, and :func:`header`, :func:`meter`, :func:`table`, :func:`ref`,
  :func:`folded`, :func:`opening` and :func:`more`: the pieces they draw alike.

What a page shows stays in its method's package (``<method>/report.py``); this module imports
no method and no result type.
"""

from __future__ import annotations

import base64
import hashlib
import html as html_lib
from collections.abc import Callable, Iterable, Sequence

__all__ = [
    "CELL_CSS",
    "METER_CSS",
    "PAGE_CSS",
    "TABLE_CSS",
    "content_policy",
    "esc",
    "esc_text",
    "first_words",
    "folded",
    "header",
    "meter",
    "more",
    "opening",
    "page",
    "ref",
    "table",
]

#: The top of the script-free pages' stylesheets: page, header band, brand line and question.
PAGE_CSS = """
body{font:15px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1d2733;
background:#f6f8fa}
header{background:#fff;border-bottom:1px solid #e3e7ec;padding:18px 28px}
main{padding:8px 28px 40px;max-width:1200px}
.brand{color:#5b6776;font-size:13px}
h1{font-size:21px;margin:4px 0 6px}
"""
#: Table heads and number cells (after a page's ``table`` and ``th,td`` rules).
CELL_CSS = """th{background:#eef2f5}
td.num{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}
"""
#: Full-width tables with roomy cells, then :data:`CELL_CSS`.
TABLE_CSS = (
    "table{border-collapse:collapse;width:100%;background:#fff;font-size:13.5px}\n"
    "th,td{border:1px solid #e3e7ec;padding:5px 8px;text-align:left;vertical-align:top}\n"
    + CELL_CSS
)
#: The budget meter drawn by :func:`meter`.
METER_CSS = ".bar{display:block;width:420px;max-width:100%;height:12px;margin:8px 0 2px}\n"

_HEAD = (
    '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n'
    '<meta http-equiv="Content-Security-Policy" content="{policy}">\n'
    '<meta name="referrer" content="no-referrer">\n'
    '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
    "<title>{title}</title>\n<style>{style}</style>\n</head>\n<body>\n"
)


# -- escaping ---------------------------------------------------------------------------------
def esc(text: object) -> str:
    """``text`` escaped for element content and double-quoted attribute values."""
    return html_lib.escape(str(text), quote=True)


def esc_text(text: str) -> str:
    """``text`` escaped for an element's content only (quotes left as they are)."""
    return html_lib.escape(text, quote=False)


# -- the document -----------------------------------------------------------------------------
def _hash(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return f"'sha256-{base64.b64encode(digest).decode('ascii')}'"


def content_policy(style: str, script: str | None = None) -> str:
    """A Content-Security-Policy that applies only ``style`` and runs only ``script`` (none
    when None), the page's inline code, by their hashes, and loads nothing from anywhere."""
    scripts = "'none'" if script is None else _hash(script)
    # default-src 'none' already covers media; the scripted page has always named it too.
    media = "" if script is None else "media-src 'none'; "
    return (
        f"default-src 'none'; script-src {scripts}; style-src {_hash(style)}; img-src 'none'; "
        f"font-src 'none'; connect-src 'none'; {media}object-src 'none'; frame-src 'none'; "
        "base-uri 'none'; form-action 'none'"
    )


def page(
    report: str,
    title: str | None,
    style: str,
    body: Iterable[str],
    *,
    script: str | None = None,
    escape: Callable[[str], str] = esc,
) -> str:
    """A complete report page: ``body`` (markup) in the shared head, then ``script``.

    Parameters
    ----------
    report, title:
        The browser tab shows ``"<report>: <title>"``, or ``report`` alone when ``title`` is
        None or empty (escaped here with ``escape``).
    style, script:
        The page's inline stylesheet and script (None: no script); the policy allows exactly
        these.
    body:
        The markup inside ``<body>``, in order.
    escape:
        How the title is escaped: :func:`esc` (default) or :func:`esc_text`.
    """
    head = _HEAD.format(
        policy=content_policy(style, script),
        title=escape(f"{report}: {title}" if title else report),
        style=style,
    )
    tail = "" if script is None else f"<script>{script}</script>\n"
    return head + "".join(body) + tail + "</body></html>\n"


def header(report: str, title: str | None, query: str, facts: Sequence[str], rest: str) -> str:
    """The header band: brand line (``report`` and the page's ``title``), the query as the
    heading, the ``facts`` joined on one line, then ``rest`` (markup)."""
    name = f" · {esc(title)}" if title else ""
    return (
        "<header>\n"
        f'<div class="brand">hrefine · {report}{name}</div>\n'
        f"<h1>{esc(query)}</h1>\n"
        f'<div class="meta">{" · ".join(esc(f) for f in facts)}</div>\n'
        f"{rest}</header>\n"
    )


# -- pieces -----------------------------------------------------------------------------------
def meter(value: int, limit: int, label: str) -> str:
    """A bar of ``value`` out of ``limit`` (a ``<meter>`` draws itself: no style attribute,
    which the page's policy would block)."""
    return (
        f'<meter class="bar" min="0" max="{limit}" value="{min(value, limit)}" '
        f'title="{label}"></meter>\n'
    )


def table(heads: Sequence[str], rows: Iterable[str]) -> str:
    """A table: a row of ``heads`` (markup), then ``rows`` (each a whole ``<tr>`` line)."""
    cells = "".join(f"<th>{h}</th>" for h in heads)
    return f"<table>\n<tr>{cells}</tr>\n" + "".join(rows) + "</table>\n"


def ref(node_id: int, cls: str = "ref", prefix: str = "n") -> str:
    """A link ``#<id>`` to the element whose id is ``prefix`` and the node's id."""
    return f'<a class="{cls}" href="#{prefix}{int(node_id)}">#{int(node_id)}</a>'


def first_words(text: str, n: int) -> tuple[str, bool]:
    """The first ``n`` words of ``text`` (joined by single spaces), and whether it had more."""
    words = text.split()
    return " ".join(words[:n]), len(words) > n


def opening(text: str, n: int) -> str:
    """The first ``n`` words of ``text``, with an ellipsis when there are more (not escaped)."""
    shown, cut = first_words(text, n)
    return shown + (" …" if cut else "")


def folded(text: str, n: int) -> str:
    """``text`` in full, or its first ``n`` words with the rest behind a click (no script)."""
    words, cut = first_words(text, n)
    if not cut:
        return f'<div class="text">{esc(text)}</div>'
    return (
        f'<details><summary>{esc(words)} …</summary><div class="text">{esc(text)}</div></details>'
    )


def more(rest: int, what: str = "") -> str:
    """A note that ``rest`` more items (``what``) are not shown; empty when ``rest`` < 1."""
    if rest <= 0:
        return ""
    return f'<p class="note">and {rest:,} more{" " + what if what else ""}.</p>\n'
