"""How RAPTOR's build time grows with the input, and what the first build in a process pays (#55).

1. **Scaling**: builds over the first ``n`` distinct HotpotQA paragraphs (100-token leaves,
   about 1.3 a paragraph), for growing ``n`` (16x from the smallest to the largest), with the
   instant fake LLM of :mod:`benchmarks.raptor_speed`, once with ``cluster_group_size=None``
   (every layer clustered at once: the build before #55) and once with the default bound. The
   leaves' vectors are computed once beforehand (the embedder's cache), so what is measured is
   the part that grew faster than the input: clustering, summarising and embedding the
   summaries. A size whose layers all fit in the bound is not built twice (its clusters, and so
   its build, are the unbounded one's). Reported: CPU seconds of the build
   (``time.process_time``: the machine is shared, wall time would measure the neighbours) and of
   its clustering alone, and the fitted exponent (least-squares slope of log CPU seconds on log
   leaves).
2. **First build**: a build of three short notes in fresh processes, each timed in CPU seconds
   (imports and the embedder's loading excluded): once with ``HREFINE_NUMBA_CACHE=0`` (numba
   compiles UMAP in every process, as before), then twice in a row with an empty hrefine cache
   folder (the first compiles and fills the cache, the second loads it).

Run ``python -m benchmarks.raptor_scaling`` (``--sizes 100,200,400,800,1600``, ``--no-scaling``,
``--no-first``); writes ``results/raptor_scaling.{json,md}`` and prints a one-line summary.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Sequence
from typing import Any

from benchmarks._common import RESULTS_DIR, hardware, package_versions

__all__ = ["fitted_exponent", "main", "run_first_builds", "run_scaling"]

SIZES = (100, 200, 400, 800, 1600)
#: Paragraphs of any length (about 1.3 leaves each): enough text for layers over 1,000 leaves.
MAX_WORDS = 100_000
CHUNK_TOKENS = 100
NOTES = [
    "Meeting notes, Monday. The team agreed to move the release to the second week of May. "
    "Testing found two regressions in the export path; Dana will fix the CSV quoting bug and "
    "Lee will look at the time-zone offsets. Budget for the new servers was approved.",
    "Lab notebook. Sample 14 was heated to 80 degrees for two hours and lost 3 percent of its "
    "mass. The control stayed stable. Next week we repeat the run with a slower ramp and log "
    "the humidity, which may explain the drift seen in samples 9 to 12.",
    "Reading notes on the history of the printing press: movable type reached Europe in the "
    "fifteenth century; it lowered the price of books, spread literacy, and helped the "
    "Reformation. Printers guarded their type designs as trade secrets for decades.",
]
CHILD = r"""
import json, sys, time, warnings
warnings.filterwarnings("ignore")
t0 = time.process_time()
from hrefine.models import default_embedder
from hrefine.raptor import RaptorTree
embedder = default_embedder()
embedder.embed(["warm up the embedder"])
t1 = time.process_time()
notes = json.loads(sys.argv[1])
tree = RaptorTree.build(notes, llm=lambda p: " ".join(p.split()[-60:]), embedder=embedder,
                        chunk_tokens=12)
t2 = time.process_time()
print(json.dumps({"setup_cpu_s": round(t1 - t0, 2), "build_cpu_s": round(t2 - t1, 2),
                  "nodes": len(tree), "layers": tree.layers}))
