"""Text every encoder takes: lone surrogates replaced with U+FFFD.

A Python ``str`` may hold surrogate code points (U+D800-U+DFFF) on their own: JSON's
``"\\ud800"``, ``os.fsdecode`` of undecodable bytes, text cut between the two halves of a pair.
UTF-8 cannot encode them, so a tokenizer refuses them (``TextEncodeInput must be Union[...]``),
``write_text`` stops half way and a hosted model's client fails to send them. They are the only
code points a ``str`` holds that UTF-8 cannot encode, so replacing them makes any text
encodable. A pair written as two surrogates becomes the one character it stands for, as a
UTF-16 decoder would read it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["REPLACEMENT", "encodable", "encodable_all"]

#: What a code point that cannot be encoded becomes.
REPLACEMENT = "\ufffd"
_SURROGATE = re.compile("[\ud800-\udfff]")


def encodable(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD (the same object when it has none).

    Parameters
    ----------
    text:
        Any string.

    Returns
    -------
    str
        A string UTF-8 encodes with strict errors. Surrogate pairs held as two code points are
        joined into the character they stand for.
    """
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    # UTF-16 with surrogatepass writes each surrogate as its own code unit; decoding joins
    # the units that pair up and replaces the rest.
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def encodable_all(texts: Sequence[str]) -> list[str]:
    """:func:`encodable` of each text, in order."""
    return [encodable(t) for t in texts]
