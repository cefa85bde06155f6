"""Draw a GARLIC graph built on a real HotpotQA item, with two searches of its question.

Builds a :class:`~hrefine.garlic.GarlicGraph` over the ten paragraphs of one HotpotQA question
of the shared data (each paragraph a document, from the tuning half) with the embedded
SmolLM2-135M-Instruct: its bullet summary points and the attention edges are real, written and
measured on this machine. Small settings (128-token leaves, 256-token summaries, 1,024-token
batches, at most 3 levels) give several batches on the first level and bound the build: about
12 minutes of CPU time for the whole script on the shared 2-core machine (24 minutes of wall
time there under other jobs' load).
The graph is then searched for the item's question twice: as in the paper (the first Yes stops
the search, patience 1) and as a compressor does (``fill_tokens=512``: reading on past Yes until
leaf chunks fill 512 tokens).

The picture has one panel per search over the same graph: leaves at the bottom in document
order (the two supporting paragraphs' leaves highlighted), summary points above, level by
level; each edge's width and opacity follow its weight; visited nodes are ringed and numbered
by the step that read them (0: the top level every search starts with), and the steps answered
Yes are marked. ``--llm extractive`` builds and searches with
:class:`~hrefine.eval.garlic_method.ExtractiveGarlicLM` instead (instant, no model: embedding
edges, prompt-only search), for a quick look while developing.

    .venv/bin/python -m benchmarks.garlic_picture             # writes docs/img/garlic-graph.png
    .venv/bin/python -m benchmarks.garlic_picture --llm extractive --out /tmp/g.png
"""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

from benchmarks._common import REPO

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

DEFAULT_OUT = REPO / "docs" / "img" / "garlic-graph.png"
#: "Which American film director hosted the 18th Independent Spirit Awards in 2002?" (tuning half)
DEFAULT_ITEM = "5ac3165c5542995ef918c10a"
#: The build's settings: small enough for two CPU cores, several batches on the first level.
#: SmolLM2 writes up to ``summary_tokens`` of points for any batch, so a level of points shrinks
#: slowly; ``max_levels`` bounds the build's time.
SETTINGS: dict[str, Any] = {
    "chunk_tokens": 128,
    "summary_tokens": 256,
    "batch_tokens": 1024,
    "max_levels": 3,
}
FILL = 512
SUPPORT = "#e8a33d"  # leaves of a supporting paragraph
LEAF = "#c9d1d9"
POINT = "#4c78a8"
EDGE = "#6b7785"
READ = "#1f8a4c"  # ring and number of a visited node
YES = "#c0392b"


def pick_item(item_id: str) -> Any:
    """The HotpotQA item ``item_id`` of the shared data; it must be in the tuning half."""
    from hrefine.eval.loaders import half_of, load_dataset

    items = [it for it in load_dataset("hotpotqa") if it.id == item_id]
    if not items:
        msg = f"no HotpotQA item {item_id!r} in the shared data"
        raise SystemExit(msg)
    if half_of(items[0].doc_id) != "tune":
        msg = f"item {item_id!r} is in the checking half; pick one from the tuning half"
        raise SystemExit(msg)
    return items[0]


def make_llm(kind: str) -> Any:
    """The LLM of the build and the searches: the embedded SmolLM2, or the instant stand-in."""
    if kind == "extractive":
        from hrefine.eval.garlic_method import ExtractiveGarlicLM

        return ExtractiveGarlicLM()
    from hrefine.models import default_lm

    return default_lm()


def build(item: Any, llm: Any) -> tuple[Any, float]:
    """The graph over the item's paragraphs (one Source each, id = title), and its seconds."""
    from hrefine.eval.loaders import hotpot_paragraph_text
    from hrefine.garlic import GarlicGraph
    from hrefine.raptor import Source

    sources = [
        Source(hotpot_paragraph_text(p), {"title": p["title"]}, p["title"])
        for p in item.extra["paragraphs"]
    ]
    started = time.perf_counter()

    def progress(line: str) -> None:
        print(f"{time.perf_counter() - started:6.1f} s  {line}", file=sys.stderr, flush=True)

    graph = GarlicGraph.build(sources, lm=llm, progress=progress, **SETTINGS)
    return graph, time.perf_counter() - started


