"""Where a gold answer is written: the units of a text that contain it, matched as words."""

from __future__ import annotations

import re
from collections.abc import Sequence

from hrefine._question_words import QUESTION_STOP_WORDS

__all__ = ["contains_answers", "norm", "question_overlap"]

_WS = re.compile(r"\s+")
_WORD = re.compile(r"\w+")
# Question words that say nothing about where the answer is.
_STOP = QUESTION_STOP_WORDS | {"been", "many", "much", "no", "not", "than", "these", "those", "yes"}


def norm(text: str) -> str:
    """Lower case, whitespace collapsed."""
    return _WS.sub(" ", text).strip().casefold()


def _has(text: str, answer: str) -> bool:
    a = norm(answer)
    if not a:
        return False
    # Word boundaries: the answer "2" is not found inside "2011".
    return re.search(rf"(?<!\w){re.escape(a)}(?!\w)", text) is not None


def contains_answers(text: str, answers: Sequence[str], *, mode: str) -> bool:
    """Whether ``text`` contains the answers as whole words: every one (``mode="all"``) or at
    least one (``"any"``), ignoring case and whitespace."""
    t = norm(text)
    found = [_has(t, a) for a in answers if a.strip()]
    if not found:
        return False
    return all(found) if mode == "all" else any(found)


def question_overlap(question: str, text: str) -> int:
    """How many distinct content words of ``question`` occur in ``text``."""
    words = {w for w in _WORD.findall(norm(question)) if w not in _STOP}
    have = set(_WORD.findall(norm(text)))
    return len(words & have)
