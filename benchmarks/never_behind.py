"""Each method against plain chunk retrieval on every document of the dev data, per half.

Every question of every document of L-Eval NQ (HTML pages), CUAD and Qasper, and every strict
WTQ question (table pages; HtmlRAG and the baselines only), at 512 / 1024 / 2048 Llama-3.2
tokens, in one run on the same questions:

- the baselines: ``lead-text`` (start of the document), ``chunks-bm25`` and
  ``chunks-embedding`` (100-token chunks, top-scored that fit, in document order);
- hrefine's methods at their defaults: ``htmlrag`` (HTML pages only), ``longrefiner`` (no
  model), ``raptor`` (the collapsed tree as the eval method builds it by default) and
  ``garlic`` (the extractive stand-in of :mod:`hrefine.eval.garlic_method`: no model);
- any variant given on the command line (``--variant NAME=METHOD:JSON`` settings).

Documents split into the tuning and checking halves by :func:`hrefine.eval.loaders.half_of`;
every figure comes with a bootstrap 95% interval that resamples the half's documents whole
(2,000 resamples, seeded): questions on one page succeed or fail together, so resampling them
one at a time made the intervals too narrow where a half has few pages. The summary compares
each method with the best chunk baseline by a paired bootstrap of the per-question difference,
again over whole documents. Per-question hits are cached in ``benchmarks/.cache/never_behind``
under a key that holds the method, its settings and a digest of hrefine's source, so a code
change measures again and a second table costs nothing.

HotpotQA (``--datasets hotpotqa``, GARLIC's dataset) is scored by whether both supporting
paragraphs are kept whole (the GARLIC target), not by answer containment; ``--limit N`` keeps
the first ``N`` questions of each half in subset order (a slow LM variant on 2 cores).

Writes ``results/never_behind.{json,md}``::

    python -m benchmarks.never_behind
    python -m benchmarks.never_behind --datasets leval-cuad --methods longrefiner \\
        --variant 'lr-x=longrefiner:{"leaf_tokens": 100}'
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._common import RESULTS_DIR, hardware, quiet_bm25s
from benchmarks.halves import code_digest

DATASETS = ("leval-nq", "leval-cuad", "leval-qasper", "wtq")
#: Datasets only the HTML methods run on (WTQ's table pages: HtmlRAG's own ground).
HTML_DATASETS = ("wtq",)
BUDGETS = (512, 1024, 2048)
BASELINES = ("lead-text", "chunks-bm25", "chunks-embedding")
#: hrefine's methods: (report name, registered method, settings). RAPTOR's summaries are the
#: extractive stand-in here (SmolLM2 on 2 cores takes hours over every document).
METHODS: dict[str, tuple[str, dict[str, Any]]] = {
    "htmlrag": ("htmlrag", {}),
    "longrefiner": ("longrefiner", {}),
    "raptor": ("raptor", {"llm": "extractive"}),
    # GARLIC with its no-model stand-in: extract points, embedding edges, a word-overlap stop.
    "garlic": ("garlic", {"llm": "extractive"}),
}
#: Methods that read HTML, the registered variants among them (``htmlrag-generative``,
#: ``htmlrag-bm25``): run on HTML datasets only, and the only methods run on WTQ.
HTML_ONLY = ("htmlrag",)


def html_only(method: str) -> bool:
    """Whether ``method`` is HtmlRAG or one of its registered variants."""
    return method in HTML_ONLY or method.startswith(tuple(m + "-" for m in HTML_ONLY))


CHUNK_TOKENS = 100
HALVES = ("tune", "check")
RESAMPLES = 2000
CACHE = Path(__file__).resolve().parent / ".cache" / "never_behind"
METRIC = "containment"
#: Datasets scored otherwise: HotpotQA by both supporting paragraphs kept (1 or 0 a question);
#: QuALITY, whose gold is a multiple-choice option the story paraphrases, by the share of the
#: option's content words kept (answer containment is 0 for every method there).
METRICS = {"hotpotqa": "support_both", "leval-quality": "option_recall"}
METRIC_NAMES = {
    "containment": "answer containment",
    "support_both": "both supporting paragraphs kept",
    "option_recall": "gold option's content words kept",
}
#: Built RAPTOR trees and GARLIC graphs, shared by every variant that changes retrieval only.
TREES = CACHE / "raptor-trees"
GRAPHS = CACHE / "garlic-graphs"


#: A method's output version, bumped when its output changes: its hits are measured again even
#: while ``NEVER_BEHIND_CODE`` pins the code key for the others (RAPTOR 2: no sentence
#: returned twice, a summary only what the chosen leaves do not hold; GARLIC 2:
#: ``embedding_weight`` 10 by default; GARLIC 3: chunks in document order, then summary points;
#: HtmlRAG 1: no heading kept without text of its section; HtmlRAG 2: such a heading back where
#: a later round kept text of its section and it still fits; RAPTOR 4: UMAP's spectral start
#: computed so that it is the same every build; RAPTOR 5: leaves only by default; RAPTOR's
#: traversal 1: the room its branches leave in the budget filled with the best other nodes; 2:
#: the fill stops at k a layer, the most nodes a traversal returns; RAPTOR 8 (7: a trial of
#: ``lexical_weight`` 0.25), its traversal 4: trees built with numba held to AVX2 in the
#: benchmark's own process too, where bm25s imported numba first).
OUTPUT_VERSION: dict[str, int] = {"raptor": 8, "raptor-traversal": 4, "garlic": 3, "htmlrag": 2}
#: The text the baselines read of an HTML dataset's pages (:func:`hrefine.eval.text.html_to_text`),
#: bumped when it changes: 1: MediaWiki's sort keys dropped, as the cleaner drops them (7 strict
#: WTQ answers were unfindable in the text; no other dataset has sort keys).
HTML_TEXT_VERSION = 1

#: ``--only-half``: run on this half's documents only (a slow variant such as SmolLM2's).
ONLY_HALF: str | None = None
#: ``--limit``: the first this many questions of each half, in subset order (None: all).
LIMIT: int | None = None


def items(ds: str) -> list[Any]:
    """Every question of ``ds`` (WTQ: the strict ones), in subset order; only ``ONLY_HALF``'s
    when set, and only the first ``LIMIT`` of each half when set."""
    from hrefine.eval.loaders import half_of, load_dataset, subset

    if ds == "wtq":  # the strict questions, as every HtmlRAG benchmark scores them
        got = subset(load_dataset("wtq", strict_only=True), None)
    else:
        got = subset(load_dataset(ds), None)
    kept: list[Any] = []
    for half in HALVES:
        if ONLY_HALF is None or half == ONLY_HALF:
            kept += [it for it in got if half_of(it.doc_id) == half][:LIMIT]
    return kept


def score(ds: str, item: Any, context: str) -> float | None:
    """The dataset's metric of one output (``METRICS``; answer containment by default)."""
    from hrefine.eval.results import score_output

    scores = score_output(item, context)
    if METRICS.get(ds) == "support_both":
        recall = scores.get("support_recall")
        return None if recall is None else float(recall == 1.0)
    return scores.get(METRICS.get(ds, METRIC))


