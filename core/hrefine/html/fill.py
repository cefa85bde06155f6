"""Fill a token budget with the best blocks, measured on the real rendered output.

Shared by both pruning stages. The blocks, and the groups that may be kept whole (a table, a
list), go to the measured fill of :func:`hrefine.budget.fill`, which counts the rendered HTML with
the budget tokenizer, because ancestor tags and BPE merges make the sum of block costs inexact.
The result never exceeds the budget and leaves no room that the next-best block would fit into.
This module adds what is HTML's own: the units, the rendering, a heading kept only with text of
its section, and the fallback of a cut block when no block fits at all.
"""

from __future__ import annotations

import html as html_lib
import logging
from collections.abc import Mapping, Sequence

import numpy as np

from hrefine.budget import JOIN_SLACK, OVER_BUDGET, TokenCounter
from hrefine.budget import fill as budget_fill
from hrefine.errors import BudgetTooSmallError
from hrefine.html._text import CUT_UNIT
from hrefine.html.blocks import BlockForest
from hrefine.html.render import Renderer
from hrefine.html.result import HEADING_ALONE, TRUNCATED, BlockReport
from hrefine.html.tags import HEADING_LEVELS
from hrefine.tree import Tree

__all__ = ["Fit", "fill", "heading_sections", "inherit_scores", "reports"]

logger = logging.getLogger(__name__)


class Fit:
    """Outcome of :func:`fill`: the kept node ids and the rendered, counted output; ``alone``
    holds the headings left out because none of their section's text was kept with them."""

    def __init__(
        self,
        kept: set[int],
        documents: list[str],
        tokens: int,
        renders: int,
        *,
        truncated: bool = False,
        alone: frozenset[int] = frozenset(),
    ) -> None:
        self.kept = kept
        self.documents = documents
        self.html = "\n".join(d for d in documents if d)
        self.tokens = tokens
        self.renders = renders
        self.truncated = truncated
        self.alone = alone


class _Units:
    """What the fill chooses among: every block, plus whole groups (a table or list kept as one).

    A group's cost is its whole HTML, its score the best of its own score (the group scored as
    a whole, when given) and the scores of the blocks inside it; its members are the blocks
    inside it. When a group does not fit, :func:`~hrefine.budget.select` replaces it by the
    units right below it.
    """

    def __init__(
        self,
        forest: BlockForest,
        ids: Sequence[int],
        costs: Mapping[int, int],
        scores: np.ndarray,
        groups: Mapping[int, int],
        group_scores: Mapping[int, float] | None = None,
        skip: frozenset[int] = frozenset(),
    ) -> None:
        tree = forest.tree
        n = len(ids)
        local = {nid: j for j, nid in enumerate(ids)}
        group_unit = {g: n + k for k, g in enumerate(sorted(groups))}
        self.members: list[frozenset[int]] = [frozenset({j}) for j in range(n)]
        self.cost: list[int] = [costs[nid] for nid in ids]
        self.score: list[float] = [float(x) for x in scores]
        self.order: list[int] = [tree.nodes[nid].order for nid in ids]
        self.children: dict[int, list[int]] = {}
        for g in group_unit:
            inside = [local[d] for d in [g, *tree.descendants(g)] if d in local]
            self.members.append(frozenset(inside))
            self.cost.append(groups[g])
            own = (group_scores or {}).get(g, -np.inf)
            own = -np.inf if np.isnan(own) else float(own)
            self.score.append(max([own, *(self.score[j] for j in inside)]))
            self.order.append(tree.nodes[g].order)
        for g, u in group_unit.items():
            below = [local[g]] if g in local else []
            kids = _frontier(tree, tree.nodes[g].children, local, group_unit)
            self.children[u] = [j for j in below + kids if j not in skip]
        # A skipped block is no candidate, but the walk goes on below it.
        self.top = [j for j in _frontier(tree, tree.roots, local, group_unit) if j not in skip]


