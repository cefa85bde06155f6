"""Record, or check against the record, what ``HtmlPruner`` keeps on every dev page.

A refactor of the pruner must not change its output. This script prunes every WTQ page (its
strict questions, at most two per page, as the quick benchmark takes them) and every L-Eval NQ
question at 512, 1024 and 2048 tokens with the embedding pruner (the default precision and
float32) and the BM25 pruner, a few pairs of pages against one budget, and a few generative
(stage 2) calls, and writes a SHA-256 of each pruned output with its token count to
``tests/data/pruned_outputs.json``. ``--check`` prunes again and lists every case whose output
moved. ``tests/unit/html/test_pruned_outputs.py`` checks the BM25 cases in every test run and
the others in the slow tier.

Run: ``python -m benchmarks.pruned_outputs --record`` (before a change) or ``--check``.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

RECORD = Path(__file__).resolve().parent.parent / "tests" / "data" / "pruned_outputs.json"
BUDGETS = (512, 1024, 2048)
#: Pruners of the record: name -> HtmlPruner settings (the embedder is added for "embedding*").
PRUNERS: dict[str, dict[str, Any]] = {
    "embedding": {"scorer": "embedding"},
    "embedding-f32": {"scorer": "embedding"},
    "bm25": {"scorer": "bm25"},
}
#: Pairs of WTQ pages pruned together, and generative cases (the first NQ questions).
PAIRS = 8
GENERATIVE = 3
GEN_BUDGET = 512


def digest(html: str) -> str:
    """SHA-256 of a pruned output."""
    return hashlib.sha256(html.encode("utf-8")).hexdigest()


def _items() -> tuple[list[Any], list[Any]]:
    from benchmarks.htmlrag import select_nq, select_wtq

    return select_wtq(quick=True), select_nq(quick=False)


def cases(kinds: tuple[str, ...]) -> Iterator[tuple[str, str, Any, str, int]]:
    """``(case id, pruner name, html or pages, question, budget)`` for every recorded case."""
    wtq, nq = _items()
    for kind in kinds:
        if kind == "generative":
            for it in nq[:GENERATIVE]:
                yield f"generative/{it.id}/{GEN_BUDGET}", kind, it.document, it.question, GEN_BUDGET
            continue
        for it in [*wtq, *nq]:
            for budget in BUDGETS:
                yield f"{kind}/{it.id}/{budget}", kind, it.document, it.question, budget
        pages = sorted({it.doc_id: it for it in wtq}.values(), key=lambda it: it.doc_id)
        for a, b in itertools.pairwise(pages[: PAIRS + 1]):
            docs = [a.document, b.document]
            yield f"{kind}/pair/{a.id}+{b.doc_id}/1024", kind, docs, a.question, 1024


def _pruners(kinds: tuple[str, ...]) -> dict[str, Any]:
    from hrefine.html import HtmlPruner
    from hrefine.models.embed import SentenceTransformerEmbedder, default_embedder_path

    out: dict[str, Any] = {}
    for kind in kinds:
        if kind == "generative":
            out[kind] = HtmlPruner(generative=True)
        elif kind == "embedding-f32":
            emb = SentenceTransformerEmbedder(
                str(default_embedder_path()), name="all-MiniLM-L6-v2", precision="float32"
            )
            # Recorded reading each block up to the model's own limit (256 pieces): an embedder
            # given by the caller was not held to the default's 128 before embed_max_tokens.
            out[kind] = HtmlPruner(embedder=emb, embed_max_tokens=None, **PRUNERS[kind])
        else:
            out[kind] = HtmlPruner(**PRUNERS[kind])
    return out


def run(kinds: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """Prune every case of ``kinds``: case id -> its output's digest and tokens."""
    pruners = _pruners(kinds)
    out: dict[str, dict[str, Any]] = {}
    for case, kind, html, question, budget in cases(kinds):
        result = pruners[kind].prune(html, question, budget)
        out[case] = {"sha256": digest(result.html), "tokens": result.tokens}
    return out


def main(argv: list[str] | None = None) -> int:
    """Record or check; exit 1 when a checked output moved."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--record", action="store_true", help="write the record")
    ap.add_argument("--check", action="store_true", help="compare with the record")
    ap.add_argument(
        "--kinds",
        default="bm25,embedding,embedding-f32,generative",
        help="comma-separated pruners (bm25, embedding, embedding-f32, generative)",
    )
    args = ap.parse_args(argv)
    kinds = tuple(k for k in args.kinds.split(",") if k)
    start = time.perf_counter()
    found = run(kinds)
    took = time.perf_counter() - start
    if args.record:
        old = json.loads(RECORD.read_text(encoding="utf-8")) if RECORD.is_file() else {}
        old.update(found)
        RECORD.write_text(json.dumps(dict(sorted(old.items())), indent=0) + "\n", "utf-8")
        print(f"recorded {len(found)} cases in {took:.0f} s to {RECORD}")
        return 0
    record = json.loads(RECORD.read_text(encoding="utf-8"))
    moved = [c for c, v in found.items() if record.get(c) != v]
    print(f"checked {len(found)} cases in {took:.0f} s: {len(moved)} moved")
    for c in moved:
        print(f"  {c}: {record.get(c)} -> {found[c]}")
    return 1 if moved else 0


if __name__ == "__main__":
    sys.exit(main())
