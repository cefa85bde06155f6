"""Token-aware chunking of plain text on paragraph, line and sentence boundaries.

Every method that starts from flat text cuts it here: RAPTOR's leaves (about 100 tokens, a
sentence that would cross the limit moves whole to the next chunk), LongRefiner's passages and the
chunk baselines of :mod:`hrefine.eval`. Sizes are counted with the caller's
:class:`~hrefine.budget.TokenCounter`, so chunks are measured in the reader's tokens.

Lines are packed greedily into chunks; a chunk closes at a paragraph break (a blank line) once it
is half full. A line longer than the limit is cut at sentence ends, a sentence still too long at
spaces, and a run of CJK text (which has no spaces) between its characters. Nothing is lost:
every chunk knows the span of the input it comes from.
"""

from __future__ import annotations

import re
from itertools import pairwise
from numbers import Integral
from typing import NamedTuple

from hrefine._unicode import CJK, CJK_RANGES
from hrefine.budget import TokenCounter
from hrefine.errors import ConfigError, InputTypeError

__all__ = ["Chunk", "chunk_text", "chunks"]

# Where a sentence ends: after . ! ? ; and whitespace, or after a full-width 。！？； (CJK text
# puts no space after them).
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|(?<=[\u3002\uff01\uff1f\uff1b])\s*")
_WORD = re.compile(r"\S+")
# One CJK character, or a run of other non-space characters.
_CHAR_RUN = re.compile(CJK + r"|[^\s" + CJK_RANGES + r"]+")
# How an over-long piece is cut, coarsest first.
_SENTENCES, _WORDS, _CHARS = 0, 1, 2

# (text, start, end): a piece of the input, ``text`` being ``input[start:end]`` or, for several
# pieces joined, their texts joined.
_Piece = tuple[str, int, int]


class Chunk(NamedTuple):
    """One chunk of :func:`chunks`.

    Attributes
    ----------
    text:
        The chunk: its lines joined by ``"\\n"``; the pieces of a line that had to be cut joined
        by one space (or by nothing, where the input had no space between them).
    """

    text: str
    start: int
    """Offset of the chunk's first character in the input."""
    end: int
    """Offset just past its last character: ``input[start:end]`` is ``text`` up to whitespace
    (blank lines, indentation and runs of spaces are not kept in ``text``).
    """
    tokens: int
    """Token count of ``text`` (the counter's real count, not an estimate)."""