def positions(graph: Any) -> dict[int, tuple[float, float]]:
    """x, y of every node: leaves spread in document order on y = 0; a summary point at the
    weight-averaged x of its inputs, then each level spread so no two points overlap."""
    tree = graph.tree
    leaves = tree.sort_by_order(tree.at_level(0))
    pos: dict[int, tuple[float, float]] = {i: (float(k), 0.0) for k, i in enumerate(leaves)}
    width = max(len(leaves) - 1, 1)
    for level in range(1, graph.levels + 1):
        ids = tree.at_level(level)
        xs = {}
        for i in ids:
            kids = tree[i].children
            weights = [tree.weight(i, c) for c in kids]
            xs[i] = sum(pos[c][0] * w for c, w in zip(kids, weights, strict=True)) / max(
                sum(weights), 1e-12
            )
        # keep document order within the level, each point as near its inputs as room allows
        ordered = tree.sort_by_order(ids)
        gap = min(1.0, width / max(len(ordered), 1))
        placed: list[float] = []
        for i in ordered:
            x = xs[i] if not placed else max(xs[i], placed[-1] + gap)
            placed.append(x)
        if placed and placed[-1] > width:  # pushed past the right edge: squeeze back in
            lo = min(placed[0], 0.0)
            placed = [lo + (x - lo) * (width - lo) / max(placed[-1] - lo, 1e-9) for x in placed]
        for i, x in zip(ordered, placed, strict=True):
            pos[i] = (x, float(level))
    return pos


def supporting_leaves(graph: Any, titles: list[str]) -> set[int]:
    """Ids of the leaves cut from the supporting paragraphs."""
    from hrefine.garlic.graph import SOURCE_ID

    tree = graph.tree
    return {i for i in tree.at_level(0) if tree[i].metadata.get(SOURCE_ID) in titles}


def draw_panel(ax: Any, graph: Any, result: Any, support: set[int], title: str) -> None:
    """One search over the graph: edges by weight, visited nodes numbered by step."""
    tree = graph.tree
    pos = positions(graph)
    step_of = {v.id: v.step for v in result.visited}
    yes_steps = {s.step for s in result.trace if s.said_yes}
    for parent, child, weight in tree.edges():
        (x0, y0), (x1, y1) = pos[parent], pos[child]
        ax.plot(
            [x0, x1], [y0, y1], color=EDGE, alpha=0.08 + 0.8 * weight, lw=0.3 + 3.2 * weight,
            zorder=1, solid_capstyle="round",
        )  # fmt: skip
    for node in tree:
        x, y = pos[node.id]
        face = (SUPPORT if node.id in support else LEAF) if node.level == 0 else POINT
        read = node.id in step_of
        size = 30 + 1.2 * int(node.metadata.get("hrefine_tokens", 40))
        ax.scatter(
            [x], [y], s=size, c=[face], edgecolors=READ if read else "white",
            linewidths=2.4 if read else 0.7, zorder=3,
        )  # fmt: skip
        if not read:
            continue
        step = step_of[node.id]
        said_yes = step in yes_steps and step > 0
        ax.annotate(
            f"{step}" + (" Yes" if said_yes else ""), (x, y),
            xytext=(0, -15 if node.level == 0 else 9), textcoords="offset points",
            ha="center", fontsize=8, fontweight="bold", color=YES if said_yes else READ,
            zorder=4,
        )  # fmt: skip
    # the leaves' paragraphs: a title under the first leaf of each
    seen: set[str] = set()
    for leaf in tree.sort_by_order(tree.at_level(0)):
        name = str(tree[leaf].metadata.get("title", ""))
        if name in seen:
            continue
        seen.add(name)
        x, _ = pos[leaf]
        ax.text(
            x, -0.32, textwrap.shorten(name, 26, placeholder="…"), rotation=28, ha="right",
            va="top", fontsize=7, color="#8a5a00" if leaf in support else "#5b6776",
            fontweight="bold" if leaf in support else "normal",
        )  # fmt: skip
    per_level = graph.stats.get("nodes_per_level") or [
        len(tree.at_level(lv)) for lv in range(graph.levels + 1)
    ]
    ax.set_yticks(range(graph.levels + 1))
    ax.set_yticklabels(
        [f"leaves ({per_level[0]})"]
        + [f"level {lv} ({per_level[lv]})" for lv in range(1, graph.levels + 1)]
    )
    ax.set_xticks([])
    ax.set_ylim(-1.25, graph.levels + 0.45)
    for side in ("top", "right", "bottom"):
        ax.spines[side].set_visible(False)
    ax.set_title(textwrap.fill(title, 165), fontsize=9.5, loc="left")


