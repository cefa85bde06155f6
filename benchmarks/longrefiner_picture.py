"""Draw LongRefiner's section tree of a real contract, with one question's scores and what was kept.

Refines a contract of the shared CUAD data (LongEval's ``cuad`` set) for one of its questions at
1,024 Llama-3.2 tokens with the default settings: the sections come from the contract's own
numbering (no model), and every leaf's local score is the embedded all-MiniLM-L6-v2 cosine plus
the BM25 match. Step 3 (global selection) needs a model; none that can read a contract's outline
runs offline here, so by default an instant stand-in answers it: it names the outline titles
that share a word with the question, in the JSON list the step asks for (``--selection none``
leaves step 3 off: every global score is 0). Step 1 is off, so both weights are 0.5.

The picture has three parts: the whole tree as nested bars over the contract's text (sections,
sub-sections and paragraphs, coloured by combined score; kept nodes outlined), the local, global
and combined score of every top-level section, and the sub-tree of the best-scored section with
each node's three scores and what was kept of it.

    .venv/bin/python -m benchmarks.longrefiner_picture     # writes docs/img/longrefiner-tree.png
"""

from __future__ import annotations

import argparse
import json
import os
import re
import textwrap
import time
from pathlib import Path
from typing import Any

from benchmarks._common import REPO, quiet_bm25s

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

DEFAULT_OUT = REPO / "docs" / "img" / "longrefiner-tree.png"
DEFAULT_DOC = "cuad_00"
DEFAULT_TOPIC = "Renewal Term"
BUDGET = 1024
KEPT = "#1f8a4c"
CHOSEN = "#e8730c"
BARS = {"local": "#4c78a8", "global": CHOSEN, "combined": "#54a24b"}
_WORD = re.compile(r"[a-z]{3,}")
_OUTLINE_LINE = re.compile(r"^(?:Section|Subsection)\d+: (.*)$", re.MULTILINE)
# Words of a CUAD question that name no topic (its fixed wording) or none at all.
_STOP = frozenset(
    {
        "the", "and", "for", "that", "this", "with", "any", "are", "from", "after", "what",
        "highlight", "parts", "contract", "related", "should", "reviewed", "lawyer", "details",
        "includes",
    }
)  # fmt: skip


def title_words_selector(prompt: str) -> str:
    """The instant stand-in for step 3: the outline titles that share a word with the question,
    as a JSON list (the answer the step's prompt asks a model for)."""
    question = prompt.rsplit("**Question**:", 1)[-1].split("\nOutput:", 1)[0]
    wanted = set(_WORD.findall(question.lower())) - _STOP
    titles = _OUTLINE_LINE.findall(prompt)
    return json.dumps([t for t in titles if wanted & set(_WORD.findall(t.lower()))])


def refine(doc_id: str, topic: str, selection: str) -> tuple[Any, Any, Any, float]:
    """The refinement of contract ``doc_id`` for its CUAD question on ``topic``, the question,
    the budget's token counter and the seconds it took."""
    from hrefine.eval import load_dataset
    from hrefine.longrefiner import LongRefiner

    items = [
        it for it in load_dataset("cuad") if it.doc_id == doc_id and f'"{topic}"' in it.question
    ]
    if not items:
        msg = f"no CUAD question on {topic!r} for contract {doc_id!r} in the shared data"
        raise SystemExit(msg)
    item = items[0]
    if selection == "title-words":
        refiner = LongRefiner(llm=title_words_selector, query_analysis="off", global_selection="on")
    else:
        refiner = LongRefiner()
    refiner.warmup()
    started = time.perf_counter()
    result = refiner.refine(item.question, item.document, BUDGET)
    return result, item, refiner.counter, time.perf_counter() - started


def _short(title: str, n: int = 30) -> str:
    flat = " ".join(title.split())
    return flat if len(flat) <= n else flat[: n - 1] + "…"


def _label(doc: Any, node_id: int) -> str:
    node = doc.structure.tree[node_id]
    if node.kind == "section":
        if node.metadata.get("abstract"):
            return "(lead)"
        return str(node.metadata.get("title", "")) or "(untitled)"
    words = doc.structure.node_text(node_id).split()
    return "¶ " + " ".join(words[:5]) + (" …" if len(words) > 5 else "")


def _kept_ids(doc: Any) -> set[int]:
    """Every node whose text reached the output: the kept nodes and all below them."""
    tree = doc.structure.tree
    out: set[int] = set()
    for k in doc.kept:
        out.add(k)
        out.update(tree.descendants(k))
    return out


