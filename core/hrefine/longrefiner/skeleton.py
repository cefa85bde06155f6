"""The structuring model's output format: parse it leniently, match it back to the text, and
write it from spans.

The authors' structuring adapter writes a document as
``<abstract>P<br>P</abstract><section: T>P<br>P<sub-section: T2>P</sub-section: T2></section: T>``
where each paragraph ``P`` is either the whole paragraph or its first k=8 tokens, ``...`` and
its last 8 tokens. Real outputs differ: ``<skip>`` or ``<...>`` instead of ``...``, quoted titles
(``<sub-section: "T">``; the official parser accepted only those), ``<subsection: T>``, missing
closing tags, newlines instead of ``<br>``, and output cut off mid-tag. :func:`parse_skeleton`
accepts all of them and notes what it repaired; :func:`match_skeleton` finds each paragraph's
anchors in the text with a forward cursor, ignoring whitespace (anchors that cross a line
break match, text without spaces such as Chinese too), and gives whatever no paragraph
claimed to the nearest section, so no text is ever lost.

:func:`skeleton_from_spans` writes the format from a document's spans (the training targets),
:func:`abbreviate` one paragraph as the model writes it. Reading lives in
:mod:`~hrefine.longrefiner.skeleton_parse`, matching in
:mod:`~hrefine.longrefiner.skeleton_match`, the model's windows in
:mod:`~hrefine.longrefiner.windows`; all are imported from here too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from hrefine.longrefiner._blocks import WS
from hrefine.longrefiner.skeleton_match import MatchReport, match_skeleton
from hrefine.longrefiner.skeleton_parse import Skeleton, SkeletonPart, parse_skeleton
from hrefine.longrefiner.spans import Span
from hrefine.longrefiner.windows import windows

__all__ = [
    "MatchReport",
    "Skeleton",
    "SkeletonPart",
    "abbreviate",
    "match_skeleton",
    "parse_skeleton",
    "skeleton_from_spans",
    "windows",
]


def abbreviate(
    paragraph: str,
    encode: Callable[[str], list[int]],
    decode: Callable[[list[int]], str],
    k: int = 8,
) -> str:
    """A paragraph as the structuring model writes it: whole when it has at most ``2k``
    tokens, else its first ``k`` tokens, ``...`` and its last ``k`` tokens. Line breaks
    become spaces (a line break separates paragraphs in a lenient read).

    Parameters
    ----------
    paragraph:
        The paragraph's text.
    encode, decode:
        The tokenizer: ``str -> list[int]`` and back (a Hugging Face tokenizer's
        ``encode(..., add_special_tokens=False)`` and ``decode``).
    k:
        Tokens kept at each end (the paper's 8).

    Returns
    -------
    str
        The paragraph or its abbreviation.
    """
    ids = encode(paragraph)
    if len(ids) <= 2 * k:
        out = paragraph
    else:
        out = f"{decode(ids[:k]).rstrip()}...{decode(ids[-k:]).lstrip()}"
    return WS.sub(" ", out).strip()


def _tag(level: int) -> str:
    return "sub-" * (level - 1) + "section"


def skeleton_from_spans(
    text: str,
    spans: Sequence[Span],
    encode: Callable[[str], list[int]],
    decode: Callable[[list[int]], str],
    k: int = 8,
) -> str:
    """Write spans in the structuring model's format (its training target).

    Spans with the path ``()`` form the ``<abstract>``; each path level opens a
    ``<section: T>``, ``<sub-section: T>``, and deeper levels ``<sub-sub-section: T>`` (the
    published format has two levels; :func:`parse_skeleton` reads any number). Heading spans
    are left out (their title is in the tag); paragraphs are joined by ``<br>`` and
    abbreviated by :func:`abbreviate`.

    Parameters
    ----------
    text:
        The document.
    spans:
        Its spans (sorted, as a structure source returns them).
    encode, decode, k:
        As for :func:`abbreviate`.

    Returns
    -------
    str
        The skeleton.
    """
    out: list[str] = []
    open_path: tuple[str, ...] = ()
    in_abstract = False
    need_br = False
    for s in spans:
        if s.heading and s.path:
            continue
        path = s.path
        if path != open_path or (not path and not in_abstract):
            if in_abstract and path:
                out.append("</abstract>")
                in_abstract = False
            common = 0
            while common < min(len(path), len(open_path)) and path[common] == open_path[common]:
                common += 1
            for level in range(len(open_path), common, -1):
                out.append(f"</{_tag(level)}: {open_path[level - 1]}>")
            for level in range(common + 1, len(path) + 1):
                out.append(f"<{_tag(level)}: {path[level - 1]}>")
            if not path and not in_abstract:
                out.append("<abstract>")
                in_abstract = True
            open_path = path
            need_br = False
        if need_br:
            out.append("<br>")
        out.append(abbreviate(text[s.start : s.end], encode, decode, k))
        need_br = True
    if in_abstract:
        out.append("</abstract>")
    for level in range(len(open_path), 0, -1):
        out.append(f"</{_tag(level)}: {open_path[level - 1]}>")
    return "".join(out)
