"""Conservative boilerplate removal (``boilerplate=True`` of
:func:`~hrefine.html.clean.clean_html`): navigation, footers, asides, cookie banners, sidebars
and citation lists, found by tag, ARIA role and class/id words."""

from __future__ import annotations

import functools
import re
from typing import Any, NamedTuple

from hrefine._optional import require
from hrefine.html._load import drop_block

__all__ = ["is_boilerplate", "remove_boilerplate"]

# Boilerplate by tag, ARIA role and class/id word. Matching is by whole word of a class or id
# token split on "-" and "_" ("site-footer" -> footer), plus a few unambiguous substrings.
_BOILER_TAGS = frozenset({"nav", "footer", "aside"})
_BOILER_ROLES = frozenset(
    {
        "navigation", "banner", "contentinfo", "complementary", "search", "menu", "menubar",
        "dialog", "alertdialog"
    }
)  # fmt: skip
_BOILER_WORDS = frozenset(
    [
        "nav",
        "navbar",
        "navbox",
        "navigation",
        "menu",
        "breadcrumb",
        "breadcrumbs",
        "footer",
        "sidebar",
        "cookie",
        "cookies",
        "consent",
        "gdpr",
        "newsletter",
        "subscribe",
        "subscription",
        "advert",
        "advertisement",
        "ads",
        "ad",
        "promo",
        "popup",
        "modal",
        "share",
        "sharing",
        "related",
        "comments",
        "comment",
        "skip",
        "toc",
        "editsection",
        "catlinks",
        "printfooter",
        "noprint",
        "masthead",
        # Citation lists: sources of the article, not its content.
        "reflist",
        "references",
        "refbegin",
    ]
)
_BOILER_SUBSTRINGS = ("cookie", "consent", "gdpr", "sidebar", "navbar", "breadcrumb", "newsletter")
_WORD_SPLIT = re.compile(r"[-_\s]+")
# A candidate holding more than this share of the page's text is never removed.
_MAX_BOILER_SHARE = 0.4
# If the candidates together hold more than this share, the patterns misread the page: keep all.
_MAX_TOTAL_BOILER_SHARE = 0.5
# Elements that carry a class, id or role. Tested by a predicate (kept in document order): an
# attribute step's parents (``descendant::*/@class/..``) are de-duplicated by libxml2 in time
# quadratic in their number (2 s for 2 MB of ``<span class>``). Where order does not matter
# (in hrefine.html.clean), the attributes are selected and their elements read in Python, which
# is as fast as the parent step on ordinary pages; a predicate costs a third more there.
_BOILER_ATTRS = "@class or @id or @role"
_BOILER_TAGGED = " or ".join(f"self::{t}" for t in sorted(_BOILER_TAGS))


class _Queries(NamedTuple):
    """The candidates' XPath queries (``lxml.etree.XPath``), compiled once."""

    boiler: Any  # tagged or attributed elements
    boiler_attrs: Any  # attributed ones only, for pages with none of the tags (most)


@functools.lru_cache(maxsize=1)
def _queries() -> _Queries:
    """The :class:`_Queries`, compiled once."""
    etree = require("lxml.etree", "html")
    return _Queries(
        boiler=etree.XPath(f"descendant::*[{_BOILER_TAGGED} or {_BOILER_ATTRS}]"),
        boiler_attrs=etree.XPath(f"descendant::*[{_BOILER_ATTRS}]"),
    )


def is_boilerplate(tag: str, classes: str | None, id_: str | None, role: str | None) -> bool:
    """Whether an element with this tag, class, id and role is boilerplate."""
    if tag in _BOILER_TAGS:
        return True
    classes = classes or ""
    if tag == "sup" and "reference" in classes:
        return True  # citation markers ("[12]") that only point to the reference list
    if role is not None and role.lower() in _BOILER_ROLES:
        return True
    return _boilerplate_names(f"{classes} {id_ or ''}")


@functools.lru_cache(maxsize=4096)
def _boilerplate_names(names: str) -> bool:
    # Cached: a page repeats a few class names on hundreds of elements.
    names = names.lower()
    if not names.strip():
        return False
    if any(s in names for s in _BOILER_SUBSTRINGS):
        return True
    return any(word in _BOILER_WORDS for word in _WORD_SPLIT.split(names))


def _text_length(el: Any) -> int:
    """Characters of text inside ``el`` (serialised in C: a quarter of joining its text nodes)."""
    etree = require("lxml.etree", "html")
    return len(etree.tostring(el, method="text", encoding="unicode", with_tail=False))


def remove_boilerplate(root: Any) -> None:
    """Remove the boilerplate elements of ``root``'s body, conservatively: one holding more
    than 40% of the page's text stays, and nothing goes when together they hold over half."""
    body = root.find("body")
    if body is None:
        return
    total = _text_length(body)
    if total == 0:
        return
    queries = _queries()
    tagged = next(body.iterdescendants(*_BOILER_TAGS), None) is not None
    query = queries.boiler if tagged else queries.boiler_attrs
    candidates = query(body)
    chosen: list[Any] = []
    verdicts: dict[tuple[str, str | None, str | None, str | None], bool] = {}
    removed = 0
    k = 0
    while k < len(candidates):
        el = candidates[k]
        k += 1
        get = el.get  # one attribute at a time, without building el.attrib
        key = (el.tag, get("class"), get("id"), get("role"))
        boiler = verdicts.get(key)  # a page repeats a few of these on thousands of elements
        if boiler is None:
            boiler = verdicts[key] = is_boilerplate(*key)
        if not boiler:
            continue
        if el.find(".//main") is not None or el.find(".//article") is not None:
            continue
        size = _text_length(el)
        if size > _MAX_BOILER_SHARE * total:
            continue
        chosen.append(el)
        removed += size
        # The candidates inside it come next (document order): the same query run on it
        # counts them, without a proxy for each of its elements.
        k += len(query(el))
    if removed > _MAX_TOTAL_BOILER_SHARE * total:
        return
    for el in chosen:
        drop_block(el)
