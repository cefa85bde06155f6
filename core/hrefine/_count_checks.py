"""The token counters' checks of what they are given: text (a ``str``), or a collection of
texts for ``count_many``; shared by :mod:`hrefine.budget` and :mod:`hrefine._tiktoken`."""

from __future__ import annotations

from hrefine.errors import InputTypeError

__all__ = ["check_many", "not_text"]


def not_text(value: object, counter: str) -> InputTypeError:
    """The error for a text to count that is not a ``str``, saying what to pass instead
    (raised by each counter's ``count``, never a tokenizer's own TypeError from deep inside)."""
    kind = type(value).__name__
    if isinstance(value, (bytes, bytearray, memoryview)):
        hint = "decode it to str first, e.g. text.decode('utf-8')"
    elif isinstance(value, (list, tuple)):
        hint = "count several texts with count_many()"
    else:
        hint = "pass a str"
    msg = f"token counter {counter!r} counts text (str), got {kind}; {hint}"
    return InputTypeError(msg)


def check_many(texts: object, counter: str) -> None:
    """Refuse a ``count_many`` argument that is one text (whose characters would each be
    counted as a text) or no collection at all; its items are checked as they are counted."""
    if isinstance(texts, (str, bytes, bytearray)) or not hasattr(texts, "__iter__"):
        kind = type(texts).__name__
        msg = (
            f"token counter {counter!r}: count_many() takes a list of texts (str), got {kind}; "
            "count one text with count()"
        )
        raise InputTypeError(msg)
