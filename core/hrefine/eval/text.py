"""Plain-text helpers shared by the baselines and the metrics: HTML to text, budget fill.

Chunking lives in :mod:`hrefine.chunk`.

Everything here counts tokens with the caller's :class:`~hrefine.budget.TokenCounter`, so baselines
and methods are measured against the same tokenizer.
"""

from __future__ import annotations

import html as html_lib
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from hrefine._optional import require
from hrefine.budget import JOIN_SLACK, TokenCounter, fill
from hrefine.html.tags import BLOCK_TAGS, CELL_TAGS, UNSHOWN_TAGS, is_hidden

__all__ = [
    "SEPARATOR",
    "fill_budget",
    "html_to_text",
    "looks_like_html",
    "text_to_html",
    "truncate_to_tokens",
]

#: Joiner placed between selected chunks.
SEPARATOR = "\n\n"

_TAG_RE = re.compile(r"</?[A-Za-z][A-Za-z0-9_:-]*(?:\s[^<>]*)?/?>|<!--|<!DOCTYPE", re.I)
_SPACES = re.compile(r"[ \t\r\f\v\u00a0]+")
_WORD_PIECE = re.compile(r"\s*\S+")


def looks_like_html(text: str) -> bool:
    """Whether ``text`` holds an HTML-like tag: an opening/closing tag, a comment or a doctype
    in its first 100,000 characters."""
    return _TAG_RE.search(text, 0, 100_000) is not None


def _base_tag(tag: str) -> str:
    # NQ's tokenised HTML merges attributes into tag names (``th_colspan="2"``).
    return tag.lower().split("_", 1)[0]


def html_to_text(markup: str) -> str:
    """Visible text of an HTML page: one line per block, table cells joined by ``" | "``.

    Scripts, styles, the ``<head>`` and hidden elements are dropped; entities are decoded and
    runs of spaces collapsed.

    Parameters
    ----------
    markup:
        HTML (a full page or a fragment; NQ's tokenised HTML works too).

    Returns
    -------
    str
        The text, lines separated by ``"\\n"``; empty when the page shows no text.
    """
    if not markup.strip():
        return ""
    lxml_html = require("lxml.html", "html")
    etree = require("lxml.etree", "html")
    parser = lxml_html.HTMLParser(encoding="utf-8", remove_comments=True, remove_pis=True)
    try:
        root = lxml_html.document_fromstring(markup.encode("utf-8", "replace"), parser=parser)
    except (etree.ParserError, ValueError):
        return ""
    parts: list[str] = []
    walker = etree.iterwalk(root, events=("start", "end"))
    skipped: set[Any] = set()  # the elements themselves: an id() is reused once one is freed
    for event, el in walker:
        tag = el.tag if isinstance(el.tag, str) else ""
        base = _base_tag(tag)
        if event == "start":
            if not tag or base in UNSHOWN_TAGS or is_hidden(el):
                skipped.add(el)
                walker.skip_subtree()
                continue
            if base in CELL_TAGS:  # cells are blocks to the page, one line to this view
                parts.append(" | ")
            elif base in BLOCK_TAGS or base == "br":
                parts.append("\n")
            if el.text:
                parts.append(el.text)
        else:
            if el not in skipped and base in BLOCK_TAGS and base not in CELL_TAGS:
                parts.append("\n")
            if el.tail:
                parts.append(el.tail)
    lines = (_SPACES.sub(" ", line).strip(" |") for line in "".join(parts).split("\n"))
    return "\n".join(line.strip() for line in lines if line.strip())


def text_to_html(text: str) -> str:
    """Wrap plain text as a minimal HTML page, ``<html><body><p>…</p>…</body></html>``: one
    ``<p>`` per paragraph (blank-line separated), the text HTML-escaped."""
    paras = [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]
    body = "".join(f"<p>{html_lib.escape(p)}</p>\n" for p in paras)
    return f"<html><body>\n{body}</body></html>"