def chunks(
    text: str, counter: TokenCounter, chunk_tokens: int = 128, *, join_short: bool = False
) -> list[Chunk]:
    """Cut plain text into chunks of about ``chunk_tokens`` tokens, in document order.

    Lines are packed greedily; a chunk closes at a paragraph break (blank line) once it holds at
    least half of ``chunk_tokens``. A line longer than ``chunk_tokens`` is cut at sentence ends
    (a sentence that would cross the limit starts the next chunk), a sentence longer than that
    at spaces, and CJK text between its characters. No text is lost.

    Parameters
    ----------
    text:
        Plain text (convert HTML with :func:`hrefine.eval.text.html_to_text` first).
    counter:
        Token counter for chunk sizes.
    chunk_tokens:
        Target chunk size in tokens. A chunk exceeds it only where one word does, by a token
        or two where a tokenizer merges across a line join, or (``join_short``) by a short
        piece joined to its neighbour.
    join_short:
        No chunk shorter than a quarter of ``chunk_tokens``: a short piece (a title or heading
        line left alone before a long paragraph, a closing line) joins the chunk after it (the
        last one: the chunk before it), so every chunk holds real text and a heading is never
        a chunk of its own. RAPTOR's and GARLIC's leaves are cut so.

    Returns
    -------
    list[Chunk]
        The chunks with their spans in ``text`` and token counts; empty when ``text`` holds no
        visible characters.

    Raises
    ------
    hrefine.errors.ConfigError
        ``chunk_tokens`` is below 1.
    hrefine.errors.InputTypeError
        ``text`` is not a string.
    """
    pieces = _pack(text, counter, chunk_tokens)
    counts = counter.count_many([p[0] for p in pieces])
    if join_short:
        pieces, counts = _join_short(pieces, counts, counter, max(1, chunk_tokens // 4))
    return [Chunk(t, s, e, n) for (t, s, e), n in zip(pieces, counts, strict=True)]


def _join_short(
    pieces: list[_Piece], counts: list[int], counter: TokenCounter, least: int
) -> tuple[list[_Piece], list[int]]:
    """``pieces`` with each one under ``least`` tokens joined (by a line break) to the next, or
    the last one to the one before it; the joined pieces are counted again."""
    if len(pieces) < 2 or min(counts) >= least:
        return pieces, counts
    out: list[_Piece] = []
    carry: list[_Piece] = []
    carried = 0
    for piece, cost in zip(pieces, counts, strict=True):
        carry.append(piece)
        carried += cost
        if carried >= least:
            out.append(_join(carry, "\n"))
            carry, carried = [], 0
    if carry:  # a short tail joins the chunk before it
        tail = [out.pop(), *carry] if out else carry
        out.append(_join(tail, "\n"))
    return out, counter.count_many([p[0] for p in out])


def chunk_text(text: str, counter: TokenCounter, chunk_tokens: int = 128) -> list[str]:
    """The texts of :func:`chunks` (same arguments and errors), without counting them again:
    joining them gives back every non-blank line of ``text``."""
    return [p[0] for p in _pack(text, counter, chunk_tokens)]


def _pack(text: str, counter: TokenCounter, limit: int) -> list[_Piece]:
    """Greedy packing of the non-blank lines of ``text`` into pieces of about ``limit`` tokens."""
    if not isinstance(text, str):
        msg = f"text must be a string, got {type(text).__name__}; join or convert it first"
        raise InputTypeError(msg)
    if isinstance(limit, bool) or not isinstance(limit, Integral) or limit < 1:
        msg = f"chunk_tokens must be an integer >= 1, got {limit!r}"
        raise ConfigError(msg)
    # (start, end, starts_paragraph) of every non-blank line, stripped.
    lines: list[tuple[int, int, bool]] = []
    new_para = True
    pos = 0
    for raw in text.split("\n"):
        line = raw.strip()
        if line:
            start = pos + len(raw) - len(raw.lstrip())
            lines.append((start, start + len(line), new_para))
            new_para = False
        else:
            new_para = True
        pos += len(raw) + 1
    if not lines:
        return []
    costs = counter.count_many([text[s:e] for s, e, _ in lines])
    out: list[_Piece] = []
    cur: list[_Piece] = []
    used = 0
    for (start, end, starts_para), cost in zip(lines, costs, strict=True):
        if cost > limit:
            if cur:
                out.append(_join(cur, "\n"))
                cur, used = [], 0
            out.extend(_split_long(text, start, end, counter, limit, _SENTENCES))
            continue
        if cur and (used + cost > limit or (starts_para and used >= limit // 2)):
            out.append(_join(cur, "\n"))
            cur, used = [], 0
        cur.append((text[start:end], start, end))
        used += cost + 1  # the newline joiner
    if cur:
        out.append(_join(cur, "\n"))
    return out


def _cut(text: str, start: int, end: int, level: int) -> list[tuple[int, int]]:
    """Spans of the sentences, words or characters of ``text[start:end]``."""
    piece = text[start:end]
    if level == _SENTENCES:
        spans: list[tuple[int, int]] = []
        prev = 0
        for m in _SENTENCE_END.finditer(piece):
            spans.append((prev, m.start()))
            prev = m.end()
        spans.append((prev, len(piece)))
        found = [(start + s, start + e) for s, e in spans if piece[s:e].strip()]
    else:
        pattern = _WORD if level == _WORDS else _CHAR_RUN
        found = [(start + m.start(), start + m.end()) for m in pattern.finditer(piece)]
    return found


def _split_long(
    text: str, start: int, end: int, counter: TokenCounter, limit: int, level: int
) -> list[_Piece]:
    """Cut the over-long ``text[start:end]`` into pieces of at most ``limit`` tokens.

    At sentence ends first; when it is one sentence, at spaces; when it is one word, between
    CJK characters. A unit still over the limit is cut at the next level, and one that cannot be
    cut (a long non-CJK word) becomes a piece of its own.
    """
    units: list[tuple[int, int]] = []
    while level <= _CHARS:
        units = _cut(text, start, end, level)
        if len(units) > 1:
            break
        level += 1
    else:
        return [(text[start:end], start, end)]
    out: list[_Piece] = []
    cur: list[_Piece] = []
    used = 0
    costs = counter.count_many([text[s:e] for s, e in units])
    for (s, e), cost in zip(units, costs, strict=True):
        if cost > limit and level < _CHARS:
            if cur:
                out.append(_join(cur, " "))
                cur, used = [], 0
            out.extend(_split_long(text, s, e, counter, limit, level + 1))
            continue
        if cur and used + cost > limit:
            out.append(_join(cur, " "))
            cur, used = [], 0
        cur.append((text[s:e], s, e))
        used += cost
    if cur:
        out.append(_join(cur, " "))
    return out


def _join(pieces: list[_Piece], sep: str) -> _Piece:
    """One piece from consecutive ``pieces``: ``sep`` where the input had a gap between two of
    them, nothing where they touch (CJK characters, a sentence after a full-width stop)."""
    parts = [pieces[0][0]]
    for (_, _, prev_end), (txt, s, _) in pairwise(pieces):
        if s > prev_end:
            parts.append(sep)
        parts.append(txt)
    return "".join(parts), pieces[0][1], pieces[-1][2]
