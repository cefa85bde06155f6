"""Exact token counts of a byte-level BPE tokenizer, summed over its pre-token pieces.

A byte-level BPE tokenizer with no normalizer (Llama 3, GPT-4-style ``tokenizer.json`` files)
splits text with one regular expression and then encodes every piece on its own, so a text's
token count is the sum of its pieces' counts. Pages repeat the same pieces (tags, words,
numbers) thousands of times; remembering each piece's count and splitting with the ``regex``
package is about three times faster than encoding (on the benchmark pages the Rust
tokenizer's own splitting was most of its time), and the counts are the same.

Two engines agree on the split only where they classify characters the same: ``regex`` may
know newer Unicode letters than the tokenizer's engine. Texts are taken here only when every
character lies in ranges both engines have classified alike for many Unicode versions
(Latin, Greek, Cyrillic, punctuation, symbols, CJK, kana, hangul); any other text, or one that
may hold an added token (``<|eot_id|>``), is left to the tokenizer.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Sequence
from typing import Any

from hrefine._optional import available

__all__ = ["SAFE_RANGES", "PieceCounts"]

#: Characters whose class (letter, digit, space, other) the tokenizer's regex engine and the
#: ``regex`` package agree on; tests/unit/test_pieces.py checks every one of them.
SAFE_RANGES: tuple[tuple[int, int], ...] = (
    (0x0000, 0x052F),  # Latin, IPA, Greek, Cyrillic
    (0x1E00, 0x1FFF),  # Latin Extended Additional, Greek Extended
    (0x2000, 0x206F),  # General Punctuation
    (0x20A0, 0x20BF),  # currency signs
    (0x2100, 0x214F),  # letterlike symbols
    (0x2190, 0x23FF),  # arrows, mathematical operators, technical
    (0x2500, 0x27BF),  # box drawing, shapes, dingbats
    (0x3000, 0x30FF),  # CJK punctuation, hiragana, katakana
    (0x3400, 0x4DBF),  # CJK Extension A
    (0x4E00, 0x9FFC),  # CJK Unified Ideographs
    (0xAC00, 0xD7A3),  # hangul syllables
    (0xFF00, 0xFFEF),  # half- and full-width forms
)
_UNSAFE = re.compile(
    "[^" + "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in SAFE_RANGES) + "]",
)
# Remembered pieces before the memory is emptied (a piece is a few bytes of text).
_MAX_PIECES = 500_000


class PieceCounts:
    """Token counts of a ``tokenizers.Tokenizer`` through its pieces, for the texts it can take.

    Build it with :meth:`for_tokenizer`, which returns None unless the tokenizer is a
    byte-level BPE with a single splitting pattern, no normalizer and no dropout (where
    counts are the sum of the pieces'). :meth:`count` returns None for a text it leaves to
    the tokenizer.
    """

    def __init__(self, tokenizer: Any, pattern: str, added: Sequence[str]) -> None:
        import regex
        from tokenizers import pre_tokenizers

        self._split = regex.compile(pattern).findall
        self._bytes = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
        self._model = tokenizer.model
        # An added token is matched in the raw text before splitting; a text that may hold one
        # is left to the tokenizer. Their first two characters are enough to tell.
        self._added = sorted({a[:2] for a in added if a})
        self._counts: dict[str, int] = {}
        self._lock = threading.Lock()

    @classmethod
    def for_tokenizer(cls, tokenizer: Any) -> PieceCounts | None:
        """A piece counter for ``tokenizer``, or None when its counts are not piece sums."""
        if not available("regex"):
            return None
        try:  # the parts, not the whole tokenizer.json: serialising the vocabulary took 0.5 s
            if tokenizer.normalizer is not None or type(tokenizer.model).__name__ != "BPE":
                return None
            if tokenizer.model.dropout or tokenizer.truncation or tokenizer.padding:
                return None  # random pieces, or encodings that are not plain counts
            pattern = _split_pattern(json.loads(tokenizer.pre_tokenizer.__getstate__()))
            added = [a.content for a in tokenizer.get_added_tokens_decoder().values()]
        except (AttributeError, TypeError, ValueError):  # not a tokenizers.Tokenizer
            return None
        if pattern is None:
            return None
        try:
            return cls(tokenizer, pattern, added)
        except Exception:  # a pattern the regex package cannot compile: the tokenizer counts
            return None

    def count(self, text: str) -> int | None:
        """Tokens of ``text``, or None when the tokenizer must count it."""
        if not text.isascii() and _UNSAFE.search(text):
            return None
        if any(a in text for a in self._added):
            return None
        pieces = self._split(text)
        if sum(map(len, pieces)) != len(text):  # text between matches is a piece too
            return None
        counts = self._counts
        try:
            return sum(map(counts.__getitem__, pieces))
        except KeyError:
            pass
        with self._lock:
            if len(counts) > _MAX_PIECES:
                counts.clear()
            for piece in set(pieces).difference(counts):
                mapped = self._bytes.pre_tokenize_str(piece)
                counts[piece] = sum(len(self._model.tokenize(m)) for m, _ in mapped)
            return sum(counts[p] for p in pieces)


def _split_pattern(pre: dict[str, Any]) -> str | None:
    """The splitting pattern of a split-then-byte-level pre-tokenizer (its JSON form)."""
    steps = pre.get("pretokenizers") if pre.get("type") == "Sequence" else None
    if not steps or len(steps) != 2:
        return None
    split, byte_level = steps
    if (
        split.get("type") != "Split"
        or split.get("behavior") != "Isolated"
        or split.get("invert")
        or byte_level.get("type") != "ByteLevel"
        or byte_level.get("use_regex", True)
        or byte_level.get("add_prefix_space", False)
    ):
        return None
    pattern = (split.get("pattern") or {}).get("Regex")
    return pattern if isinstance(pattern, str) else None