def draw(result: Any, item: Any, counter: Any, out: Path, note: str) -> None:
    """Draw ``result``'s first document to ``out`` (``counter``: the budget's tokenizer)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import Normalize
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch, Rectangle

    doc = result.documents[0]
    s = doc.structure
    tree = s.tree
    size = max(len(s.text), 1)
    kept = _kept_ids(doc)
    chosen = set(doc.selection.selected)
    fig = plt.figure(figsize=(13.5, 8.6), dpi=130)
    grid = fig.add_gridspec(2, 2, height_ratios=(1.0, 1.25), width_ratios=(1.35, 1.0))
    ax_tree = fig.add_subplot(grid[0, :])
    ax_top = fig.add_subplot(grid[1, 0])
    ax_sub = fig.add_subplot(grid[1, 1])
    cmap = plt.get_cmap("YlGnBu")
    norm = Normalize(0.0, max(float(doc.combined[1:].max()), 1e-9))

    # 1. The tree over the text: one row per depth, leaves at the bottom.
    depths = [int(n.metadata.get("depth", 1)) for n in tree if n.kind == "section"]
    deepest = max(depths, default=1)
    rows = deepest + 1  # section depths, then the paragraphs
    for node in tree:
        if node.id == 0:
            continue
        start, end = s.extent(node.id)
        depth = rows if node.kind == "paragraph" else int(node.metadata.get("depth", 1))
        y = rows - depth
        ax_tree.add_patch(
            Rectangle(
                (start / size, y + 0.08), max((end - start) / size, 0.0015), 0.84,
                facecolor=cmap(norm(doc.combined[node.id])),
                edgecolor=KEPT if node.id in kept else "white",
                linewidth=1.6 if node.id in kept else 0.3, zorder=3 if node.id in kept else 2,
            )
        )  # fmt: skip
        if node.id in chosen:
            ax_tree.plot([(start + end) / 2 / size], [y + 1.02], "v", color=CHOSEN, ms=6)
    tops = [n for n in tree if n.kind == "section" and int(n.metadata.get("depth", 1)) == 1]
    titled = [n for n in tops if not n.metadata.get("abstract")]
    lead = " and the lead" if len(titled) < len(tops) else ""
    for node in tops:
        start, end = s.extent(node.id)
        if (end - start) / size > 0.012 and not node.metadata.get("abstract"):
            number = str(node.metadata.get("title", "")).split(" ")[0].rstrip(".")
            ax_tree.text(
                (start + end) / 2 / size, rows - 0.5, number, ha="center", va="center",
                fontsize=6.5, zorder=4,
            )  # fmt: skip
    ax_tree.set_xlim(0, 1)
    ax_tree.set_ylim(0, rows + 0.25)
    ax_tree.set_yticks([rows - d + 0.5 for d in range(1, rows + 1)])
    ax_tree.set_yticklabels(
        ["sections"] + [f"{'sub-' * (d - 1)}sections" for d in range(2, rows)] + ["paragraphs"],
        fontsize=8,
    )
    ax_tree.set_xticks([0, 0.25, 0.5, 0.75, 1.0])
    ax_tree.set_xticklabels([f"{int(f * size):,}" for f in (0, 0.25, 0.5, 0.75, 1.0)], fontsize=7)
    ax_tree.set_xlabel("character of the contract", fontsize=8)
    for side in ("top", "right"):
        ax_tree.spines[side].set_visible(False)
    bar = fig.colorbar(
        plt.cm.ScalarMappable(norm=norm, cmap=cmap), ax=ax_tree, fraction=0.025, pad=0.01
    )
    bar.set_label("combined score", fontsize=8)
    bar.ax.tick_params(labelsize=7)
    ax_tree.legend(
        handles=[
            Patch(facecolor="white", edgecolor=KEPT, linewidth=1.6, label="kept (in the output)"),
            Line2D([], [], marker="v", ls="", color=CHOSEN, label="chosen by step 3"),
        ],
        loc="upper left", bbox_to_anchor=(0.0, 1.2), ncol=2, fontsize=8, frameon=False,
    )  # fmt: skip
    question = item.question.split("Details:", 1)[-1].strip()
    ax_tree.set_title(
        f"Contract {item.doc_id}: {len(titled)} sections{lead}, "
        f"{sum(1 for n in tree if n.kind == 'section') - len(tops)} sub-sections, "
        f"{sum(1 for n in tree if n.kind == 'paragraph')} paragraphs (source: {s.source})\n"
        f"{_short(question, 110)!r}: {result.tokens} of {BUDGET} tokens kept",
        fontsize=9.5, loc="right",
    )  # fmt: skip

    # 2. Every top-level section's three scores.
    xs = list(range(len(tops)))
    width = 0.27
    for k, (name, values) in enumerate(
        (("local", doc.local), ("global", doc.global_), ("combined", doc.combined))
    ):
        ax_top.bar(
            [x + (k - 1) * width for x in xs], [float(values[n.id]) for n in tops], width,
            color=BARS[name], label=name,
        )  # fmt: skip
    ax_top.set_xticks(xs)
    ax_top.set_xticklabels([_short(_label(doc, n.id), 22) for n in tops], rotation=65,
                           ha="right", fontsize=6.5)  # fmt: skip
    for tick, node in zip(ax_top.get_xticklabels(), tops, strict=True):
        if node.id in kept or any(d in kept for d in tree.descendants(node.id)):
            tick.set_color(KEPT)
            tick.set_fontweight("bold")
    ax_top.set_ylim(0, 1.05)
    ax_top.set_ylabel("score", fontsize=8)
    ax_top.tick_params(axis="y", labelsize=7)
    ax_top.set_title(
        f"Top-level sections (weights: local {result.analysis.w_local:.2f}, global "
        f"{result.analysis.w_global:.2f}); green names hold kept text",
        fontsize=8.5, loc="left",
    )  # fmt: skip
    ax_top.legend(fontsize=7.5, frameon=False, ncol=3, loc="upper left")
    for side in ("top", "right"):
        ax_top.spines[side].set_visible(False)

    # 3. The best top-level section's sub-tree, node by node.
    best = max(tops, key=lambda n: (float(doc.combined[n.id]), -n.id))
    ids = [best.id, *tree.descendants(best.id)]
    ids.sort(key=lambda i: (s.extent(i)[0], -(s.extent(i)[1] - s.extent(i)[0])))
    ids = ids[:14]
    ys = list(range(len(ids)))[::-1]
    depth_of = {best.id: 0}
    for i in ids[1:]:
        depth_of[i] = depth_of.get(tree[i].parents[0], 0) + 1
    for k, (name, values) in enumerate(
        (("local", doc.local), ("global", doc.global_), ("combined", doc.combined))
    ):
        ax_sub.barh(
            [y + (1 - k) * 0.27 for y in ys], [float(values[i]) for i in ids], 0.27,
            color=BARS[name],
        )  # fmt: skip
    labels = []
    for i in ids:
        tokens = counter.count(s.node_text(i))
        mark = " ✓" if i in kept else ""
        labels.append("   " * depth_of[i] + _short(_label(doc, i), 28) + f" ({tokens}){mark}")
    ax_sub.set_yticks(ys)
    ax_sub.set_yticklabels(labels, fontsize=7)
    for tick, i in zip(ax_sub.get_yticklabels(), ids, strict=True):
        if i in kept:
            tick.set_color(KEPT)
    ax_sub.set_xlim(0, 1.05)
    ax_sub.tick_params(axis="x", labelsize=7)
    ax_sub.set_title(
        "Best-scored section: its nodes' scores (tokens; ✓ kept)", fontsize=8.5, loc="left"
    )
    for side in ("top", "right"):
        ax_sub.spines[side].set_visible(False)

    fig.text(0.01, 0.006, textwrap.fill(note, 190), fontsize=7.5, color="#5b6776")
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    """Refine, draw; print what was drawn."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--doc", default=DEFAULT_DOC, help="CUAD contract id (cuad_NN).")
    parser.add_argument("--topic", default=DEFAULT_TOPIC, help="CUAD question topic.")
    parser.add_argument("--selection", choices=("title-words", "none"), default="title-words")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    quiet_bm25s()
    result, item, counter, seconds = refine(args.doc, args.topic, args.selection)
    doc = result.documents[0]
    step3 = (
        "an instant stand-in (outline titles sharing a word with the question)"
        if args.selection == "title-words"
        else "off"
    )
    note = (
        f"CUAD contract {args.doc} (shared LongEval data), question on {args.topic!r}; "
        f"sections from the contract's numbering, local scores by all-MiniLM-L6-v2 + BM25, "
        f"step 1 off, step 3 by {step3}; budget {BUDGET} Llama-3.2 tokens."
    )
    draw(result, item, counter, args.out, note)
    found = any(" ".join(a.split()) in " ".join(result.text.split()) for a in item.answers)
    print(
        f"{args.out}: {len(doc.structure.tree)} nodes ({doc.structure.source}), chosen "
        f"{list(doc.selection.names)}, kept {doc.kept}, {result.tokens} tokens, "
        f"answer kept: {found}, refined in {seconds:.1f} s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
