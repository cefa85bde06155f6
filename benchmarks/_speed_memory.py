"""Memory in fresh processes for :mod:`benchmarks.htmlrag_speed`.

Each sampled page is cleaned, turned into a block tree and pruned once per side in a new
process (:mod:`benchmarks._speed_child`: hrefine in this venv, htmlrag in its own), so that
neither number depends on what earlier pages left in a long-lived process. Both sides read
256 word pieces per block, in float32.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from itertools import zip_longest
from pathlib import Path
from typing import Any

from benchmarks._common import BENCH_DIR
from benchmarks._speed_stats import spread

__all__ = ["run_memory", "summarize_memory"]

CHILD = BENCH_DIR / "_speed_child.py"
CHILD_MARKER = "@@SPEED@@ "
OURS, REF = "hrefine", "htmlrag"
READ_TOKENS = 256

log = logging.getLogger("benchmarks.htmlrag_speed")


def _child(python: str, side: str, task_path: Path) -> dict[str, Any] | None:
    env = dict(os.environ)
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    env.pop("PYTHONPATH", None)
    proc = subprocess.run(
        [python, str(CHILD), "--side", side, "--task", str(task_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    for line in proc.stdout.splitlines():
        if line.startswith(CHILD_MARKER):
            return json.loads(line[len(CHILD_MARKER) :])  # type: ignore[no-any-return]
    log.warning("%s child failed (exit %s): %s", side, proc.returncode, proc.stderr[-500:])
    return None


def run_memory(
    datasets: dict[str, list[Any]],
    n_pages: int,
    ref_python: str | None,
    budget: int,
    max_words: int,
) -> list[dict[str, Any]]:
    """Clean + block tree + pruning of one page in a fresh process per page and side, at 256
    word pieces on both sides: resident size before the page, peak during it (MiB)."""
    from hrefine.budget import _llama_tokenizer_file
    from hrefine.models.embed import default_embedder_path

    firsts = [
        [next(it for it in items if it.doc_id == d) for d in dict.fromkeys(i.doc_id for i in items)]
        for items in datasets.values()
    ]
    # Alternate datasets so a small sample has pages of both.
    sample = [it for tup in zip_longest(*firsts) for it in tup if it is not None][:n_pages]
    tok = _llama_tokenizer_file()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        task_path = Path(tmp) / "task.json"
        for k, it in enumerate(sample):
            task = {
                "html": it.document,
                "question": it.question,
                "budget": budget,
                "max_words": max_words,
                "read_tokens": READ_TOKENS,
                "embed_model": str(default_embedder_path()),
                "tokenizer_file": str(tok) if tok else None,
            }
            task_path.write_text(json.dumps(task), encoding="utf-8")
            row: dict[str, Any] = {"ds": it.dataset, "doc": it.doc_id, "chars": len(it.document)}
            sides = [(OURS, sys.executable, "ours"), (REF, ref_python, "ref")]
            for name, python, side in sides if k % 2 == 0 else sides[::-1]:
                row[name] = _child(python, side, task_path) if python else None
            rows.append(row)
            log.info("memory: page %d/%d (%s) done", k + 1, len(sample), it.doc_id)
    return rows


def summarize_memory(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Per side: resident size before the page, peak during it and the rise (MiB), and
    theirs / ours of the peaks and of the rises, page by page."""
    out: dict[str, Any] = {"pages": len(rows)}
    for side in (OURS, REF):
        recs = [r[side] for r in rows if r.get(side)]
        out[side] = {
            "dtype": sorted({rec["dtype"] for rec in recs}),
            "before_mib": spread([rec["before_kib"] / 1024 for rec in recs if rec["before_kib"]]),
            "peak_mib": spread([rec["peak_kib"] / 1024 for rec in recs if rec["peak_kib"]]),
            "rise_mib": spread(
                [rec["rise_kib"] / 1024 for rec in recs if rec["rise_kib"] is not None]
            ),
            "seconds": spread([rec["seconds"] for rec in recs]),
        }
    both = [r for r in rows if r.get(OURS) and r.get(REF)]
    for key in ("peak_kib", "rise_kib"):
        out[f"{key[:-4]}_ratio"] = spread(
            [
                r[REF][key] / max(r[OURS][key], 1024)  # a 1 MiB floor: a rise can be ~0
                for r in both
                if r[REF][key] is not None and r[OURS][key] is not None
            ]
        )
    return out