def _build(method: str, settings: dict[str, Any]) -> Any:
    from hrefine.eval.methods import get_method

    opts = dict(settings)
    if method.startswith("chunks-"):
        opts.setdefault("chunk_tokens", CHUNK_TOKENS)
    if method.startswith("raptor"):
        opts.setdefault("cache_dir", str(TREES / _code()))
    if method.startswith("garlic"):
        opts.setdefault("cache_dir", str(GRAPHS / _code()))
    return get_method(method, **opts)


def _code() -> str:
    """The cache's code key: the source digest, or ``NEVER_BEHIND_CODE`` where an analysis
    session pins it (while files that cannot change the outputs are being edited)."""
    return os.environ.get("NEVER_BEHIND_CODE") or code_digest()


def _cached(ds: str, name: str, described: list[Any]) -> Path:
    """The cache file of a run described by ``described`` (method, settings, ...)."""
    key = hashlib.sha1(json.dumps(described, sort_keys=True).encode()).hexdigest()[:10]
    return CACHE / f"{ds}-{name}-{key}-{_code()}.json"


def hits(ds: str, name: str, method: str, settings: dict[str, Any]) -> dict[str, Any]:
    """``{item id: {budget: score}}`` of one method on one dataset (cached; see ``score``)."""
    described: list[Any] = [method, settings, CHUNK_TOKENS, ONLY_HALF]
    if method in OUTPUT_VERSION:  # methods never bumped keep the keys of their cached hits
        described.append(OUTPUT_VERSION[method])
    if method in BASELINES and ds in HTML_DATASETS:
        described.append(f"html-text-{HTML_TEXT_VERSION}")
    if LIMIT is not None:  # unlimited runs keep the keys of their cached hits
        described.append(LIMIT)
    path = _cached(ds, name, described)
    if path.is_file():
        return json.loads(path.read_text(encoding="utf-8"))  # type: ignore[no-any-return]
    whole = _cached(ds, name, [None if i == 3 else d for i, d in enumerate(described)])
    if ONLY_HALF is not None and whole.is_file():  # a run over both halves holds this half's
        both = json.loads(whole.read_text(encoding="utf-8"))
        return {it.id: both[it.id] for it in items(ds) if it.id in both}
    comp = _build(method, settings)
    # Each finished question is kept as it ends, so a slow variant (a 1.5B LM: minutes a
    # question) resumes where it stopped instead of starting over.
    partial = path.with_name(path.stem + ".partial.json")
    out: dict[str, Any] = (
        json.loads(partial.read_text(encoding="utf-8")) if partial.is_file() else {}
    )
    seconds: dict[str, float] = out.pop("_seconds", {})
    path.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    for it in items(ds):
        if it.id in out:
            continue
        began = time.perf_counter()
        row: dict[str, float | None] = {}
        for b in BUDGETS:
            row[str(b)] = score(ds, it, comp.compress(it.document, it.question, b))
        out[it.id] = row
        seconds[it.id] = round(time.perf_counter() - began, 2)
        partial.write_text(json.dumps({**out, "_seconds": seconds}), encoding="utf-8")
    print(f"  {ds} {name}: {time.perf_counter() - start:.0f} s", file=sys.stderr)
    path.write_text(json.dumps(out), encoding="utf-8")
    (CACHE / f"{path.stem}.seconds.json").write_text(json.dumps(seconds), encoding="utf-8")
    partial.unlink(missing_ok=True)
    return out


