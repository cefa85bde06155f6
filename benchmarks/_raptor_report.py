"""The RAPTOR benchmark's report: ``results/raptor.md`` and ``results/raptor.png`` from its JSON."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["plot", "render_markdown"]

METRIC_LABELS = {
    "containment": "answer containment",
    "option_recall": "gold option word recall",
    "support_recall": "supporting-paragraph recall",
}
BASELINES = ("lead-text", "chunks-bm25", "chunks-embedding")


def _f(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def _table(header: Sequence[str], align: str, rows: Sequence[Sequence[str]]) -> list[str]:
    marks = {"l": "---", "r": "---:"}
    return [
        "| " + " | ".join(header) + " |",
        "|" + "|".join(marks[a] for a in align) + "|",
        *("| " + " | ".join(r) + " |" for r in rows),
    ]


def _raptor_rows(table: dict[str, Any]) -> list[str]:
    return [m for m in table if m not in BASELINES]


def render_markdown(res: dict[str, Any]) -> str:
    """The report as Markdown (headings from ``#``; ``benchmarks.run`` demotes them a level)."""
    budgets = [str(b) for b in res["budgets"]]
    hw = res["hardware"]
    cache = res["cache"]
    lines = [
        f"# RAPTOR benchmark ({res['mode']} mode)",
        "",
        f"CPU: {hw.get('cpu')} ({hw.get('cores')} cores, GPU: {hw.get('gpu') or 'none'}, load "
        f"average at the end {hw.get('load_avg_at_end')}); hrefine "
        f"{res['versions'].get('hrefine')}; run {res['created']}, {res['wall_s']:.0f} s; trees "
        f"built {cache['trees_built']}, loaded from the cache {cache['trees_loaded']} "
        f"(`{cache['folder']}`). Budgets in {res['tokenizer']} tokens; embedder "
        f"{res['embedder']}.",
        "",
        *(
            [
                f"**The cached trees were built by other RAPTOR code** "
                f"({cache['built_with_code']}, now {cache['code_now']}).",
                "",
            ]
            if cache.get("stale")
            else []
        ),
        f"Settings: {res['settings']}. Summaries: "
        + "; ".join(f"**{k}**: {v}" for k, v in res["summarisers"].items())
        + f". Questions: {res['selection']['rule']}.",
        "",
    ]
    tg = res.get("targets") or {}
    if tg:
        rows = []
        for name, t in tg.items():
            rows.append(
                [
                    name,
                    _f(t["value"]),
                    _f(t["ceiling"]),
                    "yes" if t["within_2_points_of_ceiling"] else "**no**",
                    f"{t['best_baseline']} {_f(t['best_baseline_value'])}",
                    "yes" if t["ahead_of_every_baseline"] else "**no**",
                ]
            )
        lines += [
            "## Targets (Qasper, 1024 tokens, answer containment)",
            "",
            "Within 2 points of the full-text ceiling, and ahead of every baseline.",
            "",
            *_table(
                ["method", "value", "ceiling", "within 2 points", "best baseline", "ahead"],
                "lrrlll",
                rows,
            ),
            "",
        ]
    lines += ["## Quality", ""]
    for ds, block in res["datasets"].items():
        for metric in block["metrics"]:
            ceil = block["ceiling"].get(metric)
            rows = [["**full text (ceiling)**", *([_f(ceil)] * len(budgets))]]
            for name, entry in block["table"].items():
                rows.append([name, *(_f(entry[metric].get(b)) for b in budgets)])
            lines += [
                f"### {ds}: {METRIC_LABELS.get(metric, metric)} ({block['n_questions']} questions"
                f"{_scored(block, metric)}, {block['n_documents']} documents of "
                f"{_sizes(block['doc_tokens'])} tokens)",
                "",
                *_table(["method", *budgets], "l" + "r" * len(budgets), rows),
                "",
            ]
        if not any("SmolLM2" in name for name in block["table"]):
            lines += [
                f"_No SmolLM2 rows on {ds} in {res['mode']} mode: its summaries cost minutes of "
                "CPU per document (see the selection above)._",
                "",
            ]
    lines += _summary_delta(res, budgets)
    lines += ["## Cost", ""]
    rows = []
    for ds, block in res["datasets"].items():
        for name, c in block["costs"].items():
            if name in BASELINES:
                continue
            rows.append(
                [
                    ds,
                    name,
                    str(c.get("trees_built", "")),
                    str(c.get("trees_loaded", "")),
                    f"{c.get('build_s', 0):.1f}",
                    str(c.get("llm_calls", "")),
                    f"{c['median_call_ms']:.1f}",
                    str(c["over_budget"]),
                    str(c["n_errors"]),
                ]
            )
    lines += [
        "Tree building (this run; a tree loaded from the cache costs nothing here) and the "
        "median time of one `compress` call (retrieval and joining, the tree already made).",
        "",
        *_table(
            [
                "dataset",
                "method",
                "trees built",
                "loaded",
                "build s",
                "LLM calls",
                "ms per call",
                "over budget",
                "errors",
            ],
            "llrrrrrrr",
            rows,
        ),
        "",
    ]
    rows = []
    for ds, per in res["tree_shapes"].items():
        for label, shapes in per.items():
            layers = ", ".join("/".join(str(n) for n in s["nodes_per_layer"] or []) for s in shapes)
            secs = [s["build_seconds"] for s in shapes if s.get("build_seconds") is not None]
            rows.append(
                [
                    ds,
                    label,
                    str(len(shapes)),
                    layers,
                    str(sum(s.get("summaries") or 0 for s in shapes)),
                    f"{sum(secs):.0f}" if secs else "—",
                ]
            )
    lines += [
        "## Trees",
        "",
        "Nodes per layer (leaves first) of each document's tree, its summaries (one LLM call "
        "each), and the seconds the builds took where they were built in this run (a tree "
        "loaded from the cache has no build time; see the cost table of the run that built it).",
        "",
        *_table(
            ["dataset", "summaries by", "documents", "nodes per layer", "summaries", "build s"],
            "llrlrr",
            rows,
        ),
        "",
    ]
    return "\n".join(lines).rstrip() + "\n"


def _scored(block: dict[str, Any], metric: str) -> str:
    """ ", N scored" when some questions have no gold for the headline metric (yes/no answers)."""
    if metric != block["metrics"][0]:
        return ""
    per = block.get("per_question", {})
    scored = sum(
        1 for hits in per.values() if any(v is not None for m in hits.values() for v in m.values())
    )
    return f", {scored} scored" if per and scored != block["n_questions"] else ""


def _sizes(tokens: Sequence[int]) -> str:
    if not tokens:
        return "0"
    lo, hi = min(tokens), max(tokens)
    return f"{lo:,}" if lo == hi else f"{lo:,}–{hi:,}"


def _summary_delta(res: dict[str, Any], budgets: Sequence[str]) -> list[str]:
    """SmolLM2's summaries minus the extractive ones, per dataset, mode and budget."""
    rows = []
    for ds, block in res["datasets"].items():
        metric = block["metrics"][0]
        table = block["table"]
        for mode in ("raptor", "raptor-traversal"):
            smol, ext = table.get(f"{mode} (SmolLM2-135M)"), table.get(f"{mode} (extractive)")
            if smol is None or ext is None:
                continue
            cells = []
            for b in budgets:
                a, c = smol[metric].get(b), ext[metric].get(b)
                cells.append("—" if a is None or c is None else f"{a - c:+.3f}")
            rows.append([ds, metric, mode, *cells])
    if not rows:
        return []
    return [
        "## What the summaries do (SmolLM2-135M minus extractive)",
        "",
        "Positive: the 135M model's summaries did better than the leading sentences.",
        "",
        *_table(["dataset", "metric", "mode", *budgets], "lll" + "r" * len(budgets), rows),
        "",
    ]


def plot(res: dict[str, Any], path: Path) -> Path:
    """One panel per dataset (its headline metric by budget), the ceiling dashed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    blocks = list(res["datasets"].items())
    cols = 2
    rows = (len(blocks) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(6 * cols, 4 * rows), squeeze=False)
    budgets = res["budgets"]
    styles = {"lead-text": ":", "chunks-bm25": "--", "chunks-embedding": "--"}
    # One colour per method across panels (a panel may lack some methods).
    names = list(dict.fromkeys(n for _, b in blocks for n in b["table"]))
    palette = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    colours = {n: palette[i % len(palette)] for i, n in enumerate(names)}
    for ax, (ds, block) in zip(axes.flat, blocks, strict=False):
        metric = block["metrics"][0]
        for name, entry in block["table"].items():
            ys = [entry[metric].get(str(b)) for b in budgets]
            ax.plot(
                budgets,
                [float("nan") if y is None else y for y in ys],
                styles.get(name, "-"),
                color=colours[name],
                marker="o",
                label=name,
            )
        ceil = block["ceiling"].get(metric)
        if ceil is not None:
            ax.axhline(ceil, color="black", linestyle="-.", linewidth=1, label="full text")
        ax.set_xscale("log", base=2)
        ax.set_xticks(budgets, [str(b) for b in budgets])
        ax.set_ylim(0, 1.05)
        ax.set_title(f"{ds} ({block['n_questions']} q)")
        ax.set_xlabel("budget (tokens)")
        ax.set_ylabel(METRIC_LABELS.get(metric, metric))
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(blocks) :]:
        ax.axis("off")
    handles, labels = max(
        (ax.get_legend_handles_labels() for ax in axes.flat), key=lambda hl: len(hl[1])
    )
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=8)
    fig.suptitle(f"RAPTOR ({res['mode']})")
    fig.tight_layout(rect=(0, 0.08, 1, 0.97))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
