"""The benchmark suite: ``python -m benchmarks.run --quick`` (``make bench``) or ``--full``.

1. Runs ``benchmarks/baselines.py`` and every other ``benchmarks/<name>.py`` that defines
   ``main(quick: bool) -> dict`` (htmlrag, raptor, garlic, longrefiner, …); an expected module
   that is not there yet is skipped with a note, one that crashes is reported and fails the run.
2. Checks quality floors: ``results/baseline.json`` pins, per benchmark, values looked up in the
   dict its ``main`` returns by ``/``-separated paths (e.g.
   ``metrics/hotpotqa/chunks-bm25/1024/support_recall``). The run fails when a value is below
   ``floor - epsilon``, or when the eval data's sha256 differs from the pinned one.
   ``--update-baseline`` raises floors to the values just measured (rounded down to 0.01); it
   lowers one only with ``--allow-regression``.
3. Writes ``results/suite-<mode>.json`` (what ran, floors checked, hardware) and refreshes
   ``docs/benchmarks.md`` from the result JSON files.

Floors are checked for the quick suite only (the subsets they were measured on).
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import math
import re
import sys
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks._common import (
    BENCH_DIR,
    REPO,
    RESULTS_DIR,
    hardware,
    package_versions,
    quiet_bm25s,
)

BASELINE_FILE = RESULTS_DIR / "baseline.json"
DOCS_FILE = REPO / "docs" / "benchmarks.md"
DEFAULT_EPSILON = 0.03
#: Benchmarks expected in the suite, in run order; other modules with ``main`` run after them.
EXPECTED = ("baselines", "htmlrag", "raptor", "garlic", "longrefiner", "fuzz")
#: Modules in ``benchmarks/`` that are not benchmarks.
NOT_BENCHMARKS = frozenset({"run", "__init__", "__main__"})

log = logging.getLogger("benchmarks.run")


_MAIN_RE = re.compile(r"^def main\(\s*quick\b", re.M)


def is_benchmark(path: Path) -> bool:
    """Whether a file defines ``main(quick, ...)`` (checked in its text, without importing it)."""
    try:
        return bool(_MAIN_RE.search(path.read_text(encoding="utf-8")))
    except OSError:
        return False


def discover() -> list[str]:
    """Benchmark names: the expected ones first, then any other ``benchmarks/*.py`` with
    ``main(quick)`` (helpers such as reference runners are left out)."""
    present = {
        p.stem
        for p in BENCH_DIR.glob("*.py")
        if not p.stem.startswith("_") and p.stem not in NOT_BENCHMARKS and is_benchmark(p)
    }
    extra = sorted(present - set(EXPECTED))
    return [*EXPECTED, *extra]


def lookup(data: Any, path: str) -> Any:
    """Value at a ``/``-separated path in nested dicts (None when a key is missing)."""
    node = data
    for part in path.split("/"):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def _leaves(data: Any, prefix: str = "") -> dict[str, float]:
    out: dict[str, float] = {}
    if isinstance(data, dict):
        for key, value in data.items():
            out.update(_leaves(value, f"{prefix}/{key}" if prefix else str(key)))
    elif (
        isinstance(data, (int, float)) and not isinstance(data, bool) and math.isfinite(float(data))
    ):
        out[prefix] = float(data)
    return out


def pinnable(name: str, result: dict[str, Any]) -> dict[str, float]:
    """Quality values of a benchmark result that ``--update-baseline`` pins as floors.

    ``metrics/…`` leaves (the baselines' convention) and, for HtmlRAG-style results,
    ``quality/<dataset>/table/<method>/containment/<budget>`` leaves, plus the same leaves of a
    ``reference_subset`` table (every method on the questions a reference package ran on, when
    it ran on fewer). A method with missing items is then pinned from that table only.
    """
    leaves = {f"metrics/{k}": v for k, v in _leaves(result.get("metrics", {})).items()}
    quality = result.get("quality")
    if isinstance(quality, dict):
        for ds, block in quality.items():
            if not isinstance(block, dict):
                continue
            sub = block.get("reference_subset") or {}
            for method, entry in block.get("table", {}).items():
                if sub and entry.get("missing"):
                    continue  # ran on a subset: pinned from the subset table below
                for key, value in _leaves(entry.get("containment", {})).items():
                    leaves[f"quality/{ds}/table/{method}/containment/{key}"] = value
            for method, entry in sub.get("table", {}).items():
                for key, value in _leaves(entry.get("containment", {})).items():
                    leaves[f"quality/{ds}/reference_subset/table/{method}/containment/{key}"] = (
                        value
                    )
    return leaves


def check_floors(
    name: str, result: dict[str, Any], baseline: dict[str, Any]
) -> tuple[list[str], list[str]]:
    """Compare a result with its pinned floors.

    Returns
    -------
    tuple[list[str], list[str]]
        Failures (below floor − ε, or changed eval data) and notes (floors that could not be
        checked).
    """
    eps = float(baseline.get("epsilon", DEFAULT_EPSILON))
    floors = baseline.get("floors", {}).get(name, {})
    failures: list[str] = []
    notes: list[str] = []
    pinned_sha = baseline.get("data_sha256", {})
    got_sha = result.get("data_sha256") or {}
    for ds, sha in pinned_sha.items():
        if ds in got_sha and got_sha[ds] is not None and got_sha[ds] != sha:
            failures.append(
                f"{name}: eval data {ds} changed (sha256 {got_sha[ds][:12]}… != pinned "
                f"{sha[:12]}…); re-pin with --update-baseline"
            )
    for path, floor in sorted(floors.items()):
        value = lookup(result, path)
        if not isinstance(value, (int, float)):
            notes.append(f"{name}: {path} not produced (floor {floor}) — not checked")
        elif value < floor - eps:
            failures.append(f"{name}: {path} = {value:.3f} < floor {floor:.3f} − ε {eps}")
    return failures, notes


def update_baseline(
    baseline: dict[str, Any],
    results: dict[str, dict[str, Any]],
    *,
    allow_regression: bool,
) -> list[str]:
    """Raise floors to the measured values (rounded down to 0.01); returns refused lowerings."""
    refused: list[str] = []
    baseline.setdefault("epsilon", DEFAULT_EPSILON)
    floors = baseline.setdefault("floors", {})
    for name, result in results.items():
        pinned = floors.setdefault(name, {})
        for path, value in pinnable(name, result).items():
            new = math.floor(value * 100 + 1e-9) / 100
            old = pinned.get(path)
            if old is not None and new < old and not allow_regression:
                refused.append(f"{name}: {path} {value:.3f} < floor {old} (kept)")
                continue
            pinned[path] = new
        sha = result.get("data_sha256")
        if isinstance(sha, dict):
            baseline.setdefault("data_sha256", {}).update({k: v for k, v in sha.items() if v})
    return refused


def run_benchmarks(
    names: Sequence[str], quick: bool
) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """Import and run each benchmark's ``main``; returns results and per-name status notes."""
    results: dict[str, dict[str, Any]] = {}
    status: dict[str, str] = {}
    for name in names:
        path = BENCH_DIR / f"{name}.py"
        if not path.is_file():
            status[name] = f"skipped: benchmarks/{name}.py is not there yet"
            log.info(status[name])
            continue
        if not is_benchmark(path):
            status[name] = f"skipped: benchmarks/{name}.py has no main(quick)"
            log.info(status[name])
            continue
        started = time.perf_counter()
        try:
            module = importlib.import_module(f"benchmarks.{name}")
            main = module.main
            log.info("running %s (%s)", name, "quick" if quick else "full")
            out = main(quick=quick)
            results[name] = out if isinstance(out, dict) else {}
            status[name] = f"ok in {time.perf_counter() - started:.0f} s"
        except Exception:
            status[name] = "failed:\n" + traceback.format_exc(limit=8)
            log.error("%s failed:\n%s", name, traceback.format_exc())
    return results, status


def render_docs(mode: str, status: dict[str, str]) -> str:
    """``docs/benchmarks.md``: the result tables, re-rendered from ``results/*.json``."""
    from hrefine.eval.report import markdown_tables

    lines = [
        "# Benchmarks",
        "",
        "Generated by `python -m benchmarks.run` (`make bench`) from the JSON files in",
        "`benchmarks/results/`; do not edit by hand. Each JSON records the hardware, package",
        "versions, seed, subset sizes and the sha256 of the evaluation data. Plots: the `.png`",
        "beside each JSON in `benchmarks/results/`. How the numbers are measured:",
        "[Evaluation](evaluation.md).",
        "",
    ]
    others = sorted(
        p.stem
        for p in RESULTS_DIR.glob("*.json")
        if p.stem not in {"baseline", "baselines", "baselines-full"}
        and not p.stem.startswith("suite-")
    )
    order = ["baselines", "baselines-full", *others]
    for stem in order:
        path = RESULTS_DIR / f"{stem}.json"
        if not path.is_file():
            continue
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("schema", "").startswith("hrefine-eval/"):
            meta = data.get("meta", {})
            hw = meta.get("hardware", {})
            lines += [
                f"## {stem}",
                "",
                f"Mode: {meta.get('mode', '?')}; items per dataset: "
                f"{_limits(meta.get('limits'))}; tokenizer: {meta.get('tokenizer')}; "
                f"seed {meta.get('seed')}; run {meta.get('created', '?')} on {hw.get('cpu', '?')} "
                f"({hw.get('cores', '?')} cores, GPU: {hw.get('gpu') or 'none'}); "
                f"wall time {meta.get('wall_s', '?')} s.",
                "",
                markdown_tables(data),
            ]
        else:
            md_file = RESULTS_DIR / f"{stem}.md"
            if md_file.is_file():
                body = md_file.read_text(encoding="utf-8").strip()
                # Demote the file's headings one level below this page's title.
                body = "\n".join(
                    ("#" + ln) if ln.startswith("#") else ln for ln in body.splitlines()
                )
                if not body.lstrip().startswith("## "):
                    lines += [f"## {stem}", ""]
                lines += [body, ""]
    notes = [f"- `{k}`: {v.splitlines()[0]}" for k, v in status.items()]
    if notes:
        lines += [f"## Last suite run ({mode})", "", *notes, ""]
    lines += ["Earlier runs and the changes behind them: [HtmlRAG history](htmlrag-history.md)."]
    return "\n".join(lines).rstrip() + "\n"


def _limits(limits: Any) -> str:
    if isinstance(limits, dict):
        return ", ".join(f"{k} {v}" for k, v in limits.items())
    return str(limits)


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m benchmarks.run``; returns the exit status."""
    parser = argparse.ArgumentParser(description="hrefine benchmark suite")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--quick",
        action="store_true",
        help="quick suite (its time on 2 CPU cores: docs/evaluation.md)",
    )
    mode.add_argument("--full", action="store_true", help="full suite (GPU machines)")
    parser.add_argument("--only", default="", help="comma-separated benchmark names")
    parser.add_argument("--update-baseline", action="store_true", help="re-pin floors")
    parser.add_argument(
        "--allow-regression", action="store_true", help="let --update-baseline lower floors"
    )
    parser.add_argument("--no-docs", action="store_true", help="do not rewrite docs")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    quiet_bm25s()  # one line per BM25 index otherwise
    quick = not args.full
    label = "quick" if quick else "full"
    names = [n.strip() for n in args.only.split(",") if n.strip()] or discover()

    started = time.perf_counter()
    results, status = run_benchmarks(names, quick)
    baseline: dict[str, Any] = {}
    if BASELINE_FILE.is_file():
        baseline = json.loads(BASELINE_FILE.read_text(encoding="utf-8"))
    failures: list[str] = []
    notes: list[str] = []
    if args.update_baseline:
        refused = update_baseline(baseline, results, allow_regression=args.allow_regression)
        baseline["suite"] = label
        BASELINE_FILE.write_text(json.dumps(baseline, indent=1, sort_keys=True) + "\n")
        failures += refused
        log.info("re-pinned floors in %s", BASELINE_FILE)
    elif not quick:
        notes.append("floors are pinned for the quick suite; not checked in --full")
    else:
        for name, result in results.items():
            f, n = check_floors(name, result, baseline)
            failures += f
            notes += n
        for name in baseline.get("floors", {}):
            if name not in results and name in names:
                notes.append(f"{name}: did not run, floors not checked")
    crashed = [f"{k} {v}" for k, v in status.items() if v.startswith("failed")]

    summary = {
        "mode": label,
        "wall_s": round(time.perf_counter() - started, 1),
        "status": status,
        "floor_failures": failures,
        "notes": notes,
        "hardware": hardware(),
        "versions": package_versions(),
    }
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    (RESULTS_DIR / f"suite-{label}.json").write_text(
        json.dumps(summary, indent=1) + "\n", encoding="utf-8"
    )
    if not args.no_docs:
        DOCS_FILE.parent.mkdir(parents=True, exist_ok=True)
        DOCS_FILE.write_text(render_docs(label, status), encoding="utf-8")

    for name, state in status.items():
        print(f"{name:<12} {state.splitlines()[0]}")
    for note in notes:
        print(f"note: {note}")
    for failure in failures + crashed:
        print(f"FAIL: {failure.splitlines()[0]}")
    return 1 if failures or crashed else 0


if __name__ == "__main__":
    sys.exit(main())
