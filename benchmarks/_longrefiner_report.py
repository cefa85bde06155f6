"""The LongRefiner benchmark's report: ``results/longrefiner.md`` and ``.png`` from its JSON."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["plot", "render_markdown"]

METRIC_LABELS = {
    "containment": "answer containment",
    "option_recall": "gold option word recall",
}
HALF_NAMES = {"tune": "tuning half", "check": "checking half"}
OURS = ("longrefiner", "longrefiner-lm")
STEPS = ("analysis", "structure", "selection", "scoring", "fill")


def _f(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def _s(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:.3f}" if value < 10 else f"{value:.1f}"


def _table(header: Sequence[str], align: str, rows: Sequence[Sequence[str]]) -> list[str]:
    marks = {"l": "---", "r": "---:"}
    return [
        "| " + " | ".join(header) + " |",
        "|" + "|".join(marks[a] for a in align) + "|",
        *("| " + " | ".join(r) + " |" for r in rows),
    ]


def _sizes(docs: dict[str, Any]) -> str:
    tokens = [int(d["tokens"]) for d in docs.values()]
    if not tokens:
        return "0"
    lo, hi = min(tokens), max(tokens)
    return f"{lo:,}" if lo == hi else f"{lo:,}–{hi:,}"


def render_markdown(res: dict[str, Any]) -> str:
    """The report as Markdown (headings from ``#``; ``benchmarks.run`` demotes them a level)."""
    budgets = [str(b) for b in res["budgets"]]
    hw = res["hardware"]
    cache = res["cache"]
    lines = [
        f"# LongRefiner benchmark ({res['mode']} mode)",
        "",
        f"CPU: {hw.get('cpu')} ({hw.get('cores')} cores, GPU: {hw.get('gpu') or 'none'}, load "
        f"average at the end {hw.get('load_avg_at_end')}); hrefine "
        f"{res['versions'].get('hrefine')}; run {res['created']}, {res['wall_s']:.0f} s. Budgets "
        f"in {res['tokenizer']} tokens; embedder {res['embedder']}. Model-made structures: "
        f"{cache['structures_made']} made in this run, {cache['structures_cached_before']} "
        f"were in the cache (`{cache['folder']}`).",
        "",
        *(f"- **{name}**: {text}." for name, text in res["settings"].items()),
        "",
        f"Questions: {res['selection']['rule']}. Halves: {res['selection']['halves']}.",
        "",
    ]
    lines += _targets(res)
    lines += ["## Quality", ""]
    for ds, block in res["datasets"].items():
        metric = block["metric"]
        label = METRIC_LABELS.get(metric, metric)
        rows = [["**full text (ceiling)**", *([_f(block["ceiling"])] * len(budgets))]]
        rows += [[n, *(_f(block["table"][n].get(b)) for b in budgets)] for n in block["methods"]]
        lines += [
            f"### {ds}: {label} ({block['n_questions']} questions, {block['n_documents']} "
            f"documents of {_sizes(block['documents'])} tokens)",
            "",
            *_table(["method", *budgets], "l" + "r" * len(budgets), rows),
            "",
            *(f"_Not run: {name}: {why}._\n" for name, why in (block.get("not_run") or {}).items()),
        ]
        if block.get("mode_quick") and block.get("lm_questions"):
            lines += [
                f"_longrefiner-lm ran on {len(block['lm_questions'])} of these questions only "
                "(SmolLM2 on the CPU); its row is their mean, and the off → on table below "
                "compares both rows on those questions._",
                "",
            ]
        rows = []
        for half in ("tune", "check"):
            part = block["halves"].get(half) or {}
            if not part.get("n_questions"):
                continue
            name = f"{HALF_NAMES[half]} ({part['n_questions']} q, {part['n_documents']} docs)"
            rows.append([f"**{name}: ceiling**", *([_f(part.get("ceiling"))] * len(budgets))])
            for n in block["methods"]:
                rows.append(
                    [f"{HALF_NAMES[half]}: {n}", *(_f(part["table"][n].get(b)) for b in budgets)]
                )
        if rows:
            lines += [
                f"{ds} by half:",
                "",
                *_table(["half: method", *budgets], "l" + "r" * len(budgets), rows),
                "",
            ]
    lines += _model_delta(res, budgets)
    lines += _steps(res)
    lines += _structures(res)
    lines += _costs(res)
    return "\n".join(lines).rstrip() + "\n"


def _targets(res: dict[str, Any]) -> list[str]:
    tg = res.get("targets") or {}
    rows = []
    for name, per in tg.items():
        for part, t in per.items():
            rows.append(
                [
                    name,
                    "all questions" if part == "all" else HALF_NAMES.get(part, part),
                    _f(t["value"]),
                    "yes" if t["meets_target"] else "**no**",
                    f"{t['best_baseline']} {_f(t['best_baseline_value'])}",
                    "yes" if t["ahead_of_every_baseline"] else "**no**",
                ]
            )
    if not rows:
        return []
    return [
        "## Target (CUAD, 1024 tokens, answer containment)",
        "",
        "At least 0.72, and ahead of every baseline.",
        "",
        *_table(
            ["method", "questions", "value", ">= 0.72", "best baseline", "ahead"], "lllrll", rows
        ),
        "",
    ]


def _model_delta(res: dict[str, Any], budgets: Sequence[str]) -> list[str]:
    """``longrefiner-lm`` minus ``longrefiner``: what the model steps buy or cost."""
    rows = []
    for ds, block in res["datasets"].items():
        if block.get("mode_quick") and block.get("lm_table"):
            # Quick mode: the model row ran on a few questions; both rows on those.
            n = len(block.get("lm_questions", []))
            parts = [(f"{n} questions the model row ran on", {"table": block["lm_table"]})]
        else:
            parts = [
                ("all", block),
                *((h, block["halves"].get(h) or {}) for h in ("tune", "check")),
            ]
        for part, tb in parts:
            table = tb.get("table") or {}
            off, on = table.get("longrefiner"), table.get("longrefiner-lm")
            if off is None or on is None:
                continue
            cells = []
            for b in budgets:
                a, c = on.get(b), off.get(b)
                cells.append("—" if a is None or c is None else f"{_f(c)} → {_f(a)} ({a - c:+.3f})")
            label = HALF_NAMES.get(part, part) if part != "all" else "all"
            rows.append([ds, label, *cells])
    if not rows:
        return []
    steps = []
    for ds, block in res["datasets"].items():
        m = block.get("model_steps") or {}
        if not m:
            continue
        sources = ", ".join(f"{k} {v}" for k, v in m["selection_sources"].items())
        steps.append(
            [
                ds,
                str(m["questions"]),
                str(m["global"]),
                f"{m['mean_w_global']:.2f}",
                sources,
                f"{m['mean_sections_chosen']:.1f}",
            ]
        )
    out = [
        "## Model steps off → on (longrefiner → longrefiner-lm)",
        "",
        "The same questions without a model (fixed 0.5/0.5 weights, no section chosen) and with "
        "SmolLM2-135M running query analysis and global selection (and structuring documents "
        "that have no markup); in brackets what the model steps change.",
        "",
        *_table(["dataset", "questions", *budgets], "ll" + "r" * len(budgets), rows),
        "",
    ]
    if steps:
        out += [
            "What the model did, per question: queries it called global, the mean global "
            "weight, how its section choices were read (`lm`: parsed; `fallback`: it named no "
            "section of the outline) and the mean number of sections it chose.",
            "",
            *_table(
                ["dataset", "questions", "global", "mean w_global", "selection", "sections"],
                "lrrrlr",
                steps,
            ),
            "",
        ]
    return out


def _steps(res: dict[str, Any]) -> list[str]:
    rows = []
    for ds, block in res["datasets"].items():
        for name in OURS:
            st = (block.get("steps") or {}).get(name) or {}
            if not st:
                continue
            rows.append(
                [
                    ds,
                    name,
                    *(_s(st.get(k)) for k in STEPS),
                    _s(st.get("total")),
                    _s(st.get("as_run")),
                ]
            )
    if not rows:
        return []
    return [
        "## Time per document, by step (seconds)",
        "",
        "One refinement of one document for one question at one budget, the mean over the "
        "calls: each step as computing it cost (the run reuses the structure across a "
        "document's questions and the analysis and selection across a question's budgets; "
        "`as run` is the mean call with that reuse). A structure loaded from the cache counts "
        "its load time.",
        "",
        *_table(
            ["dataset", "method", *STEPS, "total", "as run"], "ll" + "r" * (len(STEPS) + 2), rows
        ),
        "",
    ]


def _structures(res: dict[str, Any]) -> list[str]:
    rows = []
    for ds, block in res["datasets"].items():
        for s in block.get("structures", []):
            rows.append(
                [
                    ds,
                    s["doc_id"],
                    s["half"],
                    f"{s['tokens']:,}",
                    s["method"],
                    s["source"],
                    str(s["sections"]),
                    str(s["leaves"]),
                    f"{s['coverage']:.3f}",
                    _s(s["structure_s"]),
                ]
            )
    if not rows:
        return []
    low = [r for r in rows if float(r[8]) < 1.0]
    return [
        "## Structures",
        "",
        "Where each document's structure came from (`numbered` clauses, `headings`, `html`, "
        "`markdown`, `paragraphs`, or the `model`), its titled sections and leaves, and its "
        "coverage (share of the text's non-space characters in its leaves and headings; must be "
        "1.0)" + (f": **{len(low)} below 1.0**." if low else ": 1.0 everywhere."),
        "",
        *_table(
            [
                "dataset",
                "document",
                "half",
                "tokens",
                "method",
                "source",
                "sections",
                "leaves",
                "coverage",
                "structure s",
            ],
            "lllrllrrrr",
            rows,
        ),
        "",
    ]


def _costs(res: dict[str, Any]) -> list[str]:
    rows = []
    for ds, block in res["datasets"].items():
        for name, c in block["costs"].items():
            rows.append(
                [
                    ds,
                    name,
                    f"{c['wall_s']:.1f}",
                    f"{c['median_call_ms']:.1f}",
                    str(c["over_budget"]),
                    str(c["n_errors"]),
                ]
            )
    return [
        "## Cost and checks",
        "",
        "Wall seconds of each method on the dataset's questions at every budget (as run, reuse "
        "in), the median call, outputs over the budget and errors.",
        "",
        *_table(
            ["dataset", "method", "wall s", "median ms", "over budget", "errors"], "llrrrr", rows
        ),
        "",
    ]


def plot(res: dict[str, Any], path: Path) -> Path:
    """One panel per dataset (its metric by budget, all questions), the ceiling dashed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    blocks = list(res["datasets"].items())
    cols = 2
    rows = (len(blocks) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(6 * cols, 4 * rows), squeeze=False)
    budgets = res["budgets"]
    styles = {"lead-text": ":", "chunks-bm25": "--", "chunks-embedding": "--", "htmlrag": "-."}
    names = list(dict.fromkeys(n for _, b in blocks for n in b["methods"]))
    palette = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    colours = {n: palette[i % len(palette)] for i, n in enumerate(names)}
    for ax, (ds, block) in zip(axes.flat, blocks, strict=False):
        metric = block["metric"]
        for name in block["methods"]:
            ys = [block["table"][name].get(str(b)) for b in budgets]
            ax.plot(
                budgets,
                [float("nan") if y is None else y for y in ys],
                styles.get(name, "-"),
                color=colours[name],
                marker="o",
                linewidth=2.5 if name in OURS else 1.2,
                label=name,
            )
        if block.get("ceiling") is not None:
            ax.axhline(
                block["ceiling"], color="black", linestyle="-.", linewidth=1, label="full text"
            )
        ax.set_xscale("log", base=2)
        ax.set_xticks(budgets, [str(b) for b in budgets])
        ax.set_ylim(0, 1.05)
        ax.set_title(f"{ds} ({block['n_questions']} q)")
        ax.set_xlabel("budget (tokens)")
        ax.set_ylabel(METRIC_LABELS.get(metric, metric))
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(blocks) :]:
        ax.axis("off")
    legend: dict[str, Any] = {}  # every method of every panel, once
    for ax in axes.flat:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            legend.setdefault(label, handle)
    fig.legend(list(legend.values()), list(legend), loc="lower center", ncol=4, fontsize=8)
    fig.suptitle(f"LongRefiner ({res['mode']})")
    fig.tight_layout(rect=(0, 0.08, 1, 0.97))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