def describe(result: Any, support: set[int]) -> str:
    """One line about a search: steps, Yes answers, why it stopped, leaves, tokens."""
    yes = [s.step for s in result.trace if s.said_yes]
    leaves = [v.id for v in result.visited if v.level == 0]
    kept = len(support & set(leaves))
    return (
        f"{len(result.trace) - 1} nodes added to the top level, Yes at step(s) "
        f"{', '.join(map(str, yes)) or 'none'}, stopped by {result.stopped_by}; "
        f"{len(leaves)} leaves read ({kept} of the {len(support)} supporting-paragraph leaves); "
        f"{result.prefilled_tokens} tokens pre-filled vs {result.recompute_tokens} recomputing"
    )


def draw(
    graph: Any, item: Any, paper: Any, fill: Any, support: set[int], out: Path, note: str
) -> None:
    """Both searches, one panel each, to ``out``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    fig, axes = plt.subplots(2, 1, figsize=(13, 9.6), dpi=130)
    draw_panel(
        axes[0], graph, paper, support,
        f"Paper mode (patience 1): {describe(paper, support)}",
    )  # fmt: skip
    draw_panel(
        axes[1], graph, fill, support,
        f"Fill mode (fill_tokens={FILL}, as a compressor): {describe(fill, support)}",
    )  # fmt: skip

    def dot(face: str, edge: str, label: str, width: float = 0.7) -> Line2D:
        return Line2D([], [], marker="o", ls="", mfc=face, mec=edge, mew=width, ms=8, label=label)

    legend = [
        Line2D([], [], color=EDGE, lw=2.2, alpha=0.7, label="edge (width, opacity = weight)"),
        dot(POINT, "white", "summary point"),
        dot(LEAF, "white", "leaf chunk"),
        dot(SUPPORT, "white", "leaf of a supporting paragraph"),
        dot("white", READ, "read, numbered by step (0: top level)", 2.2),
        Line2D([], [], ls="", marker="$Yes$", color=YES, ms=14, label="the LLM said Yes"),
    ]
    axes[0].legend(handles=legend, loc="upper left", fontsize=7.5, frameon=False, ncol=2)
    fig.suptitle(f"GARLIC graph and search for {item.question!r}", fontsize=11, x=0.01, ha="left")
    # Wrapped here: matplotlib's own wrap let the line run past the figure's right edge.
    fig.text(0.01, 0.008, textwrap.fill(note, 200), fontsize=7.5, color="#5b6776")
    fig.tight_layout(rect=(0, 0.035, 1, 0.98))
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    """Build, search twice, draw; print the build seconds and the search statistics."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--item", default=DEFAULT_ITEM, help="HotpotQA item id (tuning half).")
    parser.add_argument("--llm", choices=("smollm2", "extractive"), default="smollm2")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    from hrefine.garlic import GarlicSearcher

    item = pick_item(args.item)
    llm = make_llm(args.llm)
    graph, seconds = build(item, llm)
    searcher = GarlicSearcher(graph, lm=llm)
    paper = searcher.search(item.question)
    fill = searcher.search(item.question, fill_tokens=FILL)
    support = supporting_leaves(graph, list(item.extra["supporting_titles"]))
    stats = graph.stats
    who = (
        "SmolLM2-135M-Instruct (summary points and attention edges)"
        if args.llm == "smollm2"
        else "ExtractiveGarlicLM stand-in (leading sentences, embedding edges, word-overlap Yes)"
    )
    note = (
        f"HotpotQA {item.id} (shared data, tuning half): its {len(item.extra['paragraphs'])} "
        f"paragraphs as documents, {stats['leaves']} leaves of <= {SETTINGS['chunk_tokens']} "
        f"Llama-3.2 tokens, batches of <= {SETTINGS['batch_tokens']} tokens, LLM: {who}; "
        f"{graph.edge_mode} edges, all-MiniLM-L6-v2 embeddings; nodes per level "
        f"{stats['nodes_per_level']}, {stats['calls']} LLM calls, built in {seconds:.0f} s."
    )
    draw(graph, item, paper, fill, support, args.out, note)
    print(
        f"{args.out}: {len(graph)} nodes, nodes per level {stats['nodes_per_level']}, "
        f"batches per level {stats['batches_per_level']}, {stats['calls']} LLM calls "
        f"({stats['retries']} retries), {graph.edge_mode} edges, built in {seconds:.1f} s"
    )
    for name, result in (("paper", paper), (f"fill {FILL}", fill)):
        print(
            f"  {name}: {result.mode} mode, {describe(result, support)}; "
            f"{result.seconds:.1f} s; visited (id, level, step) "
            f"{[(v.id, v.level, v.step) for v in result.visited]}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
