"""What a CUDA device changes in the embedded models' numbers, against the CPU in the same run.

Run on a machine with a CUDA GPU and the embedded models installed::

    python -m benchmarks.gpu_paths --out gpu_paths

It measures, on real text (the paragraphs of this repository's ``docs/``):

1. the embedder (all-MiniLM-L6-v2): how far a text's vector moves with the batch it is embedded
   in on the GPU's batched path, how far the GPU's vectors are from the CPU's batch-invariant
   ones, and whether the top 10 paragraphs for a query change between the two;
2. SmolLM2 (bfloat16 on the GPU, float32 on the CPU): the Yes/No probability of relevance
   questions, greedy completions, and whether a completion depends on its batch on the GPU;
3. the throughput of each on each device.

Results go to ``benchmarks/results/NAME.{json,md}`` (or the folder in ``$OUT`` when set, as on
the device machine).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"

TOP_K = 10


def _paragraphs(limit: int) -> list[str]:
    """Prose paragraphs of the docs (no code, tables or headings), in file order."""
    out: list[str] = []
    for path in sorted((REPO / "docs").glob("*.md")):
        text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
        for block in re.split(r"\n\s*\n", text):
            block = " ".join(block.split())
            if len(block.split()) >= 25 and not block.startswith(("#", "|", "<!--", "-", "1.")):
                out.append(block)
    return out[:limit]


def _headings(limit: int) -> list[str]:
    """Section titles of the docs, as queries."""
    out: list[str] = []
    for path in sorted((REPO / "docs").glob("*.md")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.startswith("## ") and len(line.split()) >= 3:
                out.append(line[3:].strip())
    return out[:limit]


def _sync() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


def embedder_paths(texts: list[str], queries: list[str]) -> dict[str, Any]:
    """Batch dependence on the GPU, and GPU against the CPU's batch-invariant path."""
    from hrefine.models import SentenceTransformerEmbedder
    from hrefine.models.embedder_folder import default_embedder_path

    path = str(default_embedder_path())
    gpu = SentenceTransformerEmbedder(path, device="cuda", cache_size=0)
    cpu = SentenceTransformerEmbedder(path, device="cpu", cache_size=0)
    gpu.embed(texts[:4])
    cpu.embed(texts[:4])

    _sync()
    t0 = time.perf_counter()
    batched = gpu.embed(texts)
    _sync()
    gpu_s = time.perf_counter() - t0
    reversed_ = gpu.embed(texts[::-1])[::-1]
    alone = np.vstack([gpu.embed([t]) for t in texts])
    t0 = time.perf_counter()
    on_cpu = cpu.embed(texts)
    cpu_s = time.perf_counter() - t0
    cpu_alone = np.vstack([cpu.embed([t]) for t in texts[:50]])

    def moved(a: np.ndarray, b: np.ndarray) -> dict[str, float | int]:
        diff = np.abs(a - b)
        return {
            "max_abs": float(diff.max()),
            "rows_bit_identical": int(np.sum(np.all(a == b, axis=1))),
            "rows": len(a),
        }

    q_gpu = gpu.embed(queries)
    q_cpu = cpu.embed(queries)
    top_same = 0
    order_same = 0
    for qg, qc in zip(q_gpu, q_cpu, strict=True):
        top_g = np.argsort(-(batched @ qg), kind="stable")[:TOP_K]
        top_c = np.argsort(-(on_cpu @ qc), kind="stable")[:TOP_K]
        top_same += int(set(top_g) == set(top_c))
        order_same += int(list(top_g) == list(top_c))
    return {
        "gpu_dtype": gpu.compute_dtype,
        "cpu_dtype": cpu.compute_dtype,
        "texts": len(texts),
        "gpu_batch_vs_reversed_batch": moved(batched, reversed_),
        "gpu_batch_vs_alone": moved(batched, alone),
        "cpu_batch_vs_alone": moved(on_cpu[:50], cpu_alone),
        "gpu_vs_cpu": moved(batched, on_cpu),
        "min_cosine_gpu_cpu": float(np.min(np.sum(batched * on_cpu, axis=1))),
        "queries": len(queries),
        "top10_same_set": top_same,
        "top10_same_order": order_same,
        "gpu_texts_per_s": len(texts) / gpu_s,
        "cpu_texts_per_s": len(texts) / cpu_s,
        "cpu_threads": _threads(),
    }


def _threads() -> int:
    import torch

    return int(torch.get_num_threads())


