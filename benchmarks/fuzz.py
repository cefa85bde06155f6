"""A long seeded fuzz run of the HtmlRAG pruner, the cleaner and both adapters (issue #41),
RAPTOR, GARLIC, LongRefiner and saved folders (issue #55).

``python -m benchmarks.fuzz [--cases N] [--seed S]``, or in the suite (``benchmarks.run``).
Each case is a page (random HTML-ish text, random bytes, deep nesting, or a real page of the
evaluation data cut and mutated, in a random encoding), a query and a budget (see
:mod:`benchmarks._fuzzcases`); one case in ten is a batch of pages that holds one good page,
which a bad page beside it must not sink. Every case is cleaned and pruned with the BM25
scorer; every ``ADAPTER_EVERY``-th case also goes through the LangChain compressor and the
LlamaIndex postprocessor, and every ``EMBEDDING_EVERY``-th through the embedding scorer.

Each case belongs to one family (:data:`FAMILY_SHARES`): the HtmlRAG cases above, or a
RAPTOR, GARLIC or LongRefiner case (:mod:`benchmarks._fuzz_methods`: build, insert, retrieve,
search, refine with hostile documents, queries and budgets), or a saved folder saved and
loaded, damaged or forged (:mod:`benchmarks._fuzz_persist`).

Writes ``results/fuzz.{json,md}``: cases by source, errors raised on purpose by type, and the
broken properties: crashes (any exception that is not an ``HrefineError``, or not the one the
arguments call for) by type, outputs over budget, unaccounted or lost text (a change of a
saved folder that loaded unnoticed among them), sunk batches; each with its first reproducer.
The suite fails (floors ``metrics/no_crash``, ``metrics/within_budget`` and
``metrics/no_silent_loss`` of 1.0 in ``results/baseline.json``) when one is found.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import shutil
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks._common import REPO, RESULTS_DIR, SEED, hardware, package_versions, quiet_bm25s
from benchmarks._fuzz_inputs import load_texts
from benchmarks._fuzz_methods import MethodFuzz
from benchmarks._fuzz_persist import PersistFuzz
from benchmarks._fuzzcases import (
    Finding,
    check_adapter_pages,
    check_clean,
    check_prune,
    load_pages,
    mutate,
    random_budget,
    random_bytes,
    random_html,
    random_nesting,
    random_query,
    reencode,
)

QUICK_CASES = 10_000
FULL_CASES = 50_000
#: Processes the cases are shared among, one core each (most of a case is one-core Python):
#: on 2 cores the 10,000 quick cases took 25 minutes in one process. Worker 0 draws from the
#: seed itself (the first cases of a one-process run), worker ``w`` from ``f"{seed}/{w}"``.
WORKERS = 2
#: Share of the cases per family (issue #55): the HtmlRAG pruner (#41), the three newer
#: methods (:mod:`benchmarks._fuzz_methods`) and saved folders (:mod:`benchmarks._fuzz_persist`).
FAMILY_SHARES = {"htmlrag": 0.3, "raptor": 0.2, "garlic": 0.15, "longrefiner": 0.15,
                 "persistence": 0.2}  # fmt: skip
#: Every this many-th RAPTOR or GARLIC build uses the embedded embedder (else keyword vectors).
METHOD_EMBED_EVERY = 40
ADAPTER_EVERY = 25
EMBEDDING_EVERY = 100
#: Larger cases skip the embedding scorer (a CPU embeds a whole page in seconds).
EMBEDDING_MAX_BYTES = 20_000
#: A page every batch holds: whatever its neighbours are, the batch must be pruned.
GOOD_PAGE = (
    "<html><head><title>Rivers</title></head><body><h1>Rivers of Europe</h1>"
    "<p>The Volga is the longest river of Europe, at about 3,530 kilometres.</p>"
    "<p>Norway won 11 gold medals in 1972.</p></body></html>"
)
_REPRO_CHARS = 600

log = logging.getLogger("benchmarks.fuzz")

Page = str | bytes


# -- cases -------------------------------------------------------------------------------
def random_page(rng: random.Random, pages: Sequence[bytes]) -> tuple[str, Page]:
    """One page and the name of its source."""
    k = rng.random()
    if k < 0.4:
        return "html", random_html(rng)
    if k < 0.5:
        return "html-encoded", reencode(rng, random_html(rng))
    if k < 0.57:
        return "bytes", random_bytes(rng)
    if k < 0.6:
        return "nesting", random_nesting(rng)
    page = rng.choice(pages)
    if k < 0.63:  # a whole page, mutated
        return "real-whole", mutate(rng, page)
    # A window of a real page (cut inside tags and characters) keeps the run short.
    start = rng.randrange(len(page))
    return "real-window", mutate(rng, page[start : start + rng.randint(200, 20_000)])


def random_case(rng: random.Random, pages: Sequence[bytes]) -> tuple[str, list[Page] | Page]:
    """A page, or (one case in ten) a batch of 2-4 pages that holds :data:`GOOD_PAGE`."""
    if rng.random() < 0.1:
        batch = [random_page(rng, pages)[1] for _ in range(rng.randint(1, 3))]
        batch.insert(rng.randrange(len(batch) + 1), GOOD_PAGE)
        return "batch", batch
    return random_page(rng, pages)


def _repro(html: Any, query: Any, budget: int) -> str:
    text = repr(html)
    if len(text) > _REPRO_CHARS:
        text = text[:_REPRO_CHARS] + f"... ({len(text)} chars)"
    return f"html={text}, query={query!r}, budget={budget}"


def _size(html: list[Page] | Page) -> int:
    return sum(len(p) for p in html) if isinstance(html, list) else len(html)


# -- adapters ----------------------------------------------------------------------------
def _as_text(page: Page) -> str:
    # Adapters take text; bytes are read as a loader without a charset guess would.
    return page if isinstance(page, str) else page.decode("utf-8", "surrogateescape")


class Adapters:
    """The LangChain compressor and LlamaIndex postprocessor, one per budget and budget scope
    (BM25 scorer, input order kept so a shared budget can be counted on the joined output)."""

    def __init__(self) -> None:
        self._made: dict[tuple[str, int, bool], Any] = {}

    def _get(self, kind: str, budget: int, together: bool) -> Any:
        key = (kind, budget, together)
        if key not in self._made:
            if kind == "langchain":
                from langchain_hrefine import HtmlRagCompressor

                self._made[key] = HtmlRagCompressor(  # type: ignore[call-arg]
                    max_tokens=budget, scorer="bm25", prune_together=together, keep_input_order=True
                )
            else:
                from llamaindex_hrefine import HtmlRagNodePostprocessor

                self._made[key] = HtmlRagNodePostprocessor(
                    max_tokens=budget, scorer="bm25", prune_together=together, keep_input_order=True
                )
        return self._made[key]

    def call(self, kind: str, budget: int, together: bool) -> Callable[[list[str], Any], Any]:
        """A function from pages and a query to the returned texts and metadata."""
        adapter = self._get(kind, budget, together)
        if kind == "langchain":
            from langchain_core.documents import Document

            def run_lc(pages: list[str], query: Any) -> list[tuple[str, dict[str, Any]]]:
                docs = adapter.compress_documents([Document(page_content=p) for p in pages], query)
                return [(d.page_content, d.metadata) for d in docs]

            return run_lc
        from llama_index.core.schema import NodeWithScore, TextNode

        def run_li(pages: list[str], query: Any) -> list[tuple[str, dict[str, Any]]]:
            nodes = [NodeWithScore(node=TextNode(text=p), score=1.0) for p in pages]
            out = adapter.postprocess_nodes(nodes, query_str=query)
            return [(n.node.get_content(), n.node.metadata) for n in out]

        return run_li


# -- the run -----------------------------------------------------------------------------
def run(cases: int, seed: int | str = SEED, data: Path | None = None) -> dict[str, Any]:
    """Fuzz ``cases`` cases from ``seed``; the counts and the first reproducer of each
    broken property."""
    from hrefine.html import MIN_BUDGET, HtmlPruner

    data = data or Path(os.environ.get("HREFINE_DATA", REPO.parent / "shared" / "data"))
    pages = load_pages(data)
    rng = random.Random(seed)
    bm25 = HtmlPruner(scorer="bm25")
    embedding: HtmlPruner | None = None
    adapters = Adapters()
    count = bm25.counter.count
    sources: Counter[str] = Counter()
    raised: Counter[str] = Counter()
    broken: Counter[str] = Counter()
    examples: dict[str, str] = {}
    calls: Counter[str] = Counter()
    seconds: dict[str, float] = defaultdict(float)
    started = time.perf_counter()
    methods = MethodFuzz(load_texts(data), embed_every=METHOD_EMBED_EVERY)
    family_rng = random.Random(f"{seed}:family")
    method_rng = random.Random(f"{seed}:methods")
    persist_rng = random.Random(f"{seed}:persistence")
    families: Counter[str] = Counter()
    names, shares = list(FAMILY_SHARES), list(FAMILY_SHARES.values())
    workdir = Path(tempfile.mkdtemp(prefix="hrefine-fuzz-"))
    persist: PersistFuzz | None = None

    def note(found: list[Finding], repro: str) -> None:
        for f in found:
            key = f"{f.kind}: {f.where}: {f.detail}"
            broken[key] += 1
            examples.setdefault(key, repro)

    for i in range(cases):
        family = family_rng.choices(names, shares)[0]
        families[family] += 1
        if family != "htmlrag":
            t0 = time.perf_counter()
            if family == "persistence":
                if persist is None:
                    persist = PersistFuzz(load_texts(data), workdir)
                note(*persist.case(persist_rng))
            else:
                note(*methods.case(family, method_rng))
            seconds[family] += time.perf_counter() - t0
            continue
        source, html = random_case(rng, pages)
        query, budget = random_query(rng), random_budget(rng)
        sources[source] += 1
        repro = _repro(html, query, budget)
        for page in html if isinstance(html, list) else [html]:
            note(check_clean(page), _repro(page, query, budget))
            calls["clean_html"] += 1
        t0 = time.perf_counter()
        note(check_prune(bm25, html, query, budget, batch=source == "batch", raised=raised), repro)
        calls["prune bm25"] += 1
        seconds[source] += time.perf_counter() - t0
        if i % EMBEDDING_EVERY == 0 and _size(html) <= EMBEDDING_MAX_BYTES:
            if embedding is None:
                embedding = HtmlPruner(scorer="embedding")
            t0 = time.perf_counter()
            note(check_prune(embedding, html, query, budget, raised=raised), repro)
            calls["prune embedding"] += 1
            seconds["prune embedding"] += time.perf_counter() - t0
        if i % ADAPTER_EVERY == 0:
            texts = [_as_text(p) for p in (html if isinstance(html, list) else [html])]
            b = max(budget, MIN_BUDGET)
            together = rng.random() < 0.5
            t0 = time.perf_counter()
            for kind in ("langchain", "llamaindex"):
                found = check_adapter_pages(
                    adapters.call(kind, b, together),
                    kind,
                    texts,
                    query,
                    b,
                    count,
                    together,
                    none_is_missing=kind == "llamaindex",
                )
                note(found, _repro(texts, query, b))
                calls[kind] += 1
            seconds["adapters"] += time.perf_counter() - t0
    wall = time.perf_counter() - started
    shutil.rmtree(workdir, ignore_errors=True)
    for counts in (methods.raised, *([persist.raised] if persist else [])):
        raised.update(counts)
    sources.update(methods.sources)
    if persist is not None:
        sources.update({f"persistence {k}": v for k, v in persist.sources.items()})
    calls.update(methods.calls)
    totals = Counter(key.split(":", 1)[0] for key in broken.elements())
    crashes = Counter(
        key.rsplit(": ", 1)[1] for key in broken.elements() if key.startswith("crash")
    )
    return {
        "cases": cases,
        "seed": seed,
        "families": dict(sorted(families.items())),
        "sources": dict(sorted(sources.items())),
        "calls": dict(sorted(calls.items())),
        "raised_on_purpose": dict(sorted(raised.items())),
        "crashes": sum(crashes.values()),
        "crashes_by_type": dict(sorted(crashes.items())),
        "over_budget": totals["over_budget"],
        "unaccounted": totals["unaccounted"],
        "lost": totals["lost"],
        "sunk_batches": totals["sunk_batch"],
        "broken": dict(sorted(broken.items())),
        "examples": dict(sorted(examples.items())),
        "wall_s": round(wall, 1),
        "cases_per_s": round(cases / wall, 1) if wall else None,
        "seconds": {k: round(v, 1) for k, v in sorted(seconds.items())},
        "metrics": {
            "no_crash": 1.0 if not crashes else 0.0,
            "within_budget": 1.0 if not totals["over_budget"] else 0.0,
            "no_silent_loss": 1.0 if not totals["lost"] + totals["unaccounted"] else 0.0,
        },
    }


def _run_part(cases: int, seed: int | str) -> dict[str, Any]:
    # One core a worker: torch's threads would contend with the other worker's.
    os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = "1"
    quiet_bm25s()
    logging.getLogger("hrefine").setLevel(logging.ERROR)
    return run(cases, seed)


def merge(parts: Sequence[dict[str, Any]], wall: float) -> dict[str, Any]:
    """One result of the workers' ``parts`` (counts added, the first reproducer of each broken
    property kept, ``wall`` the whole run's seconds)."""
    counted = ("families", "sources", "calls", "raised_on_purpose", "crashes_by_type", "broken")
    summed = ("cases", "crashes", "over_budget", "unaccounted", "lost", "sunk_batches")
    out: dict[str, Any] = {"seed": parts[0]["seed"], "workers": len(parts)}
    for key in summed:
        out[key] = sum(int(p[key]) for p in parts)
    for key in counted:
        total: Counter[str] = Counter()
        for p in parts:
            total.update(p[key])
        out[key] = dict(sorted(total.items()))
    examples: dict[str, str] = {}
    for p in parts:
        for key, repro in p["examples"].items():
            examples.setdefault(key, repro)
    out["examples"] = dict(sorted(examples.items()))
    seconds: Counter[str] = Counter()
    for p in parts:
        seconds.update(p["seconds"])
    out["wall_s"] = round(wall, 1)
    out["cases_per_s"] = round(out["cases"] / wall, 1) if wall else None
    out["seconds"] = {k: round(v, 1) for k, v in sorted(seconds.items())}
    out["metrics"] = {m: min(p["metrics"][m] for p in parts) for m in parts[0]["metrics"]}
    return out


