"""Speed of hrefine's RAPTOR against ``llama-index-packs-raptor`` 0.4.2 (issue #36, "must show").

Both sides build a RAPTOR tree over the same corpus in one run, with the same embedder (the
embedded all-MiniLM-L6-v2 folder) and the same instant fake LLM (the first 60 words of the
texts it is asked to summarise, :func:`benchmarks._raptor_bench.fake_summary`), leaves of 100
tokens, and ``k = 10`` nodes per query (per layer in traversal), so that what is timed is the
tree-building and retrieval machinery, not a model:

1. **One long document**: the QuALITY story of L-Eval with the most questions; its questions
   are the queries.
2. **About 300 chunks**: the first 300 distinct HotpotQA paragraphs of at most 60 words (one
   100-token leaf each but for a few, on both sides); the first 30 questions they were
   retrieved for are the queries (5 of them in traversal mode: the pack's traversal costs
   seconds a query there).

For each: build seconds (the document is built twice on each side: the first build pays
numba's compilation of UMAP in that process, the second does not), the collapsed-tree query and
the traversal query (median and p90 over the questions, each question's vector computed afresh),
the tree's shape and the peak resident memory of the build. The pack runs in its own venv
(:mod:`benchmarks._refenv`, ``benchmarks/ref_raptor_runner.py``), fed one corpus at a time right
before ours, so both see the same machine load.

3. **LLM latency**: a fake LLM that sleeps 200 ms per call, on growing corpora (ours only):
   the LLM's wall time in a build follows the number of layers (rounds of concurrent calls),
   not the number of clusters (calls), which sequential summarising (the pack, the authors'
   code) would pay one after another.

Run ``python -m benchmarks.raptor_speed`` (``--no-ref`` for our side only); writes
``results/raptor_speed.{json,md,png}`` and prints a one-line summary.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import queue
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks import _rss as rss
from benchmarks._common import BENCH_DIR, PACKAGES, RESULTS_DIR, hardware, package_versions
from benchmarks._raptor_bench import (
    busy_seconds,
    context_marker,
    fake_summary,
    layer_waves,
    ratio,
    timing_stats,
)

__all__ = ["Corpus", "doc_corpus", "main", "paragraph_corpus"]

K = 10  # nodes per query (collapsed) or per layer (traversal), both sides
CHUNK_TOKENS = 100
N_PARAGRAPHS = 300
PARA_MAX_WORDS = 60  # ~80 tokens: one leaf per paragraph on both sides
#: Queries timed on the paragraph corpus (its paragraphs answer about 100 questions), and of
#: those in traversal mode (the pack's traversal costs seconds each).
PARA_QUERIES = 30
TRAVERSAL_QUERIES = 5
QUERY_TIMEOUT_S = 20  # the pack's traversal can loop forever
REF_TASK_TIMEOUT_S = 600.0
SLOW_LLM_S = 0.2
SCALING_SIZES = (30, 100, 300)
TARGETS = {"build": 5.0, "collapsed": 4.0}
RUNNER = BENCH_DIR / "ref_raptor_runner.py"
REF_MARKER = "@@REF@@ "
CACHE_DIR = BENCH_DIR / ".cache" / "raptor"


@dataclass(frozen=True)
class Corpus:
    """Texts to build a tree over and the questions asked of it."""

    id: str
    description: str
    texts: list[str]
    queries: list[str]
    builds: int = 1
    traversal_queries: int | None = None


# ----------------------------------------------------------------------------- corpora
def doc_corpus() -> Corpus:
    """The QuALITY document with the most questions (ties: the lowest id), one text."""
    from hrefine.eval.loaders import load_dataset

    items = load_dataset("leval-quality")
    by_doc: dict[str, list[Any]] = {}
    for it in items:
        by_doc.setdefault(it.doc_id, []).append(it)
    doc_id = min(by_doc, key=lambda d: (-len(by_doc[d]), d))
    its = by_doc[doc_id]
    path = its[0].doc_path
    text = its[0].doc_text or Path(path).read_text(encoding="utf-8")
    return Corpus(
        id="document",
        description=f"L-Eval QuALITY {doc_id}: one document of {len(text.split()):,} words",
        texts=[text],
        queries=[it.question for it in its],
        builds=2,
    )


def paragraph_corpus(n: int = N_PARAGRAPHS, max_words: int = PARA_MAX_WORDS) -> Corpus:
    """The first ``n`` distinct HotpotQA paragraphs of at most ``max_words`` words."""
    from hrefine.eval.loaders import hotpot_paragraph_text, load_dataset

    seen: set[str] = set()
    texts: list[str] = []
    queries: list[str] = []
    for it in load_dataset("hotpotqa"):
        used = False
        for p in it.extra["paragraphs"]:
            text = f"{p['title']}\n{hotpot_paragraph_text(p)}"
            if len(texts) >= n or text in seen or len(text.split()) > max_words:
                continue
            seen.add(text)
            texts.append(text)
            used = True
        if used:
            queries.append(it.question)
        if len(texts) >= n:
            break
    return Corpus(
        id="paragraphs",
        description=f"{len(texts)} HotpotQA paragraphs of at most {max_words} words",
        texts=texts,
        queries=queries[:PARA_QUERIES],
        traversal_queries=TRAVERSAL_QUERIES,
    )


# ----------------------------------------------------------------------------- reference
class RefRunner:
    """``ref_raptor_runner.py`` in the pack's venv, fed one corpus at a time.

    ``error`` says why when the venv cannot be built or the runner fails; every task then
    returns None and the report leaves the pack's columns empty (never made up).
    """

    def __init__(self, cfg: dict[str, Any]) -> None:
        from benchmarks._refenv import RefEnvError, ensure_refenv

        self.error: str | None = None
        self.hello: dict[str, Any] = {}
        self.proc: subprocess.Popen[str] | None = None
        self._lines: queue.Queue[str | None] = queue.Queue()
        try:
            py = ensure_refenv("raptor")
        except RefEnvError as exc:
            self.error = f"reference venv could not be built: {exc}"
            return
        CACHE_DIR.mkdir(parents=True, exist_ok=True)
        cfg_path = CACHE_DIR / "ref_cfg.json"
        cfg_path.write_text(json.dumps(cfg), encoding="utf-8")
        env = dict(os.environ)
        env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
        env.pop("PYTHONPATH", None)
        self._stderr = (CACHE_DIR / "ref_stderr.log").open("w", encoding="utf-8")
        self.proc = subprocess.Popen(
            [str(py), str(RUNNER), "--config", str(cfg_path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            encoding="utf-8",
            env=env,
            bufsize=1,
        )
        threading.Thread(target=self._pump, daemon=True).start()
        hello = self._read(120.0)
        if hello is not None:
            self.hello = hello

    def _pump(self) -> None:
        assert self.proc is not None
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith(REF_MARKER):
                self._lines.put(line[len(REF_MARKER) :])
        self._lines.put(None)

    def _read(self, timeout: float) -> dict[str, Any] | None:
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            self._fail(f"the runner gave no answer within {timeout:.0f} s")
            return None
        if line is None:
            self._fail("the runner exited (see benchmarks/.cache/raptor/ref_stderr.log)")
            return None
        return dict(json.loads(line))

    def _fail(self, why: str) -> None:
        self.error = why
        self.close()

    def run(self, corpus: Corpus, timeout: float = REF_TASK_TIMEOUT_S) -> dict[str, Any] | None:
        """The pack's record for ``corpus`` (None when the runner is not up or fails)."""
        if self.error is not None or self.proc is None or self.proc.stdin is None:
            return None
        task = {
            "task": "build",
            "id": corpus.id,
            "texts": corpus.texts,
            "queries": corpus.queries,
            "builds": corpus.builds,
            "traversal_queries": corpus.traversal_queries or len(corpus.queries),
        }
        self.proc.stdin.write(json.dumps(task) + "\n")
        self.proc.stdin.flush()
        return self._read(timeout)

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


