"""An HTML report of a RAPTOR retrieval: the tree by layers, what the query got, and why.

:func:`render_report` writes one self-contained page: no script at all (it reads the same
with scripts off), inline CSS allowed by its hash in a Content-Security-Policy that loads
nothing from anywhere, and every text (the documents', the summaries', the query) escaped. It
shows:

- the query, the retrieval's settings and the tokens used out of the budget;
- the retrieved nodes, best first: rank, layer, kind, cosine score, relevance, tokens, text;
- the nodes that scored as high as a retrieved one but were left out (and at least the five
  best-scored of those left out), each with the reason
  (it did not fit the room left in the budget, the ``k`` limit was reached, or in tree
  traversal it was not among the best ``k`` of its layer or not under a chosen node);
- the tree, top layer first: each summary with its children and their membership weights, each
  node with its score for the query, the retrieved ones marked. Node ids link to each other
  (plain ``#n<id>`` anchors).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from hrefine._atomic import write_text
from hrefine._report_frame import (
    METER_CSS,
    PAGE_CSS,
    TABLE_CSS,
    esc,
    folded,
    header,
    meter,
    more,
    opening,
    page,
    ref,
    table,
)
from hrefine.errors import BudgetTooSmallError
from hrefine.raptor.build import TOKENS
from hrefine.raptor.retrieve import (
    K_REACHED,
    NOT_REACHED,
    NOT_TOP_K,
    OVER_BUDGET,
    REPEATED,
    choose,
)
from hrefine.tree import NodeKind

if TYPE_CHECKING:
    from hrefine.raptor.options import RaptorOptions
    from hrefine.raptor.raptor_tree import RaptorTree
    from hrefine.raptor.retrieve import RetrievedNode

# The other reasons (OVER_BUDGET, K_REACHED, REPEATED, NOT_TOP_K, NOT_REACHED) are
# hrefine.raptor.retrieve's, importable from here too.
__all__ = [
    "SUMMARIES_OFF",
    "Explained",
    "explain",
    "render_report",
    "write_report",
]

# The default of ``k`` and ``max_tokens``: the tree's own setting (None means "no limit").
_DEFAULT = "default"
# Most left-out nodes listed (the best-scored ones); the rest are counted. At least this many
# are listed even when they all score below every retrieved node.
_MAX_DROPPED = 60
_MIN_DROPPED = 5
# Words of a leaf shown before its full text is folded away.
_LEAF_WORDS = 40

#: Reasons a node did not reach the result (:attr:`Explained.reasons`): those of
#: :func:`hrefine.raptor.retrieve.pick` and of tree traversal, and this one.
SUMMARIES_OFF = "summaries_off"
_REASON_TEXT = {
    SUMMARIES_OFF: "summary_rank is 'off': leaves only",
    REPEATED: "a summary whose every sentence the retrieved text already holds",
    K_REACHED: "the k limit was reached before its turn",
    NOT_TOP_K: "tree traversal: not among the best k of its layer's candidates",
    NOT_REACHED: "tree traversal: none of its parents was chosen",
}

_CSS = (
    PAGE_CSS
    + """h2{font-size:17px;margin:26px 0 8px}