def lm_paths(texts: list[str], queries: list[str]) -> dict[str, Any]:
    """SmolLM2's answers in bfloat16 on the GPU against float32 on the CPU."""
    from hrefine.models import LocalLM, default_lm

    gpu = default_lm()
    gpu.model  # noqa: B018 - load (and convert on first use) before timing
    cpu = LocalLM(gpu.model_name_or_path, device="cpu", name="smollm2-cpu")
    prompts = [
        f"Question: {q}\nPassage: {p[:600]}\nDoes the passage answer the question? "
        "Answer Yes or No."
        for q, p in zip(queries, texts[::3], strict=False)
    ]
    yes_gpu: list[float] = []
    yes_cpu: list[float] = []
    t0 = time.perf_counter()
    for prompt in prompts:
        yes_gpu.append(gpu.choice_probs(prompt, ["Yes", "No"])["Yes"])
    _sync()
    gpu_choice_s = (time.perf_counter() - t0) / len(prompts)
    t0 = time.perf_counter()
    for prompt in prompts:
        yes_cpu.append(cpu.choice_probs(prompt, ["Yes", "No"])["Yes"])
    cpu_choice_s = (time.perf_counter() - t0) / len(prompts)
    g, c = np.array(yes_gpu), np.array(yes_cpu)

    summarise = [f"Summarise in one sentence:\n{p[:700]}" for p in texts[:8]]
    new_tokens = 48
    _sync()
    t0 = time.perf_counter()
    gen_gpu = gpu.generate(summarise, max_new_tokens=new_tokens)
    _sync()
    gpu_gen_s = time.perf_counter() - t0
    gen_gpu_alone = [gpu.generate(p, max_new_tokens=new_tokens)[0] for p in summarise]
    t0 = time.perf_counter()
    gen_cpu = cpu.generate(summarise, max_new_tokens=new_tokens)
    cpu_gen_s = time.perf_counter() - t0
    return {
        "gpu_dtype": str(gpu.model.dtype),
        "cpu_dtype": str(cpu.model.dtype),
        "choice_prompts": len(prompts),
        "p_yes_max_abs_diff": float(np.max(np.abs(g - c))),
        "p_yes_mean_abs_diff": float(np.mean(np.abs(g - c))),
        "decisions_same": int(np.sum((g > 0.5) == (c > 0.5))),
        "gpu_s_per_choice": gpu_choice_s,
        "cpu_s_per_choice": cpu_choice_s,
        "generations": len(summarise),
        "greedy_same_gpu_cpu": sum(a == b for a, b in zip(gen_gpu, gen_cpu, strict=True)),
        "greedy_same_gpu_batch_vs_alone": sum(
            a == b for a, b in zip(gen_gpu, gen_gpu_alone, strict=True)
        ),
        "gpu_batch_s": gpu_gen_s,
        "cpu_batch_s": cpu_gen_s,
        "example": {"gpu": gen_gpu[0], "cpu": gen_cpu[0]},
    }


def _markdown(result: dict[str, Any]) -> str:
    e, m = result["embedder"], result["lm"]
    lines = [
        "# The embedded models on a CUDA GPU against the CPU",
        "",
        f"{result['gpu']}, torch {result['torch']}, {e['cpu_threads']} CPU threads; "
        f"`python -m benchmarks.gpu_paths` at {result['code']}.",
        "",
        f"## Embedder ({e['texts']} paragraphs of docs/, {e['queries']} queries)",
        "",
        "| comparison | largest coordinate change | vectors identical bit for bit |",
        "|---|---:|---:|",
    ]
    for key, label in [
        ("gpu_batch_vs_reversed_batch", "GPU: batch against the same batch reversed"),
        ("gpu_batch_vs_alone", "GPU: batch against each text alone"),
        ("cpu_batch_vs_alone", "CPU (batch-invariant): batch against alone"),
        ("gpu_vs_cpu", "GPU against CPU"),
    ]:
        row = e[key]
        same = f"{row['rows_bit_identical']} / {row['rows']}"
        lines.append(f"| {label} | {row['max_abs']:.2e} | {same} |")
    lines += [
        "",
        f"- Smallest cosine between a text's GPU and CPU vectors: {e['min_cosine_gpu_cpu']:.7f}.",
        f"- Top {TOP_K} paragraphs per query, GPU against CPU: same set for {e['top10_same_set']} "
        f"of {e['queries']}, same order for {e['top10_same_order']}.",
        f"- Throughput: {e['gpu_texts_per_s']:.0f} texts/s on the GPU ({e['gpu_dtype']}), "
        f"{e['cpu_texts_per_s']:.0f} on the CPU ({e['cpu_dtype']}).",
        "",
        f"## SmolLM2 ({m['gpu_dtype']} on the GPU, {m['cpu_dtype']} on the CPU)",
        "",
        f"- P(Yes) of {m['choice_prompts']} relevance questions: largest difference "
        f"{m['p_yes_max_abs_diff']:.4f}, mean {m['p_yes_mean_abs_diff']:.4f}; the same decision "
        f"for {m['decisions_same']} of {m['choice_prompts']}.",
        f"- Seconds per Yes/No answer: {m['gpu_s_per_choice']:.3f} (GPU), "
        f"{m['cpu_s_per_choice']:.3f} (CPU).",
        f"- Greedy summaries ({m['generations']}, 48 new tokens): the same text on GPU and CPU "
        f"for {m['greedy_same_gpu_cpu']}; on the GPU, the same in a batch as alone for "
        f"{m['greedy_same_gpu_batch_vs_alone']}. One batch took {m['gpu_batch_s']:.1f} s "
        f"(GPU) and {m['cpu_batch_s']:.1f} s (CPU).",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="gpu_paths", help="result name (no extension)")
    args = parser.parse_args(argv)
    import torch

    if not torch.cuda.is_available():
        print("no CUDA device: nothing to measure", file=sys.stderr)
        return 2
    texts = _paragraphs(400)
    queries = _headings(60)
    result: dict[str, Any] = {
        "gpu": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "code": os.environ.get("HREFINE_CODE", "working tree"),
        "embedder": embedder_paths(texts, queries),
    }
    result["lm"] = lm_paths(texts, queries)
    folder = Path(os.environ.get("OUT") or RESULTS)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{args.out}.json").write_text(json.dumps(result, indent=2), encoding="utf-8")
    md = _markdown(result)
    (folder / f"{args.out}.md").write_text(md, encoding="utf-8")
    print(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