# ----------------------------------------------------------------------------- our side
class InstantLLM:
    """The fake summariser both sides share, reading between our prompt's context markers.

    :attr:`fn` is what the tree is given: a plain function (the core tells sync from async
    callables by the function, so the calls go to a method, not to the object).
    """

    def __init__(self, template: str) -> None:
        self.marker = context_marker(template, "{context}")
        self.calls = 0

    def summarise(self, prompt: str) -> str:
        self.calls += 1
        return fake_summary(prompt, self.marker)

    @property
    def fn(self) -> Callable[[str], Any]:
        return self.summarise


class SlowLLM(InstantLLM):
    """The same summaries after ``SLOW_LLM_S`` of waiting, like an API call; records each call."""

    def __init__(self, template: str, latency: float = SLOW_LLM_S) -> None:
        super().__init__(template)
        self.latency = latency
        self.intervals: list[tuple[float, float]] = []

    async def asummarise(self, prompt: str) -> str:
        start = time.perf_counter()
        await asyncio.sleep(self.latency)
        self.intervals.append((start, time.perf_counter()))
        return self.summarise(prompt)

    @property
    def fn(self) -> Callable[[str], Any]:
        return self.asummarise


def shape_of(tree: Any) -> dict[str, Any]:
    """Nodes per layer (leaves first) of one of our trees."""
    per_layer = list(tree.stats.get("nodes_per_layer", []))
    return {
        "nodes": len(tree),
        "leaves": int(tree.stats.get("leaves", per_layer[0] if per_layer else 0)),
        "summary_layers": int(tree.layers),
        "nodes_per_layer": per_layer,
        "clusters_per_layer": list(tree.stats.get("clusters_per_layer", [])),
    }


