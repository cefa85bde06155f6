"""Unwrapping many inline wrappers of one element in time linear in them.

``lxml.etree.strip_tags`` leaves the text of each unwrapped element as a text node of its own,
and lxml reads a run of adjacent text nodes (``el.text``) in time quadratic in its length:
4 MB of ``<span>`` in one ``<div>`` took 0.7 s to read once. The elements with many wrappers to
unwrap are unwrapped here first, each run of text they leave written as one string.
"""

from __future__ import annotations

import functools
import itertools
from typing import Any

from hrefine._optional import require

__all__ = ["crowded", "crowded_query", "unwrap_leaves"]

# An element with more children to unwrap than this is unwrapped here.
_MAX_TEXT_RUN = 64


def crowded(root: Any, unwrap: tuple[str, ...]) -> list[Any]:
    """Elements under ``root`` with more than ``_MAX_TEXT_RUN`` children to unwrap.

    The query reads every element's children; a page with no more elements to unwrap than
    that in all (lxml's tag filter finds none at once when the page never names the tags)
    cannot have one, and skips it: a quarter of cleaning 100,000 paragraphs.
    """
    few = sum(1 for _ in itertools.islice(root.iter(*unwrap), _MAX_TEXT_RUN + 1))
    if few <= _MAX_TEXT_RUN:
        return []
    return list(crowded_query(unwrap)(root))


@functools.lru_cache(maxsize=4)
def crowded_query(unwrap: tuple[str, ...]) -> Any:
    """Elements with more than ``_MAX_TEXT_RUN`` children to unwrap."""
    etree = require("lxml.etree", "html")
    test = " or ".join(f"self::{tag}" for tag in unwrap)
    # (An element with that many children first: counting the tags of every element's
    # children costs more than parsing the page.)
    return etree.XPath(
        f"descendant-or-self::*[*[{_MAX_TEXT_RUN + 1}]][count(*[{test}]) > {_MAX_TEXT_RUN}]"
    )


def unwrap_leaves(el: Any, unwrap: frozenset[str]) -> None:
    """Unwrap the children of ``el`` that ``unwrap`` names and that hold no element, joining
    each run of text they leave into one string.

    ``strip_tags`` leaves each unwrapped text as a text node of its own, and lxml reads a run
    of adjacent text nodes in time quadratic in its length (0.7 s for the text of 4 MB of
    ``<span>``); here each text node is read once and each run written once.
    """
    run = [el.text or ""]
    anchor = None  # the element whose tail the run is (None: el's text)
    for child in list(el):
        if child.tag in unwrap and len(child) == 0:
            run += (child.text or "", child.tail or "")
            el.remove(child)  # (its tail goes with it: it is in the run)
            continue
        _set_run(el, anchor, run)
        anchor = child
        run = [child.tail or ""]
    _set_run(el, anchor, run)


def _set_run(el: Any, anchor: Any, run: list[str]) -> None:
    text = "".join(run) or None
    if anchor is None:
        el.text = text
    else:
        anchor.tail = text