def _resampled(docs: Sequence[str], seed: int = 0) -> np.ndarray:
    """``RESAMPLES`` x questions weights: how often each question is drawn when a half's
    documents are drawn whole, with replacement (a question counts as often as its document)."""
    names, of = np.unique(np.asarray(docs, dtype=object).astype(str), return_inverse=True)
    rng = np.random.default_rng(seed)
    drawn = rng.integers(0, names.size, size=(RESAMPLES, names.size))
    per_doc = np.zeros((RESAMPLES, names.size))
    np.add.at(per_doc, (np.arange(RESAMPLES)[:, None], drawn), 1.0)
    return per_doc[:, of]  # type: ignore[no-any-return]


def interval(
    values: Sequence[float], docs: Sequence[str] | None = None, seed: int = 0
) -> tuple[float, float, float]:
    """Mean and bootstrap 95% interval (percentile, ``RESAMPLES`` resamples) of ``values``,
    drawing whole documents (``docs``: each value's document) or, without ``docs``, single
    values."""
    arr = np.asarray(values, dtype=np.float64)
    if arr.size == 0:
        return (float("nan"),) * 3  # type: ignore[return-value]
    weights = _resampled(docs if docs is not None else [str(i) for i in range(arr.size)], seed)
    means = (weights @ arr) / weights.sum(axis=1)
    lo, hi = np.percentile(means, [2.5, 97.5])
    return float(arr.mean()), float(lo), float(hi)


