"""Quality of the HtmlRAG pruner and the baselines on the tuning and checking halves.

Every WTQ strict question and every L-Eval NQ question, split by page into the tuning half and
the checking half (:func:`hrefine.eval.loaders.half_of`), at 512 / 1024 / 2048 tokens counted in
the Llama-3.2 tokenizer, scored by answer containment exactly as the quick suite scores them
(:func:`benchmarks.htmlrag.score_quality`). Baseline outputs do not depend on the pruner's
settings, so their per-question hits are cached (``benchmarks/.cache/halves``); a pruner
variant is a set of :class:`~hrefine.html.HtmlPrunerOptions` settings, cached by its settings.
Every cache key also holds a digest of hrefine's source: a change to the code measures again.

Use it to decide a setting on the tuning half and check it on the other::

    python -m benchmarks.halves                          # the pruners as they are + baselines
    python -m benchmarks.halves --variant '{"narrow_tables": false}' --name no-narrow
    python -m benchmarks.halves --misses embedding --half tune --budget 1024

It is an analysis tool, not part of ``benchmarks.run``.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks._common import quiet_bm25s
from benchmarks._htmlrag_report import (
    M_BM25_CHUNKS,
    M_EMBED_CHUNKS,
    M_LEAD_HTML,
    M_LEAD_TEXT,
)

BUDGETS = (512, 1024, 2048)
CACHE = Path(__file__).resolve().parent / ".cache" / "halves"
BASELINES = (M_LEAD_HTML, M_LEAD_TEXT, M_BM25_CHUNKS, M_EMBED_CHUNKS)
DATASETS = ("wtq", "leval-nq")


def items(ds: str) -> list[Any]:
    """Every WTQ strict question, or every L-Eval NQ question, in subset order."""
    from hrefine.eval.loaders import load_dataset, subset

    if ds == "wtq":
        return subset(load_dataset("wtq", strict_only=True), None)
    return subset(load_dataset(ds), None)


def _score(it: Any, output: str, html: bool) -> float | None:
    from hrefine.eval.metrics import answer_containment
    from hrefine.eval.text import html_to_text

    text = html_to_text(output) if html else output
    return answer_containment(text, it.answers, mode=it.answer_mode)


def _hits(
    ds: str, run: Any, html: bool, budgets: Sequence[int]
) -> dict[str, dict[str, float | None]]:
    """``{item id: {budget: containment}}`` of ``run(html, question, budget) -> str``."""
    out: dict[str, dict[str, float | None]] = {}
    for it in items(ds):
        out[it.id] = {str(b): _score(it, run(it.document, it.question, b), html) for b in budgets}
    return out


@functools.lru_cache(maxsize=1)
def code_digest() -> str:
    """Digest of hrefine's source (``core/hrefine``, every ``.py`` file): part of every cache
    key, so hits measured with other code are never read back as this code's. Taken once per
    run: every result of a run is keyed by the code it started with."""
    root = Path(__file__).resolve().parent.parent / "core" / "hrefine"
    digest = hashlib.sha1()
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:8]


def _cached(path: Path, make: Any) -> Any:
    path = path.with_name(f"{path.stem}-{code_digest()}{path.suffix}")
    if path.is_file():
        return json.loads(path.read_text(encoding="utf-8"))
    path.parent.mkdir(parents=True, exist_ok=True)
    value = make()
    path.write_text(json.dumps(value), encoding="utf-8")
    return value


def baseline_hits(ds: str) -> dict[str, Any]:
    """Per-question hits of every baseline (cached)."""
    from hrefine.budget import get_counter
    from hrefine.eval.baselines import ChunkCompressor, LeadCompressor
    from hrefine.eval.text import truncate_to_tokens
    from hrefine.html import clean_html
    from hrefine.models.embed import default_embedder

    counter = get_counter(None)
    lead = LeadCompressor()
    bm25 = ChunkCompressor("bm25", name=M_BM25_CHUNKS)
    emb = ChunkCompressor("embedding", embedder=default_embedder(), name=M_EMBED_CHUNKS)
    runs = {
        M_LEAD_HTML: (lambda h, q, b: truncate_to_tokens(clean_html(h), counter, b), True),
        M_LEAD_TEXT: (lead.compress, False),
        M_BM25_CHUNKS: (bm25.compress, False),
        M_EMBED_CHUNKS: (emb.compress, False),
    }
    return {
        m: _cached(CACHE / f"{ds}-{_slug(m)}.json", lambda r=r, h=h: _hits(ds, r, h, BUDGETS))
        for m, (r, h) in runs.items()
    }


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text)


def pruner_hits(ds: str, settings: dict[str, Any], name: str, fresh: bool = False) -> Any:
    """Per-question hits of ``HtmlPruner(max_words=256, **settings)`` (cached by settings)."""
    from hrefine.html import HtmlPruner

    key = hashlib.sha1(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:10]
    path = CACHE / f"{ds}-pruner-{_slug(name)}-{key}.json"
    if fresh and path.is_file():
        path.unlink()
    pruner = HtmlPruner(max_words=256, **settings)

    def run(h: str, q: str, b: int) -> str:
        return pruner.prune(h, q, b).html

    return _cached(path, lambda: _hits(ds, run, True, BUDGETS))


def generative_items(ds: str, half: str = "tune") -> list[Any]:
    """The questions the generative stage is measured on: on ``half``'s pages, the first
    question of each WTQ page, every NQ question (NQ's tuning half has 4 pages)."""
    from hrefine.eval.loaders import half_of

    chosen: list[Any] = []
    seen: set[str] = set()
    for it in items(ds):
        if half_of(it.doc_id) != half or (ds == "wtq" and it.doc_id in seen):
            continue
        seen.add(it.doc_id)
        chosen.append(it)
    return chosen


def generative_hits(ds: str, settings: dict[str, Any], name: str, half: str = "tune") -> Any:
    """Per-question hits at 512 and 1024 tokens of the two-stage pruner (SmolLM2-135M on the
    CPU), on :func:`generative_items` (cached by settings)."""
    from hrefine.html import HtmlPruner
    from hrefine.models import default_lm

    key = hashlib.sha1(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:10]
    path = CACHE / f"{ds}-{half}-generative-{_slug(name)}-{key}.json"

    def make() -> Any:
        pruner = HtmlPruner(max_words=256, generative=True, lm=default_lm(), **settings)
        out: dict[str, Any] = {}
        for it in generative_items(ds, half):
            out[it.id] = {}
            for b in BUDGETS[:2]:
                t0 = time.perf_counter()
                html = pruner.prune(it.document, it.question, b).html
                out[it.id][str(b)] = _score(it, html, True)
                out[it.id][f"{b}_s"] = time.perf_counter() - t0
        return out

    return _cached(path, make)


def table(ds: str, methods: dict[str, Any]) -> str:
    """Markdown: containment per half, method and budget."""
    from hrefine.eval.loaders import half_of

    its = items(ds)
    lines = []
    for half in ("tune", "check"):
        sel = [it for it in its if half_of(it.doc_id) == half]
        pages = len({it.doc_id for it in sel})
        lines.append(f"\n{ds}, {half} half ({len(sel)} questions, {pages} pages)\n")
        lines.append("| method | " + " | ".join(str(b) for b in BUDGETS) + " |")
        lines.append("|---|" + "---:|" * len(BUDGETS))
        for m, hits in methods.items():
            cells = []
            for b in BUDGETS:
                vals = [hits[it.id][str(b)] for it in sel if hits[it.id][str(b)] is not None]
                cells.append(f"{100 * sum(vals) / len(vals):.1f}" if vals else "-")
            lines.append(f"| {m} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def misses(ds: str, hits: Any, half: str, budget: int) -> list[Any]:
    """The questions of ``half`` missed at ``budget``."""
    from hrefine.eval.loaders import half_of

    return [
        it for it in items(ds) if half_of(it.doc_id) == half and hits[it.id][str(budget)] == 0.0
    ]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--variant", action="append", default=[], help="JSON settings of a variant")
    ap.add_argument("--name", action="append", default=[], help="name of each --variant")
    ap.add_argument("--fresh", action="store_true", help="recompute the variants' hits")
    ap.add_argument("--datasets", default=",".join(DATASETS))
    ap.add_argument("--misses", default=None, help="list misses of this method name")
    ap.add_argument("--half", default="tune")
    ap.add_argument("--budget", type=int, default=1024)
    ap.add_argument("--generative", default=None, help="JSON settings: measure stage 2 too")
    args = ap.parse_args(argv)
    quiet_bm25s()
    variants = {"embedding": {}, "bm25": {"scorer": "bm25"}}
    for k, spec in enumerate(args.variant):
        name = args.name[k] if k < len(args.name) else f"variant{k}"
        variants[name] = json.loads(spec)
    for ds in args.datasets.split(","):
        t0 = time.time()
        methods: dict[str, Any] = dict(baseline_hits(ds))
        for name, settings in variants.items():
            fresh = args.fresh and name not in ("embedding", "bm25")
            methods[name] = pruner_hits(ds, settings, name, fresh=fresh)
        print(table(ds, methods))
        if args.generative is not None:
            gen = generative_hits(ds, json.loads(args.generative), "gen")
            ids = list(gen)
            for name, hits in (("stage 1 alone", methods["embedding"]), ("stage 1 + 2", gen)):
                cells = []
                for b in BUDGETS[:2]:
                    vals = [hits[i][str(b)] for i in ids if hits[i][str(b)] is not None]
                    cells.append(f"{100 * sum(vals) / len(vals):.1f} (n={len(vals)})")
                print(f"| {ds} tune, {name} | " + " | ".join(cells) + " |")
            secs = [gen[i][f"{b}_s"] for i in ids for b in BUDGETS[:2]]
            print(f"generative: {sum(secs):.0f} s over {len(secs)} calls")
        print(f"({time.time() - t0:.0f} s)")
        if args.misses:
            by_doc: dict[str, list[Any]] = defaultdict(list)
            for it in misses(ds, methods[args.misses], args.half, args.budget):
                by_doc[it.doc_id].append(it)
            for doc, group in by_doc.items():
                for it in group:
                    found = [m for m, h in methods.items() if h[it.id][str(args.budget)] == 1.0]
                    print(f"{doc}\t{it.id}\t{it.question}\t{list(it.answers)}\t{found}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
