"""The block tree the pruner scores, with each block's token cost: built as either stage of
:class:`~hrefine.html.prune.HtmlPruner` builds it (see
:meth:`~hrefine.html.prune.HtmlPruner.block_forest`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hrefine.budget import TokenCounter
from hrefine.html.blocks import BlockForest, build_forest, serialize_element
from hrefine.html.columns import is_record_table
from hrefine.html.render import omit_end_tags as drop_end_tags
from hrefine.html.scoring import containers
from hrefine.html.tags import TABLE_SECTION_TAGS, TEXT_UNIT_TAGS

__all__ = ["BLOCK_SHARE", "MIN_SPLIT_TOKENS", "costed_forest", "split_limit"]

#: A block whose HTML would take more than this share of the budget is split into its children.
BLOCK_SHARE = 0.25
#: ... but a block of fewer tokens than this never is.
MIN_SPLIT_TOKENS = 64


def split_limit(budget: int) -> int:
    """Tokens over which a block (not a row, item or paragraph) is split for ``budget``."""
    return max(int(budget * BLOCK_SHARE), MIN_SPLIT_TOKENS)


def costed_forest(
    roots: Sequence[Any],
    doc_ids: Sequence[int],
    max_words: int,
    budget: int,
    counter: TokenCounter,
    *,
    omit_end_tags: bool,
    record_tables: bool,
) -> tuple[BlockForest, dict[int, int], dict[int, int]]:
    """The block forest of ``roots``, each block's token cost and each whole group's cost.

    Parameters and return value as :meth:`~hrefine.html.prune.HtmlPruner.block_forest`, with
    the pruner's ``counter``, ``omit_end_tags`` and ``record_tables`` given.
    """
    limit = split_limit(budget)
    counted: dict[str, int] = {}
    compact = drop_end_tags if omit_end_tags else _same

    def too_big(tag: str, block_html: str) -> bool:
        block_html = compact(block_html)
        counted[block_html] = n = counter.count(block_html)
        # A row, item or paragraph is split only if it cannot fit at all: its pieces would
        # read badly and each would be scored without the rest.
        return n > (budget if tag in TEXT_UNIT_TAGS else limit)

    split = _in_record_table if record_tables else None
    forest = build_forest(roots, max_words=max_words, too_big=too_big, doc_ids=doc_ids, split=split)
    forest.tree.metadata["omit_end_tags"] = omit_end_tags
    ids = forest.block_ids()
    nodes = forest.tree.nodes
    for i in ids:
        meta = nodes[i].metadata
        if meta["is_leaf"]:
            meta["html"] = compact(meta["html"])
    htmls = [nodes[i].metadata["html"] for i in ids]
    missing = [h for h in htmls if h not in counted]
    counted.update(zip(missing, counter.count_many(missing), strict=True))
    costs = {i: counted[h] for i, h in zip(ids, htmls, strict=True)}
    # Expanded tables and lists may still be kept whole when they fit (see fill).
    groups: dict[int, int] = {}
    for g in containers(forest):
        if split is not None and is_record_table(forest.elements[g]):
            # A record's rows are kept on their own merits, never the whole table for
            # the score of what it describes (see record_tables).
            nodes[g].metadata["record"] = True
            continue
        whole = compact(serialize_element(forest.elements[g]))
        cost = counted.get(whole)
        if cost is None:
            cost = counter.count(whole)
        if cost <= budget:
            groups[g] = cost
    return forest, costs, groups


def _same(html: str) -> str:
    return html


def _in_record_table(el: Any) -> bool:
    """A record table (:func:`~hrefine.html.columns.is_record_table`) or a section of one:
    split into its rows, see ``record_tables``."""
    if el.tag in TABLE_SECTION_TAGS:
        el = el.getparent()
    return el is not None and is_record_table(el)
