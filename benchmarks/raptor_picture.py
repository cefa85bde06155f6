"""Draw a RAPTOR tree built on a real document, with one query's retrieved nodes.

Builds a tree over a paper of the shared Qasper data with the embedded all-MiniLM-L6-v2 (the
leaves, their embeddings and the clustering are real) and, by default, an instant summariser
that keeps the first 60 words of each cluster's texts (``--llm smollm2`` uses the embedded
SmolLM2-135M-Instruct instead: minutes on a CPU). The picture shows the layers (leaves at the
bottom, in document order), each cluster's membership edges (line opacity = the Gaussian
mixture's membership probability; a leaf in two clusters has two edges) and the nodes the
collapsed tree retrieved for one of the paper's questions, numbered by rank (summaries
ranked by their own score, ``summary_rank="free"`` as in the paper, so the picture shows
where they compete; the default returns leaves only).

    .venv/bin/python -m benchmarks.raptor_picture            # writes docs/img/raptor-tree.png
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any

from benchmarks._common import REPO

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

DEFAULT_OUT = REPO / "docs" / "img" / "raptor-tree.png"
DEFAULT_DOC = "qasper_17"
BUDGET = 400
# Colours: one per layer-1 cluster (cycled), retrieved nodes, the rest.
PALETTE = ["#4c78a8", "#f58518", "#54a24b", "#b279a2", "#e45756", "#72b7b2", "#9d755d", "#bab0ac"]
HIT = "#1f8a4c"


def first_words(prompt: str) -> str:
    """The instant summariser: the first 60 words of the texts in the prompt."""
    return " ".join(prompt.split(":", 1)[1].split()[:60])


def build(doc_id: str, llm: str) -> tuple[Any, Any, float]:
    """The tree over Qasper paper ``doc_id``, the paper's first question, the build seconds."""
    from hrefine.eval import load_dataset
    from hrefine.raptor import RaptorTree, Source

    items = [it for it in load_dataset("qasper") if it.doc_id == doc_id]
    if not items:
        msg = f"no Qasper paper {doc_id!r} in the shared data"
        raise SystemExit(msg)
    item = items[0]
    summariser: Any = first_words if llm == "fake" else None
    started = time.perf_counter()
    tree = RaptorTree.build([Source(item.document, {"source": doc_id}, doc_id)], llm=summariser)
    return tree, item, time.perf_counter() - started


def positions(tree: Any) -> dict[int, tuple[float, float]]:
    """x, y of every node: leaves spread in document order on y = 0; a summary at the
    membership-weighted mean x of its children, then each layer spread so none overlap."""
    graph = tree.tree
    leaves = graph.at_level(0)
    pos: dict[int, tuple[float, float]] = {i: (float(k), 0.0) for k, i in enumerate(leaves)}
    width = max(len(leaves) - 1, 1)
    for level in range(1, tree.layers + 1):
        ids = graph.at_level(level)
        xs = {}
        for i in ids:
            kids = graph[i].children
            weights = [graph.weight(i, c) for c in kids]
            xs[i] = sum(pos[c][0] * w for c, w in zip(kids, weights, strict=True)) / sum(weights)
        ordered = sorted(ids, key=lambda i: xs[i])
        gap = width / max(len(ordered), 1) * 0.8
        placed: list[float] = []
        for i in ordered:
            x = xs[i] if not placed else max(xs[i], placed[-1] + gap)
            placed.append(x)
        if placed and placed[-1] > width:  # pushed past the right edge: squeeze back in
            lo = placed[0]
            placed = [lo + (x - lo) * (width - lo) / max(placed[-1] - lo, 1e-9) for x in placed]
        for i, x in zip(ordered, placed, strict=True):
            pos[i] = (x, float(level))
    return pos