"""


def fitted_exponent(sizes: Sequence[float], seconds: Sequence[float]) -> float | None:
    """Least-squares slope of ``log(seconds)`` on ``log(sizes)`` (None with fewer than 2 points)."""
    pts = [(math.log(x), math.log(y)) for x, y in zip(sizes, seconds, strict=True) if x > 0 < y]
    if len(pts) < 2:
        return None
    mx = sum(p[0] for p in pts) / len(pts)
    my = sum(p[1] for p in pts) / len(pts)
    sxx = sum((p[0] - mx) ** 2 for p in pts)
    if sxx == 0:
        return None
    return round(sum((p[0] - mx) * (p[1] - my) for p in pts) / sxx, 3)


def _timed_clustering() -> tuple[list[float], Any]:
    """Wrap the build's clustering so each call's CPU seconds land in the returned list."""
    from hrefine.raptor import build as build_mod

    spent: list[float] = []
    original = build_mod.cluster_layer

    def timed(*args: Any, **kwargs: Any) -> Any:
        t0 = time.process_time()
        try:
            return original(*args, **kwargs)
        finally:
            spent.append(time.process_time() - t0)

    build_mod.cluster_layer = timed  # type: ignore[assignment]
    return spent, lambda: setattr(build_mod, "cluster_layer", original)


def run_scaling(sizes: Sequence[int], bounds: dict[str, int | None]) -> dict[str, Any]:
    """CPU seconds of builds over growing corpora, per bound (see the module docstring)."""
    from hrefine.budget import get_counter
    from hrefine.chunk import chunks
    from hrefine.models import default_embedder
    from hrefine.raptor import RaptorOptions, RaptorTree

    from benchmarks.raptor_speed import InstantLLM, paragraph_corpus

    corpus = paragraph_corpus(n=max(sizes), max_words=MAX_WORDS)
    embedder = default_embedder()
    counter = get_counter(None)
    leaf_texts = [
        c.text for t in corpus.texts for c in chunks(t, counter, CHUNK_TOKENS, join_short=True)
    ]
    embedder.embed(leaf_texts)  # leaf vectors cached: every build reads them
    llm = InstantLLM(RaptorOptions().prompt)
    RaptorTree.build(corpus.texts[:30], llm=llm.fn, embedder=embedder)  # numba compiled
    out: dict[str, Any] = {"texts_available": len(corpus.texts), "variants": {}}
    whole: dict[int, dict[str, Any]] = {}  # texts -> row of the build without a bound
    for name, bound in bounds.items():
        rows: list[dict[str, Any]] = []
        for n in sizes:
            if n > len(corpus.texts):
                continue
            same = whole.get(n)
            if bound is not None and same is not None and max(same["nodes_per_layer"]) <= bound:
                # No layer over the bound: the very same clusters, so the same build (not rerun).
                rows.append({**same, "same_as_unbounded": True})
                continue
            spent, restore = _timed_clustering()
            try:
                t0 = time.process_time()
                tree = RaptorTree.build(
                    corpus.texts[:n],
                    llm=llm.fn,
                    embedder=embedder,
                    chunk_tokens=CHUNK_TOKENS,
                    cluster_group_size=bound,
                )
                cpu = time.process_time() - t0
            finally:
                restore()
            rows.append(
                {
                    "texts": n,
                    "leaves": int(tree.stats["leaves"]),
                    "nodes_per_layer": list(tree.stats["nodes_per_layer"]),
                    "build_cpu_s": round(cpu, 2),
                    "cluster_cpu_s": round(sum(spent), 2),
                }
            )
            if bound is None:
                whole[n] = rows[-1]
            print(f"[raptor_scaling] {name} n={n}: {json.dumps(rows[-1])}", flush=True)
        leaves = [r["leaves"] for r in rows]
        out["variants"][name] = {
            "cluster_group_size": bound,
            "rows": rows,
            "build_exponent": fitted_exponent(leaves, [r["build_cpu_s"] for r in rows]),
            "cluster_exponent": fitted_exponent(leaves, [r["cluster_cpu_s"] for r in rows]),
        }
    return out


def _child(env: dict[str, str]) -> dict[str, Any]:
    before = os.times()
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(NOTES)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    after = os.times()
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1:] or ["failed"]}
    rec: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    rec["process_cpu_s"] = round(
        (after.children_user - before.children_user)
        + (after.children_system - before.children_system),
        2,
    )
    return rec


def run_first_builds() -> dict[str, Any]:
    """Three fresh processes: cache off; then twice with one new, empty hrefine cache."""
    base = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    with tempfile.TemporaryDirectory(prefix="hrefine-numba-") as tmp:
        off = _child({**base, "HREFINE_NUMBA_CACHE": "0"})
        print(f"[raptor_scaling] cache off: {off}", flush=True)
        env = {**base, "HREFINE_CACHE": tmp}
        env.pop("HREFINE_NUMBA_CACHE", None)
        first = _child(env)
        print(f"[raptor_scaling] cache, first process: {first}", flush=True)
        second = _child(env)
        print(f"[raptor_scaling] cache, second process: {second}", flush=True)
    return {"cache_off": off, "cache_first_process": first, "cache_second_process": second}


def render_markdown(res: dict[str, Any]) -> str:
    lines = ["# RAPTOR build: scaling and first build (#55)", ""]
    lines.append(
        "CPU seconds (`time.process_time`), on a shared machine ("
        f"load average {res['hardware'].get('load_avg_at_start')} at the start, "
        f"{res['hardware'].get('cores', '?')} cores; the two parts may have run at different "
        "times)."
    )
    scaling = res.get("scaling")
    if scaling:
        lines += [
            "",
            "## Scaling",
            "",
            "HotpotQA paragraphs (100-token leaves), instant fake LLM, leaf vectors "
            "cached; build = clustering + summarising + embedding the summaries.",
            "",
            "| variant | leaves | nodes per layer | build CPU s | clustering CPU s |",
            "|---|---:|---|---:|---:|",
        ]
        for name, var in scaling["variants"].items():
            for r in var["rows"]:
                lines.append(
                    f"| {name} | {r['leaves']} | {r['nodes_per_layer']} | "
                    f"{r['build_cpu_s']} | {r['cluster_cpu_s']} |"
                )
        lines += ["", "| variant | cluster_group_size | exponent (build) | exponent (clustering) |"]
        lines.append("|---|---:|---:|---:|")
        for name, var in scaling["variants"].items():
            lines.append(
                f"| {name} | {var['cluster_group_size']} | {var['build_exponent']} | "
                f"{var['cluster_exponent']} |"
            )
    first = res.get("first_builds")
    if first:
        lines += [
            "",
            "## First build in a fresh process",
            "",
            "Three short notes; CPU seconds of `RaptorTree.build` (the embedder already loaded) "
            "and of the whole process.",
            "",
            "| process | build CPU s | process CPU s |",
            "|---|---:|---:|",
        ]
        for key, label in (
            ("cache_off", "HREFINE_NUMBA_CACHE=0 (as before)"),
            ("cache_first_process", "cache on, empty cache folder"),
            ("cache_second_process", "cache on, second process"),
        ):
            rec = first.get(key, {})
            lines.append(
                f"| {label} | {rec.get('build_cpu_s', rec.get('error'))} | "
                f"{rec.get('process_cpu_s', '')} |"
            )
    return "\n".join(lines) + "\n"


def main(
    *,
    sizes: Sequence[int] = SIZES,
    scaling: bool = True,
    first: bool = True,
    bounds: dict[str, int | None] | None = None,
) -> dict[str, Any]:
    from hrefine.raptor import RaptorOptions

    res: dict[str, Any] = {
        "benchmark": "raptor_scaling",
        "hardware": {**hardware(), "load_avg_at_start": [round(x, 2) for x in os.getloadavg()]},
        "versions": package_versions(("umap-learn", "pynndescent", "numba", "scikit-learn")),
    }
    started = time.perf_counter()
    if first:
        res["first_builds"] = run_first_builds()
    if scaling:
        if bounds is None:
            bounds = {"unbounded": None, "default": RaptorOptions().cluster_group_size}
        res["scaling"] = run_scaling(sizes, bounds)
    res["run_seconds"] = round(time.perf_counter() - started, 1)
    return res


def one_line(res: dict[str, Any]) -> str:
    parts = []
    for name, var in (res.get("scaling") or {}).get("variants", {}).items():
        parts.append(
            f"{name}: exponent {var['build_exponent']} (clustering {var['cluster_exponent']})"
        )
    first = res.get("first_builds")
    if first:
        parts.append(
            "first build CPU s: "
            + " / ".join(str(first[k].get("build_cpu_s")) for k in first)
            + " (cache off / cache 1st / cache 2nd)"
        )
    return "raptor_scaling: " + "; ".join(parts)


def _cli(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)))
    ap.add_argument("--no-scaling", action="store_true")
    ap.add_argument("--no-first", action="store_true")
    ap.add_argument(
        "--bounds",
        default="",
        help="NAME=SIZE|none,... cluster_group_size variants (default: unbounded and default)",
    )
    ap.add_argument("--out", default="raptor_scaling", help="results file stem")
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    bounds: dict[str, int | None] | None = None
    if args.bounds:
        bounds = {}
        for item in args.bounds.split(","):
            name, _, value = item.partition("=")
            bounds[name.strip()] = None if value.strip().lower() == "none" else int(value)
    res = main(sizes=sizes, scaling=not args.no_scaling, first=not args.no_first, bounds=bounds)
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    stem = RESULTS_DIR / args.out
    if stem.with_suffix(".json").exists():  # a part not run now keeps its last results
        last = json.loads(stem.with_suffix(".json").read_text(encoding="utf-8"))
        for part in ("first_builds", "scaling"):
            if part not in res and part in last:
                res[part] = last[part]
    stem.with_suffix(".json").write_text(json.dumps(res, indent=1) + "\n", encoding="utf-8")
    stem.with_suffix(".md").write_text(render_markdown(res), encoding="utf-8")
    print(one_line(res))
    return 0


if __name__ == "__main__":
    sys.exit(_cli())
