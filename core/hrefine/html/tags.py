"""Named sets of HTML tags, each defined once for cleaning, block building, pruning, reports and
the evaluation's plain-text view, and what marks an element hidden (:func:`is_hidden`)."""

from __future__ import annotations

import re
from typing import Any

__all__ = [
    "BLOCK_TAGS",
    "CELL_TAGS",
    "GENERIC_TAGS",
    "GROUP_TAGS",
    "HEADING_LEVELS",
    "HEADING_TAGS",
    "HIDDEN_CLASSES",
    "INLINE_TAGS",
    "JUNK_TAGS",
    "TABLE_SECTION_TAGS",
    "TEXT_UNIT_TAGS",
    "UNSHOWN_TAGS",
    "WRAPPER_TAGS",
    "is_hidden",
]


#: Classes whose elements a page's own stylesheet hides: MediaWiki's sort keys
#: (``<span class="sortkey">Romano, Yossef</span>Yossef Romano``); the text a reader sees never
#: has them, and kept they glue a second spelling onto a cell's name.
HIDDEN_CLASSES = frozenset({"sortkey"})
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.I)


def is_hidden(el: Any) -> bool:
    """Whether the element ``el`` (lxml) is hidden from a reader: the ``hidden`` attribute,
    ``aria-hidden="true"``, an inline ``display: none``/``visibility: hidden``, or a class of
    :data:`HIDDEN_CLASSES`. The cleaner and the evaluation's plain-text view both drop what it
    says is hidden."""
    get = el.get  # el.get reads one attribute without building el.attrib
    if get("hidden") is not None or (get("aria-hidden") or "").lower() == "true":
        return True
    style = get("style")
    if style and _HIDDEN_STYLE.search(style):
        return True
    classes = get("class")
    return bool(classes and not HIDDEN_CLASSES.isdisjoint(classes.split()))


#: Section headings, with their level (1 is the top).
HEADING_LEVELS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
#: Section headings.
HEADING_TAGS = frozenset(HEADING_LEVELS)

#: The document's wrappers: never a block of their own, and not written in a pruned output.
WRAPPER_TAGS = frozenset({"html", "head", "body"})

#: Table cells.
CELL_TAGS = frozenset({"td", "th"})

#: The row groups of a table.
TABLE_SECTION_TAGS = frozenset({"thead", "tbody", "tfoot"})

#: Tags that lay text out in lines; whitespace next to them is layout, not content.
BLOCK_TAGS = frozenset(
    {
        "address", "article", "aside", "blockquote", "body", "caption", "center", "dd", "details",
        "dialog", "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form", "h1",
        "h2", "h3", "h4", "h5", "h6", "head", "header", "hr", "html", "legend", "li", "main",
        "menu", "nav", "ol", "p", "pre", "section", "summary", "table", "tbody", "td", "tfoot",
        "th", "thead", "title", "tr", "ul"
    }
)  # fmt: skip

#: Tags that run inside a line of text.
INLINE_TAGS = frozenset(
    {
        "a", "abbr", "b", "bdi", "bdo", "big", "br", "cite", "code", "del", "dfn", "em", "font",
        "i", "img", "ins", "kbd", "label", "mark", "nobr", "q", "s", "samp", "small", "span",
        "strike", "strong", "sub", "sup", "time", "tt", "u", "var", "wbr"
    }
)  # fmt: skip

#: Containers that say nothing about their content; a single-child wrapper of this kind is merged.
GENERIC_TAGS = frozenset({"div", "section", "span", "font", "center", "nobr", "tbody"})

#: Structures whose parts make most sense together: kept whole when they fit, and scored as a
#: whole as well as part by part.
GROUP_TAGS = frozenset({"table", "ul", "ol", "dl"})

#: Elements that hold one unit of text; a pruner splits one only when it alone exceeds the budget.
TEXT_UNIT_TAGS = frozenset(
    {
        "p", "li", "tr", "dt", "dd", "caption", "figcaption", "blockquote", "pre", "title",
        *CELL_TAGS, *HEADING_TAGS,
    }
)  # fmt: skip

#: Elements the cleaner removes with everything inside them: code, media, forms and invisible
#: metadata.
JUNK_TAGS = frozenset(
    {
        "script", "style", "noscript", "template", "iframe", "frame", "frameset", "object",
        "applet", "canvas", "svg", "audio", "video", "map", "area", "link", "meta", "base", "param",
        "input", "select", "option", "optgroup", "textarea", "button", "datalist", "output",
        "progress", "meter", "dialog"
    }
)  # fmt: skip

#: Elements whose text a reader never sees (the evaluation's plain-text view drops them).
UNSHOWN_TAGS = frozenset(
    {"script", "style", "noscript", "template", "head", "svg", "math", "iframe", "object", "canvas"}
)
