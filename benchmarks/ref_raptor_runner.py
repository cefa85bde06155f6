"""Drive ``llama-index-packs-raptor`` 0.4.2 inside its own venv (never imported by hrefine).

Run by :mod:`benchmarks.raptor_speed` as::

    benchmarks/.venvs/llama-index-packs-raptor-0.4.2/bin/python benchmarks/ref_raptor_runner.py \
        --config cfg.json [--input tasks.jsonl --output out.jsonl]

``cfg.json``: ``{"embed_model": <local all-MiniLM-L6-v2 folder>, "chunk_tokens": 100, "k": 10,
"context_window": 128000, "query_timeout_s": 30}``. Tasks are JSON lines; one result line is
written per task as soon as it is done, so a run cut short still leaves every finished task.
Without ``--input``/``--output`` the runner serves: one task per stdin line, each result on
stdout prefixed with ``@@REF@@`` (libraries may print to stdout too), so that the benchmark can
time its own side on a corpus right after the reference, under the same machine load.

The pack is set up as close to our side as it allows: the same MiniLM folder through a small
``BaseEmbedding`` over sentence-transformers (unit vectors, batches of 32), the same instant
fake LLM (:func:`benchmarks._raptor_bench.fake_summary` behind a ``CustomLLM``), leaves of
``chunk_tokens`` tokens (its ``SentenceSplitter``, no overlap; the pack's default is 1,024),
``similarity_top_k = k``. Its ``tree_depth`` stays at the default 3, which the pack always
builds.

Task
----
``{"task": "build", "id", "texts": [...], "queries": [...], "builds": 1, "traversal_queries": n}``
    Build the pack's tree over ``texts`` ``builds`` times (each timed, with its peak resident
    memory), then on the last tree time every query in collapsed mode, then the first ``n`` in
    tree-traversal mode (all by default; a query running past ``query_timeout_s`` is stopped
    and counted as timed out: the pack's traversal loops forever when a level returns no
    node). Returns the timings, the tree's shape (nodes per level) and the number of LLM
    calls.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import signal
import sys
import time
import traceback
import warnings
from typing import Any

warnings.filterwarnings("ignore")
_HERE = os.path.dirname(os.path.abspath(__file__))


def _load_local(name: str) -> Any:
    """A module of this folder by its path (the folder itself is kept off sys.path)."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(_HERE, f"{name}.py"))
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


rss = _load_local("_rss")
bench = _load_local("_raptor_bench")

#: The texts around ``{context_str}`` in the pack's summariser prompt (llama-index's
#: tree_summarize template): the fake LLM reads between them.
PACK_MARKER = ("---------------------", "---------------------")
#: Prefix of result lines when serving on stdin/stdout.
MARKER = "@@REF@@ "


class QueryTimeout(Exception):
    """A query ran past ``query_timeout_s``."""


def _on_alarm(signum: int, frame: Any) -> None:
    raise QueryTimeout


def _make_models(cfg: dict[str, Any]) -> tuple[Any, Any]:
    """The fake LLM and the MiniLM embedding model, as LlamaIndex objects."""
    from llama_index.core.base.llms.types import (
        CompletionResponse,
        CompletionResponseGen,
        LLMMetadata,
    )
    from llama_index.core.bridge.pydantic import PrivateAttr
    from llama_index.core.embeddings import BaseEmbedding
    from llama_index.core.llms import CustomLLM
    from sentence_transformers import SentenceTransformer

    class FakeSummaryLLM(CustomLLM):
        """Instant: the first words of the texts it is asked to summarise."""

        calls: int = 0
        context_window: int = 128_000

        @property
        def metadata(self) -> LLMMetadata:
            return LLMMetadata(
                context_window=self.context_window, num_output=256, model_name="fake-summary"
            )

        def complete(
            self, prompt: str, formatted: bool = False, **kwargs: Any
        ) -> CompletionResponse:
            self.calls += 1
            return CompletionResponse(text=bench.fake_summary(prompt, PACK_MARKER))

        def stream_complete(
            self, prompt: str, formatted: bool = False, **kwargs: Any
        ) -> CompletionResponseGen:
            text = self.complete(prompt).text

            def gen() -> CompletionResponseGen:
                yield CompletionResponse(text=text, delta=text)

            return gen()

    class MiniLMEmbedding(BaseEmbedding):
        """sentence-transformers over a local folder, unit vectors (cosine = dot product)."""

        _model: Any = PrivateAttr()

        def __init__(self, path: str, **kwargs: Any) -> None:
            super().__init__(model_name=path, embed_batch_size=32, **kwargs)
            self._model = SentenceTransformer(path, device="cpu")

        def _encode(self, texts: list[str]) -> list[list[float]]:
            vecs = self._model.encode(
                texts, batch_size=32, normalize_embeddings=True, show_progress_bar=False
            )
            return [v.tolist() for v in vecs]

        def _get_query_embedding(self, query: str) -> list[float]:
            return self._encode([query])[0]

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._get_query_embedding(query)

        def _get_text_embedding(self, text: str) -> list[float]:
            return self._encode([text])[0]

        def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
            return self._encode(texts)

        async def _aget_text_embeddings(self, texts: list[str]) -> list[list[float]]:
            return self._encode(texts)

    llm = FakeSummaryLLM(context_window=int(cfg.get("context_window", 128_000)))
    embed = MiniLMEmbedding(cfg["embed_model"])
    return llm, embed


