"""Peak memory of GARLIC's attention capture against keeping the model's full attentions.

GARLIC's edge weights need the attention from each summary point's tokens to each input node's
tokens, and the search needs each visited node's attention to the query. Asking transformers
for ``output_attentions=True`` keeps every layer's ``heads x n x n`` weights until the pass
ends: memory that grows with layers x sequence². hrefine's
:class:`~hrefine.models.LMSession` reduces each layer's weights to one sum per named segment as
soon as the layer returns them (a forward hook), so a capture pass holds one layer's weights at
a time, and only for the tokens of that pass.

For each prompt length, in a fresh process each (so no side inherits the other's allocator
state), with the embedded SmolLM2-135M-Instruct:

- **hrefine**: the inputs pre-filled into an ``LMSession`` (no capture), then a 64-token
  "summary point" appended with ``capture_attention=True``: its attention mass to every input
  segment (what :meth:`hrefine.garlic.GarlicGraph.build` does for each point);
- **full attentions**: one pass over the same tokens with ``output_attentions=True`` (eager
  kernel), the weights kept, then the same per-segment sums read from them.

Each child resets its peak resident size (``VmHWM``, see benchmarks/_rss.py) after loading the
model and a warm-up pass, and reports the rise of the peak during the measured call. Both sides'
per-segment sums are compared (they must agree). Results: ``results/garlic_memory.{json,md,png}``.

    .venv/bin/python -m benchmarks.garlic_memory            # quick: 512 and 1024 tokens
    .venv/bin/python -m benchmarks.garlic_memory --full     # 512, 1024 and 2048 tokens

In the quick suite (``make bench``) it runs the quick lengths (some 2 minutes on 2 cores; the
full pass at 2048 tokens holds about 5 GB).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import time
from datetime import datetime, timezone
from typing import Any

from benchmarks._common import REPO, hardware, package_versions

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

log = logging.getLogger("benchmarks.garlic_memory")
RESULTS = REPO / "benchmarks" / "results"
QUICK_LENGTHS = (512, 1024)
FULL_LENGTHS = (512, 1024, 2048)
POINT_TOKENS = 64
SEGMENTS = 8
MARKER = "@@MEM@@ "
SIDES = ("hrefine", "full")


def _text_ids(lm: Any, n: int) -> list[int]:
    """``n`` token ids of real text (a HotpotQA item's paragraphs, repeated as needed)."""
    from hrefine.eval.baselines import as_plain_text
    from hrefine.eval.loaders import load_dataset

    item = load_dataset("hotpotqa")[0]
    ids = lm.encode(as_plain_text(item.document))
    while len(ids) < n:
        ids = ids + ids
    return ids[:n]


def child(side: str, length: int) -> dict[str, Any]:
    """One measurement in this process: peak KiB above the resident size before the call."""
    import numpy as np
    import torch
    from hrefine.models import default_lm

    from benchmarks import _rss

    lm = default_lm()
    context = length - POINT_TOKENS
    ids = _text_ids(lm, length)
    bounds = np.linspace(0, context, SEGMENTS + 1).astype(int)
    names = [f"in{j}" for j in range(SEGMENTS)]
    # warm-up: torch's thread pool and kernels, on a short pass of each kind
    warm = lm.session()
    warm.append_ids(ids[:32], segment="w")
    warm.append_ids(ids[32:48], segment="p", capture_attention=True)
    from hrefine.models._attention import eager_attention

    with torch.no_grad(), eager_attention(lm.model):
        lm.model(torch.tensor([ids[:48]]), output_attentions=True)
    del warm
    before = _rss.start()
    started = time.perf_counter()
    if side == "hrefine":
        session = lm.session()
        for name, lo, hi in zip(names, bounds[:-1], bounds[1:], strict=True):
            session.append_ids(ids[lo:hi], segment=name)
        result = session.append_ids(ids[context:], segment="point", capture_attention=True)
        sums = {n: float(result.attention[n]) for n in names}
    else:
        with torch.no_grad(), eager_attention(lm.model):
            out = lm.model(torch.tensor([ids]), output_attentions=True)
        kept = out.attentions  # every layer's (1, heads, n, n), alive together
        rows = torch.stack([a[0, :, context:, :] for a in kept])  # layers, heads, point, n
        mean = rows.mean(dim=(0, 1))  # point tokens x n
        sums = {
            n: float(mean[:, lo:hi].sum(dim=1).mean())
            for n, lo, hi in zip(names, bounds[:-1], bounds[1:], strict=True)
        }
        del out, kept, rows, mean
    seconds = time.perf_counter() - started
    peak = _rss.peak_since(before)
    return {"side": side, "length": length, "peak_kib": peak, "seconds": seconds, "sums": sums}


def _run_child(side: str, length: int) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "benchmarks.garlic_memory", "--child", side, str(length)]
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, check=False)
    for line in done.stdout.splitlines():
        if line.startswith(MARKER):
            return dict(json.loads(line[len(MARKER) :]))
    msg = f"{side} at {length} tokens failed:\n{done.stderr[-2000:]}"
    raise RuntimeError(msg)


