"""The reference side of the HtmlRAG benchmark: ``htmlrag`` 0.1.1, driven in its own venv.

:class:`RefProcess` keeps ``benchmarks/ref_htmlrag_runner.py`` alive inside
``benchmarks/.venvs/htmlrag-0.1.1`` (built by :mod:`benchmarks._refenv`) and feeds it one task at
a time, so that both sides of the benchmark run page by page under the same machine load.
:func:`reference_prefill` counts the tokens its generative stage would pre-fill.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks._common import BENCH_DIR

__all__ = ["CACHE_DIR", "RefProcess", "ref_config", "ref_outputs", "reference_prefill"]

CACHE_DIR = BENCH_DIR / ".cache" / "htmlrag"
RUNNER = BENCH_DIR / "ref_htmlrag_runner.py"
#: Prefix of result lines in the runner's ``--serve`` mode (libraries may print to stdout too).
MARKER = "@@REF@@ "


class RefProcess:
    """The htmlrag runner, alive for the whole run, fed one task at a time (``--serve``).

    ``available`` is False (and ``error`` says why) when the venv cannot be built or the runner
    dies; every call then returns None, and the benchmark leaves the reference columns empty.
    """

    def __init__(self, cfg: dict[str, Any]) -> None:
        from benchmarks._refenv import RefEnvError, ensure_refenv

        self.error: str | None = None
        self.versions: dict[str, Any] = {}
        self.load_s: float | None = None
        self.records: list[dict[str, Any]] = []
        self.proc: subprocess.Popen[str] | None = None
        self._stderr: Any = None
        try:
            py = ensure_refenv("htmlrag")
        except RefEnvError as exc:
            self.error = f"reference venv could not be built: {exc}"
            return
        CACHE_DIR.mkdir(parents=True, exist_ok=True)
        cfg_path = CACHE_DIR / "ref_cfg.json"
        cfg_path.write_text(json.dumps(cfg), encoding="utf-8")
        self._stderr = (CACHE_DIR / "ref_stderr.log").open("w", encoding="utf-8")
        env = dict(os.environ)
        env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
        env.pop("PYTHONPATH", None)
        self.proc = subprocess.Popen(
            [str(py), str(RUNNER), "--config", str(cfg_path), "--serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            encoding="utf-8",
            env=env,
            bufsize=1,
        )
        hello = self._read()
        if hello is not None:
            self.versions = hello.get("versions", {})
            self.load_s = hello.get("load_s")

    @property
    def available(self) -> bool:
        """Whether the runner is up (and has not failed)."""
        return self.proc is not None and self.error is None

    def _read(self) -> dict[str, Any] | None:
        assert self.proc is not None
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                code = self.proc.poll()
                log_file = CACHE_DIR / "ref_stderr.log"
                self.error = f"reference runner ended (exit {code}); see {log_file}"
                return None
            if line.startswith(MARKER):
                return json.loads(line[len(MARKER) :])  # type: ignore[no-any-return]

    def call(self, task: dict[str, Any]) -> dict[str, Any] | None:
        """Run one task in the reference venv and return its result record."""
        if not self.available:
            return None
        assert self.proc is not None
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(task) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            self.error = f"reference runner is gone: {exc}"
            return None
        rec = self._read()
        if rec is not None:
            self.records.append(rec)
        return rec

    def close(self) -> None:
        """Let the runner finish (kill it after a minute)."""
        if self.proc is not None:
            try:
                if self.proc.stdin:
                    self.proc.stdin.close()
                self.proc.wait(timeout=60)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
        if self._stderr is not None:
            self._stderr.close()

    def info(self) -> dict[str, Any]:
        """What the result JSON records about the reference."""
        return {
            "available": bool(self.records) or self.available,
            "error": self.error,
            "versions": self.versions,
            "load_s": self.load_s,
            "runner": "benchmarks/ref_htmlrag_runner.py in benchmarks/.venvs/htmlrag-0.1.1",
        }


#: clean + block tree is timed this many times in a row per page on each side; the best counts.
CLEAN_TREE_REPEATS = 3


def ref_config(max_node_words: int) -> dict[str, Any]:
    """The runner's config: the same MiniLM folder and Llama-3.2 tokenizer as our side."""
    from hrefine.budget import _llama_tokenizer_file
    from hrefine.models.embed import default_embedder_path

    tok = _llama_tokenizer_file()
    return {
        "embed_model": str(default_embedder_path()),
        "tokenizer_file": str(tok) if tok else None,
        "max_node_words": max_node_words,
        "clean_tree_repeats": CLEAN_TREE_REPEATS,
    }


