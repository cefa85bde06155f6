"""Method names, targets, the markdown tables and the plot of the HtmlRAG benchmark.

Everything here reads only the result dict (``results/htmlrag.json``), so ``--replot`` can
re-render the page and the figure without running anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "HARDWARE_NOTE",
    "HTML_OUTPUT",
    "METHODS",
    "M_BM25_CHUNKS",
    "M_EMBED_CHUNKS",
    "M_LEAD_HTML",
    "M_LEAD_TEXT",
    "M_OURS_BM25",
    "M_OURS_EMBED",
    "M_OURS_GEN",
    "M_REF_EMBED",
    "TARGETS",
    "plot",
    "render_markdown",
]

# Method names, in table order.
M_LEAD_HTML = "lead (cleaned HTML)"
M_LEAD_TEXT = "lead (plain text)"
M_BM25_CHUNKS = "BM25 chunks"
M_EMBED_CHUNKS = "embedding chunks"
M_OURS_EMBED = "hrefine HtmlPruner (embedding)"
M_OURS_BM25 = "hrefine HtmlPruner (bm25)"
M_REF_EMBED = "htmlrag 0.1.1 EmbedHTMLPruner"
#: The two-stage pruner (embedding stage 1, then SmolLM2-135M's generative stage 2).
M_OURS_GEN = "hrefine HtmlPruner (embedding + generative)"
METHODS = (
    M_LEAD_HTML,
    M_LEAD_TEXT,
    M_BM25_CHUNKS,
    M_EMBED_CHUNKS,
    M_REF_EMBED,
    M_OURS_BM25,
    M_OURS_EMBED,
)
#: Methods whose output is HTML (scored on its visible text).
HTML_OUTPUT = frozenset({M_LEAD_HTML, M_OURS_EMBED, M_OURS_BM25, M_REF_EMBED, M_OURS_GEN})
#: The issue's floors.
TARGETS = {
    "containment_1024": 0.95,
    "clean_tree_speedup": 10.0,
    "embed_prune_speedup": 5.0,
    "prefill_reduction": 10.0,
    "cleaning_recall": 0.98,
    # Both halves of the dev pages (hrefine.eval.loaders.half_of): the issue's targets at 1024
    # tokens on the checking half, the same floors on the tuning half.
    "wtq_tune_1024": 0.95,
    "wtq_check_1024": 0.95,
    "leval-nq_tune_1024": 0.90,
    "leval-nq_check_1024": 0.90,
}
HARDWARE_NOTE = (
    "Timings were taken on a shared 2-core CPU machine (other jobs ran at the same time); ours "
    "and the reference ran page by page, alternating, in the same run, so their ratios are "
    "comparable; absolute times are not comparable across runs."
)
_COLORS = {
    M_LEAD_HTML: "#9e9e9e",
    M_LEAD_TEXT: "#616161",
    M_BM25_CHUNKS: "#a1887f",
    M_EMBED_CHUNKS: "#26a69a",
    M_OURS_BM25: "#64b5f6",
    M_OURS_EMBED: "#0d47a1",
    M_REF_EMBED: "#e53935",
}
_STYLES: dict[str, dict[str, Any]] = {
    M_OURS_EMBED: {"lw": 3.0, "marker": "o", "ls": "-"},
    M_OURS_BM25: {"lw": 2.0, "marker": "o", "ls": "-"},
    M_REF_EMBED: {"lw": 2.5, "marker": "s", "ls": "-"},
}
_DEFAULT_STYLE: dict[str, Any] = {"lw": 1.5, "marker": ".", "ls": "--"}


def _fmt(x: float | None, spec: str = ".1%") -> str:
    return "—" if x is None else format(x, spec)


def _ms(x: float | None) -> str:
    return "—" if x is None else f"{x * 1000:,.0f} ms"


def _table(header: Sequence[str], align: str, rows: Sequence[Sequence[Any]]) -> list[str]:
    """A markdown table; ``align`` has one character per column, ``l`` or ``r``."""
    sep = ["---" if a == "l" else "---:" for a in align]
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(sep) + "|"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return out


def _target_value(t: dict[str, Any]) -> tuple[str, str]:
    v = t["value"]
    if t["kind"] == "fraction":
        return ("—" if v is None else f"{v:.1%}"), f"≥ {t['threshold']:.0%}"
    return ("—" if v is None else f"{v:.1f}×"), f"≥ {t['threshold']:.0f}×"


def _quality_md(
    title: str, q: dict[str, Any], budgets: Sequence[int], level: str = "###"
) -> list[str]:
    table = q["table"]
    rows = []
    for m in METHODS:
        t = table.get(m)
        if t is None:
            continue
        cells = [_fmt(t["containment"].get(str(b))) for b in budgets]
        mt = t["mean_tokens"].get("1024")
        extra = ["—" if mt is None else f"{mt:.0f}", t["over_budget"], t["errors"]]
        rows.append([f"**{m}**" if m == M_OURS_EMBED else m, *cells, *extra])
    header = [
        "method",
        *(f"{b} tok" for b in budgets),
        "mean tokens @1024",
        "over budget",
        "errors",
    ]
    n = max((max(t["n"].values(), default=0) for t in table.values()), default=0)
    lines = [
        f"{level} {title}",
        "",
        *_table(header, "l" + "r" * (len(budgets) + 3), rows),
        "",
        f"Answer containment over {n} questions ({q['answer_mode']} gold answers in the output's "
        "visible text, normalised). Budgets count Llama-3.2 tokens of the output as given to the "
        "reader: HTML outputs pay for their tags, plain-text outputs do not.",
    ]
    skipped = max((t.get("unscorable", 0) for t in table.values()), default=0) // len(budgets)
    if skipped:
        lines[-1] += (
            f" Left out for every method: {skipped} question(s) whose gold answer is yes/no,"
            " which containment cannot judge."
        )
    partial = [m for m in (M_REF_EMBED,) if m in table and table[m].get("missing")]
    sub = q.get("reference_subset")
    if partial and sub:
        lines[-1] += (
            f" {', '.join(partial)}: on {sub['questions']} of the {n} questions only (the "
            "reference's share of the quick suite), so its row is not comparable with the "
            "others; the next table puts every method on those questions."
        )
        lines += [""]
        lines += _quality_md(
            f"{title.split(' (')[0]}, the reference's questions ({sub['questions']} questions, "
            f"{sub['pages']} pages)",
            {"table": sub["table"], "answer_mode": q["answer_mode"]},
            budgets,
        )
    return lines


_HALF_NAMES = {"tune": "tuning half", "check": "checking half"}


def _generative_quality_md(ds: str, g: dict[str, Any]) -> list[str]:
    """Stage 1 alone beside stage 1 + the generative stage, on the same questions."""
    budgets = g["budgets"]
    rows = []
    for m in (M_OURS_EMBED, M_OURS_GEN):
        t = g["table"].get(m)
        if t is None:
            continue
        cells = [_fmt(t["containment"].get(str(b))) for b in budgets]
        secs = [f"{t['seconds'][str(b)]:.2f} s" for b in budgets]
        rows.append([m, *cells, *secs, t["over_budget"], t["errors"]])
    header = [
        "method",
        *(f"{b} tok" for b in budgets),
        *(f"s/call @{b}" for b in budgets),
        "over budget",
        "errors",
    ]
    return [
        f"#### {ds}, generative stage ({g['questions']} questions on {g['pages']} pages of the "
        "tuning half)",
        "",
        *_table(header, "l" + "r" * (2 * len(budgets) + 2), rows),
        "",
        "Stage 2 (SmolLM2-135M on the CPU, `generative=True`) reads stage 1's output at 4x the "
        "budget and keeps the blocks whose tag paths it scores best; stage 1 alone is the "
        "embedding pruner at the budget itself (its calls here mostly found the page's block "
        "vectors cached).",
    ]


def _speed_md(res: dict[str, Any]) -> list[str]:
    rows = []
    for key, label in (
        ("clean_tree", "clean + block tree (per page, best of 3 calls)"),
        ("clean_tree_first", "clean + block tree (per page, first call)"),
        ("embed_prune", "embedding pruning, cold (first question of a page, one budget)"),
        ("embed_prune_f32", "embedding pruning, cold, our embedder in float32 (same calls)"),
        ("embed_prune_e2e", "embedding pruning, cold, end to end (their cleaning and tree too)"),
        ("embed_prune_warm", "embedding pruning, block vectors cached"),
        ("bm25_prune", "our BM25 pruning vs their embedding pruning"),
    ):
        s = res["speed"].get(key)
        if not s or not s["n"]:
            continue
        o, t = s["ours_s"], s["theirs_s"]
        rows.append(
            [
                label,
                _ms(o["median"]),
                _ms(o["p90"]),
                _ms(t["median"]),
                _ms(t["p90"]),
                f"{_fmt(s['speedup_of_medians'], '.1f')}×",
                f"{_fmt(s['speedup_median_per_item'], '.1f')}×",
                s["n"],
            ]
        )
    header = [
        "stage",
        "hrefine median",
        "hrefine p90",
        "htmlrag median",
        "htmlrag p90",
        "speed-up (medians)",
        "median per-item speed-up",
        "n",
    ]
    out = [
        "## Speed (same pages, same MiniLM folder, same Llama-3.2 budget tokenizer)",
        "",
        *_table(header, "lrrrrrrr", rows),
        "",
    ]
    out += [f"- {note}" for note in res["speed"].get("notes", [])]
    same = res["speed"].get("f32_same_output")
    if same and same["n"]:
        out.append(
            f"- The cold calls gave the same HTML with the embedder in float32 on {same['same']} "
            f"of {same['n']}."
        )
    return [*out, "", *_memory_md(res)]


def _memory_md(res: dict[str, Any]) -> list[str]:
    mem = res["speed"].get("memory") or {}
    rows = []
    for key, label in (
        ("clean_tree", "clean + block tree (per page)"),
        ("embed_prune", "embedding pruning, cold (first question of a page, one budget)"),
    ):
        m = mem.get(key)
        if not m or not m["n"]:
            continue
        o, t = m["ours_mib"], m["theirs_mib"]
        rows.append(
            [
                label,
                _fmt(o["median"], ".1f"),
                _fmt(o["max"], ".1f"),
                _fmt(t["median"], ".1f"),
                _fmt(t["max"], ".1f"),
                f"{_fmt(m['less_of_medians'], '.1f')}×",
                m["n"],
            ]
        )
    if not rows:
        return []
    header = [
        "stage",
        "hrefine median MiB",
        "hrefine max MiB",
        "htmlrag median MiB",
        "htmlrag max MiB",
        "less memory (medians)",
        "n",
    ]
    out = ["## Working memory (same calls)", "", *_table(header, "lrrrrrr", rows), ""]
    out += [f"- {note}" for note in mem.get("notes", [])]
    return [*out, ""]


def _generative_md(g: dict[str, Any]) -> list[str]:
    budget = g["budget"]
    rows = []
    for r in g["rows"]:
        th = r.get("theirs") or {}
        ours_pf = r["ours"]["prefilled_tokens"]
        red = (
            th["prefilled_tokens"] / ours_pf
            if th.get("prefilled_tokens") is not None and ours_pf
            else None
        )
        rows.append(
            [
                r["doc"],
                r["question"][:60],
                r["ours"]["prompt_tokens"],
                ours_pf,
                r["ours"]["lm_calls"],
                th.get("prefilled_tokens", "—"),
                th.get("model_calls", "—"),
                f"{_fmt(red, '.1f')}×",
                f"{r['seconds']:.1f} s",
            ]
        )
    header = [
        "page",
        "question",
        "prompt tokens",
        "hrefine pre-filled (KV cache)",
        "hrefine LM calls",
        "htmlrag pre-filled (counted)",
        "htmlrag model calls",
        "reduction",
        "hrefine stage-2 time",
    ]
    theirs = g.get("theirs_total")
    return [
        f"### Generative stage: pre-filled tokens (SmolLM2-135M, budget {budget} tokens, "
        f"stage 1 at {4 * budget})",
        "",
        *_table(header, "llrrrrrrr", rows),
        "",
        f"Total: hrefine {g['ours_total']:,} tokens, htmlrag {theirs or '—'} tokens: "
        f"**{_fmt(g.get('reduction'), '.1f')}× fewer**. {g['method']}",
        "",
        "Same call pattern on our token tree (every model call re-reads the prompt, no KV "
        f"cache): at least {g['theirs_pattern_on_our_trie_min_total']:,} tokens, "
        f"{_fmt(g.get('reduction_on_our_trie'), '.1f')}× ours.",
        "",
    ]


def _cleaning_md(c: dict[str, Any]) -> list[str]:
    rows = []
    for name, t in c["table"].items():
        rows.append(
            [
                name,
                t["n"],
                f"{t['gold_token_recall_mean']:.1%}",
                f"{t['gold_token_recall_median']:.1%}",
                f"{t['gold_token_recall_min']:.1%}",
                f"{t['kept_tokens_median']:.1%}",
                f"{t['kept_tokens_total']:.1%}",
                _ms(t["seconds"]["median"]),
            ]
        )
    header = [
        "cleaner",
        "pages",
        "gold-text token recall (mean)",
        "median",
        "worst page",
        "cleaned/raw tokens (median)",
        "cleaned/raw tokens (all pages)",
        "median time",
    ]
    return [
        "## Cleaning (article-extraction pages)",
        "",
        *_table(header, "lrrrrrrr", rows),
        "",
        "Recall: share of the gold article's word tokens found in the cleaned HTML's visible "
        "text. Size: Llama-3.2 tokens of the cleaned HTML over those of the raw page.",
        "",
    ]


def render_markdown(res: dict[str, Any]) -> str:
    """The results tables, from the result JSON only."""
    budgets = res["budgets"]
    hw = res["hardware"]
    ref = res["reference"]
    lines = [f"# HtmlRAG benchmark ({res['mode']} mode)", "", f"_{HARDWARE_NOTE}_", ""]
    lines += [
        f"CPU: {hw.get('cpu')} ({hw.get('cores')} cores, load average at the end "
        f"{hw.get('load_avg_at_end')}). hrefine {res['versions'].get('hrefine')}, reference "
        f"htmlrag {ref.get('versions', {}).get('htmlrag')}; run {res['created']}, "
        f"{res['wall_s']:.0f} s. Our embedder ran in {res.get('embedder_precision', 'float32')}.",
        "",
    ]
    if not ref["available"]:
        lines += [f"**Reference columns skipped:** {ref['error']}", ""]
    elif ref.get("error"):
        lines += [f"Reference runner note: {ref['error']}", ""]
    rows = []
    for t in res["targets"].values():
        value, threshold = _target_value(t)
        met = "yes" if t["met"] else ("no" if t["met"] is False else "—")
        rows.append([t["label"], value, threshold, met])
    lines += ["## Targets", "", *_table(["target", "value", "floor", "met"], "lrrl", rows), ""]
    beat = res.get("beats_baselines")
    if beat:
        rows = [
            [
                ds,
                b,
                "yes" if v["ok"] else "no",
                v["best_other"],
                f"{v['best_other_value']:.1%}",
                f"{v['margin'] * 100:+.1f} pts",
            ]
            for ds, per in beat.items()
            for b, v in per.items()
        ]
        header = ["dataset", "budget", "ours ≥ every other", "best other", "its score", "margin"]
        lines += [
            f"### Does {M_OURS_EMBED} beat every other method?",
            "",
            *_table(header, "lrllrr", rows),
            "",
            "Each row compares the methods that ran on every question of that set; the "
            "reference is judged on its own questions (the rows marked so), where every method "
            "ran too.",
            "",
        ]
    lines += ["## Quality", ""]
    for ds, q in res["quality"].items():
        title = f"{ds} ({q['questions']} questions, {q['pages']} pages)"
        lines += [*_quality_md(title, q, budgets), ""]
        for half, part in q.get("halves", {}).items():
            name = _HALF_NAMES.get(half, half)
            title = f"{ds}, {name} ({part['questions']} questions, {part['pages']} pages)"
            sub = {"table": part["table"], "answer_mode": q["answer_mode"]}
            lines += [*_quality_md(title, sub, budgets, level="####"), ""]
        if q.get("generative"):
            lines += [*_generative_quality_md(ds, q["generative"]), ""]
    lines += _speed_md(res)
    g = res["speed"].get("generative")
    if g:
        lines += _generative_md(g)
    if res.get("cleaning"):
        lines += _cleaning_md(res["cleaning"])
    failures = res.get("failures")
    if failures:
        rows = [
            [f["id"], f["question"], " / ".join(f["answers"]), ", ".join(f["found_by"]) or "—"]
            for f in failures
        ]
        lines += [
            f"## {M_OURS_EMBED}: WTQ questions missed at 1024 tokens",
            "",
            *_table(["id", "question", "answers", "found by"], "llll", rows),
            "",
        ]
    return "\n".join(lines).rstrip() + "\n"


def plot(res: dict[str, Any], path: Path) -> None:
    """Containment-vs-budget lines per dataset and a speed/prefill ratio panel."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    budgets = res["budgets"]
    qsets = list(res["quality"].items())[:2]
    fig, axes = plt.subplots(
        1, len(qsets) + 1, figsize=(6.2 * (len(qsets) + 1), 5.6), constrained_layout=True
    )
    for ax, (ds, q) in zip(axes, qsets, strict=False):
        for m in METHODS:
            t = q["table"].get(m)
            if not t:
                continue
            ys = [t["containment"].get(str(b)) for b in budgets]
            label = m
            if t.get("missing"):
                share = f"{max(t['n'].values(), default=0)} of {q['questions']} questions"
                label = f"{m} ({share})"
                # The legend sits in the first panel only; each panel says its own share.
                ax.annotate(
                    f"{m}: {share}", (0.02, 0.97), xycoords="axes fraction", fontsize=8, va="top"
                )
            ax.plot(
                budgets,
                [np.nan if y is None else 100 * y for y in ys],
                label=label,
                color=_COLORS[m],
                **_STYLES.get(m, _DEFAULT_STYLE),
            )
        ax.set_xscale("log", base=2)
        ax.set_xticks(budgets, [str(b) for b in budgets])
        ax.set_ylim(0, 100)
        ax.set_xlabel("token budget (Llama-3.2 tokens)")
        ax.set_ylabel("answer containment (%)")
        ax.set_title(f"{ds}: {q['questions']} questions on {q['pages']} pages")
        if ds == "wtq":
            ax.axhline(95, color="k", lw=0.8, ls=":")
            ax.annotate("target 95% @1024", (1024, 95), (6, -14), textcoords="offset points")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8, loc="lower right")
    _ratio_panel(axes[-1], res)
    fig.suptitle(
        f"HtmlRAG: hrefine vs htmlrag 0.1.1 ({res['mode']} mode; shared 2-core CPU; "
        "ratios from one run)",
        fontsize=12,
    )
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _ratio_panel(ax: Any, res: dict[str, Any]) -> None:
    """Horizontal bars: how many times faster / fewer tokens, with each target marked."""
    sp = res["speed"]
    bars: list[tuple[str, float | None, float | None]] = [
        (
            "clean + block tree\n(median per page, best of 3)",
            (sp.get("clean_tree") or {}).get("speedup_of_medians"),
            TARGETS["clean_tree_speedup"],
        ),
        (
            "clean + block tree,\nfirst call only",
            (sp.get("clean_tree_first") or {}).get("speedup_of_medians"),
            None,  # no target: the single-call row, for the record
        ),
        (
            "embedding pruning, cold\n(median, first question of a page)",
            (sp.get("embed_prune") or {}).get("speedup_of_medians"),
            TARGETS["embed_prune_speedup"],
        ),
        (
            "embedding pruning, cold,\nour embedder in float32",
            (sp.get("embed_prune_f32") or {}).get("speedup_of_medians"),
            None,  # no target: how much of the row above the precision is
        ),
        (
            "generative stage\n(pre-filled tokens, total)",
            (sp.get("generative") or {}).get("reduction"),
            TARGETS["prefill_reduction"],
        ),
        (
            "working memory, cold pruning\n(median peak above resident)",
            ((sp.get("memory") or {}).get("embed_prune") or {}).get("less_of_medians"),
            None,  # no target: shown for the record
        ),
    ]
    names = [b[0] for b in bars]
    vals = [b[1] or 0.0 for b in bars]
    y = list(range(len(bars)))
    colors = [
        "#546e7a" if target is None else "#2e7d32" if v and v >= target else "#c62828"
        for v, target in zip(vals, (b[2] for b in bars), strict=True)
    ]
    ax.barh(y, vals, color=colors, height=0.55)
    for k, (_, v, target) in enumerate(bars):
        label = "n/a" if v is None else f"{v:,.1f}×"
        if target is not None:
            ax.plot([target, target], [k - 0.4, k + 0.4], color="k", lw=1.5, ls=":")
            label += f" (target ≥ {target:.0f}×)"
        ax.text(max(v or 1.0, 1.0) * 1.1, k, label, va="center")
    ax.set_yticks(y, names)
    ax.set_xscale("log")
    hi = max([*vals, *(b[2] for b in bars if b[2] is not None)])
    ax.set_xlim(0.5, hi * 12)
    ax.axvline(1, color="k", lw=0.8)
    ax.invert_yaxis()
    ax.set_xlabel("hrefine vs htmlrag 0.1.1 (× faster, × fewer tokens, × less memory; log scale)")
    ax.set_title("speed, pre-fill and memory, same run")
    ax.grid(axis="x", alpha=0.3)