def build_ours(
    texts: Sequence[str], llm: InstantLLM, embedder: Any, **settings: Any
) -> tuple[Any, dict[str, Any]]:
    """One timed build (the embedder's vector cache emptied first: every text is embedded)."""
    from hrefine.raptor import RaptorTree

    embedder.clear_cache()
    calls0 = llm.calls
    m0 = rss.start()
    t0, c0 = time.perf_counter(), time.process_time()
    tree = RaptorTree.build(
        list(texts), llm=llm.fn, embedder=embedder, chunk_tokens=CHUNK_TOKENS, **settings
    )
    seconds = time.perf_counter() - t0
    return tree, {
        "seconds": seconds,
        "cpu_seconds": time.process_time() - c0,
        "peak_kib": rss.peak_since(m0),
        "llm_calls": llm.calls - calls0,
    }


def time_queries(tree: Any, embedder: Any, queries: Sequence[str], mode: str) -> dict[str, Any]:
    """Each query timed once, its vector computed afresh (a new user question)."""
    seconds: list[float] = []
    returned: list[int] = []
    errors: list[str] = []
    for query in queries:
        embedder.clear_cache()
        t0 = time.perf_counter()
        try:
            nodes = tree.retrieve(query, mode=mode, k=K, max_tokens=None)
        except Exception as exc:  # reported, not hidden: the row shows the error
            errors.append(f"{type(exc).__name__}: {exc}"[:300])
            continue
        seconds.append(time.perf_counter() - t0)
        returned.append(len(nodes))
    return {
        "seconds": seconds,
        "stats": timing_stats(seconds),
        "timed_out": 0,
        "errors": errors[:5],
        "mean_nodes": round(sum(returned) / len(returned), 2) if returned else None,
    }


def run_ours(corpus: Corpus, embedder: Any) -> dict[str, Any]:
    """Our record for ``corpus``, in the runner's format."""
    from hrefine.raptor import RaptorOptions

    llm = InstantLLM(RaptorOptions().prompt)
    builds = []
    tree = None
    for _ in range(corpus.builds):
        tree = None
        tree, rec = build_ours(corpus.texts, llm, embedder)
        builds.append(rec)
    assert tree is not None
    queries = corpus.queries
    if queries:  # one untimed query first, as on the pack's side
        tree.retrieve(queries[0], k=K, max_tokens=None)
    n_trav = corpus.traversal_queries or len(queries)
    return {
        "id": corpus.id,
        "texts": len(corpus.texts),
        "builds": builds,
        "shape": shape_of(tree),
        "collapsed": time_queries(tree, embedder, queries, "collapsed"),
        "traversal": time_queries(tree, embedder, queries[:n_trav], "traversal"),
        "resident_kib": rss.resident(),
    }


