"""Words, visible text and tag sets shared by cleaning, block building and rendering."""

from __future__ import annotations

import re
from typing import Any

from hrefine._unicode import CJK, CJK_CHAR, CJK_RANGES
from hrefine.html.tags import BLOCK_TAGS

__all__ = [
    "CJK_CHAR",
    "CUT_UNIT",
    "cell_span",
    "count_words",
    "element_text",
    "has_word",
    "normalize_space",
    "shown_text",
]

# Where a text may be cut: after a CJK character (CJK is not space-separated) or after a run of
# other non-space characters.
CUT_UNIT = re.compile(CJK + r"|[^\s" + CJK_RANGES + r"]+")
# A word: one CJK character, or a run of letters and digits.
_WORD = re.compile(CJK + r"|[^\W_]+", re.UNICODE)

# Elements whose end breaks the line.
_LINE_ENDS = BLOCK_TAGS | {"br"}


# ASCII letters and digits kept, every other byte a space: on ASCII text, ``_WORD``'s words are
# what ``bytes.split`` finds after this table (ten times faster than the regex).
_ASCII_WORD_BYTES = bytes(b if chr(b).isalnum() and b < 128 else 32 for b in range(256))
# The same with every byte of a multi-byte UTF-8 character kept (all of them are >= 128).
_UTF8_WORD_BYTES = bytes(b if b >= 128 or chr(b).isalnum() else 32 for b in range(256))


def count_words(text: str) -> int:
    """Number of words in ``text``; every CJK character counts as one word."""
    if not text:
        return 0
    if text.isascii():
        return len(text.encode("ascii").translate(_ASCII_WORD_BYTES).split())
    data = text.encode("utf-8")
    if len(data) > len(text) + (len(text) >> 3):  # mostly another script: the regex is as fast
        return len(_WORD.findall(text))
    # No word spans an ASCII character that is not a letter or digit, so the runs between
    # them (split in bytes, as above, with every byte of a multi-byte character kept) are
    # one word each when ASCII; the regex counts the words of the others, joined. Twice as
    # fast as the regex on Latin-script pages with a few accents or dashes.
    runs = data.translate(_UTF8_WORD_BYTES).split()
    other = [run for run in runs if not run.isascii()]
    return len(runs) - len(other) + len(_WORD.findall(b" ".join(other).decode("utf-8")))


def has_word(text: str | None) -> bool:
    """Whether ``text`` holds a word (stops at the first one)."""
    return text is not None and _WORD.search(text) is not None


def collapse_space(text: str) -> str:
    """Collapse each run of whitespace (``\\s+``) to one space; the ends are kept."""
    # Fast path: a printable string holds no whitespace but the ASCII space (every other
    # whitespace character is a control or separator, which str.isprintable rejects), so
    # without a double space there is nothing to collapse. Most text nodes take it.
    if text.isprintable() and "  " not in text:
        return text
    if text.isspace():  # layout between tags, most of the rest
        return " "
    # str.split() splits on what \s matches (both use Py_UNICODE_ISSPACE), four times as
    # fast as the regex substitution.
    out = " ".join(text.split())
    if text[0].isspace():
        out = " " + out
    if text[-1].isspace():
        out += " "
    return out


def normalize_space(text: str) -> str:
    """Collapse whitespace runs to one space and strip the ends."""
    return " ".join(text.split())


def element_text(el: Any, *, with_tail: bool = False) -> str:
    """Visible text of ``el`` with ``img`` alt text, words kept apart at block boundaries.

    Iterative, so any depth is safe.
    """
    if not with_tail and len(el) == 0 and el.tag != "img" and isinstance(el.tag, str):
        return normalize_space(el.text or "")  # most leaf blocks: no walk needed
    return normalize_space(shown_text(el, with_tail=with_tail))


def shown_text(el: Any, *, with_tail: bool = False) -> str:
    """:func:`element_text` before its white space is collapsed: a space at each block
    boundary and line break, so its first and last characters say whether ``el`` starts or
    ends a line."""
    parts: list[str] = []
    add = parts.append
    # One pass over the elements (a fifth faster than start/end events); an element's end
    # and tail are written when the pass leaves its subtree, told by the next one's parent.
    open_: list[tuple[Any, Any]] = []
    for node in el.iter():
        if open_:
            parent = node.getparent()
            while open_[-1][0] is not parent:
                done, tag = open_.pop()
                if tag in _LINE_ENDS:
                    add(" ")
                tail = done.tail
                if tail:
                    add(tail)
        tag = node.tag
        if tag in BLOCK_TAGS:
            add(" ")
        elif tag == "img":
            add(f" {node.get('alt') or ''} ")
        text = node.text
        if text and isinstance(tag, str):
            add(text)
        open_.append((node, tag))
    while open_:
        done, tag = open_.pop()
        if tag in _LINE_ENDS:
            add(" ")
        tail = done.tail
        if tail and (done is not el or with_tail):
            add(tail)
    return "".join(parts)


def own_text(el: Any) -> str:
    """Text directly under ``el`` (its ``text`` and its children's tails), normalised."""
    parts = [el.text or ""]
    parts.extend(child.tail or "" for child in el)
    return normalize_space(" ".join(parts))


def cell_span(cell: Any, name: str, cap: int) -> int:
    """A cell's ``colspan`` or ``rowspan`` (``name``): 1 when absent or not a number, at most
    ``cap``."""
    try:
        value = int(str(cell.get(name, "1")).strip() or 1)
    except ValueError:
        return 1
    return min(max(value, 1), cap)
