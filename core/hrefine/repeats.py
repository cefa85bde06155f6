"""Sentences, whether a text only repeats text a result returns already, and which inputs of a
call repeat an earlier one.

What RAPTOR and GARLIC both need so that no sentence is returned twice: RAPTOR's retrieval
(:func:`hrefine.raptor.retrieve.pick`) returns of a summary only the sentences its chosen
leaves do not, and GARLIC's budget fit (:func:`hrefine.garlic.visited.fit_to_budget`) leaves
out a summary point whose every sentence a returned chunk holds. Both split text with
:func:`sentences`, the units of an extract. HtmlRAG and LongRefiner read an input that
repeats an earlier one of the same call once (:func:`first_copies`), so a shared budget is
not spent twice on one text.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Sequence

__all__ = ["first_copies", "repeats", "sentences"]

# Sentence ends (after . ! ? ; and whitespace) and line breaks: the units of an extract.
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|\s*\n\s*")


def sentences(text: str) -> list[str]:
    """The sentences of ``text`` as an extract takes them (split after . ! ? ; and at line
    breaks, stripped, empty ones left out)."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


def _squeezed(text: str) -> str:
    return " ".join(text.split())


def repeats(text: str, returned: Sequence[str]) -> bool:
    """Whether every sentence of ``text`` (:func:`sentences`) is held whole by one of the
    ``returned`` texts, runs of whitespace counting as one space; False for a text with no
    sentence."""
    held = [_squeezed(t) for t in returned]
    own = [_squeezed(s) for s in sentences(text)]
    return bool(own) and all(any(s in h for h in held) for s in own)


def first_copies(keys: Sequence[Hashable | None]) -> dict[int, int]:
    """Each position whose key equals an earlier one's -> the first position with that key.

    None is no key: it never repeats and is never repeated (an input with no text).
    """
    first: dict[Hashable, int] = {}
    out: dict[int, int] = {}
    for i, key in enumerate(keys):
        if key is None:
            continue
        if key in first:
            out[i] = first[key]
        else:
            first[key] = i
    return out