def run_scaling(corpus: Corpus, embedder: Any, sizes: Sequence[int]) -> list[dict[str, Any]]:
    """Builds with a 200 ms LLM on the first ``n`` texts of ``corpus``, for each ``n``."""
    from hrefine.raptor import RaptorOptions

    opts = RaptorOptions()
    rows = []
    for n in sizes:
        if n > len(corpus.texts):
            continue
        llm = SlowLLM(opts.prompt)
        tree, rec = build_ours(corpus.texts[:n], llm, embedder)
        clusters = [int(c) for c in tree.stats.get("clusters_per_layer", [])]
        waves = layer_waves(clusters, opts.llm_concurrency)
        busy = busy_seconds(llm.intervals)
        rows.append(
            {
                "texts": n,
                "leaves": int(tree.stats.get("leaves", 0)),
                "layers": int(tree.layers),
                "clusters_per_layer": clusters,
                "llm_calls": rec["llm_calls"],
                "build_s": round(rec["seconds"], 3),
                "build_cpu_s": round(rec["cpu_seconds"], 3),
                "llm_busy_s": round(busy, 3),
                "other_s": round(rec["seconds"] - busy, 3),
                "concurrency": opts.llm_concurrency,
                "rounds": waves,
                "rounds_x_latency_s": round(waves * SLOW_LLM_S, 3),
                "layers_x_latency_s": round(int(tree.layers) * SLOW_LLM_S, 3),
                "sequential_s": round(rec["llm_calls"] * SLOW_LLM_S, 3),
            }
        )
    return rows


# ----------------------------------------------------------------------------- summary
def _median(rec: dict[str, Any] | None, mode: str) -> float | None:
    if rec is None or mode not in rec:
        return None
    value = rec[mode]["stats"]["median_ms"]
    return None if value is None else float(value)


def compare(pack: dict[str, Any] | None, ours: dict[str, Any] | None) -> dict[str, Any]:
    """Pack / ours for the last (warm) build and the two query medians of one corpus."""

    def last_build(rec: dict[str, Any] | None) -> float | None:
        if rec is None or not rec.get("builds"):
            return None
        return float(rec["builds"][-1]["seconds"])

    out: dict[str, Any] = {
        "build": ratio(last_build(pack), last_build(ours)),
        "collapsed": ratio(_median(pack, "collapsed"), _median(ours, "collapsed")),
        "traversal": ratio(_median(pack, "traversal"), _median(ours, "traversal")),
    }
    out["meets"] = {
        key: (None if out[key] is None else out[key] >= target) for key, target in TARGETS.items()
    }
    return out


def _fmt(value: Any, unit: str = "", digits: int = 2) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:,.{digits}f}{unit}"
    return f"{value}{unit}"


def _mib(kib: Any) -> str:
    return "n/a" if kib is None else f"{kib / 1024:,.0f} MiB"


def _builds(rec: dict[str, Any] | None) -> list[Any]:
    return [] if rec is None else list(rec.get("builds", []))


def _side_row(
    label: str, sides: tuple[dict[str, Any] | None, ...], get: Callable[[dict[str, Any]], Any]
) -> str:
    """A table row with one cell per side ("n/a" for a side not measured), no ratio."""
    cells = " | ".join("n/a" if s is None else str(get(s)) for s in sides)
    return f"| {label} | {cells} | |"


