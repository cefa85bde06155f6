"""One page's clean + block tree + embedding pruning in a fresh process, and its peak memory.

Run by :mod:`benchmarks.htmlrag_speed`, once per page and side, so that neither side's number
depends on what an earlier page left in the process (the allocator's free lists, torch's
buffers)::

    <python> benchmarks/_speed_child.py --side ours|ref --task task.json

``ours`` runs in hrefine's venv, ``ref`` in the reference's (``benchmarks/.venvs/htmlrag-0.1.1``).
``task.json``: ``{"html", "question", "budget", "max_words", "read_tokens", "embed_model",
"tokenizer_file"}``. The process loads its model, prunes a two-block page once (the first
forward pass sets up torch's thread pool and kernels, which every later call shares), then
resets its peak resident size (``VmHWM``, see benchmarks/_rss.py) and prunes the page. One
JSON line, prefixed with ``@@SPEED@@``, gives the resident size before the page, the peak
during it and the time it took. Standard library only at module level: the same file runs in
both venvs.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

warnings.filterwarnings("ignore")
# This folder holds benchmarks/htmlrag.py, which would shadow the reference package.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]

MARKER = "@@SPEED@@ "
WARM_PAGE = "<html><body><p>warm up text for the embedder</p><p>second block</p></body></html>"


def _load_rss() -> Any:
    """benchmarks/_rss.py by its path (this folder is off sys.path, see above)."""
    spec = importlib.util.spec_from_file_location("_rss", os.path.join(_HERE, "_rss.py"))
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _ours(task: dict[str, Any]) -> tuple[Callable[[str], str], str]:
    """hrefine's HtmlPruner in float32 reading ``read_tokens`` word pieces per block."""
    from hrefine.html import HtmlPruner
    from hrefine.models.embed import SentenceTransformerEmbedder

    embedder = SentenceTransformerEmbedder(task["embed_model"], precision="float32")
    pruner = HtmlPruner(
        scorer="embedding",
        embedder=embedder,
        max_words=int(task["max_words"]),
        embed_max_tokens=int(task["read_tokens"]),
    )

    def run(html: str) -> str:
        return pruner.prune(html, task["question"], int(task["budget"])).html

    run(WARM_PAGE)
    return run, embedder.compute_dtype


def _ref(task: dict[str, Any]) -> tuple[Callable[[str], str], str]:
    """htmlrag's clean_html + build_block_tree + EmbedHTMLPruner ranking + prune_HTML."""
    import htmlrag  # the reference, only present in its venv
    from transformers import PreTrainedTokenizerFast

    tok = PreTrainedTokenizerFast(tokenizer_file=task["tokenizer_file"])
    pruner = htmlrag.EmbedHTMLPruner(embed_model=task["embed_model"], local_inference=True)
    st = pruner.embedder._client  # htmlrag has no read-length setting of its own
    st.max_seq_length = int(task["read_tokens"])

    def run(html: str) -> str:
        cleaned = htmlrag.clean_html(html)
        tree, simplified = htmlrag.build_block_tree(cleaned, max_node_words=int(task["max_words"]))
        ranks = pruner.calculate_block_rankings(task["question"], simplified, tree)
        return str(pruner.prune_HTML(simplified, tree, ranks, tok, int(task["budget"])))

    run(WARM_PAGE)
    return run, str(next(st.parameters()).dtype).replace("torch.", "")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--side", choices=("ours", "ref"), required=True)
    ap.add_argument("--task", required=True)
    args = ap.parse_args(argv)
    with open(args.task, encoding="utf-8") as fh:
        task = json.load(fh)
    rss = _load_rss()
    t0 = time.perf_counter()
    run, dtype = (_ours if args.side == "ours" else _ref)(task)
    load_s = time.perf_counter() - t0
    load_peak = rss._status_kib("VmHWM")
    before = rss.start()
    t1 = time.perf_counter()
    html = run(task["html"])
    seconds = time.perf_counter() - t1
    rise = rss.peak_since(before)
    out = {
        "side": args.side,
        "dtype": dtype,
        "read_tokens": int(task["read_tokens"]),
        "load_s": load_s,
        "seconds": seconds,
        "load_peak_kib": load_peak,
        "before_kib": before,
        "rise_kib": rise,
        "peak_kib": None if before is None or rise is None else before + rise,
        "output_chars": len(html),
    }
    sys.stdout.write(MARKER + json.dumps(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
