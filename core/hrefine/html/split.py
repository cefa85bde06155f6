"""A cleaned page cut at block boundaries into well-formed HTML pieces of at most N tokens.

An index that embeds HTML pieces needs pieces that a reader (and the pruner later) can parse:
a text splitter that knows nothing of HTML cuts inside tags, attributes and table rows. Here a
page is cleaned as the pruner cleans it, and cut by the pruner's own block rule: an element is
one unit when its HTML fits the piece size, else its children (and its own text) are. Units
are packed in document order; each piece is written with the elements that enclose its units
(a table's rows inside their table), so every piece is whole HTML. A piece that starts inside
a section or a table opens with that context: the headings in force (``<h1>``… ``<h6>``) and
the table's header row, so a piece of rows still says what its columns are.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hrefine._optional import require
from hrefine.budget import MemoCounter, TokenCounter, get_counter
from hrefine.errors import ConfigError
from hrefine.html._text import has_word
from hrefine.html.blocks import serialize_element
from hrefine.html.clean import clean_document, serialize
from hrefine.html.formats import PageInput, as_html, check_input_format, resolve_format
from hrefine.html.tags import HEADING_TAGS, WRAPPER_TAGS

__all__ = ["check_piece_size", "clean_page", "split_page"]

# Context (headings, table header) is left out of a piece when it would take more than this
# share of the piece size.
_CONTEXT_SHARE = 0.5
# The smallest piece size: a few words and their tags.
_MIN_TOKENS = 16


@dataclass
class _Unit:
    """One unit of a piece: an element whole, or a run of text inside ``path[-1]``."""

    path: tuple[Any, ...]  # enclosing elements below <body>, outermost first
    element: Any | None
    text: str | None
    cost: int


def clean_page(
    page: PageInput, *, boilerplate: bool = True, input_format: str = "auto"
) -> tuple[Any, str]:
    """Clean one input as :class:`~hrefine.html.HtmlPruner` does.

    Parameters
    ----------
    page:
        HTML, Markdown or plain text (str or bytes).
    boilerplate:
        Also remove navigation, footers and other boilerplate.
    input_format:
        ``"auto"`` (detected), ``"html"``, ``"markdown"`` or ``"text"``
        (:func:`hrefine.html.formats.to_html`).

    Returns
    -------
    tuple
        The cleaned lxml ``<html>`` element and the format the input was read in.

    Raises
    ------
    EmptyInputError
        The input has no visible text.
    """
    check_input_format(input_format)
    fmt = resolve_format(page, input_format)
    return clean_document(as_html(page, fmt), boilerplate=boilerplate), fmt


def split_page(
    page: str | bytes | Any,
    max_tokens: int,
    *,
    tokenizer: Any = None,
    boilerplate: bool = True,
    input_format: str = "auto",
) -> list[str]:
    """Cut a page into well-formed HTML pieces of at most ``max_tokens`` tokens each.

    Parameters
    ----------
    page:
        HTML, Markdown or plain text (str or bytes), or a cleaned lxml ``<html>`` element.
    max_tokens:
        Largest piece, in tokens of ``tokenizer``; at least 16.
    tokenizer:
        What counts tokens (:func:`hrefine.budget.get_counter`; default: Llama-3.2's).
    boilerplate, input_format:
        How the page is cleaned (see :func:`clean_page`).

    Returns
    -------
    list of str
        The pieces in document order. Together they hold every word of the cleaned page
        (a text too long for one piece is cut between words); the headings and table header
        a piece repeats for context come on top. A piece is over ``max_tokens`` only when a
        single word with its enclosing tags is.

    Raises
    ------
    ConfigError
        ``max_tokens`` is below 16.
    EmptyInputError
        The page has no visible text.

    Examples
    --------
    >>> page = "<h2>Medals</h2><table><tr><th>Nation<th>Gold" + "<tr><td>X<td>1" * 40
    >>> pieces = split_page(page, 64, tokenizer="regex")  # doctest: +SKIP
    >>> pieces[1][:50]  # doctest: +SKIP
    '<h2>Medals</h2><table><tr><th>Nation</th><th>Gold</th></tr>...'
    """
    check_piece_size(max_tokens)
    if isinstance(page, (str, bytes, bytearray, memoryview)):
        root, _ = clean_page(page, boilerplate=boilerplate, input_format=input_format)
    else:
        root = page
    counter = get_counter(tokenizer)
    memo = counter if isinstance(counter, MemoCounter) else MemoCounter(counter)
    return _Splitter(memo, max_tokens).split(root)


class _Splitter:
    """Units of one cleaned page, packed into pieces."""

    def __init__(self, counter: TokenCounter, max_tokens: int) -> None:
        self.counter = counter
        self.max_tokens = max_tokens
        self.tag_costs: dict[tuple[str, tuple[tuple[str, str], ...]], int] = {}
        self.order: dict[Any, int] = {}

    # -- units ---------------------------------------------------------------------------
    def split(self, root: Any) -> list[str]:
        self.order = {el: i for i, el in enumerate(root.iter())}
        units: list[_Unit] = []
        for top in root:
            if not isinstance(top.tag, str):
                continue
            if top.tag in WRAPPER_TAGS:  # <head> (its title) and <body>: their content
                self._text(units, (), top.text)
                for child in top:
                    if isinstance(child.tag, str):
                        self._walk(units, (), child)
                    self._text(units, (), child.tail)
            else:
                self._walk(units, (), top)
            self._text(units, (), top.tail)
        return self._pack(units, _headings_before(units))

    def _walk(self, units: list[_Unit], path: tuple[Any, ...], el: Any) -> None:
        cost = self.counter.count(serialize_element(el))
        children = [c for c in el if isinstance(c.tag, str)]
        fits = cost + self._skeleton_cost(path) <= self.max_tokens  # with its enclosing tags
        if fits or not children:
            if fits or not has_word(el.text):
                units.append(_Unit(path, el, None, cost))
            else:  # one long text: cut between words, each part inside a copy of ``el``
                self._text(units, (*path, el), el.text)
            return
        inner = (*path, el)
        self._text(units, inner, el.text)
        for child in children:
            self._walk(units, inner, child)
            self._text(units, inner, child.tail)

    def _text(self, units: list[_Unit], path: tuple[Any, ...], text: str | None) -> None:
        if not has_word(text):
            return
        assert text is not None
        limit = max(self.max_tokens - self._skeleton_cost(path), 1)
        for part in _cut_words(text, limit, self.counter):
            units.append(_Unit(path, None, part, self.counter.count(part)))

    # -- pieces --------------------------------------------------------------------------
    def _pack(self, units: list[_Unit], headings: list[list[Any]]) -> list[str]:
        pieces: list[str] = []
        i = 0
        while i < len(units):
            context = headings[i]
            end = i + 1
            estimate = self._context_cost(context, units[i]) + self._cost_from(units, i, end)
            while end < len(units):
                more = units[end].cost + self._new_skeleton_cost(units[end - 1], units[end])
                if estimate + more > self.max_tokens:
                    break
                estimate += more
                end += 1
            html = self._render(units[i:end], context)
            # The estimate adds up parts; the written piece is what counts.
            while end > i + 1 and self.counter.count(html) > self.max_tokens:
                end -= 1
                html = self._render(units[i:end], context)
            # Too big with its context: the headings go first, then the table header.
            if self.counter.count(html) > self.max_tokens:
                html = self._render(units[i:end], [])
            if self.counter.count(html) > self.max_tokens:
                html = self._render(units[i:end], [], header=False)
            pieces.append(html)
            i = end
        return pieces

    def _render(self, units: Sequence[_Unit], headings: list[Any], *, header: bool = True) -> str:
        etree = require("lxml.etree", "html")
        body = etree.Element("body")
        if headings and self._headings_cost(headings) <= self.max_tokens * _CONTEXT_SHARE:
            for h in headings:
                body.append(_bare_copy(h, deep=True))
        copies: dict[Any, Any] = {}
        members = {u.element for u in units if u.element is not None}
        for unit in units:
            parent = body
            for anc in unit.path:
                made = copies.get(anc)
                if made is None:
                    made = _bare_copy(anc)
                    parent.append(made)
                    copies[anc] = made
                    if anc.tag == "table" and header:
                        self._add_header(made, anc, unit, members)
                parent = made
            if unit.element is not None:
                parent.append(_bare_copy(unit.element, deep=True))
            else:
                _append_text(parent, unit.text or "")
        out = [body.text or ""] if body.text else []
        out.extend(serialize(child, with_tail=True) for child in body)
        return "".join(out)

    def _header_for(self, table: Any, unit: _Unit) -> Any | None:
        """``table``'s header row, when a piece whose first unit in the table is ``unit``
        starts past it (else the piece, or the one before, holds it)."""
        row = _header_row(table)
        anchor = unit.element if unit.element is not None else unit.path[-1]
        if row is None or self.order.get(anchor, -1) <= self.order.get(row, -1):
            return None
        return row

    def _add_header(self, table_copy: Any, table: Any, unit: _Unit, members: set[Any]) -> None:
        """Put ``table``'s header row first in its copy when the piece starts past it and does
        not hold it (``members``: the elements the piece holds whole)."""
        row = self._header_for(table, unit)
        if row is None or row in members or any(a in members for a in row.iterancestors()):
            return
        if self.counter.count(serialize_element(row)) > self.max_tokens * _CONTEXT_SHARE:
            return
        parent = row.getparent()
        target = table_copy
        if parent is not None and parent.tag == "thead":
            target = _bare_copy(parent)
            table_copy.append(target)
        target.append(_bare_copy(row, deep=True))

    # -- costs ---------------------------------------------------------------------------
    def _tag_cost(self, el: Any) -> int:
        key = (el.tag, tuple(sorted(el.attrib.items())))
        cost = self.tag_costs.get(key)
        if cost is None:
            cost = self.counter.count(serialize_element(_bare_copy(el)))
            self.tag_costs[key] = cost
        return cost

    def _skeleton_cost(self, path: Sequence[Any]) -> int:
        return sum(self._tag_cost(a) for a in path)

    def _new_skeleton_cost(self, before: _Unit, unit: _Unit) -> int:
        shared = 0
        for a, b in zip(before.path, unit.path, strict=False):
            if a is not b:
                break
            shared += 1
        return self._skeleton_cost(unit.path[shared:])

    def _cost_from(self, units: Sequence[_Unit], i: int, end: int) -> int:
        cost = self._skeleton_cost(units[i].path) + units[i].cost
        for k in range(i + 1, end):
            cost += units[k].cost + self._new_skeleton_cost(units[k - 1], units[k])
        return cost

    def _headings_cost(self, headings: list[Any]) -> int:
        return sum(self.counter.count(serialize_element(h)) for h in headings)

    def _context_cost(self, headings: list[Any], first: _Unit) -> int:
        cost = self._headings_cost(headings) if headings else 0
        cost = cost if cost <= self.max_tokens * _CONTEXT_SHARE else 0
        for anc in first.path:
            if anc.tag == "table":
                row = self._header_for(anc, first)
                if row is not None:
                    row_cost = self.counter.count(serialize_element(row))
                    cost += row_cost if row_cost <= self.max_tokens * _CONTEXT_SHARE else 0
        return cost


def _headings_before(units: Sequence[_Unit]) -> list[list[Any]]:
    """For each unit, the headings in force where it starts (outermost first)."""
    stack: list[tuple[int, Any]] = []
    out: list[list[Any]] = []
    for unit in units:
        out.append([h for _, h in stack])
        if unit.element is None:
            continue
        for h in unit.element.iter(*HEADING_TAGS):
            level = int(h.tag[1])
            while stack and stack[-1][0] >= level:
                stack.pop()
            if has_word("".join(h.itertext())):
                stack.append((level, h))
    return out


def _header_row(table: Any) -> Any | None:
    """The table's header row: the row of its ``<thead>``, or its first row when that holds
    only ``<th>`` cells."""
    for row in table.iter("tr"):
        if row.getparent() is not None and row.getparent().tag == "thead":
            return row
        cells = [c for c in row if isinstance(c.tag, str)]
        if cells and all(c.tag == "th" for c in cells):
            return row
        return None
    return None


def _bare_copy(el: Any, *, deep: bool = False) -> Any:
    """A copy of ``el`` without its tail (with its content when ``deep``)."""
    if deep:
        made = copy.deepcopy(el)
        made.tail = None
        return made
    etree = require("lxml.etree", "html")
    try:
        return etree.Element(el.tag, dict(el.attrib))
    except ValueError:  # a name the HTML parser took but lxml will not make (``td_colspan="6"``)
        made = copy.deepcopy(el)
        made.text = made.tail = None
        for child in list(made):
            made.remove(child)
        return made


def _append_text(parent: Any, text: str) -> None:
    """Add ``text`` at the end of ``parent``'s content (a space apart from text before it)."""
    children = list(parent)
    if children:
        last = children[-1]
        last.tail = f"{last.tail} {text}" if last.tail else text
    else:
        parent.text = f"{parent.text} {text}" if parent.text else text


def _cut_words(text: str, limit: int, counter: TokenCounter) -> list[str]:
    """``text`` in runs of whole words of at most ``limit`` tokens each (a single longer word
    is a run of its own)."""
    words = text.split()
    if not words:
        return []
    whole = " ".join(words)
    if counter.count(whole) <= limit:
        return [whole]
    parts: list[str] = []
    start = 0
    per_word = max(counter.count(whole) / len(words), 1e-6)
    while start < len(words):
        size = max(1, int(limit / per_word))
        part = " ".join(words[start : start + size])
        while size > 1 and counter.count(part) > limit:
            size = max(1, size * 3 // 4)
            part = " ".join(words[start : start + size])
        parts.append(part)
        start += size
    return parts


def check_piece_size(max_tokens: Any) -> None:
    """Raise :class:`~hrefine.errors.ConfigError` unless ``max_tokens`` is a piece size
    :func:`split_page` takes (an int of at least 16)."""
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < _MIN_TOKENS:
        msg = f"the piece size must be an int of at least {_MIN_TOKENS} tokens, got {max_tokens!r}"
        raise ConfigError(msg)