def fill_budget(
    texts: Sequence[str],
    scores: Sequence[float] | np.ndarray,
    counter: TokenCounter,
    max_tokens: int,
    *,
    costs: Sequence[int] | None = None,
    order: Sequence[int] | None = None,
    candidates: Sequence[int] | None = None,
    separator: str = SEPARATOR,
) -> str:
    """Join the best-scored texts that fit ``max_tokens``, in document order.

    The measured fill of :func:`hrefine.budget.fill`: texts are chosen by score on their
    counted costs (a smaller lower-ranked text still fills the room left), the joined result is
    counted, and texts are dropped or added until it fits and no text left out would still fit
    (token counts are not exactly additive across joins).

    Parameters
    ----------
    texts:
        Candidate units (chunks).
    scores:
        Relevance of each unit; higher is better.
    counter:
        Token counter that defines the budget.
    max_tokens:
        Budget in tokens of ``counter``; the result never exceeds it.
    costs:
        Precomputed token counts of ``texts`` (counted when omitted).
    order:
        Document position of each unit (default: its index).
    candidates:
        Only these units may be chosen (default: all).
    separator:
        Joiner between units.

    Returns
    -------
    str
        The joined selection; empty when there are no texts.

    Raises
    ------
    hrefine.errors.BudgetTooSmallError
        No unit fits ``max_tokens``.
    """
    if not texts:
        return ""
    cost_list = list(costs) if costs is not None else counter.count_many(list(texts))
    pos = list(range(len(texts))) if order is None else list(order)

    def measure(kept: frozenset[int]) -> tuple[str, int]:
        out = separator.join(texts[i] for i in sorted(kept, key=lambda i: (pos[i], i)))
        return out, counter.count(out)

    done = fill(
        cost_list,
        scores,
        max_tokens,
        measure,
        order=pos,
        candidates=candidates,
        separator_cost=counter.count(separator) if separator else 0,
        slack=JOIN_SLACK,
    )
    return "" if done.output is None else done.output


def truncate_to_tokens(text: str, counter: TokenCounter, max_tokens: int) -> str:
    """Longest prefix of ``text`` that ends at a word boundary and fits ``max_tokens``.

    Word costs are summed to find the cut (BPE tokenizers split at word boundaries, so the sum
    is close), then the real count of the prefix is checked and the cut moved word by word
    until the prefix fits and the next word would not.

    Parameters
    ----------
    text:
        Plain text.
    counter:
        Token counter that defines the budget.
    max_tokens:
        Budget in tokens.

    Returns
    -------
    str
        ``text`` itself when it fits, else its longest fitting word-boundary prefix (possibly
        empty when the first word alone is over budget).
    """
    if max_tokens <= 0 or not text.strip():
        return ""
    if len(text) <= max_tokens and counter.count(text) <= max_tokens:
        return text.strip()
    # Grow a window until its word costs pass the budget (about 4-5 characters per token).
    size = max_tokens * 6
    while True:
        window = text[:size]
        pieces = _WORD_PIECE.findall(window)
        cum = np.cumsum(counter.count_many(pieces)) if pieces else np.zeros(0, dtype=np.int64)
        if size >= len(text) or (len(cum) and cum[-1] > max_tokens + 8):
            break
        size *= 2
    if size >= len(text) and counter.count(text) <= max_tokens:
        return text.strip()
    est = np.concatenate([[0], cum])  # est[n]: summed cost of pieces[:n]
    real: dict[int, int] = {}

    def prefix(n: int) -> str:
        return "".join(pieces[:n]).strip()

    def count(n: int) -> int:
        if n not in real:
            real[n] = counter.count(prefix(n))
        return real[n]

    def last_within(tokens: float) -> int:
        return int(np.searchsorted(est, tokens, side="right")) - 1

    # Shrink: move the cut back by the estimated overshoot until the prefix fits.
    k = last_within(max_tokens)
    while k > 0 and count(k) > max_tokens:
        k = min(k - 1, last_within(est[k] - (count(k) - max_tokens)))
    # Grow: jump by the room left; bisect once a jump overshoots.
    lo = k
    while lo < len(pieces) and count(lo) < max_tokens:
        hi = min(len(pieces), max(lo + 1, last_within(est[lo] + max_tokens - count(lo))))
        if count(hi) <= max_tokens:
            lo = hi
            continue
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if count(mid) <= max_tokens:
                lo = mid
            else:
                hi = mid
        break
    return prefix(lo)
