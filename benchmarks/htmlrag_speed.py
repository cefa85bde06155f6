"""Like-for-like speed of HtmlRAG's embedding pruning against the reference ``htmlrag`` 0.1.1.

Issue #41, item 10. The suite's speed table (:mod:`benchmarks.htmlrag`) compares each side as
shipped: hrefine's embedding pruner reads 128 word pieces of each block, htmlrag 256 (the
MiniLM folder's own limit), hrefine may run in bfloat16, and memory is the rise in a long-lived
process. Here, on the same pages and questions, with the same MiniLM folder and the same
Llama-3.2 budget tokenizer:

1. **Read length.** hrefine at 128 and at 256 word pieces per block, htmlrag at 256 and at 128
   (htmlrag has no setting for it: the runner sets ``max_seq_length`` on the
   SentenceTransformer inside its langchain embedder), each with its answer containment at
   1024 tokens (the HtmlRAG benchmark's metric) on the same questions.
2. **Spread.** Every question is pruned cold on both sides (ours: one ``HtmlPruner.prune``
   call with the vector and page caches emptied; theirs: ranking + ``prune_HTML``, its
   cleaning and block tree not counted, as in the suite; the end-to-end row adds them). The
   per-question ratio (theirs / ours) is summarised by p10 / median / p90 and the share of
   questions under the 5× target, per dataset (WTQ, NQ).
3. **Memory in fresh processes.** On a sample of pages, each side cleans, builds the block tree
   and prunes one page in a new process (:mod:`benchmarks._speed_child`): its resident size
   before the page and its peak during it.
4. **The floor.** A bare ``lxml.html.fromstring`` of each page, and each side's clean + block
   tree (and our cold pruning) as a multiple of it.
5. **float32.** Our embedder is held to float32 (the default on CPUs without native bfloat16);
   htmlrag's sentence-transformers runs in float32. Each row records the dtype it ran in.

Run: ``python -m benchmarks.htmlrag_speed [--limit N] [--mem-pages M]``; writes
``results/htmlrag_speed.{json,md,png}`` and prints a one-line summary.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
import warnings
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from benchmarks._common import RESULTS_DIR, hardware, package_versions
from benchmarks._speed_memory import run_memory, summarize_memory
from benchmarks._speed_stats import ratios, spread

__all__ = ["main", "one_line", "select", "summarize"]

BUDGET = 1024  # the HtmlRAG benchmark's headline budget (containment at 1024 tokens)
MAX_WORDS = 256  # block granularity on both sides (the paper's stage 1)
OUR_READS = (256, 128)  # word pieces per block: like for like, then hrefine's default
REF_READS = (256, 128)  # htmlrag's own (its MiniLM folder's limit), then ours
TARGET = 5.0  # the cold-pruning speed-up
#: Default questions per dataset (round robin over its pages, so each on its own page): NQ
#: pages cost the reference 10-35 s a question at each read length on 2 cores.
DEFAULT_LIMIT = 6
#: Default pages measured in fresh processes, alternating datasets (both sides at 256 word
#: pieces; each process loads its model, 5-7 s, before the page).
DEFAULT_MEM_PAGES = 4
PARSE_REPEATS = 3  # the parse floor and our clean + block tree: best of this many calls
DATASETS = ("wtq", "leval-nq")
OURS, REF = "hrefine", "htmlrag"
#: Ratio rows (theirs / ours): label -> (their config, our config).
PAIRS = {
    "like for like, 256 word pieces": ("htmlrag@256", "hrefine@256"),
    "like for like, 128 word pieces": ("htmlrag@128", "hrefine@128"),
    "as shipped (htmlrag 256, hrefine 128)": ("htmlrag@256", "hrefine@128"),
}

log = logging.getLogger("benchmarks.htmlrag_speed")


# ----------------------------------------------------------------------------- data
def select(limit: int | None) -> dict[str, list[Any]]:
    """At most ``limit`` questions per dataset, round robin over its pages.

    Pages and questions in :func:`hrefine.eval.loaders.subset` order; the first question of
    each page, then the second, ..., so a small limit still spreads over many pages. WTQ:
    strict questions.
    """
    from hrefine.eval.loaders import load_dataset, subset

    out: dict[str, list[Any]] = {}
    for ds in DATASETS:
        items = load_dataset(ds, strict_only=True) if ds == "wtq" else load_dataset(ds)
        by_doc: dict[str, list[Any]] = defaultdict(list)
        for it in subset(items, None):
            by_doc[it.doc_id].append(it)
        chosen: list[Any] = []
        depth = 0
        while (limit is None or len(chosen) < limit) and any(
            len(g) > depth for g in by_doc.values()
        ):
            for group in by_doc.values():
                if depth < len(group) and (limit is None or len(chosen) < limit):
                    chosen.append(group[depth])
            depth += 1
        # Grouped by page, so a page's questions run together.
        order = {doc: n for n, doc in enumerate(by_doc)}
        out[ds] = sorted(chosen, key=lambda it: order[it.doc_id])
    return out


# ----------------------------------------------------------------------------- our side
def _timed_embedder_class() -> Any:
    """SentenceTransformerEmbedder that adds up the seconds of its model calls (tokenising
    and forward passes, as htmlrag's ``SentenceTransformer.encode`` is timed) in ``model_s``."""
    from hrefine.models.embed import SentenceTransformerEmbedder

    class TimedEmbedder(SentenceTransformerEmbedder):
        model_s = 0.0

        def _encode(self, texts: list[str], limit: int | None) -> Any:
            t0 = time.perf_counter()
            try:
                return super()._encode(texts, limit)
            finally:
                self.model_s += time.perf_counter() - t0

    return TimedEmbedder


class OurSide:
    """hrefine's embedding pruner in float32 at each read length, sharing one embedder."""

    def __init__(self) -> None:
        from hrefine.html import HtmlPruner
        from hrefine.models.embed import default_embedder_path

        self.embedder = _timed_embedder_class()(
            str(default_embedder_path()), name="all-MiniLM-L6-v2", precision="float32"
        )
        self.pruners = {
            n: HtmlPruner(
                scorer="embedding", embedder=self.embedder, max_words=MAX_WORDS, embed_max_tokens=n
            )
            for n in OUR_READS
        }

    @property
    def dtype(self) -> str:
        return self.embedder.compute_dtype

    def cold(self, html: str, question: str, read: int) -> tuple[float, str, float]:
        """One cold prune (vector and page caches emptied first): seconds, output HTML and
        the seconds of it spent in the embedding model."""
        pruner = self.pruners[read]
        self.embedder.clear_cache()
        pruner.clear_cache()
        self.embedder.model_s = 0.0
        t0 = time.perf_counter()
        out = pruner.prune(html, question, BUDGET).html
        return time.perf_counter() - t0, out, self.embedder.model_s


def best_of(fn: Any, *args: Any, repeats: int = PARSE_REPEATS, **kw: Any) -> float:
    """The shortest of ``repeats`` timed calls."""
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn(*args, **kw)
        best = min(best, time.perf_counter() - t0)
    return best


# ----------------------------------------------------------------------------- timing run
def _ref_task(doc: str, html: str, it: Any, read: int) -> dict[str, Any]:
    return {
        "task": "prune",
        "page_id": doc,
        "html": html,
        "budgets": [BUDGET],
        "max_seq_length": read,
        "questions": [{"id": it.id, "question": it.question}],
    }


def _ref_times(
    rec: dict[str, Any] | None, qid: str
) -> tuple[float | None, float | None, str, str | None]:
    """(ranking + prune_HTML, the same plus clean + block tree, output, error) of one runner
    record; no times when the reference failed (``prune_HTML`` raises on some pages)."""
    if rec is None or "questions" not in rec:
        return None, None, "", (rec or {}).get("error", "no record from the reference runner")
    q = next((q for q in rec["questions"] if q["id"] == qid), None)
    p = (q or {}).get("prune", {}).get(str(BUDGET))
    if q is None or p is None or "rank_s" not in q:
        return None, None, "", (q or {}).get("error", "no ranking")
    if p.get("error"):
        return None, None, "", str(p["error"])
    cold = q["rank_s"] + p["prune_s"]
    return cold, cold + rec["clean_tree_s"], p["html"], None


def _ref_model_s(rec: dict[str, Any] | None, qid: str) -> float | None:
    """Seconds of the reference's ranking spent in ``SentenceTransformer.encode``."""
    for q in (rec or {}).get("questions", []):
        if q.get("id") == qid and "error" not in q:
            return q.get("model_s")
    return None


def _ref_question(ref: Any, doc: str, html: str, it: Any) -> dict[str, Any]:
    """The reference on one question at every read length: ``s`` (ranking + prune_HTML),
    ``e2e_s`` (plus its clean + block tree), ``model_s`` (its embedding model's part of
    ``s``), ``outputs`` (empty where it failed), ``errors``, ``clean_tree_s``, ``dtype``."""
    got: dict[str, Any] = {
        "s": {},
        "e2e_s": {},
        "model_s": {},
        "outputs": {},
        "errors": {},
        "clean_tree_s": [],
        "dtype": {},
    }
    if ref is None:
        return got
    for read in REF_READS:
        rec = ref.call(_ref_task(doc, html, it, read))
        cold, e2e, text, error = _ref_times(rec, it.id)
        key = f"{REF}@{read}"
        got["s"][key], got["e2e_s"][key] = cold, e2e
        got["model_s"][key] = None if cold is None else _ref_model_s(rec, it.id)
        if error is not None:
            got["errors"][key] = error
        # A failed call is a miss for the quality row: its caller gets no pruned page.
        got["outputs"][key] = text
        if rec is not None and "clean_tree_s" in rec:
            got["clean_tree_s"].append(rec["clean_tree_s"])
            got["dtype"][str(read)] = str(rec.get("embed_dtype")).replace("torch.", "")
    return got


def run_timing(
    datasets: dict[str, list[Any]], ours: OurSide, ref: Any
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, str]]:
    """Every question cold on both sides at every read length, alternating which side goes
    first; per page, the parse floor and both sides' clean + block tree.

    Returns (question rows, page rows, the reference's embedder dtype per read length).
    """
    import lxml.html
    from hrefine.eval.metrics import answer_containment
    from hrefine.eval.text import html_to_text
    from hrefine.html import build_block_tree

    rows: list[dict[str, Any]] = []
    pages: list[dict[str, Any]] = []
    ref_dtype: dict[str, str] = {}
    n = 0
    for ds, items in datasets.items():
        by_doc: dict[str, list[Any]] = defaultdict(list)
        for it in items:
            by_doc[it.doc_id].append(it)
        for doc, group in by_doc.items():
            html = group[0].document
            page = {"ds": ds, "doc": doc, "chars": len(html)}
            page["parse_s"] = best_of(lxml.html.fromstring, html)
            page["ours_clean_tree_s"] = best_of(build_block_tree, html, max_words=MAX_WORDS)
            ref_ct: list[float] = []
            for it in group:
                n += 1
                theirs = _ref_question(ref, doc, html, it) if n % 2 == 0 else None
                s: dict[str, float | None] = {}
                model_s: dict[str, float | None] = {}
                outputs: dict[str, str] = {}
                for read in OUR_READS:
                    key = f"{OURS}@{read}"
                    s[key], outputs[key], model_s[key] = ours.cold(html, it.question, read)
                if theirs is None:
                    theirs = _ref_question(ref, doc, html, it)
                s.update(theirs["s"])
                model_s.update(theirs["model_s"])
                outputs.update(theirs["outputs"])
                ref_ct += theirs["clean_tree_s"]
                ref_dtype.update(theirs["dtype"])
                hits = {
                    k: answer_containment(html_to_text(v), it.answers, mode=it.answer_mode)
                    for k, v in outputs.items()
                }
                rows.append(
                    {
                        "ds": ds,
                        "id": it.id,
                        "doc": doc,
                        "s": s,
                        "model_s": model_s,
                        "e2e_s": theirs["e2e_s"],
                        "ref_errors": theirs["errors"],
                        "hits": hits,
                        "parse_s": page["parse_s"],
                    }
                )
                done = ", ".join(f"{k} {v:.2f} s" for k, v in s.items() if v is not None)
                log.info("%s %s: %s", ds, it.id, done)
            page["ref_clean_tree_s"] = min(ref_ct) if ref_ct else None
            pages.append(page)
    return rows, pages, ref_dtype


