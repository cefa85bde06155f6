"""Paragraph splitting: a paragraph too big for its share of the budget becomes several.

A paragraph is one block, kept or dropped whole. When it takes more than a share of the
budget, the greedy fill skips it as soon as a few better blocks are in, however well it
scores: at 512 tokens, a 300-token paragraph holding the answer lost to the smaller blocks
ranked around it. Split at sentence ends (CJK ones too) into pieces of about equal length,
each its own ``<p>`` (the paragraph's tag and attributes), the part that answers can be kept
without the rest. Inline children (links, emphasis) stay whole inside their piece; a
paragraph holding a block element (a list, a table) or with no sentence end to cut at is left
as it is.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from itertools import accumulate
from typing import Any

from hrefine.errors import ConfigError
from hrefine.html._text import CJK_CHAR
from hrefine.html.tags import HEADING_TAGS

__all__ = ["split_element", "split_long_paragraphs"]

# Elements that are split, and those inside which a paragraph is not touched.
_SPLIT_TAGS = ("p",)
# Containers whose text, when they hold no block, is cut into paragraphs inside them: plain
# text (which the cleaner leaves in <body>) and text laid out with <br> in a <div>. Cells,
# list items and headings are not: their pieces would read as more cells, items or headings.
_CONTAINER_TAGS = ("body", "div", "section", "article", "main", "blockquote", "center")
_BLOCK_INSIDE = frozenset(
    {"table", "ul", "ol", "dl", "div", "p", "blockquote", "pre", "section", "figure"} | HEADING_TAGS
)
# A sentence ends with . ! or ? (closing quotes and brackets allowed) before white space, or
# with a full stop, ! or ? of CJK text (。！？, then closing marks), which no space need follow.
_SENTENCE_END = re.compile(
    r"(?<=[.!?])[\"')\]\u201d\u2019]*\s+"
    r"|(?<=[\u3002\uff01\uff1f])[\u300d\u300f\u201d\u2019\uff09]*\s*"
)


def split_long_paragraphs(
    roots: Sequence[Any],
    limit: int,
    *,
    count_many: Callable[[Sequence[str]], list[int]],
    serialize: Callable[[Any], str],
    before_change: Callable[[], None] | None = None,
) -> dict[Any, Any]:
    """Split, in place, each paragraph of ``roots`` over ``limit`` tokens at sentence ends.

    A paragraph of ``n`` tokens becomes ``ceil(n / limit)`` pieces (fewer when it has fewer
    sentence ends), cut at the sentence ends nearest to equal shares of its words. Its text
    is kept to the character, but for the white space at the cuts.

    Parameters
    ----------
    roots:
        Cleaned documents.
    limit:
        Largest size, in tokens, of a paragraph left whole.
    count_many:
        Tokens of each of several HTML strings, as the budget counts them.
    serialize:
        An element's HTML as the budget sees it (without its tail).
    before_change:
        Called once before the first paragraph is split.

    Returns
    -------
    dict
        Each new piece element → the paragraph element it came from (empty when nothing was
        split), so that reports can point to the paragraph in the unsplit document.
    """
    if limit < 1:
        msg = f"limit must be >= 1, got {limit}"
        raise ConfigError(msg)
    big: list[tuple[Any, str]] = []
    for root in roots:
        for el in root.iter(*_SPLIT_TAGS, *_CONTAINER_TAGS):
            if _holds_blocks(el):
                continue
            html = serialize(el)
            # A token covers at least one byte: a paragraph of no more bytes fits the limit.
            if len(html.encode("utf-8")) > limit:
                big.append((el, html))
    if not big:
        return {}
    origin: dict[Any, Any] = {}
    changed = False
    for (el, _), tokens in zip(big, count_many([h for _, h in big]), strict=True):
        if tokens <= limit or el.getparent() is None:
            continue
        plan = _plan(el, math.ceil(tokens / limit))
        if plan is None:
            continue
        if not changed and before_change is not None:
            before_change()
        changed = True
        for piece in _cut(el, plan):
            origin[piece] = el
    return origin


def split_element(el: Any, count: int) -> list[Any] | None:
    """Cut paragraph ``el`` at sentence ends into about ``count`` pieces of equal length, in
    place: the pieces replace it (a container keeps its place and holds them, as ``<p>``).

    Returns the pieces, or None when it cannot be cut (``el`` is then left as it was).
    """
    plan = _plan(el, count)
    if plan is None or el.getparent() is None:
        return None
    return _cut(el, plan)


def _cut(el: Any, plan: list[list[_Atom]]) -> list[Any]:
    """Apply ``plan`` (of :func:`_plan`) to ``el``, which has a parent."""
    if el.tag in _SPLIT_TAGS:
        return _apply(el, plan)
    # The plan names the container's children and texts, which move unchanged into one <p>.
    inner = el.makeelement("p", {})
    inner.text, el.text = el.text, None
    for child in list(el):
        inner.append(child)  # with its tail
    el.append(inner)
    return _apply(inner, plan)


def _holds_blocks(el: Any) -> bool:
    return any(isinstance(d.tag, str) and d.tag in _BLOCK_INSIDE for d in el.iterdescendants())


# An atom is a stretch of text or an inline child (without its tail); a cut may follow a
# text atom that ends a sentence.
_Atom = tuple[str | None, Any, bool]  # (text or None, child or None, a sentence ends here)


def _atoms(el: Any) -> list[_Atom]:
    atoms: list[_Atom] = []

    def text(t: str | None) -> None:
        if not t:
            return
        start = 0
        for m in _SENTENCE_END.finditer(t):
            atoms.append((t[start : m.end()], None, True))
            start = m.end()
        if start < len(t):
            atoms.append((t[start:], None, False))

    text(el.text)
    for child in el:
        atoms.append((None, child, False))
        text(child.tail)
    return atoms


def _words(atom: _Atom) -> int:
    t, child, _ = atom
    if child is not None:
        return _count(" ".join(child.itertext())) if isinstance(child.tag, str) else 0
    return _count(t or "")


def _count(text: str) -> int:
    """Words as white space separates them, plus one per CJK character (unspaced)."""
    return len(text.split()) + len(CJK_CHAR.findall(text))


def _plan(el: Any, pieces: int) -> list[list[_Atom]] | None:
    """The paragraph's atoms in ``pieces`` groups (or fewer), None when it cannot be cut."""
    atoms = _atoms(el)
    cuts_at = [k for k, a in enumerate(atoms[:-1]) if a[2]]  # cut after atom k
    if pieces < 2 or not cuts_at:
        return None
    running = list(accumulate(_words(a) for a in atoms))  # words up to and including atom k
    total = running[-1]
    chosen: list[int] = []
    for j in range(1, pieces):
        target = total * j / pieces
        best = min(cuts_at, key=lambda k: (abs(running[k] - target), k))
        if (not chosen or best > chosen[-1]) and 0 < running[best] < total:
            chosen.append(best)
    ends = [*chosen, len(atoms) - 1]
    if len(ends) < 2:
        return None
    groups: list[list[_Atom]] = []
    start = 0
    for end in ends:
        groups.append(atoms[start : end + 1])
        start = end + 1
    return groups


def _apply(el: Any, groups: list[list[_Atom]]) -> list[Any]:
    """Replace ``el`` by one element per group; returns the new elements."""
    parent = el.getparent()
    tail = el.tail
    attrib = {k: v for k, v in el.attrib.items() if k != "id"}  # an id must stay unique
    made: list[Any] = []
    for n, group in enumerate(groups):
        piece = el.makeelement(el.tag, attrib)
        if n == 0 and "id" in el.attrib:
            piece.set("id", el.get("id"))
        last: Any = None
        lead: list[str] = []
        after: list[str] = []
        for t, child, _ in group:
            if child is not None:
                piece.append(child)  # moves it (with its tail, reset below)
                child.tail = None
                if last is not None:
                    last.tail = "".join(after) or None
                last, after = child, []
            elif last is None:
                lead.append(t or "")
            else:
                after.append(t or "")
        piece.text = "".join(lead).lstrip() or None
        if last is not None:
            last.tail = "".join(after).rstrip() or None
        elif piece.text:
            piece.text = piece.text.rstrip() or None
        made.append(piece)
    made[-1].tail = tail
    at = parent.index(el)
    parent.remove(el)
    for k, piece in enumerate(made):
        parent.insert(at + k, piece)
    return made