def ref_outputs(
    records: Sequence[dict[str, Any]],
) -> tuple[dict[str, dict[int, Any]], dict[str, Any]]:
    """Reference outputs ``[item.id][budget]`` and its timings, from the runner's records.

    One pruning call of the reference is its ranking (re-done for every question) plus
    ``prune_HTML`` at one budget; that sum is what ``prune_s`` holds per ``<id>@<budget>``, and
    ``prune_e2e_s`` adds the page's ``clean_html`` + ``build_block_tree``. ``*_peak_kib``: how far
    the runner's resident memory rose above its size before the call (see benchmarks/_rss.py).
    """
    out: dict[str, dict[int, Any]] = defaultdict(dict)
    speed: dict[str, Any] = {
        "clean_tree_s": {},
        "clean_tree_best_s": {},
        "clean_s": {},
        "rank_s": {},
        "prune_s": {},
        "prune_only_s": {},
        "prune_e2e_s": {},
        "clean_tree_peak_kib": {},
        "prune_peak_kib": {},
        "errors": [],
    }
    for rec in records:
        if rec.get("task") != "prune":
            continue
        if "error" in rec and "questions" not in rec:
            speed["errors"].append(rec["error"])
            continue
        speed["clean_tree_s"][rec["page_id"]] = rec["clean_tree_s"]
        if "clean_tree_best_s" in rec:
            speed["clean_tree_best_s"][rec["page_id"]] = rec["clean_tree_best_s"]
        speed["clean_s"][rec["page_id"]] = rec["clean_s"]
        if rec.get("clean_tree_peak_kib") is not None:
            speed["clean_tree_peak_kib"][rec["page_id"]] = rec["clean_tree_peak_kib"]
        for q in rec["questions"]:
            if "error" in q:
                speed["errors"].append(f"{q['id']}: {q['error']}")
            if "rank_s" in q:
                speed["rank_s"][q["id"]] = q["rank_s"]
            for b, p in q.get("prune", {}).items():
                out[q["id"]][int(b)] = {
                    "output": p["html"],
                    "error": p["error"],
                    "seconds": p["prune_s"],
                }
                if p["error"] is None:
                    speed["prune_s"][f"{q['id']}@{b}"] = q["rank_s"] + p["prune_s"]
                    speed["prune_only_s"][f"{q['id']}@{b}"] = p["prune_s"]
                    # What a user of the reference runs for one page, question and budget.
                    speed["prune_e2e_s"][f"{q['id']}@{b}"] = (
                        rec["clean_tree_s"] + q["rank_s"] + p["prune_s"]
                    )
                    # The call's peak: its ranking's or its prune_HTML's, each above the
                    # resident size just before it (the ranking's arrays are small).
                    peaks = [
                        v for v in (q.get("rank_peak_kib"), p.get("peak_kib")) if v is not None
                    ]
                    if peaks:
                        speed["prune_peak_kib"][f"{q['id']}@{b}"] = max(peaks)
    return out, speed


def _token_trie_branch_costs(paths_ids: Sequence[Sequence[int]]) -> tuple[int, list[int]]:
    """Prefix lengths of every trie node with two or more children (the nodes it scores).

    Returns (number of trie nodes, [len(prefix) for each branching node]); the root's prefix is 0.
    """
    children: dict[tuple[int, ...], set[int]] = defaultdict(set)
    nodes: set[tuple[int, ...]] = {()}
    for ids in paths_ids:
        for i in range(len(ids)):
            prefix = tuple(ids[:i])
            children[prefix].add(ids[i])
            nodes.add(tuple(ids[: i + 1]))
    return len(nodes), [len(p) for p, c in children.items() if len(c) >= 2]


def reference_prefill(
    paths: Sequence[Sequence[str]], tokenizer: Any, prompt_tokens: int
) -> dict[str, Any]:
    """Tokens htmlrag's generative stage pre-fills, counted from its call pattern.

    How it is counted (read from the model code that ``GenHTMLPruner`` calls,
    ``generate_html_tree``): each block path (its renamed tags, e.g. ``html, body, div0, p3``) is
    written ``<html><body><div0><p3>`` and tokenised; the paths form a token trie. The trie is
    walked breadth first; a node with one child gets probability 1 without a model call; for a
    node with two or more children the model is called on ``prompt_ids + node_prefix_ids``, a fresh
    forward pass with no KV cache. So the pre-filled tokens are
    ``sum over branching nodes of (prompt_tokens + len(prefix))``.
    """
    ids = []
    for path in paths:
        text = "<" + "><".join(path) + ">"
        ids.append(list(tokenizer.encode(text, add_special_tokens=False)))
    n_nodes, prefixes = _token_trie_branch_costs(ids)
    return {
        "trie_nodes": n_nodes,
        "model_calls": len(prefixes),
        "prompt_tokens": prompt_tokens,
        "prefilled_tokens": int(sum(prompt_tokens + p for p in prefixes)),
        "blocks": len(paths),
    }


def ref_stderr_tail(n: int = 20) -> list[str]:
    """The last lines the runner wrote to stderr (for the result JSON when it failed)."""
    path: Path = CACHE_DIR / "ref_stderr.log"
    try:
        return path.read_text(encoding="utf-8", errors="replace").splitlines()[-n:]
    except OSError:
        return []
