"""Named sets of HTML tags, each defined once for cleaning, block building, pruning and reports."""

from __future__ import annotations

__all__ = ["GROUP_TAGS", "HEADING_TAGS", "TEXT_UNIT_TAGS"]

#: Section headings.
HEADING_TAGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})

#: Structures whose parts make most sense together: kept whole when they fit, and scored as a
#: whole as well as part by part.
GROUP_TAGS = frozenset({"table", "ul", "ol", "dl"})

#: Elements that hold one unit of text; a pruner splits one only when it alone exceeds the budget.
TEXT_UNIT_TAGS = frozenset(
    {
        "p",
        "li",
        "tr",
        "td",
        "th",
        "dt",
        "dd",
        *HEADING_TAGS,
        "caption",
        "figcaption",
        "blockquote",
        "pre",
        "title",
    }
)