def draw(tree: Any, question: str, nodes: list[Any], out: Path, note: str) -> None:
    """Draw the tree with the retrieved ``nodes`` to ``out``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    graph = tree.tree
    pos = positions(tree)
    rank = {n.id: r for r, n in enumerate(nodes, 1)}
    colour = {i: PALETTE[k % len(PALETTE)] for k, i in enumerate(graph.at_level(1))}
    fig, ax = plt.subplots(figsize=(13, 5.2), dpi=130)
    for parent, child, weight in graph.edges():
        (x0, y0), (x1, y1) = pos[parent], pos[child]
        hue = colour.get(parent, "#6b7785")
        ax.plot([x0, x1], [y0, y1], color=hue, alpha=0.15 + 0.75 * weight, lw=1.0, zorder=1)
    for node in graph:
        x, y = pos[node.id]
        hit = node.id in rank
        if node.level == 0:
            parents = node.parents
            face = colour.get(parents[0], "#c9d1d9") if parents else "#c9d1d9"
        else:
            face = colour.get(node.id, "#6b7785")
        size = 40 + 1.4 * int(node.metadata.get("hrefine_tokens", 50))
        ax.scatter(
            [x], [y], s=size, c=[face], edgecolors=HIT if hit else "white",
            linewidths=2.6 if hit else 0.8, zorder=3,
        )  # fmt: skip
        if hit:
            ax.annotate(
                str(rank[node.id]), (x, y), xytext=(0, 9 if node.level else -15),
                textcoords="offset points", ha="center", fontsize=8.5, color=HIT,
                fontweight="bold",
            )  # fmt: skip
        if node.level == 0 and len(node.parents) > 1:
            ax.scatter([x], [y], s=12, c="black", marker="d", zorder=4)
    per_layer = tree.stats.get("nodes_per_layer", [])
    ax.set_yticks(range(tree.layers + 1))
    ax.set_yticklabels(
        [f"leaves ({per_layer[0]})"]
        + [f"layer {lv} ({per_layer[lv]})" for lv in range(1, tree.layers + 1)]
    )
    ax.set_xticks([])
    ax.set_ylim(-0.45, tree.layers + 0.35)
    for side in ("top", "right", "bottom"):
        ax.spines[side].set_visible(False)
    used = sum(n.tokens for n in nodes)
    ax.set_title(
        f"Retrieved for {question!r}: {len(nodes)} nodes, {used} of {BUDGET} tokens "
        "(collapsed tree; ring and number = retrieved, by rank)",
        fontsize=10,
        loc="left",
    )
    legend = [
        Line2D([], [], color="#4c78a8", lw=1.2, label="membership edge (opacity = probability)"),
        Line2D([], [], marker="o", ls="", mfc="white", mec=HIT, mew=2.4, ms=9, label="retrieved"),
    ]
    if any(len(graph[i].parents) > 1 for i in graph.at_level(0)):
        legend.append(
            Line2D([], [], marker="d", ls="", color="black", ms=5, label="leaf in two clusters")
        )
    ax.legend(handles=legend, loc="upper right", fontsize=8.5, frameon=False)
    fig.text(0.01, 0.01, note, fontsize=8, color="#5b6776")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    """Build, retrieve, draw; print what was drawn."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--doc", default=DEFAULT_DOC, help="Qasper paper id (qasper_NN).")
    parser.add_argument("--llm", choices=("fake", "smollm2"), default="fake")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    tree, item, seconds = build(args.doc, args.llm)
    nodes = tree.retrieve(item.question, k=None, max_tokens=BUDGET, summary_rank="free")
    summariser = "first 60 words of each cluster" if args.llm == "fake" else "SmolLM2-135M"
    stats = tree.stats
    note = (
        f"Qasper paper {args.doc} (shared data), {stats['leaves']} leaves of <= 100 Llama-3.2 "
        f"tokens, all-MiniLM-L6-v2 embeddings, UMAP + GMM clusters (seed {tree.options.seed}), "
        f"summaries: {summariser}; clusters per layer {stats['clusters_per_layer']}."
    )
    draw(tree, item.question, nodes, args.out, note)
    soft = sum(1 for i in tree.tree.at_level(0) if len(tree.tree[i].parents) > 1)
    print(
        f"{args.out}: {len(tree)} nodes, nodes per layer {stats['nodes_per_layer']}, "
        f"{soft} leaves in two or more clusters, built in {seconds:.1f} s; "
        f"retrieved {[(n.id, n.layer) for n in nodes]}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
