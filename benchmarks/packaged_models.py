"""The opt-in packaged LM (Qwen2.5-Coder-1.5B-Instruct): refusal, load time and speed.

Needs ``hrefine models install qwen2.5-coder-1.5b`` first (``make models-large``); the test
suite never does. Measures, on this machine:

- the checksum refusal: the installed part files copied, one byte flipped, joined again;
- the load from the converted folder, and (``--install``) a whole install into a fresh cache;
- one Yes/No answer, generation tokens per second and the pre-fill of an 840-token prompt,
  with 1 and with 2 torch threads (each in its own process: the thread count is global).

Writes ``results/packaged_models.{json,md}``::

    python -m benchmarks.packaged_models [--install] [--model qwen2.5-coder-1.5b]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._common import RESULTS_DIR, hardware

_QUESTIONS = (
    ("Is Paris the capital of France? Answer Yes or No.", "Yes"),
    ("Is the Moon larger than the Earth? Answer Yes or No.", "No"),
    ("Does water boil at 100 degrees Celsius at sea level? Answer Yes or No.", "Yes"),
    (
        "Passage: The Eiffel Tower was completed in 1889.\n\nQuestion: Who painted the Mona "
        "Lisa?\n\nDoes the passage answer the question? Answer Yes or No.",
        "No",
    ),
)
_PARAGRAPH = (
    "The Treaty of Westphalia, signed in 1648, ended the Thirty Years' War in the Holy Roman "
    "Empire and the Eighty Years' War between Spain and the Dutch Republic. It established the "
    "principle of state sovereignty and reshaped the political map of Europe, recognising the "
    "independence of the Swiss Confederation and the Dutch Republic."
)


def speed(model: str, threads: int) -> dict[str, Any]:
    """Load, Yes/No, generation and pre-fill timings in this process with ``threads``."""
    import torch

    torch.set_num_threads(threads)
    from hrefine.models._lm_name import local_lm_from

    started = time.perf_counter()
    lm = local_lm_from(model)
    lm.choice_probs(_QUESTIONS[0][0], ["Yes", "No"])  # loads the weights
    load = time.perf_counter() - started
    started = time.perf_counter()
    probs = [lm.choice_probs(q, ["Yes", "No"]) for q, _ in _QUESTIONS]
    yes_no = (time.perf_counter() - started) / len(_QUESTIONS)
    right = sum(
        (p["Yes"] > p["No"]) == (want == "Yes")
        for p, (_, want) in zip(probs, _QUESTIONS, strict=True)
    )
    started = time.perf_counter()
    summary = lm.generate("Summarise in one sentence:\n\n" + _PARAGRAPH, max_new_tokens=48)[0]
    generated = time.perf_counter() - started
    tokens = len(lm.encode(summary))
    context = " ".join([_PARAGRAPH] * 12)
    started = time.perf_counter()
    lm.choice_probs(
        f"Context:\n{context}\n\nDoes it mention 1648? Answer Yes or No.", ["Yes", "No"]
    )
    prefill = time.perf_counter() - started
    return {
        "threads": threads,
        "dtype": str(lm.model.dtype).removeprefix("torch."),
        "load_and_first_answer_s": round(load, 2),
        "yes_no_s": round(yes_no, 3),
        "yes_no_right": f"{right}/{len(_QUESTIONS)}",
        "generated_tokens": tokens,
        "tokens_per_s": round(tokens / generated, 2),
        "prefill_tokens": len(lm.encode(context)),
        "prefill_s": round(prefill, 2),
        "summary": summary,
    }


def refusal(model: str) -> dict[str, Any]:
    """Copy the installed parts, flip one byte of the middle one, and join them again."""
    from hrefine.errors import ModelIntegrityError
    from hrefine.models.packaged import PACKAGED, join_parts, part_files

    spec = PACKAGED[model]
    with tempfile.TemporaryDirectory() as tmp:
        parts = []
        for part in part_files(spec):
            copy = Path(tmp) / part.name
            shutil.copyfile(part, copy)
            parts.append(copy)
        middle = parts[len(parts) // 2]
        with middle.open("r+b") as handle:
            handle.seek(12_345)
            byte = handle.read(1)
            handle.seek(12_345)
            handle.write(bytes([byte[0] ^ 0x01]))
        started = time.perf_counter()
        try:
            join_parts(parts, Path(tmp) / "joined", size=spec.size, sha256=spec.sha256)
        except ModelIntegrityError as exc:
            return {
                "refused": True,
                "flipped": f"{middle.name} byte 12345",
                "seconds": round(time.perf_counter() - started, 2),
                "message": str(exc),
                "left_behind": sorted(p.name for p in Path(tmp).iterdir() if p not in parts),
            }
    return {"refused": False}


def fresh_install(model: str) -> dict[str, Any]:
    """``hrefine models install`` into an empty cache (the parts as installed)."""
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "HREFINE_CACHE": cache}
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "hrefine", "models", "install", model], check=True, env=env
        )
        return {"install_s": round(time.perf_counter() - started, 1)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="qwen2.5-coder-1.5b")
    ap.add_argument("--install", action="store_true", help="also time a fresh install")
    ap.add_argument("--threads", type=int, default=None, help="(internal) one speed run")
    ap.add_argument("--out", default="packaged_models", help="results/ file stem")
    args = ap.parse_args(argv)
    if args.threads is not None:
        print(json.dumps(speed(args.model, args.threads)))
        return 0
    res: dict[str, Any] = {"model": args.model, "hardware": hardware()}
    if args.install:
        res["install"] = fresh_install(args.model)
    res["refusal"] = refusal(args.model)
    runs = []
    for threads in (1, 2):
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "benchmarks.packaged_models",
                "--model",
                args.model,
                "--threads",
                str(threads),
            ],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        runs.append(json.loads(out.strip().splitlines()[-1]))
    res["speed"] = runs
    lines = [
        f"## {args.model} on {res['hardware'].get('cpu', 'this CPU')}",
        "",
        f"Refusal of one flipped byte: {res['refusal']}",
        "",
        "| threads | dtype | load + first answer s | Yes/No s | right | tokens/s | pre-fill s |",
        "|---:|---|---:|---:|---|---:|---:|",
    ]
    for r in runs:
        lines.append(
            f"| {r['threads']} | {r['dtype']} | {r['load_and_first_answer_s']} | {r['yes_no_s']} "
            f"| {r['yes_no_right']} | {r['tokens_per_s']} | {r['prefill_s']} "
            f"({r['prefill_tokens']} tokens) |"
        )
    text = "\n".join(lines)
    print(text)
    (RESULTS_DIR / f"{args.out}.json").write_text(json.dumps(res, indent=1) + "\n")
    (RESULTS_DIR / f"{args.out}.md").write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