def render_markdown(res: dict[str, Any]) -> str:
    """The report: one table per corpus, then the LLM-latency table."""
    lines = [
        "# RAPTOR speed: hrefine vs llama-index-packs-raptor 0.4.2",
        "",
        f"Generated by `python -m benchmarks.raptor_speed` on {res['hardware']['cpu']} "
        f"({res['hardware']['cores']} cores; load average (1, 5, 15 min) at the start "
        f"{res['hardware'].get('load_avg_at_start')}, at the end "
        f"{res['hardware']['load_avg_at_end']}). Same embedder folder (all-MiniLM-L6-v2; ours "
        f"in {res['our_dtype']}, the pack's sentence-transformers in float32), same instant "
        f"fake LLM (first {res['setup']['fake_summary_words']} words of the texts to "
        f"summarise), {CHUNK_TOKENS}-token leaves, k = {K}. Pack: `tree_depth` 3 (its default, "
        "always built), `SentenceSplitter(chunk_size=100, chunk_overlap=0)`, "
        "`similarity_top_k=10`, its default SimpleVectorStore. Each query's vector is computed "
        "afresh on both sides.",
        "",
    ]
    if res.get("ref_error"):
        lines += [f"**Reference not measured:** {res['ref_error']}", ""]
    for block in res["corpora"].values():
        pack, ours, cmp_ = block.get("pack"), block.get("ours"), block["ratios"]
        lines += [f"## {block['description']}", ""]
        lines += ["| | pack | hrefine | pack / hrefine |", "|---|---:|---:|---:|"]

        sides = (pack, ours)
        nb = max(len(_builds(pack)), len(_builds(ours)))
        for i in range(nb):
            name = (
                "build (s)"
                if nb == 1
                else ("build, first in process (s)", "build, again (s)")[min(i, 1)]
            )
            pv = _builds(pack)[i]["seconds"] if i < len(_builds(pack)) else None
            ov = _builds(ours)[i]["seconds"] if i < len(_builds(ours)) else None
            lines.append(f"| {name} | {_fmt(pv)} | {_fmt(ov)} | {_fmt(ratio(pv, ov), 'x')} |")
        for mode in ("collapsed", "traversal"):
            for stat in ("median_ms", "p90_ms"):
                pv = None if pack is None else pack[mode]["stats"][stat]
                ov = None if ours is None else ours[mode]["stats"][stat]
                label = f"{mode} query, {stat.split('_')[0]} (ms)"
                lines.append(
                    f"| {label} | {_fmt(pv, digits=1)} | {_fmt(ov, digits=1)} | "
                    f"{_fmt(ratio(pv, ov), 'x')} |"
                )
        lines += [
            _side_row(
                "queries timed: collapsed / traversal (stopped after "
                f"{QUERY_TIMEOUT_S} s, not in the statistics)",
                sides,
                lambda s: (
                    f"{s['collapsed']['stats']['n']} / {s['traversal']['stats']['n']} "
                    f"({s['traversal']['timed_out']})"
                ),
            ),
            _side_row(
                "mean nodes returned: collapsed / traversal",
                sides,
                lambda s: f"{s['collapsed']['mean_nodes']} / {s['traversal']['mean_nodes']}",
            ),
            _side_row(
                "tree: nodes per layer, leaves first",
                sides,
                lambda s: " / ".join(map(str, s["shape"]["nodes_per_layer"])),
            ),
            _side_row("LLM calls (last build)", sides, lambda s: s["builds"][-1]["llm_calls"]),
            _side_row(
                "peak memory rise of the last build",
                sides,
                lambda s: _mib(s["builds"][-1]["peak_kib"]),
            ),
        ]
        lines.append("")
        met = ", ".join(
            f"{k} {cmp_[k]}x (target {TARGETS[k]}x: {'met' if ok else 'not met'})"
            for k, ok in cmp_["meets"].items()
            if ok is not None
        )
        if met:
            lines += [f"Warm build and collapsed median: {met}.", ""]
    rows = res.get("scaling", [])
    if rows:
        lines += [
            f"## LLM latency: a fake LLM that waits {SLOW_LLM_S * 1000:.0f} ms per call (hrefine)",
            "",
            "Summaries of a layer go out together (`llm_concurrency` "
            f"{rows[0]['concurrency']} at a time); a layer waits for the one below. *LLM busy* is "
            "the wall time during which at least one call was in flight; *rounds* is "
            "sum over layers of ceil(clusters / concurrency); *sequential* is calls x "
            f"{SLOW_LLM_S} s, what summarising one cluster after another would cost.",
            "",
            "| texts | leaves | layers | clusters per layer | LLM calls | build (s) "
            "| build CPU (s) | LLM busy (s) | rounds x 0.2 s | layers x 0.2 s | sequential (s) |",
            "|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for r in rows:
            cpu = r.get("build_cpu_s")
            lines.append(
                f"| {r['texts']} | {r['leaves']} | {r['layers']} | "
                f"{' / '.join(map(str, r['clusters_per_layer']))} | {r['llm_calls']} | "
                f"{r['build_s']:.2f} | {'' if cpu is None else f'{cpu:.2f}'} | "
                f"{r['llm_busy_s']:.2f} | {r['rounds_x_latency_s']:.1f} | "
                f"{r['layers_x_latency_s']:.1f} | {r['sequential_s']:.1f} |"
            )
        exponent = res.get("scaling_cpu_exponent")
        if exponent is not None:
            lines += [
                "",
                f"Build CPU seconds grow as leaves^{exponent} (least-squares log-log slope).",
            ]
        lines.append("")
    lines += [f"Total run time: {res['run_seconds']:.0f} s.", ""]
    return "\n".join(lines)


def plot(res: dict[str, Any], path: Path) -> None:
    """Build seconds and collapsed-query ms per corpus, both sides; the latency table as lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(14, 4.2))
    corpora = list(res["corpora"].items())
    metrics = (
        ("build (s, warm)", lambda r: r["builds"][-1]["seconds"]),
        ("collapsed query median (ms)", lambda r: r["collapsed"]["stats"]["median_ms"]),
    )
    for ax, (title, get) in zip(axes[:2], metrics, strict=True):
        xs = range(len(corpora))
        for offset, side, color in ((-0.2, "pack", "#c44e52"), (0.2, "ours", "#4c72b0")):
            vals = [
                (get(block[side]) if block.get(side) is not None else 0) or 0
                for _, block in corpora
            ]
            ax.bar(
                [x + offset for x in xs],
                vals,
                width=0.4,
                color=color,
                label="llama-index-packs-raptor" if side == "pack" else "hrefine",
            )
        ax.set_xticks(list(xs), [cid for cid, _ in corpora])
        ax.set_title(title)
        ax.legend(fontsize=8)
    ax = axes[2]
    rows = res.get("scaling", [])
    if rows:
        sizes = [r["texts"] for r in rows]
        ax.plot(sizes, [r["build_s"] for r in rows], "o-", label="hrefine build (s)")
        ax.plot(sizes, [r["llm_busy_s"] for r in rows], "s-", label="of which LLM busy (s)")
        ax.plot(sizes, [r["sequential_s"] for r in rows], "x--", label="calls x 0.2 s (sequential)")
        ax.set_xlabel("texts")
        ax.set_title(f"{SLOW_LLM_S * 1000:.0f} ms per LLM call")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def one_line(res: dict[str, Any]) -> str:
    """The summary printed at the end."""
    parts = []
    for cid, block in res["corpora"].items():
        r = block["ratios"]
        ours = block.get("ours") or {}
        b = ours.get("builds", [{}])[-1].get("seconds")
        q = (ours.get("collapsed") or {}).get("stats", {}).get("median_ms")
        parts.append(
            f"{cid}: build {_fmt(b)} s ({_fmt(r['build'], 'x')} vs pack), "
            f"collapsed {_fmt(q, digits=1)} ms ({_fmt(r['collapsed'], 'x')}), "
            f"traversal {_fmt(r['traversal'], 'x')}"
        )
    rows = res.get("scaling", [])
    if rows:
        last = rows[-1]
        parts.append(
            f"200 ms LLM, {last['texts']} texts: {last['llm_calls']} calls in {last['layers']} "
            f"layers, LLM busy {last['llm_busy_s']:.1f} s "
            f"vs {last['sequential_s']:.0f} s sequential"
        )
    if res.get("ref_error"):
        parts.append(f"pack not measured: {res['ref_error'][:120]}")
    return "raptor_speed: " + "; ".join(parts)


# ----------------------------------------------------------------------------- main
def main(*, with_ref: bool = True, sizes: Sequence[int] = SCALING_SIZES) -> dict[str, Any]:
    """Run the benchmark and return its results (see the module docstring)."""
    from hrefine.models import default_embedder
    from hrefine.models.embed import default_embedder_path

    started = time.perf_counter()
    load_at_start = [round(x, 2) for x in os.getloadavg()]
    corpora = [doc_corpus(), paragraph_corpus()]
    embedder = default_embedder()
    embedder.embed(["warm up the embedder"])  # weights loaded before any timing, as the pack's
    ref: RefRunner | None = None
    ref_error: str | None = "not run (--no-ref)" if not with_ref else None
    if with_ref:
        ref = RefRunner(
            {
                "embed_model": str(default_embedder_path()),
                "chunk_tokens": CHUNK_TOKENS,
                "k": K,
                "context_window": 128_000,
                "query_timeout_s": QUERY_TIMEOUT_S,
            }
        )
    out: dict[str, Any] = {}
    try:
        for corpus in corpora:
            pack = ref.run(corpus) if ref is not None else None
            if pack is not None and "error" in pack:
                ref_error = f"{corpus.id}: {pack['error']}"
                pack = None
            ours = run_ours(corpus, embedder)
            out[corpus.id] = {
                "description": corpus.description,
                "texts": len(corpus.texts),
                "queries": len(corpus.queries),
                "pack": pack,
                "ours": ours,
                "ratios": compare(pack, ours),
            }
            print(f"[raptor_speed] {corpus.id}: {json.dumps(out[corpus.id]['ratios'])}", flush=True)
    finally:
        if ref is not None:
            if ref.error and ref_error is None:
                ref_error = ref.error
            ref.close()
    scaling = run_scaling(corpora[1], embedder, sizes)
    from benchmarks.raptor_scaling import fitted_exponent

    scaling_exponent = fitted_exponent(
        [r["leaves"] for r in scaling], [r["build_cpu_s"] for r in scaling]
    )
    return {
        "benchmark": "raptor_speed",
        "setup": {
            "k": K,
            "chunk_tokens": CHUNK_TOKENS,
            "fake_summary_words": 60,
            "paragraph_max_words": PARA_MAX_WORDS,
            "traversal_queries_paragraphs": TRAVERSAL_QUERIES,
            "query_timeout_s": QUERY_TIMEOUT_S,
            "slow_llm_s": SLOW_LLM_S,
            "targets": TARGETS,
        },
        "our_dtype": getattr(embedder, "compute_dtype", "unknown"),
        "corpora": out,
        "scaling": scaling,
        "scaling_cpu_exponent": scaling_exponent,
        "ref_error": ref_error,
        "ref_load_s": None if ref is None else ref.hello.get("load_s"),
        "ref_versions": None if ref is None else ref.hello.get("versions"),
        "versions": package_versions((*PACKAGES, "umap-learn", "scikit-learn", "numba")),
        "hardware": {**hardware(), "load_avg_at_start": load_at_start},
        "run_seconds": round(time.perf_counter() - started, 1),
    }


def _strip_seconds(res: dict[str, Any]) -> dict[str, Any]:
    """The results without per-query timing lists, rounded (the JSON stays readable)."""
    slim = json.loads(json.dumps(res))
    for block in slim["corpora"].values():
        for side in ("pack", "ours"):
            rec = block.get(side)
            if rec is None:
                continue
            for mode in ("collapsed", "traversal"):
                rec[mode]["ms"] = [round(s * 1000, 2) for s in rec[mode].pop("seconds", [])]
            for b in rec.get("builds", []):
                b["seconds"] = round(b["seconds"], 3)
                if "cpu_seconds" in b:
                    b["cpu_seconds"] = round(b["cpu_seconds"], 3)
    return slim


def _cli(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--no-ref", action="store_true", help="our side only")
    ap.add_argument(
        "--sizes",
        default=",".join(map(str, SCALING_SIZES)),
        help="corpus sizes (texts) of the 200 ms LLM builds, comma-separated ('' for none)",
    )
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    res = _strip_seconds(main(with_ref=not args.no_ref, sizes=sizes))
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    stem = RESULTS_DIR / "raptor_speed"
    stem.with_suffix(".json").write_text(json.dumps(res, indent=1) + "\n", encoding="utf-8")
    stem.with_suffix(".md").write_text(render_markdown(res), encoding="utf-8")
    plot(res, stem.with_suffix(".png"))
    print(one_line(res))
    return 0


if __name__ == "__main__":
    sys.exit(_cli())
