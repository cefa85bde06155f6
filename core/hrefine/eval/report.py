"""Reports of evaluation results: JSON, Markdown tables and a recall-vs-budget plot.

The Markdown and the PNG are rendered from the JSON data alone (:func:`results_to_json`), so a
stored result file can be re-rendered without re-running anything.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hrefine._atomic import write_text
from hrefine.eval.environment import run_meta
from hrefine.eval.results import EvalResult

__all__ = ["markdown_tables", "plot_results", "results_to_json", "write_report"]

SCHEMA = "hrefine-eval/1"

_METRIC_LABELS = {
    "containment": "answer containment",
    "support_recall": "supporting-paragraph recall",
    "fact_recall": "supporting-sentence recall",
    "token_recall": "gold-text token recall",
    "option_recall": "gold-option word recall",
    "reader_em": "reader EM",
    "reader_f1": "reader F1",
}


def results_to_json(
    results: Sequence[EvalResult],
    *,
    meta: dict[str, Any] | None = None,
    include_items: bool = False,
) -> dict[str, Any]:
    """The JSON document for a set of results.

    Parameters
    ----------
    results:
        Results of :func:`hrefine.eval.run_eval` / :func:`hrefine.eval.run_many`.
    meta:
        Extra metadata merged over the run's environment (versions, hardware, seed…).
    include_items:
        Include every per-item row.

    Returns
    -------
    dict[str, Any]
        ``{"schema", "meta", "runs": [...]}``.
    """
    info = run_meta(results)
    if meta:
        info.update(meta)
    return {
        "schema": SCHEMA,
        "meta": info,
        "runs": [r.to_dict(include_items=include_items) for r in results],
    }


def _fmt(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _dataset_title(run: dict[str, Any]) -> str:
    name = str(run["dataset"])
    if name == "wtq" and run.get("meta", {}).get("strict_only"):
        return "wtq (strict)"
    return name


def markdown_tables(data: dict[str, Any]) -> str:
    """Markdown for a results JSON: a quality table and a cost table.

    Quality: one row per (dataset, metric, method), one column per budget. Cost: mean tokens
    in, tokens out per budget, milliseconds per ``compress`` call at the smallest budget (the
    first call on an item, before any per-document cache of the method is warm), over-budget
    outputs and errors.

    Parameters
    ----------
    data:
        Output of :func:`results_to_json` (or the loaded JSON file).

    Returns
    -------
    str
        The tables (and a list of skipped runs, if any).
    """
    runs = [r for r in data.get("runs", []) if not r.get("skipped")]
    budgets = sorted({b for r in runs for b in r["budgets"]})
    head = " | ".join(str(b) for b in budgets)
    sep = "|".join("---:" for _ in budgets)
    lines = [
        f"| dataset | n | metric | method | {head} |",
        f"|---|---:|---|---|{sep}|",
    ]
    for run in runs:
        by_budget = {s["budget"]: s for s in run["summaries"]}
        for metric in run["metrics"]:
            vals = [by_budget.get(b, {}).get("metrics", {}).get(metric) for b in budgets]
            if all(v is None for v in vals):
                continue
            scored = max((by_budget[b]["scored"].get(metric, 0) for b in by_budget), default=0)
            lines.append(
                f"| {_dataset_title(run)} | {scored} | {_METRIC_LABELS.get(metric, metric)} | "
                f"{run['method']} | " + " | ".join(_fmt(v) for v in vals) + " |"
            )
    cost = [
        "| dataset | method | tokens in | "
        + " | ".join(f"out@{b}" for b in budgets)
        + f" | ms/item@{budgets[0] if budgets else ''} | over budget | errors |",
        "|---|---|---:|" + "|".join("---:" for _ in budgets) + "|---:|---:|---:|",
    ]
    for run in runs:
        by_budget = {s["budget"]: s for s in run["summaries"]}
        first = run["summaries"][0] if run["summaries"] else {}
        cold = by_budget.get(budgets[0], {}) if budgets else {}
        outs = [by_budget.get(b, {}).get("tokens_out") for b in budgets]
        over = sum(s["over_budget"] for s in run["summaries"])
        errors = sum(s["errors"] for s in run["summaries"])
        cost.append(
            f"| {_dataset_title(run)} | {run['method']} | {first.get('tokens_in', 0):.0f} | "
            + " | ".join("–" if o is None else f"{o:.0f}" for o in outs)
            + f" | {cold.get('ms_per_item', 0):.1f} | {over} | {errors} |"
        )
    out = ["### Quality", "", *lines, "", "### Cost", "", *cost]
    skipped = [r for r in data.get("runs", []) if r.get("skipped")]
    if skipped:
        out += ["", "Skipped:", ""]
        out += [f"- {r['method']} on {r['dataset']}: {r['skipped']}" for r in skipped]
    return "\n".join(out) + "\n"


def _panels(runs: Sequence[dict[str, Any]]) -> list[tuple[str, str]]:
    panels: list[tuple[str, str]] = []
    for run in runs:
        wanted = [m for m in run["metrics"] if m != "fact_recall"]
        for metric in wanted:
            has = any(s["metrics"].get(metric) is not None for s in run["summaries"])
            if has and (run["dataset"], metric) not in panels:
                panels.append((run["dataset"], metric))
    return panels


def plot_results(data: dict[str, Any], path: str | os.PathLike[str], *, title: str = "") -> Path:
    """Plot recall against budget: one panel per (dataset, metric), one line per method.

    Parameters
    ----------
    data:
        Output of :func:`results_to_json` (or the loaded JSON file).
    path:
        PNG file to write.
    title:
        Figure title.

    Returns
    -------
    Path
        The written file.
    """
    from hrefine._optional import require

    require("matplotlib", "eval")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = [r for r in data.get("runs", []) if not r.get("skipped") and r["summaries"]]
    panels = _panels(runs) or [("(no results)", "")]
    methods = list(dict.fromkeys(r["method"] for r in runs))
    colors = plt.get_cmap("tab10")
    markers = "osD^vP*Xh"
    ncols = min(4, len(panels))
    nrows = math.ceil(len(panels) / ncols)
    top = 0.45 + (0.4 if title else 0.0)  # inches above the panels: title and legend
    height = 3.3 * nrows + top
    fig, axes = plt.subplots(
        nrows, ncols, figsize=(4.0 * ncols, height), squeeze=False, sharey=True
    )
    for ax, (dataset, metric) in zip(axes.flat, panels, strict=False):
        n = 0
        for run in runs:
            if run["dataset"] != dataset:
                continue
            pts = [
                (s["budget"], s["metrics"][metric])
                for s in run["summaries"]
                if s["metrics"].get(metric) is not None
            ]
            if not pts:
                continue
            n = max(n, max(s["scored"].get(metric, 0) for s in run["summaries"]))
            k = methods.index(run["method"])
            ax.plot(
                [float(p[0]) for p in pts],  # a budget past 2**64 is no numpy integer
                [p[1] for p in pts],
                marker=markers[k % len(markers)],
                color=colors(k % 10),
                label=run["method"],
                linewidth=2,
                markersize=6,
            )
        budgets = sorted({s["budget"] for r in runs for s in r["summaries"]})
        if budgets:
            ax.set_xscale("log", base=2)
            ax.set_xticks([float(b) for b in budgets])
            ax.set_xticklabels([str(b) for b in budgets])
            ax.minorticks_off()
        ax.set_ylim(-0.02, 1.04)
        ax.grid(True, alpha=0.3)
        ax.set_title(f"{dataset} (n={n})\n{_METRIC_LABELS.get(metric, metric)}", fontsize=10)
        ax.set_xlabel("token budget", fontsize=9)
    for ax in axes.flat[len(panels) :]:
        ax.set_visible(False)
    for row in axes:
        row[0].set_ylabel("score (fraction)", fontsize=9)
    handles, labels = [], []
    for ax in axes.flat:
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    if title:
        fig.suptitle(title, fontsize=12, y=1 - 0.08 / height)
    if handles:
        fig.legend(
            handles,
            labels,
            loc="upper center",
            bbox_to_anchor=(0.5, 1 - (top - 0.45) / height),
            ncol=min(len(labels), 6),
            frameon=False,
            fontsize=10,
        )
    fig.tight_layout(rect=(0, 0, 1, 1 - (top - 0.1) / height))
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def write_report(
    results: Sequence[EvalResult],
    out_dir: str | os.PathLike[str],
    *,
    name: str = "eval",
    meta: dict[str, Any] | None = None,
    include_items: bool = True,
    title: str = "",
) -> dict[str, Path]:
    """Write ``<name>.json``, ``<name>.md`` and ``<name>.png`` under ``out_dir``.

    Parameters
    ----------
    results:
        The results.
    out_dir:
        Output folder (created).
    name:
        Base file name.
    meta:
        Extra metadata for the JSON.
    include_items:
        Keep per-item rows in the JSON.
    title:
        Plot and Markdown title.

    Returns
    -------
    dict[str, Path]
        ``{"json": …, "md": …, "png": …}``.
    """
    folder = Path(out_dir)
    folder.mkdir(parents=True, exist_ok=True)
    data = results_to_json(results, meta=meta, include_items=include_items)
    paths = {ext: folder / f"{name}.{ext}" for ext in ("json", "md", "png")}
    text = json.dumps(data, indent=1, ensure_ascii=False)
    write_text(paths["json"], text + "\n")  # atomic: a failed run keeps the last report
    heading = f"## {title or name}\n\n"
    write_text(paths["md"], heading + markdown_tables(data))
    plot_results(data, paths["png"], title=title)
    return paths