# ----------------------------------------------------------------------------- summary
def _by_ds(rows: Sequence[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Rows per dataset, plus ``"all"``."""
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        out[r["ds"]].append(r)
    return {**out, "all": list(rows)}


def _column(rows: Sequence[dict[str, Any]], field: str, key: str) -> dict[str, float | None]:
    return {r["id"]: r.get(field, {}).get(key) for r in rows}


def _shares(rows: Sequence[dict[str, Any]], config: str) -> list[float]:
    """Model seconds over call seconds of ``config``, per question where both are known."""
    out = []
    for r in rows:
        total, model = r["s"].get(config), r.get("model_s", {}).get(config)
        if total and model is not None:
            out.append(model / total)
    return out


def summarize(
    rows: Sequence[dict[str, Any]],
    pages: Sequence[dict[str, Any]],
    memory: Sequence[dict[str, Any]],
) -> dict[str, Any]:
    """The tables of the result JSON, from the per-question, per-page and memory rows."""
    groups = _by_ds(rows)
    configs = [f"{OURS}@{n}" for n in OUR_READS] + [f"{REF}@{n}" for n in REF_READS]
    cold = {
        label: {
            ds: spread(
                list(ratios(_column(g, "s", theirs), _column(g, "s", mine)).values()), TARGET
            )
            for ds, g in groups.items()
        }
        for label, (theirs, mine) in PAIRS.items()
    }
    e2e = {
        label: {
            ds: spread(
                list(ratios(_column(g, "e2e_s", theirs), _column(g, "s", mine)).values()), TARGET
            )
            for ds, g in groups.items()
        }
        for label, (theirs, mine) in PAIRS.items()
    }
    seconds = {
        c: {ds: spread([r["s"].get(c) for r in g]) for ds, g in groups.items()} for c in configs
    }
    # What bounds the ratio: each side's embedding model as a share of its call, and the
    # ratio ours would reach if everything but its model calls took no time at all.
    model_share = {c: {ds: spread(_shares(g, c)) for ds, g in groups.items()} for c in configs}
    ceiling = {
        label: {
            ds: spread(
                list(ratios(_column(g, "s", theirs), _column(g, "model_s", mine)).values()),
                TARGET,
            )
            for ds, g in groups.items()
        }
        for label, (theirs, mine) in PAIRS.items()
    }
    quality: dict[str, Any] = {}
    for c in configs:
        quality[c] = {}
        for ds, g in groups.items():
            hits = [r["hits"][c] for r in g if r["hits"].get(c) is not None]
            quality[c][ds] = {
                "containment": sum(hits) / len(hits) if hits else None,
                "n": len(hits),
                "errors": sum(c in r.get("ref_errors", {}) for r in g),
            }
    page_groups = _by_ds(pages)
    floor = {
        "lxml parse (ms)": {
            ds: spread([1000 * p["parse_s"] for p in g]) for ds, g in page_groups.items()
        },
        "hrefine clean + block tree (ms)": {
            ds: spread([1000 * p["ours_clean_tree_s"] for p in g]) for ds, g in page_groups.items()
        },
        "hrefine clean + block tree": {
            ds: spread([p["ours_clean_tree_s"] / p["parse_s"] for p in g])
            for ds, g in page_groups.items()
        },
        "htmlrag clean + block tree": {
            ds: spread(
                [
                    p["ref_clean_tree_s"] / p["parse_s"]
                    for p in g
                    if p.get("ref_clean_tree_s") is not None
                ]
            )
            for ds, g in page_groups.items()
        },
    }
    return {
        "cold": cold,
        "cold_e2e": e2e,
        "seconds": seconds,
        "model_share": model_share,
        "ceiling": ceiling,
        "quality": quality,
        "floor": floor,
        "memory": summarize_memory(memory),
    }


def one_line(res: dict[str, Any]) -> str:
    """The run in one line (printed at the end)."""

    def fmt(s: dict[str, Any]) -> str:
        if not s.get("n"):
            return "n/a"
        return (
            f"{s['median']:.1f}x (p10 {s['p10']:.1f}, p90 {s['p90']:.1f}; "
            f"{100 * s['share_under']:.0f}% under {s['target']:g}x)"
        )

    c = res["cold"]
    q = res["quality"]

    def cont(cfg: str) -> str:
        v = q[cfg]["all"]["containment"]
        return "n/a" if v is None else f"{v:.2f}"

    mem = res["memory"]
    ours_rise, ref_rise = mem[OURS]["rise_mib"], mem[REF]["rise_mib"]
    mem_txt = (
        f"fresh-process rise {ours_rise['min']:.0f}-{ours_rise['max']:.0f} vs "
        f"{ref_rise['min']:.0f}-{ref_rise['max']:.0f} MiB"
        if ours_rise["n"] and ref_rise["n"]
        else "memory n/a"
    )
    floor = res["floor"]["hrefine clean + block tree"]["all"]
    dtypes = "/".join(sorted(set(res["dtype"].values())))
    return (
        f"htmlrag_speed ({res['questions']} questions, {dtypes}): cold speed-up "
        f"256/256 {fmt(c['like for like, 256 word pieces']['all'])}; "
        f"128/128 {fmt(c['like for like, 128 word pieces']['all'])}; "
        f"as shipped {fmt(c['as shipped (htmlrag 256, hrefine 128)']['all'])}; "
        f"containment@{BUDGET} hrefine 256 {cont('hrefine@256')} / 128 {cont('hrefine@128')}, "
        f"htmlrag 256 {cont('htmlrag@256')} / 128 {cont('htmlrag@128')}; "
        f"clean+tree {floor['median']:.1f}x an lxml parse (median); {mem_txt}; "
        f"{res['wall_s']:.0f} s"
    )


# ----------------------------------------------------------------------------- main
def main(limit: int | None = DEFAULT_LIMIT, mem_pages: int = DEFAULT_MEM_PAGES) -> dict[str, Any]:
    """Run the benchmark; writes ``results/htmlrag_speed.{json,md,png}``, returns the results."""
    from benchmarks._htmlrag_speed_report import plot, render_markdown
    from benchmarks.htmlrag_ref import RefProcess, ref_config

    warnings.filterwarnings("ignore")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    started = time.time()
    datasets = select(limit)
    log.info(
        "; ".join(
            f"{ds}: {len(v)} questions on {len({i.doc_id for i in v})} pages"
            for ds, v in datasets.items()
        )
    )
    ours = OurSide()
    # The smallest page warms both sides (model loads, first batches), outside the timings.
    first = min((it for v in datasets.values() for it in v), key=lambda it: len(it.document))
    for read in OUR_READS:
        ours.cold(first.document, "warm up", read)
    ref = RefProcess(ref_config(MAX_WORDS) | {"clean_tree_repeats": 1})
    ref_p = ref if ref.available else None
    if ref_p is not None:
        for read in REF_READS:
            ref_p.call(_ref_task("warm-up", first.document, first, read))
    try:
        rows, pages, ref_dtype = run_timing(datasets, ours, ref_p)
    finally:
        ref.close()
    ref_info = ref.info()
    ref_python = None
    if ref_info["available"]:
        from benchmarks._refenv import ensure_refenv

        ref_python = str(ensure_refenv("htmlrag"))
    memory = run_memory(datasets, mem_pages, ref_python, BUDGET, MAX_WORDS) if mem_pages > 0 else []
    res: dict[str, Any] = {
        "benchmark": "htmlrag_speed",
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "limit": limit,
        "mem_pages": mem_pages,
        "questions": len(rows),
        "selection": {
            ds: {"questions": len(v), "pages": len({i.doc_id for i in v})}
            for ds, v in datasets.items()
        },
        "budget": BUDGET,
        "max_words": MAX_WORDS,
        "target": TARGET,
        "dtype": {
            **{f"{OURS}@{n}": ours.dtype for n in OUR_READS},
            **{f"{REF}@{n}": ref_dtype.get(str(n), "n/a") for n in REF_READS},
        },
        "reference": ref_info,
        "hardware": hardware(),
        "versions": package_versions(),
        **summarize(rows, pages, memory),
        "per_question": rows,
        "per_page": pages,
        "memory_rows": memory,
    }
    res["wall_s"] = time.time() - started
    write_outputs(res, plot, render_markdown)
    print(one_line(res))
    return res


def write_outputs(res: dict[str, Any], plot: Any, render_markdown: Any) -> None:
    """``results/htmlrag_speed.{json,md,png}``."""
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    stem = RESULTS_DIR / "htmlrag_speed"
    stem.with_suffix(".json").write_text(json.dumps(res, indent=1, default=str), encoding="utf-8")
    stem.with_suffix(".md").write_text(render_markdown(res), encoding="utf-8")
    plot(res, stem.with_suffix(".png"))


def _cli(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="HtmlRAG speed, like for like: hrefine vs htmlrag")
    ap.add_argument(
        "--limit",
        type=int,
        default=DEFAULT_LIMIT,
        help=f"questions per dataset, round robin over its pages (default {DEFAULT_LIMIT})",
    )
    ap.add_argument(
        "--mem-pages",
        type=int,
        default=DEFAULT_MEM_PAGES,
        help=f"pages measured in fresh processes (default {DEFAULT_MEM_PAGES}; 0: none)",
    )
    ap.add_argument("--replot", action="store_true", help="re-render md/png from the JSON")
    args = ap.parse_args(argv)
    if args.replot:
        from benchmarks._htmlrag_speed_report import plot, render_markdown

        res = json.loads((RESULTS_DIR / "htmlrag_speed.json").read_text(encoding="utf-8"))
        write_outputs(res, plot, render_markdown)
        print(one_line(res))
        return 0
    main(args.limit, args.mem_pages)
    return 0


if __name__ == "__main__":
    sys.exit(_cli())
