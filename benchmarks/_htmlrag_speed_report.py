"""The markdown page and the plot of :mod:`benchmarks.htmlrag_speed`, from its result dict only
(so ``--replot`` re-renders them without running anything)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["plot", "render_markdown"]

DS_NAMES = {"wtq": "WTQ", "leval-nq": "NQ", "all": "all"}


def _x(v: float | None, digits: int = 1) -> str:
    return "—" if v is None else f"{v:.{digits}f}×"


def _num(v: float | None, digits: int = 1) -> str:
    return "—" if v is None else f"{v:,.{digits}f}"


def _spread_row(label: str, ds: str, s: dict[str, Any], unit: str = "×") -> str:
    fmt = _x if unit == "×" else _num
    row = (
        f"| {label} | {DS_NAMES.get(ds, ds)} | {s['n']} | {fmt(s['p10'])} | {fmt(s['median'])} "
        f"| {fmt(s['p90'])} | {fmt(s['min'])} – {fmt(s['max'])} |"
    )
    if "target" not in s:
        return row
    share = f"{s['under']} of {s['n']} ({100 * s['share_under']:.0f}%)" if s["n"] else "—"
    return f"{row} {share} |"


def _cold_table(
    title: str, table: dict[str, dict[str, Any]], target: float, note: str = ""
) -> list[str]:
    lines = [
        f"## {title}",
        "",
        f"| pairing (theirs / ours) | data | questions | p10 | median | p90 | min – max "
        f"| under {target:g}× |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for label, per_ds in table.items():
        for ds, s in per_ds.items():
            lines.append(_spread_row(label, ds, s))
    return [*lines, "", *([note, ""] if note else [])]


def _bound_tables(res: dict[str, Any], target: float) -> list[str]:
    """The embedding model's share of each side's call, and the ratio at zero other work."""
    lines = [
        "## What bounds the like-for-like ratio",
        "",
        "| run | data | questions | p10 | median | p90 | min – max |",
        "|---|---|---|---|---|---|---|",
    ]
    for cfg, per_ds in res["model_share"].items():
        for ds, s in per_ds.items():
            pct = {k: None if s[k] is None else 100 * s[k] for k in ("p10", "median", "p90")}
            lo, hi = (None if s[k] is None else 100 * s[k] for k in ("min", "max"))
            lines.append(
                f"| {cfg}: model share of the call (%) | {DS_NAMES.get(ds, ds)} | {s['n']} "
                f"| {_num(pct['p10'], 0)} | {_num(pct['median'], 0)} | {_num(pct['p90'], 0)} "
                f"| {_num(lo, 0)} – {_num(hi, 0)} |"
            )
    lines += [
        "",
        "Model: the seconds inside the embedding model's calls (tokenising and forward passes): "
        "ours `SentenceTransformerEmbedder`'s, theirs `SentenceTransformer.encode` inside "
        "`calculate_block_rankings`.",
        "",
    ]
    lines += _cold_table(
        "Ceiling: theirs / our model seconds alone",
        res["ceiling"],
        target,
        "The ratio each question would reach if everything of our call but the embedding "
        "model's forward passes took no time: with the same blocks read to the same length, "
        "the ratio cannot pass it without reading fewer word pieces.",
    )
    return lines


def render_markdown(res: dict[str, Any]) -> str:
    """The result page: read lengths and quality, spread, floor, memory, dtype and setup."""
    t = res["target"]
    hw = res["hardware"]
    sel = ", ".join(
        f"{DS_NAMES.get(ds, ds)} {v['questions']} questions on {v['pages']} pages"
        for ds, v in res["selection"].items()
    )
    out = [
        "# HtmlRAG speed, like for like: hrefine against htmlrag 0.1.1",
        "",
        f"{sel}; budget {res['budget']} tokens (Llama-3.2), blocks of {res['max_words']} words "
        f"on both sides, the same MiniLM folder. {hw['cpu']}, {hw['cores']} cores, load "
        f"{hw['load_avg_at_end']} at the end; {res['wall_s']:.0f} s. Created {res['created']} "
        f"by `python -m benchmarks.htmlrag_speed --limit {res['limit']} --mem-pages "
        f"{res['mem_pages']}`.",
        "",
        "Embedder dtype per run: "
        + ", ".join(f"{k} {v}" for k, v in res["dtype"].items())
        + ". Ours is held to float32 (its default on every CPU since 2026-11-30, and before "
        "that on CPUs without native bfloat16); htmlrag's sentence-transformers runs in float32.",
        "",
        "## Read length and quality (answer containment at "
        f"{res['budget']} tokens, same questions)",
        "",
        "| run | word pieces read per block | WTQ | NQ | all | median cold s (all) |",
        "|---|---|---|---|---|---|",
    ]
    for cfg, per_ds in res["quality"].items():
        side, read = cfg.split("@")
        cells = []
        for ds in ("wtq", "leval-nq", "all"):
            q = per_ds.get(ds, {})
            v = q.get("containment")
            cells.append("—" if v is None else f"{v:.3f} (n={q['n']})")
        med = res["seconds"][cfg]["all"]["median"]
        out.append(f"| {side} | {read} | {' | '.join(cells)} | {_num(med, 2)} |")
    errors = {
        cfg: sum(q.get("errors", 0) for ds, q in per_ds.items() if ds != "all")
        for cfg, per_ds in res["quality"].items()
    }
    if any(errors.values()):
        out += [
            "",
            "Calls that raised (counted as misses above, left out of the speed rows): "
            + ", ".join(f"{cfg} {n}" for cfg, n in errors.items() if n)
            + " (`prune_HTML` raises `IndexError` on some pages; see `ref_errors` per question "
            "in the JSON).",
        ]
    out += [
        "",
        "htmlrag has no setting for its read length: the 128 run sets `max_seq_length` on the "
        "SentenceTransformer inside its langchain embedder (`pruner.embedder._client`); 256 is "
        "the MiniLM folder's own limit, what htmlrag reads as shipped. hrefine reads 128 as "
        "shipped (`embed_max_tokens`).",
        "",
    ]
    out += _cold_table(
        "Cold pruning speed-up per question (theirs / ours)",
        res["cold"],
        t,
        "Ours: one `HtmlPruner.prune()` call with its vector and page caches emptied (cleaning, "
        "block tree, embedding every block, the budget fill). Theirs: "
        "`EmbedHTMLPruner.calculate_block_rankings` + `prune_HTML`, its `clean_html` + "
        "`build_block_tree` not counted (as in the suite's table). Every question is cold on "
        "both sides; the sides alternate which goes first.",
    )
    out += _cold_table(
        "Cold pruning end to end (theirs with its clean_html + build_block_tree)",
        res["cold_e2e"],
        t,
    )
    if res.get("ceiling"):
        out += _bound_tables(res, t)
    out += [
        "## The floor: a bare lxml parse of the same page",
        "",
        "| what | data | pages | p10 | median | p90 | min – max |",
        "|---|---|---|---|---|---|---|",
    ]
    for label, per_ds in res["floor"].items():
        unit = "" if "(ms)" in label else "×"
        name = label if unit == "" else f"{label} / parse"
        for ds, s in per_ds.items():
            out.append(_spread_row(name, ds, s, unit))
    out += [
        "",
        "Parse: `lxml.html.fromstring(page)`, best of 3 calls. Clean + block tree: ours "
        "`build_block_tree(page, max_words=256)` (it cleans the page), best of 3; theirs "
        "`clean_html` + `build_block_tree(max_node_words=256)`, the faster of its two calls "
        "per page.",
        "",
    ]
    mem = res["memory"]
    out += [
        f"## Memory in a fresh process per page ({mem['pages']} pages, 256 word pieces, float32)",
        "",
        "| side | resident before the page (MiB, median) | peak during it (MiB: min / median / "
        "max) | rise (MiB: min / median / max) | seconds (median) |",
        "|---|---|---|---|---|",
    ]
    for side in ("hrefine", "htmlrag"):
        m = mem.get(side)
        if not m or not m["peak_mib"]["n"]:
            out.append(f"| {side} | — | — | — | — |")
            continue
        pk, rs = m["peak_mib"], m["rise_mib"]
        out.append(
            f"| {side} | {_num(m['before_mib']['median'], 0)} | {_num(pk['min'], 0)} / "
            f"{_num(pk['median'], 0)} / {_num(pk['max'], 0)} | {_num(rs['min'], 0)} / "
            f"{_num(rs['median'], 0)} / {_num(rs['max'], 0)} | "
            f"{_num(m['seconds']['median'], 2)} |"
        )
    if mem.get("rise_ratio", {}).get("n"):
        out += [
            "",
            f"Theirs / ours per page: peak {_x(mem['peak_ratio']['median'])} (median), rise "
            f"{_x(mem['rise_ratio']['median'])} (median; {_x(mem['rise_ratio']['min'])} – "
            f"{_x(mem['rise_ratio']['max'])}).",
        ]
    out += [
        "",
        "Each page runs in a new process on each side (`benchmarks/_speed_child.py`): load the "
        "model, prune a two-block page once (torch's thread pool and kernels), reset the peak "
        "resident size (Linux VmHWM, `benchmarks/_rss.py`), then clean, build the block tree "
        "and prune the page at the budget. Rise: peak minus the resident size before the page.",
        "",
    ]
    ref = res["reference"]
    if ref.get("error"):
        out += [f"Reference: {ref['error']}", ""]
    return "\n".join(out)


def plot(res: dict[str, Any], path: Path) -> None:
    """Per-question speed-ups per pairing and dataset (with the target), and containment."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = res["per_question"]
    pairs = {
        "256 / 256": ("htmlrag@256", "hrefine@256"),
        "128 / 128": ("htmlrag@128", "hrefine@128"),
        "as shipped": ("htmlrag@256", "hrefine@128"),
    }
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(12.5, 5), constrained_layout=True)
    data, labels = [], []
    for name, (theirs, mine) in pairs.items():
        for ds in ("wtq", "leval-nq"):
            vals = [
                r["s"][theirs] / r["s"][mine]
                for r in rows
                if r["ds"] == ds and r["s"].get(theirs) and r["s"].get(mine)
            ]
            data.append(vals or [float("nan")])
            labels.append(f"{name}\n{DS_NAMES[ds]}")
    ax.boxplot(data, whis=(10, 90), showfliers=True)
    for k, vals in enumerate(data, 1):
        ax.scatter([k] * len(vals), vals, s=10, alpha=0.5, color="tab:blue")
    ax.set_xticks(range(1, len(labels) + 1), labels, fontsize=8)
    ax.axhline(res["target"], color="tab:red", ls="--", lw=1, label=f"target {res['target']:g}×")
    ax.set_yscale("log")  # ratios: 2x below the target is as far as 2x above it
    ticks = [1, 2, 3, 5, 10, 20, 50]
    ax.set_yticks(ticks, [f"{t}×" for t in ticks])
    ax.set_ylabel("cold pruning: htmlrag time / hrefine time")
    ax.set_title("per question (whiskers p10–p90), float32")
    ax.legend()
    cfgs = list(res["quality"])
    width = 0.38
    for j, ds in enumerate(("wtq", "leval-nq")):
        ys = [100 * (res["quality"][c][ds]["containment"] or 0) for c in cfgs]
        bx.bar([i + (j - 0.5) * width for i in range(len(cfgs))], ys, width, label=DS_NAMES[ds])
    bx.set_xticks(range(len(cfgs)), [c.replace("@", "\n") + " pieces" for c in cfgs], fontsize=8)
    bx.set_ylim(0, 100)
    bx.set_ylabel(f"answer containment at {res['budget']} tokens (%)")
    bx.set_title("quality at each read length (same questions)")
    bx.legend()
    fig.savefig(path, dpi=110)
    plt.close(fig)