def run_workers(cases: int, seed: int = SEED, workers: int = WORKERS) -> dict[str, Any]:
    """:func:`run` shared among ``workers`` processes (spawned: a forked copy of a process
    that has run torch can hang); one worker runs in this process."""
    if workers <= 1:
        return run(cases, seed)
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    shares = [cases // workers + (w < cases % workers) for w in range(workers)]
    seeds: list[int | str] = [seed, *(f"{seed}/{w}" for w in range(1, workers))]
    started = time.perf_counter()
    with ProcessPoolExecutor(workers, mp_context=get_context("spawn")) as pool:
        parts = list(pool.map(_run_part, shares, seeds))
    return merge(parts, time.perf_counter() - started)


def markdown(result: dict[str, Any]) -> str:
    """The result as the section of ``docs/benchmarks.md``."""
    lines = [
        "## fuzz",
        "",
        f"{result['cases']:,} seeded cases (seed {result['seed']}, {result['mode']} mode): "
        + ", ".join(f"{k} {v:,}" for k, v in result["families"].items())
        + ". HtmlRAG cases go "
        f'through `clean_html`, `HtmlPruner(scorer="bm25")` (every '
        f"{EMBEDDING_EVERY}th case up to {EMBEDDING_MAX_BYTES:,} bytes also the embedding "
        f"scorer) and, every {ADAPTER_EVERY}th, both "
        f"adapters; {result['wall_s']} s on {result['hardware']['cores']} cores"
        + (f" ({result['workers']} worker processes)" if result.get("workers", 1) > 1 else "")
        + ". Properties "
        "(issue #41): only `HrefineError` subclasses are raised, never an output over the "
        "budget, the words of the cleaned page are all in blocks that are kept (and in the "
        "output) or have a drop reason, and a bad page never sinks a batch. RAPTOR, GARLIC and "
        "LongRefiner (issue #55; keyword embedder, the embedded one every "
        f"{METHOD_EMBED_EVERY}th build, extractive or scripted LLMs answering hostile text now "
        "and then, BM25): only `HrefineError`s, and the errors the arguments call for; "
        "retrieved, visited and refined text within the budget; every non-blank character of a "
        "document in a leaf or a structure, every LongRefiner node kept or given a drop reason. "
        "Saved folders: a save loads back exactly, a damaged one (truncated, bytes flipped, "
        "files deleted or linked, the manifest edited or cut) loads exactly what was saved or "
        "raises a `PersistenceError`, and a forged one (signed again) loads and answers "
        "queries raising nothing but `HrefineError`s.",
        "",
        "| property | broken |",
        "|---|---|",
        f"| crash (not an HrefineError, or the wrong one) | {result['crashes']} |",
        f"| output over budget | {result['over_budget']} |",
        f"| text unaccounted for | {result['unaccounted']} |",
        f"| text lost without a reason (or a saved folder changed unnoticed) | {result['lost']} |",
        f"| batch sunk by one page | {result['sunk_batches']} |",
        "",
        "Cases by source: "
        + ", ".join(f"{k} {v:,}" for k, v in result["sources"].items())
        + ". Errors raised on purpose: "
        + (", ".join(f"{k} {v:,}" for k, v in result["raised_on_purpose"].items()) or "none")
        + ".",
    ]
    if result["broken"]:
        lines += ["", "| broken property | cases |", "|---|---|"]
        lines += [f"| {k} | {v} |" for k, v in result["broken"].items()]
    return "\n".join(lines) + "\n"


def main(quick: bool = True, cases: int | None = None, seed: int = SEED) -> dict[str, Any]:
    """Run the fuzz cases and write ``results/fuzz.{json,md}``.

    Parameters
    ----------
    quick:
        :data:`QUICK_CASES` cases (else :data:`FULL_CASES`), unless ``cases`` is given.
    cases:
        Number of cases.
    seed:
        Seed of the case generator.

    Returns
    -------
    dict[str, Any]
        The counts written to ``results/fuzz.json``; ``benchmarks.run`` checks its floors
        against ``metrics`` (``no_crash`` and ``within_budget``, 1.0 when none was found).
    """
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    quiet_bm25s()
    # A skipped bad page is logged as a warning: thousands of lines otherwise.
    logging.getLogger("hrefine").setLevel(logging.ERROR)
    n = cases if cases is not None else QUICK_CASES if quick else FULL_CASES
    result: dict[str, Any] = {"benchmark": "fuzz", "mode": "quick" if quick else "full"}
    result.update(run_workers(n, seed))
    result["hardware"] = hardware()
    result["versions"] = package_versions()
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    (RESULTS_DIR / "fuzz.json").write_text(
        json.dumps(result, indent=1, ensure_ascii=True) + "\n", encoding="utf-8"
    )
    (RESULTS_DIR / "fuzz.md").write_text(markdown(result), encoding="utf-8")
    return result


def _cli(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="fuzz the four methods and saved folders (issues #41, #55)"
    )
    parser.add_argument("--cases", type=int, default=QUICK_CASES)
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    result = main(quick=True, cases=args.cases, seed=args.seed)
    keys = ("cases", "crashes", "over_budget", "unaccounted", "lost")
    summary = {k: result[k] for k in keys}
    print(
        json.dumps({**summary, "sunk_batches": result["sunk_batches"], "wall_s": result["wall_s"]})
    )
    for key, repro in result["examples"].items():
        print(f"{key}\n    {repro}")
    return 1 if result["crashes"] or result["over_budget"] or result["lost"] else 0


if __name__ == "__main__":
    sys.exit(_cli())