def _shape(pack: Any) -> dict[str, Any]:
    """Nodes per level of the pack's tree: leaves carry no ``level``; summaries 0, 1, 2..."""
    docs = pack.retriever.index.docstore.docs
    levels: dict[str, int] = {}
    for node in docs.values():
        level = node.metadata.get("level")
        key = "leaves" if level is None else f"summary_{int(level) + 1}"
        levels[key] = levels.get(key, 0) + 1
    summary_layers = sorted(k for k in levels if k.startswith("summary_"))
    return {
        "nodes": len(docs),
        "leaves": levels.get("leaves", 0),
        "summary_layers": len(summary_layers),
        "nodes_per_layer": [levels.get("leaves", 0)] + [levels[k] for k in summary_layers],
    }


def _time_queries(pack: Any, queries: list[str], mode: str, timeout_s: int) -> dict[str, Any]:
    seconds: list[float] = []
    timed_out = 0
    errors: list[str] = []
    returned: list[int] = []
    for query in queries:
        signal.alarm(timeout_s)
        t0 = time.perf_counter()
        try:
            nodes = pack.run(query, mode=mode)
        except QueryTimeout:
            timed_out += 1
            continue
        except Exception as exc:
            errors.append(f"{type(exc).__name__}: {exc}"[:300])
            continue
        finally:
            signal.alarm(0)
        seconds.append(time.perf_counter() - t0)
        returned.append(len(nodes))
    return {
        "seconds": seconds,
        "stats": bench.timing_stats(seconds),
        "timed_out": timed_out,
        "errors": errors[:5],
        "mean_nodes": round(sum(returned) / len(returned), 2) if returned else None,
    }


def _build_task(task: dict[str, Any], cfg: dict[str, Any], llm: Any, embed: Any) -> dict[str, Any]:
    from llama_index.core import Document
    from llama_index.core.node_parser import SentenceSplitter
    from llama_index.packs.raptor import RaptorPack

    k = int(cfg.get("k", 10))
    docs = [Document(text=t) for t in task["texts"]]
    builds: list[dict[str, Any]] = []
    pack = None
    for _ in range(int(task.get("builds", 1))):
        pack = None  # the previous tree's memory is not counted in this build's peak
        splitter = SentenceSplitter(chunk_size=int(cfg.get("chunk_tokens", 100)), chunk_overlap=0)
        calls0 = llm.calls
        m0 = rss.start()
        t0 = time.perf_counter()
        pack = RaptorPack(
            docs,
            llm=llm,
            embed_model=embed,
            transformations=[splitter],
            similarity_top_k=k,
            mode="collapsed",
            verbose=False,
        )
        builds.append(
            {
                "seconds": time.perf_counter() - t0,
                "peak_kib": rss.peak_since(m0),
                "llm_calls": llm.calls - calls0,
            }
        )
    assert pack is not None
    timeout_s = int(cfg.get("query_timeout_s", 30))
    queries = list(task["queries"])
    n_traversal = int(task.get("traversal_queries", len(queries)))
    if queries:  # one untimed query first: the first call pays one-off set-up costs
        pack.run(queries[0], mode="collapsed")
    return {
        "task": "build",
        "id": task["id"],
        "texts": len(docs),
        "builds": builds,
        "shape": _shape(pack),
        "collapsed": _time_queries(pack, queries, "collapsed", timeout_s),
        "traversal": _time_queries(pack, queries[:n_traversal], "tree_traversal", timeout_s),
        "resident_kib": rss.resident(),
    }


def _versions() -> dict[str, str | None]:
    import importlib.metadata as md

    out: dict[str, str | None] = {"python": sys.version.split()[0]}
    for name in (
        "llama-index-packs-raptor",
        "llama-index-core",
        "umap-learn",
        "scikit-learn",
        "numba",
        "numpy",
        "sentence-transformers",
        "transformers",
        "torch",
    ):
        try:
            out[name] = md.version(name)
        except md.PackageNotFoundError:
            out[name] = None
    return out


def main(argv: list[str] | None = None) -> int:
    # This folder holds modules (run.py, fuzz.py...) that could shadow the reference's imports.
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--config", required=True)
    ap.add_argument("--input", help="tasks (JSON lines); default: serve on stdin")
    ap.add_argument("--output", help="results (JSON lines); default: stdout, prefixed")
    args = ap.parse_args(argv)
    with open(args.config, encoding="utf-8") as fh:
        cfg = json.load(fh)
    signal.signal(signal.SIGALRM, _on_alarm)

    t0 = time.perf_counter()
    from llama_index.core import Settings

    llm, embed = _make_models(cfg)
    # Nothing may fall back to the library's OpenAI defaults (no key, no network here).
    Settings.llm = llm
    Settings.embed_model = embed
    embed.get_text_embedding("warm up the embedder")  # weights paged in before any timing
    load_s = time.perf_counter() - t0

    src = open(args.input, encoding="utf-8") if args.input else sys.stdin  # noqa: SIM115
    dst = open(args.output, "w", encoding="utf-8") if args.output else sys.stdout  # noqa: SIM115
    prefix = "" if args.output else MARKER
    hello = {"task": "hello", "load_s": load_s, "versions": _versions()}
    dst.write(prefix + json.dumps(hello) + "\n")
    dst.flush()
    for line in iter(src.readline, ""):
        if not line.strip():
            continue
        task = json.loads(line)
        try:
            if task.get("task") != "build":
                msg = f"unknown task {task.get('task')!r}"
                raise ValueError(msg)
            res = _build_task(task, cfg, llm, embed)
        except Exception as exc:
            res = {
                "task": task.get("task"),
                "id": task.get("id"),
                "error": f"{type(exc).__name__}: {exc}",
                "trace": traceback.format_exc()[-2000:],
            }
        dst.write(prefix + json.dumps(res) + "\n")
        dst.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
