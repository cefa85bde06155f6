"""The one definition of the CJK characters that hrefine treats as words of their own.

Chinese, Japanese and Korean text has no spaces between its words, so token counting, word
counting, BM25 and chunking all take each of these characters as one unit.
"""

from __future__ import annotations

import re

__all__ = ["CJK", "CJK_CHAR", "CJK_RANGES"]

#: Hiragana and katakana, CJK ideographs (extension A, unified, compatibility, extension B) and
#: hangul syllables, as the inside of a regex character class.
CJK_RANGES = (
    "\u3040-\u30ff"  # hiragana, katakana
    "\u3400-\u4dbf"  # ideographs, extension A
    "\u4e00-\u9fff"  # unified ideographs
    "\uf900-\ufaff"  # compatibility ideographs
    "\uac00-\ud7af"  # hangul syllables
    "\U00020000-\U0002a6df"  # ideographs, extension B
)
#: One CJK character, as a regex character class.
CJK = f"[{CJK_RANGES}]"
#: Compiled :data:`CJK`.
CJK_CHAR = re.compile(CJK)