h3{font-size:15px;margin:18px 0 6px;color:#38424f}
.meta{color:#5b6776;font-size:13px}
"""
    + METER_CSS
    + TABLE_CSS
    + """.layer{display:flex;flex-wrap:wrap;gap:10px}
.node{background:#fff;border:1px solid #d5dbe2;border-radius:7px;padding:8px 10px;
flex:1 1 330px;max-width:560px;font-size:13.5px}
.node.hit{border:2px solid #2f8f5b;background:#f1faf4}
.node .h{font-size:12.5px;color:#5b6776;margin-bottom:4px}
.node .h b{color:#1d2733}
.tag{display:inline-block;background:#2f8f5b;color:#fff;border-radius:4px;padding:0 5px;
font-size:11.5px;margin-left:4px}
.kids{font-size:12.5px;color:#38424f;margin-top:5px}
.kids a,.ref{color:#22579a;text-decoration:none}
.hitref{font-weight:600;color:#1f6e43}
.text{white-space:pre-wrap;word-wrap:break-word}
details summary{cursor:pointer;color:#22579a;font-size:12.5px}
.note{color:#5b6776;font-size:13px}
"""
)


@dataclass(frozen=True)
class Explained:
    """Why each node of a tree is or is not in a retrieval (see :func:`explain`)."""

    scores: np.ndarray
    """Cosine similarity of every node to the query, indexed by node id."""
    chosen: list[int]
    """Ids chosen by the settings, best first (equal to the retrieved ids when they were
    retrieved with these settings).
    """
    reasons: dict[int, str]
    """For a node left out: ``"over_budget"``, ``"k_reached"``, ``"repeats_returned_text"``
    (a summary whose sentences the chosen nodes all return), ``"not_top_k_of_layer"``,
    ``"not_reached"`` or ``"summaries_off"``.
    """
    room: dict[int, int]
    """For a node left out as over budget: the tokens left in the budget when its turn came."""


def explain(
    tree: RaptorTree,
    query: str,
    *,
    mode: str | None = None,
    k: int | str | None = _DEFAULT,
    max_tokens: int | str | None = _DEFAULT,
    **settings: Any,
) -> Explained:
    """Replay a retrieval step by step and say why every node was or was not chosen.

    The query is embedded again with the tree's embedder. The settings are those of
    :meth:`RaptorTree.retrieve <hrefine.raptor.RaptorTree.retrieve>` (``mode``, ``k``,
    ``max_tokens`` and the per-query ``lexical_weight`` and ``summary_rank``), checked as it
    checks them and defaulting to the tree's own; the walk is the same (best score first, ties
    by id; a node that does not fit the room left is skipped and a smaller one after it may
    still fit).
    """
    text, how, opts = tree._query_settings(query, mode, k, max_tokens, settings)
    limit, budget = opts.k, opts.max_tokens
    route, scores = _scores(tree, text, opts)
    costs = np.asarray([int(node.metadata.get(TOKENS, 0)) for node in tree.tree], dtype=np.int64)
    reasons: dict[int, str] = {}
    try:
        got = choose(
            tree.tree,
            scores,
            costs,
            tree.counter,
            mode=how,
            k=limit,
            max_tokens=budget,
            reasons=reasons,
            route=route,
        )
    except BudgetTooSmallError:  # retrieve() refused these settings: nothing fits
        got = None
    off = {i: SUMMARIES_OFF for i in range(len(scores)) if not np.isfinite(scores[i])}
    if got is None:
        room = {i: int(budget or 0) for i in range(len(scores)) if i not in reasons | off}
        reasons.update({**dict.fromkeys(room, OVER_BUDGET), **off})
        return Explained(scores=scores, chosen=[], reasons=reasons, room=room)
    reasons.update({**off, **got.reasons})
    return Explained(scores=scores, chosen=got.chosen, reasons=reasons, room=got.room)


def _scores(tree: RaptorTree, query: str, opts: RaptorOptions) -> tuple[np.ndarray, np.ndarray]:
    """The scores a traversal walks by and those the result is picked by, as
    :meth:`RaptorTree.retrieve <hrefine.raptor.RaptorTree.retrieve>` computes them
    (:func:`hrefine.raptor.retrieve.node_scores`) with the query's options ``opts``."""
    from hrefine.raptor.retrieve import node_scores

    if tree.tree.embeddings is None:
        zeros = np.zeros(len(tree.tree), dtype=np.float64)
        return zeros, zeros
    return node_scores(
        tree.tree,
        query,
        tree._scores(tree.embedder.embed_query(query), tree.tree),
        lexical_weight=opts.lexical_weight,
        summary_rank=opts.summary_rank,
    )


def render_report(
    tree: RaptorTree,
    query: str,
    nodes: Sequence[RetrievedNode],
    *,
    mode: str | None = None,
    k: int | str | None = _DEFAULT,
    max_tokens: int | str | None = _DEFAULT,
    title: str | None = None,
    **settings: Any,
) -> str:
    """A self-contained, script-free HTML report of ``nodes`` retrieved from ``tree``.

    Parameters
    ----------
    tree:
        The tree the nodes came from.
    query:
        The question they were retrieved for.
    nodes:
        What :meth:`RaptorTree.retrieve <hrefine.raptor.RaptorTree.retrieve>` returned.
    mode, k, max_tokens:
        The settings of that call (default: the tree's own), to say why other nodes were left
        out.
    title:
        Shown in the browser tab and above the question.
    **settings:
        That call's per-query ``lexical_weight`` and ``summary_rank``, if it gave them.

    Returns
    -------
    str
        The whole page (see the module docstring).
    """
    _, how, opts = tree._query_settings(query, mode, k, max_tokens, settings)
    limit, budget = opts.k, opts.max_tokens
    why = explain(tree, query, mode=how, k=limit, max_tokens=budget, **settings)
    scores = why.scores.copy()
    for n in nodes:  # the scores the caller saw win over the replay's
        scores[n.id] = n.score
    rank = {n.id: r for r, n in enumerate(nodes, 1)}
    used = sum(n.tokens for n in nodes)
    body = [
        _header(tree, query, how, limit, budget, used, len(nodes), title),
        "<main>\n",
        _retrieved(nodes),
        _dropped(tree, nodes, why, scores, budget),
        _layers(tree, scores, rank),
        "</main>\n",
    ]
    return page("RAPTOR retrieval report", title, _CSS, body)


def write_report(
    tree: RaptorTree,
    query: str,
    nodes: Sequence[RetrievedNode],
    path: str | os.PathLike[str],
    **options: Any,
) -> Path:
    """Write :func:`render_report` to ``path`` (whole or not at all) and return the path;
    ``options`` are its keywords (``mode``, ``k``, ``max_tokens``, ``title``, the call's
    per-query settings).

    Raises
    ------
    OSError
        The file cannot be written (its folder is missing or read-only).
    """
    out = Path(path)
    write_text(out, render_report(tree, query, nodes, **options))
    return out


# -- pieces -----------------------------------------------------------------------------------


def _ref(node_id: int, hit: bool = False) -> str:
    return ref(node_id, "ref hitref" if hit else "ref")


def _header(
    tree: RaptorTree,
    query: str,
    how: str,
    k: int | str | None,
    budget: int | str | None,
    used: int,
    count: int,
    title: str | None,
) -> str:
    stats = tree.stats
    # Counted here: the build statistics are not saved with a tree.
    levels = [node.level for node in tree.tree]
    per_layer = " / ".join(str(levels.count(lv)) for lv in range(tree.layers + 1))
    facts = [
        f"{len(tree):,} nodes",
        f"{tree.layers} summary layers (nodes per layer {per_layer})",
        f"mode {how}",
        f"k {'no limit' if k is None else k}",
        f"budget {'none' if budget is None else f'{budget:,} tokens'}",
        f"tokenizer {tree.counter.name}",
    ]
    if "build_seconds" in stats:
        facts.append(
            f"built in {float(stats['build_seconds']):.1f} s, {stats.get('llm_calls', 0)} LLM calls"
        )
    bar = ""
    if isinstance(budget, int) and budget > 0:
        bar = meter(used, budget, "tokens used out of the budget")
    rest = (
        f'{bar}<div class="meta"><b>{count}</b> nodes retrieved, <b>{used:,}</b> tokens'
        + ("" if not isinstance(budget, int) else f" of <b>{budget:,}</b>")
        + "</div>\n"
    )
    return header("RAPTOR retrieval report", title, query, facts, rest)


def _retrieved(nodes: Sequence[RetrievedNode]) -> str:
    rows = []
    for r, n in enumerate(nodes, 1):
        rows.append(
            f'<tr><td class="num">{r}</td><td>{_ref(n.id, True)}</td>'
            f'<td class="num">{n.layer}</td><td>{esc(n.kind)}</td>'
            f'<td class="num">{n.score:.4f}</td><td class="num">{n.relevance:.3f}</td>'
            f'<td class="num">{n.tokens}</td><td class="text">{esc(n.text)}</td></tr>\n'
        )
    if not rows:
        return '<h2>Retrieved</h2>\n<p class="note">Nothing was retrieved.</p>\n'
    heads = ["rank", "node", "layer", "kind", "score", "relevance", "tokens", "text"]
    return "<h2>Retrieved, best first</h2>\n" + table(heads, rows)


def _dropped(
    tree: RaptorTree,
    nodes: Sequence[RetrievedNode],
    why: Explained,
    scores: np.ndarray,
    budget: int | str | None,
) -> str:
    got = {n.id for n in nodes}
    floor = min((n.score for n in nodes), default=float("inf"))
    left_out = sorted(
        (i for i in range(len(scores)) if i not in got), key=lambda i: (-scores[i], i)
    )
    # Every node scoring as high as a retrieved one, and at least the few best of the rest.
    high = [i for r, i in enumerate(left_out) if scores[i] >= floor or r < _MIN_DROPPED]
    head = "<h2>The best-scored nodes left out, and why</h2>\n"
    note = ""
    if sorted(why.chosen) != sorted(got):
        note = (
            '<p class="note">These nodes were not retrieved with the settings above (another '
            "call's settings?): the reasons below are those of the settings above.</p>\n"
        )
    if not high:
        return head + note + '<p class="note">None: every node was retrieved.</p>\n'
    rows = []
    for i in high[:_MAX_DROPPED]:
        node = tree.tree[i]
        tokens = int(node.metadata.get(TOKENS, 0))
        reason = why.reasons.get(i, "")
        if reason == OVER_BUDGET:
            text = f"did not fit: {tokens} tokens, {why.room.get(i, 0)} left of {budget}"
        else:
            text = _REASON_TEXT.get(reason, "not chosen with the settings above")
        rows.append(
            f'<tr><td>{_ref(i)}</td><td class="num">{node.level}</td>'
            f'<td class="num">{scores[i]:.4f}</td><td class="num">{tokens}</td>'
            f"<td>{esc(text)}</td><td>{esc(opening(node.text, 24))}</td></tr>\n"
        )
    heads = ["node", "layer", "score", "tokens", "why it was left out", "first words"]
    return head + note + table(heads, rows) + more(len(high) - _MAX_DROPPED)


def _layers(tree: RaptorTree, scores: np.ndarray, rank: dict[int, int]) -> str:
    graph = tree.tree
    out = ["<h2>The tree, top layer first</h2>\n"]
    for level in range(tree.layers, -1, -1):
        ids = graph.at_level(level)
        label = "Leaves (layer 0)" if level == 0 else f"Layer {level}"
        hits = sum(1 for i in ids if i in rank)
        out.append(f"<h3>{label}: {len(ids):,} nodes, {hits} retrieved</h3>\n")
        out.append('<div class="layer">\n')
        for i in ids:
            out.append(_node(tree, i, scores, rank))
        out.append("</div>\n")
    return "".join(out)


def _node(tree: RaptorTree, node_id: int, scores: np.ndarray, rank: dict[int, int]) -> str:
    graph = tree.tree
    node = graph[node_id]
    tokens = int(node.metadata.get(TOKENS, 0))
    hit = node_id in rank
    tag = f'<span class="tag">retrieved #{rank[node_id]}</span>' if hit else ""
    head = (
        f'<div class="h"><b>#{node_id}</b> · {esc(node.kind)} · {tokens} tokens · '
        f"score {scores[node_id]:.4f}{tag}</div>\n"
    )
    # A summary is shown whole; a long leaf folds away past its first words.
    whole = len(node.text) if node.kind == NodeKind.SUMMARY else _LEAF_WORDS
    body = folded(node.text, whole) + "\n"
    links = []
    if node.children:
        kids = ", ".join(
            f"{_ref(c, c in rank)} ({graph.weight(node_id, c):.2f})" for c in node.children
        )
        links.append(f"children (membership weight): {kids}")
    if node.parents:
        links.append("in clusters of: " + ", ".join(_ref(p, p in rank) for p in node.parents))
    if node.kind == NodeKind.CHUNK and "source" in node.metadata:
        links.append(f"from {esc(node.metadata['source'])}")
    kids_html = f'<div class="kids">{" · ".join(links)}</div>\n' if links else ""
    cls = "node hit" if hit else "node"
    return f'<div class="{cls}" id="n{node_id}">\n{head}{body}{kids_html}</div>\n'
