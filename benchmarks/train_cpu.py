"""A short CPU training run for LongRefiner's query analysis: held-out label accuracy before
and after a LoRA adapter trained with :mod:`hrefine.train`.

Examples come from the shared evaluation data through
:func:`hrefine.train.build_examples` (labels by the rule of :mod:`hrefine.train.labels`). The
adapter is trained on the **tuning half** of the documents only and measured on the **checking
half**, which it never saw. Both parts are balanced by label (the same number of local and global
questions, picked by the SHA-1 of the question id), so always answering one label scores 0.5.

Each question is scored as the pipeline scores it (:meth:`LocalLM.choice_probs` of ``[Local]``
and ``[Global]``); the predicted label is the likelier one. Three rows:

- ``base, published prompt``: the untrained SmolLM2 with the prompt an adapter is trained on;
- ``base, instruction prompt``: the untrained SmolLM2 with the instructions the pipeline uses
  when no adapter is loaded (:data:`hrefine.longrefiner.prompts.ANALYSIS_INSTRUCTIONS`);
- ``trained adapter``: the adapter, with the published prompt.

Writes ``benchmarks/results/train_cpu.json`` and ``train_cpu.png``. 6.5 to 8 minutes on two busy
CPU cores (4.5 of them training); not part of the quick suite. On a GPU, a longer run on all
the tuning half (written elsewhere, so the CPU numbers stay):

    .venv/bin/python -m benchmarks.train_cpu
    .venv/bin/python -m benchmarks.train_cpu --device cuda --steps 300 --train-per-label 170 \
        --top-layers 0 --batch-size 16 --out benchmarks/results/train_gpu.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks._common import REPO

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

RESULTS = REPO / "benchmarks" / "results"
#: The run's settings: small enough for two CPU cores.
SETTINGS: dict[str, Any] = {
    "max_steps": 60,
    "batch_size": 8,
    "rank": 8,
    "alpha": 16.0,
    "top_layers": 8,
    "learning_rate": 1e-3,
    "warmup_steps": 5,
    "max_length": 256,
    "eval_fraction": 0.1,
    "save_every": 0,
    "seed": 0,
}


def _key(example: Any) -> str:
    return hashlib.sha1(str(example.meta["id"]).encode("utf-8")).hexdigest()


def balanced(examples: list[Any], per_label: int) -> list[Any]:
    """``per_label`` local and ``per_label`` global examples, picked by the SHA-1 of the id."""
    out: list[Any] = []
    for label in ("local", "global"):
        pool = sorted((e for e in examples if e.meta["label"] == label), key=_key)
        out.extend(pool[:per_label])
    return sorted(out, key=_key)


def score(
    lm: Any, examples: list[Any], *, adapter: str | None, instructions: bool
) -> dict[str, Any]:
    """Accuracy of the likelier label, balanced accuracy, and the breakdown by dataset."""
    from hrefine.longrefiner import prompts

    choices = list(prompts.CHOICES)
    right: Counter[str] = Counter()
    total: Counter[str] = Counter()
    by_data: Counter[str] = Counter()
    by_data_total: Counter[str] = Counter()
    p_right = 0.0
    for ex in examples:
        if instructions:
            question = ex.user.lstrip("\n")
            system, user = prompts.ANALYSIS_INSTRUCTIONS, f"Query: {question}"
        else:
            system, user = ex.system, ex.user
        probs = lm.choice_probs(user, choices, system=system, adapter=adapter)
        guess = max(choices, key=lambda c: probs[c])
        label = ex.meta["label"]
        ok = guess == ex.target
        right[label] += ok
        total[label] += 1
        by_data[ex.meta["dataset"]] += ok
        by_data_total[ex.meta["dataset"]] += 1
        p_right += probs[ex.target]
    recall = {k: right[k] / total[k] for k in total}
    return {
        "accuracy": sum(right.values()) / len(examples),
        "balanced_accuracy": sum(recall.values()) / len(recall),
        "recall": recall,
        "mean_p_correct": p_right / len(examples),
        "by_dataset": {k: [by_data[k], by_data_total[k]] for k in sorted(by_data_total)},
    }


def plot(rows: dict[str, dict[str, Any]], path: Path, model: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(rows)
    values = [rows[n]["balanced_accuracy"] for n in names]
    fig, ax = plt.subplots(figsize=(6.4, 3.2))
    bars = ax.barh(names, values, color=["#c9d1d9", "#c9d1d9", "#4c78a8"])
    ax.axvline(0.5, color="#888", ls="--", lw=1)
    ax.set_xlim(0, 1)
    ax.set_xlabel("balanced accuracy of the local/global label (checking half)")
    for bar, v in zip(bars, values, strict=True):
        ax.text(v + 0.01, bar.get_y() + bar.get_height() / 2, f"{v:.2f}", va="center")
    ax.invert_yaxis()
    ax.set_title(f"Query analysis on {model}: a short LoRA run", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train-per-label", type=int, default=96)
    parser.add_argument("--dev-per-label", type=int, default=40)
    parser.add_argument("--steps", type=int, default=SETTINGS["max_steps"])
    parser.add_argument("--batch-size", type=int, default=SETTINGS["batch_size"])
    parser.add_argument(
        "--top-layers", type=int, default=SETTINGS["top_layers"], help="0: LoRA on all layers"
    )
    parser.add_argument("--device", default="cpu", help="cpu, cuda, ... (a GPU run: see docs)")
    parser.add_argument("--out", type=Path, default=RESULTS / "train_cpu.json")
    parser.add_argument(
        "--lm",
        default=None,
        help="base model: a folder or name such as qwen2.5-coder-0.5b (default: SmolLM2)",
    )
    args = parser.parse_args()

    import torch

    if args.device == "cpu" and (os.cpu_count() or 1) <= 2:
        torch.set_num_threads(1)  # busy-waiting OpenMP threads on a shared 2-core machine
    from hrefine.models import LocalLM, default_lm
    from hrefine.models._lm_name import local_lm_from
    from hrefine.train import build_examples, train

    started = time.perf_counter()
    tune = build_examples("query-analysis", half="tune")
    check = build_examples("query-analysis", half="check")
    train_set = balanced(tune.examples, args.train_per_label)
    dev_set = balanced(check.examples, args.dev_per_label)
    build_s = time.perf_counter() - started

    # Its own LocalLM over the same files: the adapter trained here never reaches the shared one.
    shared = default_lm() if args.lm is None else local_lm_from(args.lm)
    if shared._prepare is not None:  # the embedded model's first use converts its GGUF once
        shared._prepare(shared)
    model_name = "SmolLM2-135M-Instruct (embedded)" if args.lm is None else shared.name
    lm = LocalLM(
        shared.model_name_or_path,
        gguf_file=shared.gguf_file,
        device=args.device,
        name=f"{shared.name}-train-bench",
    )
    del shared
    t0 = time.perf_counter()
    rows = {
        "base, published prompt": score(lm, dev_set, adapter=None, instructions=False),
        "base, instruction prompt": score(lm, dev_set, adapter=None, instructions=True),
    }
    before_s = time.perf_counter() - t0
    settings = {
        **SETTINGS,
        "max_steps": args.steps,
        "batch_size": args.batch_size,
        "top_layers": args.top_layers or None,
        "device": args.device,
        "progress": True,
    }
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "adapter"
        t0 = time.perf_counter()
        result = train(train_set, out, lm=lm, **settings)
        train_s = time.perf_counter() - t0
        lm.load_adapter(str(out), "query_analysis")
        t0 = time.perf_counter()
        rows["trained adapter"] = score(lm, dev_set, adapter="query_analysis", instructions=False)
        after_s = time.perf_counter() - t0

    report = {
        "task": "query-analysis",
        "model": model_name,
        "device": args.device
        if args.device == "cpu"
        else f"{args.device} ({torch.cuda.get_device_name()})",
        "threads": torch.get_num_threads(),
        "train": {
            "half": "tune",
            "examples": len(train_set),
            "labels": dict(Counter(e.meta["label"] for e in train_set)),
            "datasets": dict(Counter(e.meta["dataset"] for e in train_set)),
            "built": len(tune.examples),
            "skipped": dict(tune.skipped),
        },
        "dev": {
            "half": "check",
            "examples": len(dev_set),
            "labels": dict(Counter(e.meta["label"] for e in dev_set)),
            "datasets": dict(Counter(e.meta["dataset"] for e in dev_set)),
        },
        "settings": {k: v for k, v in settings.items() if k != "progress"},
        "losses": [list(x) for x in result.losses],
        "held_out_during_training": result.evals,
        "results": rows,
        "seconds": {
            "build": round(build_s, 1),
            "score_before": round(before_s, 1),
            "train": round(train_s, 1),
            "score_after": round(after_s, 1),
            "total": round(time.perf_counter() - started, 1),
        },
    }
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    plot(rows, args.out.with_suffix(".png"), model_name)
    for name, row in rows.items():
        print(
            f"{name:<26} accuracy {row['accuracy']:.3f}  balanced {row['balanced_accuracy']:.3f}"
            f"  recall local {row['recall']['local']:.2f} global {row['recall']['global']:.2f}"
        )
    print(f"loss {result.losses[0][1]:.3f} -> {result.losses[-1][1]:.3f}; {report['seconds']}")


if __name__ == "__main__":
    main()
