"""The function words of an English question: they say nothing about where its answer is.

GARLIC's no-model stand-in ignores them when it judges whether the visited text answers the
question, and the training labels ignore them when they measure how much of a question a
paragraph repeats; each adds the few words its own rule needs.
"""

from __future__ import annotations

__all__ = ["QUESTION_STOP_WORDS"]

# A word string, not a list literal: 39 words read better as text than one per line.
QUESTION_STOP_WORDS = frozenset(
    """
    a an and are as at be by did do does for from had has have how in is it its of on or that
    the this to was were what when where which who whom whose why with
    """.split()  # noqa: SIM905
)