def heading_sections(forest: BlockForest, ids: Sequence[int]) -> dict[int, frozenset[int]]:
    """Each heading block among ``ids`` (by position in ``ids``) → the positions of the blocks
    of text in its section: those after it in its document, up to the next heading of its
    level or above (the page title heads the whole page; a subsection is in its section)."""
    tree = forest.tree
    nodes = [tree.nodes[nid] for nid in ids]
    ranked = sorted(range(len(ids)), key=lambda j: (nodes[j].metadata["doc"], nodes[j].order))
    out: dict[int, set[int]] = {}
    open_: list[tuple[int, int]] = []  # (level, position) of the headings in force
    doc = None
    for j in ranked:
        meta = nodes[j].metadata
        if meta["doc"] != doc:
            doc, open_ = meta["doc"], []
        level = 0 if meta["tag"] == "title" else HEADING_LEVELS.get(meta["tag"])
        if meta["is_leaf"] and level is not None:
            while open_ and open_[-1][0] >= level:
                open_.pop()
            open_.append((level, j))
            out[j] = set()
        else:
            for _, h in open_:
                out[h].add(j)
    return {h: frozenset(texts) for h, texts in out.items()}


def _frontier(
    tree: Tree, start: Sequence[int], local: dict[int, int], group_unit: dict[int, int]
) -> list[int]:
    """Units met first below ``start``: a group stops the walk, blocks and containers do not."""
    found: list[int] = []
    stack = list(reversed(start))
    while stack:
        nid = stack.pop()
        if nid in group_unit:
            found.append(group_unit[nid])
            continue
        if nid in local:
            found.append(local[nid])
        stack.extend(reversed(tree.nodes[nid].children))
    return found


def fill(
    forest: BlockForest,
    ids: Sequence[int],
    costs: Mapping[int, int],
    scores: np.ndarray,
    budget: int,
    counter: TokenCounter,
    n_docs: int,
    groups: Mapping[int, int] | None = None,
    group_scores: Mapping[int, float] | None = None,
) -> Fit:
    """Keep the best-scored blocks whose rendered HTML fits ``budget`` tokens.

    The measured fill of :func:`hrefine.budget.fill` over the blocks and the groups (a group
    that does not fit is expanded into its parts), with the output rendered by
    :class:`~hrefine.html.render.Renderer` and counted with ``counter``: never over budget, the
    best-scored unit that fits on its own always kept, and no unit left out that would still
    fit. When no block fits on its own, the best block's text is returned, cut to the budget.

    Parameters
    ----------
    groups:
        Tree node id → token cost of its whole HTML, for nodes that may be kept whole.
    group_scores:
        Tree node id → score of the group as a whole (optional; a group scores at least as high
        as its best block either way).
    """
    renderer = Renderer(forest)
    safe = np.where(np.isnan(scores), -np.inf, scores)
    sections = heading_sections(forest, ids)

    def measure(kept: frozenset[int]) -> tuple[list[str], int]:
        docs = _place(forest, renderer.render(ids[j] for j in kept), n_docs)
        return docs, counter.count("\n".join(d for d in docs if d))

    # A heading kept with none of its section's text tells the reader nothing: it is left out
    # and the budget filled again without it, until every kept heading has text under it.
    alone: frozenset[int] = frozenset()
    renders = 0
    while True:
        units = _Units(forest, ids, costs, safe, groups or {}, group_scores, alone)
        done = budget_fill(
            units.cost,
            units.score,
            budget,
            measure,
            order=units.order,
            children=units.children,
            candidates=units.top,
            members=units.members,
            slack=JOIN_SLACK,
            allow_empty=True,
        )
        renders += done.renders
        if done.output is None:
            break
        bare = {h for h, texts in sections.items() if h in done.kept and not texts & done.kept}
        if not bare - alone:
            break
        alone |= bare
    if done.output is None:
        block_rank = [int(j) for j in np.argsort(-safe, kind="stable")]
        # The start of a block of text, rather than a heading, when no block fits at all.
        block_rank = [j for j in block_rank if j not in sections] or block_rank
        return _truncated(forest, ids, block_rank, budget, counter, n_docs, renders)
    kept, output, tokens = set(done.kept), done.output, done.tokens
    # A heading left out in one round whose section a later round kept text of goes back where
    # it still fits, best first, so that the text reads under its heading.
    back = sorted(
        (h for h in alone if sections[h] & kept), key=lambda h: (-safe[h], units.order[h])
    )
    for h in back:
        docs, n = measure(frozenset(kept | {h}))
        renders += 1
        if n <= budget:
            kept.add(h)
            output, tokens = docs, n
    # Only a heading with no text of its section kept was left out for that reason; one that
    # has text but no room is over the budget like any other block.
    left_out = frozenset(ids[h] for h in alone if not sections[h] & kept)
    return Fit({ids[j] for j in kept}, output, tokens, renders, alone=left_out)