CHUNKS = ("chunks-bm25", "chunks-embedding")


def table(ds: str, runs: dict[str, dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Over the questions every run scored, per half: ``{method: {budget: [mean, lo, hi, n,
    documents]}}`` (intervals over whole documents), and each method's paired difference from
    the best chunk baseline ``{method: {budget: [difference, lo, hi, n, baseline]}}``."""
    from hrefine.eval.loaders import half_of

    by_id = {it.id: it for it in items(ds)}
    cells: dict[str, Any] = {}
    paired: dict[str, Any] = {}
    for half in HALVES:
        if ONLY_HALF is not None and half != ONLY_HALF:
            continue
        ids = [
            i
            for i, it in by_id.items()
            if half_of(it.doc_id) == half
            and all(r.get(i, {}).get("1024") is not None for r in runs.values())
        ]
        if not ids:
            continue
        docs = [by_id[i].doc_id for i in ids]
        got = {
            name: {str(b): np.array([r[i][str(b)] for i in ids], dtype=np.float64) for b in BUDGETS}
            for name, r in runs.items()
        }
        cells[half] = {
            name: {b: [*interval(v, docs), len(ids), len(set(docs))] for b, v in row.items()}
            for name, row in got.items()
        }
        paired[half] = {}
        for name, row in got.items():
            if name in BASELINES or not any(c in got for c in CHUNKS):
                continue
            paired[half][name] = {}
            for b, v in row.items():
                best = max((c for c in CHUNKS if c in got), key=lambda c: got[c][b].mean())
                diff = interval(v - got[best][b], docs)
                paired[half][name][b] = [*diff, len(ids), best]
    return cells, paired


def _metric_line(res: dict[str, Any]) -> str:
    """What the tables measure: answer containment, unless a dataset is scored otherwise."""
    others = sorted({METRICS[ds] for ds in res["tables"] if ds in METRICS})
    if not others:
        return "Answer containment"
    named = ", ".join(METRIC_NAMES[m] for m in others)
    return f"Answer containment ({named} where a table's heading says so)"


def verdict(cells: list[float], best: list[float]) -> str:
    """One cell of an unpaired summary (a result written before the paired one): how a method's
    ``[mean, lo, hi, n]`` stands against the best baseline's at that budget: ahead, level,
    behind inside the method's interval (the best baseline's mean is under its upper bound), or
    behind outside it."""
    mean, _, hi, n = cells[:4]
    if abs(mean - best[0]) < 1e-9:
        return "level"
    gap = _gap(mean - best[0], n)
    if mean > best[0]:
        return f"ahead ({gap})"
    return f"behind ({gap}), inside" if best[0] <= hi else f"BEHIND ({gap})"


def _gap(diff: float, n: float) -> str:
    """A difference of shares in questions where scores are 0 or 1; a gap under one question
    (a share metric such as QuALITY's option words) as the share itself."""
    count = round(diff * n)
    return f"{count:+d}" if count else f"{diff:+.3f}"


def _questions(x: float) -> str:
    """An interval's end in questions: whole, unless rounding would hide which side of zero
    it is on."""
    whole = round(x)
    return f"{whole:+d}" if whole or x == 0 else f"{x:+.1f}"


def paired_verdict(cell: list[Any]) -> str:
    """One cell of the summary from the paired difference ``[diff, lo, hi, n, baseline]``:
    ahead, level or behind by so many questions with the difference's 95% interval; BEHIND in
    capitals where the whole interval is below zero (behind beyond chance)."""
    diff, lo, hi, n = cell[:4]
    if abs(diff) < 1e-9:
        return "level"
    if round(diff * n) and round(lo * n) != round(hi * n):
        span = f"[{_questions(lo * n)}, {_questions(hi * n)}]"
    else:
        span = f"[{lo:+.3f}, {hi:+.3f}]"
    word = "ahead" if diff > 0 else ("BEHIND" if hi < 0 else "behind")
    return f"{word} ({_gap(diff, n)} {span})"


def summary(res: dict[str, Any]) -> list[str]:
    """Markdown: each method against the best chunk baseline (BM25 or embedding chunks) of
    every dataset, half and budget, in questions (paired, where the result has the pairs)."""
    paired = res.get("paired")
    if paired:
        said = (
            "Per budget, the method against the higher of BM25 and embedding chunks on the same "
            "questions, in questions, with the 95% interval of the difference (a paired "
            "bootstrap that resamples whole documents). BEHIND in capitals: the whole interval "
            "is below zero."
        )
    else:
        said = (
            "Per budget, the method's score against the higher of BM25 and embedding chunks on "
            "the same questions: ahead or level, or behind by so many questions and whether the "
            "baseline is inside the method's 95% interval."
        )
    lines = [
        "## Each method against the best chunk baseline",
        "",
        said,
        "",
        "| data, half | method | " + " | ".join(str(b) for b in BUDGETS) + " |",
        "|---|---|" + "---|" * len(BUDGETS),
    ]
    for ds, halves in res["tables"].items():
        for half, rows in halves.items():
            for name, cells in rows.items():
                if name in BASELINES:
                    continue
                if paired:
                    pairs = paired[ds][half][name]
                    marks = [paired_verdict(pairs[str(b)]) for b in BUDGETS]
                else:
                    marks = []
                    for b in BUDGETS:
                        best = max(
                            (rows[c][str(b)] for c in CHUNKS if c in rows), key=lambda r: r[0]
                        )
                        marks.append(verdict(cells[str(b)], best))
                lines += [f"| {ds}, {half} | {name} | " + " | ".join(marks) + " |"]
    return [*lines, ""]


def merged(stems: Sequence[str]) -> dict[str, Any]:
    """One result from several runs' results files (e.g. each half run apart, side by side):
    their tables joined; every run must be of the same code."""
    runs = [json.loads((RESULTS_DIR / f"{s}.json").read_text()) for s in stems]
    codes = {(r["code"], r.get("source", r["code"])) for r in runs}
    if len(codes) != 1:
        msg = f"runs of different code cannot be merged: {sorted(codes)}"
        raise SystemExit(msg)
    res: dict[str, Any] = {"code": runs[0]["code"], "hardware": runs[0]["hardware"], "tables": {}}
    for field in ("source", "versions"):
        if field in runs[0]:
            res[field] = runs[0][field]
    paired = {"paired" in r for r in runs}
    if len(paired) != 1:  # intervals over documents and over questions do not share a table
        raise SystemExit("runs with and without paired differences cannot be merged")
    parts = ("tables", "paired") if paired == {True} else ("tables",)
    for part in parts:
        res[part] = {}
        for run in runs:
            for ds, halves in run[part].items():
                res[part].setdefault(ds, {}).update(halves)
        for ds, halves in res[part].items():  # the tuning half first, as a single run writes
            res[part][ds] = {h: halves[h] for h in HALVES if h in halves}
    return res


def _pinned(res: dict[str, Any]) -> str:
    """Where ``NEVER_BEHIND_CODE`` pinned the cache key: the code the run had, and the output
    versions (a method whose version moved on was measured with that code)."""
    source = res.get("source")
    if not source or source == res["code"]:
        return ""
    versions = ", ".join(f"{m} {v}" for m, v in sorted(res.get("versions", {}).items()))
    return f" (cache key pinned; run with code {source}, output versions {versions})"


def _resampled_what(res: dict[str, Any]) -> str:
    """What a result's intervals resample: whole documents since the paired summary; single
    questions in results written before it."""
    return "documents, each with all its questions" if "paired" in res else "questions"


def render(res: dict[str, Any]) -> str:
    """Markdown tables: per dataset and half, every method with its interval."""
    lines = [
        "## Each method against chunk retrieval, every dev document, per half",
        "",
        f"{_metric_line(res)}; budgets in Llama-3.2 tokens; chunks of {CHUNK_TOKENS} tokens; "
        f"bootstrap 95% intervals over the half's {_resampled_what(res)} ({RESAMPLES} "
        "resamples). "
        f"Code {res['code']}{_pinned(res)}; {res['hardware'].get('cpu', '')}.",
        "",
    ]
    for ds, halves in res["tables"].items():
        for half, rows in halves.items():
            first = next(iter(next(iter(rows.values())).values()))
            scored = METRICS.get(ds, METRIC)
            what = "" if scored == METRIC else f"; {METRIC_NAMES[scored]}"
            docs = f" on {first[4]} documents" if len(first) > 4 else ""
            lines += [f"### {ds}, {half} half ({first[3]} questions{docs}{what})", ""]
            lines += ["| method | " + " | ".join(str(b) for b in BUDGETS) + " |"]
            lines += ["|---|" + "---:|" * len(BUDGETS)]
            for name, cells in rows.items():
                fmt = [
                    f"{m:.3f} [{lo:.2f}, {hi:.2f}]"
                    for m, lo, hi, *_ in (cells[str(b)] for b in BUDGETS)
                ]
                lines += [f"| {name} | " + " | ".join(fmt) + " |"]
            lines += [""]
    return "\n".join(lines + summary(res))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", default=",".join(DATASETS))
    ap.add_argument("--methods", default=",".join(METHODS), help="names in METHODS")
    ap.add_argument("--variant", action="append", default=[], help='NAME=METHOD:{"setting": value}')
    ap.add_argument("--no-save", action="store_true", help="print, do not write results/")
    ap.add_argument("--out", default="never_behind", help="results/ file stem")
    ap.add_argument("--only-half", choices=HALVES, default=None, help="one half's documents")
    ap.add_argument("--limit", type=int, default=None, help="first N questions of each half")
    ap.add_argument(
        "--merge",
        default=None,
        help="comma-separated results/ stems of runs to join (e.g. each half run apart) "
        "into --out, running nothing",
    )
    args = ap.parse_args(argv)
    if args.merge:
        return _report(merged(args.merge.split(",")), args.out, save=not args.no_save)
    global ONLY_HALF, LIMIT
    ONLY_HALF = args.only_half
    LIMIT = args.limit
    quiet_bm25s()
    specs: list[tuple[str, str, dict[str, Any]]] = [(m, m, {}) for m in BASELINES]
    specs += [(m, *METHODS[m]) for m in args.methods.split(",") if m]
    for v in args.variant:
        name, _, rest = v.partition("=")
        method, _, js = rest.partition(":")
        specs.append((name, method, json.loads(js) if js else {}))
    res: dict[str, Any] = {
        "code": _code(),
        "source": code_digest(),
        "versions": dict(OUTPUT_VERSION),
        "hardware": hardware(),
        "tables": {},
        "paired": {},
    }
    for ds in args.datasets.split(","):
        html = items(ds)[0].doc_format == "html"
        runs = {
            name: hits(ds, name, method, settings)
            for name, method, settings in specs
            if (html or not html_only(method))
            and (ds not in HTML_DATASETS or html_only(method) or name in BASELINES)
        }
        res["tables"][ds], res["paired"][ds] = table(ds, runs)
    return _report(res, args.out, save=not args.no_save)


def _report(res: dict[str, Any], out: str, *, save: bool) -> int:
    """Print the tables of ``res``, and save them and ``res`` under ``results/<out>``."""
    text = render(res)
    print(text)
    if save:
        (RESULTS_DIR / f"{out}.json").write_text(json.dumps(res, indent=1) + "\n")
        (RESULTS_DIR / f"{out}.md").write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
