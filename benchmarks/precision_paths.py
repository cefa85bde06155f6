"""How often a method keeps something else when the embedder runs in bfloat16 instead of float32.

On one CPU the default embedder's vectors do not depend on the batch, the cache or the thread
count (``tests/unit/test_embed_invariance.py``). Between compute paths they do differ: float32
and bfloat16 linears give vectors about 1e-3 apart per coordinate, and CPU families differ in
the last bits. This measures what that changes downstream, on the shared data: for the same
questions, each method's output with the embedder in float32 and in bfloat16, and how many
outputs differ, with each side's answer containment.

- HtmlRAG: ``HtmlPruner`` (embedding scorer) on WTQ and the NQ pages, at 1,024 tokens;
- LongRefiner: ``LongRefiner`` (embedding scorer) on CUAD and Qasper, at 1,024 tokens;
- RAPTOR: a tree per Qasper paper (extractive summaries, no LLM), collapsed retrieval at 1,024
  tokens.

GARLIC is left out: its edges and its stopping come from the language model, not the embedder.
On a CPU without native bfloat16 the bfloat16 side is emulated (several times slower, the same
numbers as the hardware kernels up to their own last bits).

Run: ``python -m benchmarks.precision_paths [--limit N]`` (questions per dataset, spread over
its documents; 0: all); writes ``results/precision_paths.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from benchmarks._common import RESULTS_DIR, hardware

__all__ = ["main"]

BUDGET = 1024
DEFAULT_LIMIT = 12
PRECISIONS = ("float32", "bfloat16")
#: (method, dataset) pairs measured.
RUNS = (
    ("htmlrag", "wtq"),
    ("htmlrag", "leval-nq"),
    ("longrefiner", "leval-cuad"),
    ("longrefiner", "leval-qasper"),
    ("raptor", "leval-qasper"),
)


def _spread(items: list[Any], limit: int) -> list[Any]:
    """At most ``limit`` items, taken round robin over their documents (0: all)."""
    if not limit or len(items) <= limit:
        return items
    by_doc: dict[str, list[Any]] = {}
    for item in items:
        by_doc.setdefault(item.doc_id, []).append(item)
    out: list[Any] = []
    while len(out) < limit:
        for group in by_doc.values():
            if group and len(out) < limit:
                out.append(group.pop(0))
    return out


def _runner(method: str, embedder: Any) -> Callable[[Any], str]:
    """``item -> kept text`` for ``method`` with ``embedder``."""
    if method == "htmlrag":
        from hrefine.html import HtmlPruner

        pruner = HtmlPruner(embedder=embedder)
        return lambda item: pruner.prune(item.document, item.question, BUDGET).html
    if method == "longrefiner":
        from hrefine.longrefiner import LongRefiner

        refiner = LongRefiner(embedder=embedder)
        return lambda item: refiner.refine(item.question, [item.document], BUDGET).text
    from hrefine.eval.raptor_method import ExtractiveSummariser
    from hrefine.raptor import RaptorTree

    trees: dict[str, Any] = {}
    summarise = ExtractiveSummariser()

    def raptor(item: Any) -> str:
        tree = trees.get(item.doc_id)
        if tree is None:
            tree = trees[item.doc_id] = RaptorTree.build(
                [item.document], llm=summarise, embedder=embedder
            )
        return "\n\n".join(r.text for r in tree.retrieve(item.question, max_tokens=BUDGET))

    return raptor


def main(limit: int = DEFAULT_LIMIT) -> dict[str, Any]:
    """Run every pair of :data:`RUNS` in both precisions and write the results."""
    from hrefine.eval.loaders import load_dataset
    from hrefine.eval.metrics import answer_containment
    from hrefine.models import SentenceTransformerEmbedder
    from hrefine.models.embed import default_embedder_path

    started = time.perf_counter()
    embedders = {
        p: SentenceTransformerEmbedder(str(default_embedder_path()), precision=p)
        for p in PRECISIONS
    }
    rows = []
    for method, dataset in RUNS:
        items = _spread(list(load_dataset(dataset)), limit)
        outputs: dict[str, list[str]] = {}
        seconds: dict[str, float] = {}
        for precision, embedder in embedders.items():
            run = _runner(method, embedder)
            t = time.perf_counter()
            outputs[precision] = [run(item) for item in items]
            seconds[precision] = time.perf_counter() - t
        differ = [item.id for item, a, b in zip(items, *outputs.values(), strict=True) if a != b]
        hits = {
            p: sum(
                bool(answer_containment(text, item.answers))
                for item, text in zip(items, texts, strict=True)
            )
            for p, texts in outputs.items()
        }
        rows.append(
            {
                "method": method,
                "dataset": dataset,
                "questions": len(items),
                "documents": len({i.doc_id for i in items}),
                "outputs_differ": len(differ),
                "differing_ids": differ,
                "answer_containment": {p: hits[p] / max(1, len(items)) for p in PRECISIONS},
                "seconds": seconds,
            }
        )
        print(f"{method} {dataset}: {len(differ)} of {len(items)} outputs differ", flush=True)
    result = {
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "hardware": hardware(),
        "budget": BUDGET,
        "limit": limit,
        "dtypes": {p: e.compute_dtype for p, e in embedders.items()},
        "rows": rows,
        "seconds": time.perf_counter() - started,
    }
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    (RESULTS_DIR / "precision_paths.json").write_text(json.dumps(result, indent=2) + "\n")
    (RESULTS_DIR / "precision_paths.md").write_text(render(result))
    return result


def render(result: dict[str, Any]) -> str:
    """The Markdown table of a result."""
    hw = result["hardware"]
    lines = [
        "# Kept sets in float32 and bfloat16",
        "",
        "The default embedder in float32 and in bfloat16 on the same questions, "
        f"{result['budget']} tokens; {hw.get('cpu', 'CPU')} ({hw.get('cores', '?')} cores), "
        f"{result['seconds']:.0f} s, {result['created']}, "
        f"`python -m benchmarks.precision_paths --limit {result['limit']}`.",
        "",
        "| method | data | questions (documents) | outputs that differ | containment float32 | "
        "containment bfloat16 | s float32 | s bfloat16 |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in result["rows"]:
        ac, s = r["answer_containment"], r["seconds"]
        lines.append(
            f"| {r['method']} | {r['dataset']} | {r['questions']} ({r['documents']}) | "
            f"{r['outputs_differ']} of {r['questions']} | {ac['float32']:.3f} | "
            f"{ac['bfloat16']:.3f} | {s['float32']:.1f} | {s['bfloat16']:.1f} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--limit", type=int, default=DEFAULT_LIMIT)
    main(parser.parse_args().limit)