def _place(forest: BlockForest, parts: list[str], n: int) -> list[str]:
    """Map the renderer's per-root strings to input-document positions."""
    docs = [""] * n
    for root_pos, part in enumerate(parts):
        docs[forest.doc_ids[root_pos]] = part
    return docs


def _truncated(
    forest: BlockForest,
    ids: Sequence[int],
    rank: list[int],
    budget: int,
    counter: TokenCounter,
    n_docs: int,
    renders: int,
) -> Fit:
    """Fallback when no block fits alone: the best block's text, cut to the budget by words
    (by characters in CJK text, which has no spaces between its words)."""
    best = ids[rank[0]]
    node = forest.tree.nodes[best]
    joined = " ".join(node.text.split())
    ends = [m.end() for m in CUT_UNIT.finditer(joined)]
    lo, hi = 0, len(ends)
    while lo < hi:  # the most units that fit
        mid = (lo + hi + 1) // 2
        if counter.count(html_lib.escape(joined[: ends[mid - 1]], quote=False)) <= budget:
            lo = mid
        else:
            hi = mid - 1
    if lo == 0:
        msg = f"a budget of {budget} tokens cannot hold even the first word of the best block"
        first = joined[: ends[0]] if ends else joined
        raise BudgetTooSmallError(msg, budget=budget, smallest=counter.count(first))
    text = html_lib.escape(joined[: ends[lo - 1]], quote=False)
    docs = [""] * n_docs
    docs[node.metadata["doc"]] = text
    logger.warning("no block fits %d tokens; returning the best block's text, truncated", budget)
    return Fit({best}, docs, counter.count(text), renders, truncated=True)


def inherit_scores(
    forest: BlockForest,
    ids: Sequence[int],
    forest1: BlockForest,
    ids1: Sequence[int],
    kept1: set[int],
    scores1: np.ndarray,
) -> np.ndarray:
    """Stage-1 score of the kept stage-1 block each fine block came from (matched by text)."""
    score_of = {i: float(s) for i, s in zip(ids1, scores1, strict=True)}
    coarse = [i for i in forest1.block_ids() if i in kept1]
    out = np.full(len(ids), np.nan)
    pos = 0
    for k, i in enumerate(ids):
        text = forest.tree.nodes[i].text
        for p in range(pos, len(coarse)):
            if text in forest1.tree.nodes[coarse[p]].text:
                out[k] = score_of[coarse[p]]
                pos = p
                break
    return out


def reports(
    forest: BlockForest,
    ids: Sequence[int],
    costs: dict[int, int],
    fit: Fit,
    stage1: np.ndarray | None,
    stage2: np.ndarray | None,
    located: Mapping[int, int] | None = None,
) -> list[BlockReport]:
    """One report per block of ``ids``; ``located`` gives each node's element index."""
    deciding = stage2 if stage2 is not None else stage1
    if deciding is None:
        deciding = np.zeros(len(ids))
    safe = np.where(np.isnan(deciding), -np.inf, deciding)
    rank = np.empty(len(ids), dtype=np.int64)
    rank[np.argsort(-safe, kind="stable")] = np.arange(len(ids))
    reports = []
    for k, i in enumerate(ids):
        node = forest.tree.nodes[i]
        kept = i in fit.kept
        reason = None if kept else HEADING_ALONE if i in fit.alone else OVER_BUDGET
        if kept and fit.truncated:
            reason = TRUNCATED
        s1 = None if stage1 is None or np.isnan(stage1[k]) else float(stage1[k])
        s2 = None if stage2 is None else float(stage2[k])
        reports.append(
            BlockReport(
                block_id=i,
                doc=int(node.metadata["doc"]),
                tag_path=">".join(node.metadata["path"]),
                text=node.text,
                tokens=costs[i],
                stage1_score=s1,
                stage2_score=s2,
                rank=int(rank[k]),
                kept=kept,
                reason=reason,
                element=None if located is None else located.get(i),
                own_text=not node.metadata["is_leaf"],
            )
        )
    return reports
