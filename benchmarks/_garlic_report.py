"""The GARLIC benchmark's report: ``results/garlic.md`` and ``results/garlic.png`` from its JSON."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["plot", "render_markdown"]

METRIC_LABELS = {
    "containment": "answer containment",
    "support_recall": "supporting-paragraph recall",
    "both_kept": "both supporting paragraphs kept",
}


def _f(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    return [
        "| " + " | ".join(header) + " |",
        "|---|" + "---:|" * (len(header) - 1),
        *("| " + " | ".join(r) + " |" for r in rows),
    ]


def render_markdown(res: dict[str, Any]) -> str:
    """The report as Markdown."""
    budgets = [str(b) for b in res["budgets"]]
    hw = res["hardware"]
    out = [
        f"# GARLIC benchmark ({res['mode']})",
        "",
        f"{res['created']} · {res['wall_s']} s · tokenizer {res['tokenizer']} · "
        f"{hw.get('cores', '?')} cores, load {hw.get('load_avg_at_end')} · seed {res['seed']}",
        "",
        f"Selection: {res['selection']}.",
        "",
    ]
    out += [f"- **{name}**: {text}" for name, text in res["methods"].items()]
    for ds, block in res["datasets"].items():
        metrics = block["metrics"]
        out += ["", f"## {ds} ({block['n_questions']} questions, {block['n_documents']} docs)", ""]
        header = ["method"] + [f"{METRIC_LABELS.get(m, m)} @{b}" for m in metrics for b in budgets]
        header += [f"tokens @{b}" for b in budgets]
        rows = [
            [name]
            + [_f(entry[m][b]) for m in metrics for b in budgets]
            + [_f(entry["tokens_out_mean"][b]).rstrip("0").rstrip(".") for b in budgets]
            for name, entry in block["table"].items()
        ]
        ceil = block["ceiling"]
        rows.append(
            ["full text"]
            + [_f(ceil.get(m)) for m in metrics for _ in budgets]
            + ["—"] * len(budgets)
        )
        out += _table(header, rows)
        searched = {n: c["search"] for n, c in block["costs"].items() if "search" in c}
        if searched:
            out += ["", "GARLIC search costs (per budget):", ""]
            srows = []
            for name, cost in searched.items():
                for b in budgets:
                    c = cost.get(b)
                    if c is None:
                        continue
                    saving = "—" if c["kv_saving"] is None else f"{100 * c['kv_saving']:.0f}%"
                    srows.append(
                        [
                            f"{name} @{b}",
                            str(c["prefilled_tokens"]),
                            str(c["recompute_tokens"]),
                            saving,
                            f"{c['visited_mean']:.1f}",
                            f"{c['leaves_mean']:.1f}",
                            f"{c['steps_mean']:.1f}",
                            f"{c['said_yes']:.2f}",
                            f"{c['search_s_median']:.3f}",
                        ]
                    )
                srows.append(
                    [f"{name} graph builds", "", "", "", "", "", "", "", f"{cost['build_s']}"]
                )
            out += _table(
                [
                    "method",
                    "pre-filled tokens",
                    "recompute tokens",
                    "KV saving",
                    "visited",
                    "leaves",
                    "steps",
                    "said Yes",
                    "search s (median; builds: total)",
                ],
                srows,
            )
        errors = {n: c["n_errors"] for n, c in block["costs"].items() if c["n_errors"]}
        over = {n: c["over_budget"] for n, c in block["costs"].items() if c["over_budget"]}
        if errors or over:
            out += ["", f"Errors: {errors or 'none'}; over budget: {over or 'none'}."]
    return "\n".join(out) + "\n"


def plot(res: dict[str, Any], path: Path) -> Path:
    """One panel per dataset block: its headline metric by method at each budget."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    blocks = list(res["datasets"].items())
    budgets = [str(b) for b in res["budgets"]]
    fig, axes = plt.subplots(1, len(blocks), figsize=(5 * len(blocks), 4), squeeze=False)
    for ax, (ds, block) in zip(axes.flat, blocks, strict=False):
        metric = block["metrics"][0]
        names = list(block["table"])
        width = 0.8 / max(len(budgets), 1)
        for k, b in enumerate(budgets):
            ys = [block["table"][n][metric][b] for n in names]
            xs = [i + k * width for i in range(len(names))]
            ax.bar(xs, [0.0 if y is None else y for y in ys], width, label=f"{b} tokens")
        ceil = block["ceiling"].get(metric)
        if ceil is not None:
            ax.axhline(ceil, color="black", linestyle="-.", linewidth=1, label="full text")
        ax.set_xticks([i + width * (len(budgets) - 1) / 2 for i in range(len(names))])
        ax.set_xticklabels(names, rotation=30, ha="right", fontsize=8)
        ax.set_ylim(0, 1.05)
        ax.set_title(f"{ds} ({block['n_questions']} q)", fontsize=9)
        ax.set_ylabel(METRIC_LABELS.get(metric, metric))
        ax.grid(alpha=0.3, axis="y")
    axes.flat[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