def main(quick: bool = True, lengths: tuple[int, ...] | None = None) -> dict[str, Any]:
    """Measure both sides at each length; write ``results/garlic_memory.{json,md,png}``.

    Parameters
    ----------
    quick:
        512 and 1024 tokens, else 2048 as well.
    lengths:
        Prompt lengths to measure instead.

    Returns
    -------
    dict[str, Any]
        The result JSON (no quality values: nothing is pinned).
    """
    from hrefine.models import default_lm

    lengths = lengths or (QUICK_LENGTHS if quick else FULL_LENGTHS)
    lm = default_lm()
    config = lm.model.config
    layers, heads = int(config.num_hidden_layers), int(config.num_attention_heads)
    rows: list[dict[str, Any]] = []
    started = time.perf_counter()
    for length in lengths:
        ours, full = (_run_child(side, length) for side in SIDES)
        gap = max(abs(ours["sums"][k] - full["sums"][k]) for k in ours["sums"])
        weights_mib = layers * heads * length * length * 4 / 2**20
        row = {
            "tokens": length,
            "hrefine_peak_mib": _mib(ours["peak_kib"]),
            "full_peak_mib": _mib(full["peak_kib"]),
            "ratio": _ratio(full["peak_kib"], ours["peak_kib"]),
            "full_attention_weights_mib": round(weights_mib, 1),
            "hrefine_s": round(ours["seconds"], 3),
            "full_s": round(full["seconds"], 3),
            "max_sum_difference": gap,
        }
        rows.append(row)
        log.info("%d tokens: %s", length, row)
    res = {
        "benchmark": "garlic_memory",
        "mode": "quick" if quick else "full",
        "created": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "wall_s": round(time.perf_counter() - started, 1),
        "model": f"SmolLM2-135M-Instruct ({layers} layers x {heads} heads), float32, CPU",
        "task": f"attention mass of a {POINT_TOKENS}-token summary point to {SEGMENTS} input "
        "segments that fill the rest of the prompt",
        "rows": rows,
        "hardware": hardware(),
        "versions": package_versions(),
    }
    write_outputs(res)
    return res


def _mib(kib: int | None) -> float | None:
    return None if kib is None else round(kib / 1024, 1)


def _ratio(a: int | None, b: int | None) -> float | None:
    return None if a is None or not b else round(a / b, 1)


def write_outputs(res: dict[str, Any]) -> None:
    """``garlic_memory.json``, a Markdown table and a plot."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "garlic_memory.json").write_text(json.dumps(res, indent=1) + "\n")
    lines = [
        "# GARLIC attention capture: peak memory",
        "",
        f"{res['created']} · {res['model']} · {res['task']}",
        "",
        "| prompt tokens | hrefine (LMSession capture) MiB | full attentions MiB | ratio | "
        "size of all attention weights MiB | hrefine s | full s | max difference of the sums |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in res["rows"]:
        lines.append(
            f"| {r['tokens']} | {r['hrefine_peak_mib']} | {r['full_peak_mib']} | {r['ratio']}x | "
            f"{r['full_attention_weights_mib']} | {r['hrefine_s']} | {r['full_s']} | "
            f"{r['max_sum_difference']:.1e} |"
        )
    (RESULTS / "garlic_memory.md").write_text("\n".join(lines) + "\n")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.6))
    xs = [r["tokens"] for r in res["rows"]]
    ax.plot(xs, [r["full_peak_mib"] for r in res["rows"]], "o-", label="full attentions kept")
    ax.plot(xs, [r["hrefine_peak_mib"] for r in res["rows"]], "o-", label="hrefine capture")
    ax.set_xlabel("prompt tokens")
    ax.set_ylabel("peak memory rise (MiB)")
    ax.set_title("Attention capture for one 64-token summary point")
    ax.legend()
    fig.tight_layout()
    fig.savefig(RESULTS / "garlic_memory.png", dpi=120)
    plt.close(fig)


def _cli(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--child", nargs=2, metavar=("SIDE", "TOKENS"))
    parser.add_argument("--full", action="store_true", help="2048 tokens as well")
    parser.add_argument("--quick", action="store_true", help="512 and 1024 tokens (default)")
    parser.add_argument("--lengths", type=int, nargs="*", default=None)
    args = parser.parse_args(argv)
    if args.child:
        side, length = args.child
        print(MARKER + json.dumps(child(side, int(length))), flush=True)
        return 0
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    main(quick=not args.full, lengths=tuple(args.lengths) if args.lengths else None)
    return 0


if __name__ == "__main__":
    raise SystemExit(_cli())
