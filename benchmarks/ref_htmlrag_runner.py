"""Drive the reference package ``htmlrag`` 0.1.1 inside its own venv (never imported by hrefine).

Run by :mod:`benchmarks.htmlrag` as::

    benchmarks/.venvs/htmlrag-0.1.1/bin/python benchmarks/ref_htmlrag_runner.py \
        --config cfg.json [--input tasks.jsonl] [--output out.jsonl]

``cfg.json``: ``{"embed_model": <local MiniLM folder>, "tokenizer_file": <Llama-3.2 tokenizer.json>,
"max_node_words": 256}``. Tasks are JSON lines (stdin when ``--input`` is absent); one result line
is written per task as soon as it is done (stdout when ``--output`` is absent), so a run cut short
still leaves every finished task behind. With ``--serve`` the benchmark feeds one task at a time
and reads each result line (prefixed with ``@@REF@@``) before timing its own side on the same
page, so both sides see the same load on a shared machine.

Tasks
-----
``{"task": "prune", "page_id", "html", "questions": [{"id", "question"}], "budgets": [...]}``
    ``clean_html`` + ``build_block_tree`` once per page (timed together), then per question
    ``EmbedHTMLPruner.calculate_block_rankings`` (timed) and ``prune_HTML`` at every budget (timed).
    Returns every pruned output.
``{"task": "clean", "id", "html"}``
    ``clean_html`` alone (timed) and its output (the article-cleaning comparison).
``{"task": "paths", "id", "html", "max_node_words"}``
    The block paths ``build_block_tree`` gives on ``html`` (renamed tags, as the reference names
    them): the generative stage's tree, used to count the reference's pre-filled tokens.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
import warnings

warnings.filterwarnings("ignore")
# This script's folder holds benchmarks/htmlrag.py, which would shadow the reference package.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]

#: Prefix of result lines in --serve mode (libraries may print to stdout too).
MARKER = "@@REF@@ "


def _load_rss():  # type: ignore[no-untyped-def]
    """benchmarks/_rss.py by its path (this folder is off sys.path, see above)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("_rss", os.path.join(_HERE, "_rss.py"))
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


rss = _load_rss()


def _load(cfg: dict):  # type: ignore[no-untyped-def]
    import htmlrag  # the reference, only present in its venv
    from transformers import PreTrainedTokenizerFast

    chat_tokenizer = PreTrainedTokenizerFast(tokenizer_file=cfg["tokenizer_file"])
    pruner = htmlrag.EmbedHTMLPruner(embed_model=cfg["embed_model"], local_inference=True)
    return htmlrag, chat_tokenizer, pruner


def _prune_task(task: dict, cfg: dict, htmlrag, tok, pruner) -> dict:  # type: ignore[no-untyped-def]
    max_words = int(task.get("max_node_words", cfg.get("max_node_words", 256)))
    st = pruner.embedder._client  # langchain's SentenceTransformer: htmlrag has no such setting
    if "max_seq_length" in task:  # word pieces read per block (benchmarks/htmlrag_speed.py)
        st.max_seq_length = int(task["max_seq_length"])
    m0 = rss.start()
    t0 = time.perf_counter()
    cleaned = htmlrag.clean_html(task["html"])
    t1 = time.perf_counter()
    block_tree, simplified = htmlrag.build_block_tree(cleaned, max_node_words=max_words)
    t2 = time.perf_counter()
    tree_peak = rss.peak_since(m0)
    # More calls on the same page, for the best of them (the first is kept as well).
    best = t2 - t0
    for _ in range(int(cfg.get("clean_tree_repeats", 1)) - 1):
        r0 = time.perf_counter()
        htmlrag.build_block_tree(htmlrag.clean_html(task["html"]), max_node_words=max_words)
        best = min(best, time.perf_counter() - r0)
    out: dict = {
        "task": "prune",
        "page_id": task["page_id"],
        "clean_s": t1 - t0,
        "tree_s": t2 - t1,
        "clean_tree_s": t2 - t0,
        "clean_tree_best_s": best,
        "clean_tree_peak_kib": tree_peak,
        "n_blocks": len(block_tree),
        "cleaned_chars": len(cleaned),
        "max_seq_length": st.max_seq_length,
        "embed_dtype": str(next(st.parameters()).dtype),
        "questions": [],
    }
    # The model's share of the ranking: every SentenceTransformer.encode call timed.
    encode = st.encode
    in_model = [0.0]

    def timed_encode(*args, **kwargs):  # type: ignore[no-untyped-def]
        e0 = time.perf_counter()
        try:
            return encode(*args, **kwargs)
        finally:
            in_model[0] += time.perf_counter() - e0

    st.encode = timed_encode
    try:
        for q in task["questions"]:
            rec: dict = {"id": q["id"], "prune": {}}
            try:
                m0 = rss.start()
                in_model[0] = 0.0
                r0 = time.perf_counter()
                rankings = pruner.calculate_block_rankings(q["question"], simplified, block_tree)
                rec["rank_s"] = time.perf_counter() - r0
                rec["model_s"] = in_model[0]
                rec["rank_peak_kib"] = rss.peak_since(m0)
                rec["top_block"] = int(rankings[0]) if len(rankings) else None
            except Exception as exc:
                rec["error"] = f"rankings: {type(exc).__name__}: {exc}"
                out["questions"].append(rec)
                continue
            for budget in task["budgets"]:
                m0 = rss.start()
                p0 = time.perf_counter()
                try:
                    html = pruner.prune_HTML(simplified, block_tree, rankings, tok, int(budget))
                    err = None
                except Exception as exc:
                    html, err = "", f"{type(exc).__name__}: {exc}"
                rec["prune"][str(budget)] = {
                    "html": html,
                    "prune_s": time.perf_counter() - p0,
                    "peak_kib": rss.peak_since(m0),
                    "tokens": len(tok.encode(html, add_special_tokens=False)) if html else 0,
                    "error": err,
                }
            out["questions"].append(rec)
    finally:
        del st.encode  # the instance's own method again
    return out


def _clean_task(task: dict, htmlrag) -> dict:  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    cleaned = htmlrag.clean_html(task["html"])
    return {"task": "clean", "id": task["id"], "clean_s": time.perf_counter() - t0, "html": cleaned}


def _paths_task(task: dict, htmlrag) -> dict:  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    block_tree, _ = htmlrag.build_block_tree(
        task["html"], max_node_words=int(task["max_node_words"])
    )
    return {
        "task": "paths",
        "id": task["id"],
        "tree_s": time.perf_counter() - t0,
        "paths": [list(b[1]) for b in block_tree],
        "is_leaf": [bool(b[2]) for b in block_tree],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", required=True)
    ap.add_argument("--input")
    ap.add_argument("--output")
    ap.add_argument(
        "--serve",
        action="store_true",
        help="interactive: one task per stdin line, each result on stdout prefixed with " + MARKER,
    )
    args = ap.parse_args(argv)
    with open(args.config, encoding="utf-8") as fh:
        cfg = json.load(fh)

    t0 = time.perf_counter()
    htmlrag, tok, pruner = _load(cfg)
    load_s = time.perf_counter() - t0

    src = open(args.input, encoding="utf-8") if args.input else sys.stdin  # noqa: SIM115
    dst = open(args.output, "w", encoding="utf-8") if args.output else sys.stdout  # noqa: SIM115
    prefix = MARKER if args.serve else ""
    import importlib.metadata as md

    versions: dict[str, str | None] = {}
    for name in (
        "htmlrag",
        "beautifulsoup4",
        "transformers",
        "sentence-transformers",
        "torch",
        "langchain-community",
        "langchain-huggingface",
        "faiss-cpu",
        "numpy",
    ):
        try:
            versions[name] = md.version(name)
        except md.PackageNotFoundError:
            versions[name] = None
    dst.write(prefix + json.dumps({"task": "hello", "load_s": load_s, "versions": versions}) + "\n")
    dst.flush()

    # Warm-up: the first embedding call loads the model weights and first bs4 parse warms caches.
    try:
        warm = "<html><body><p>warm up text for the embedder</p><p>second block</p></body></html>"
        bt, simp = htmlrag.build_block_tree(htmlrag.clean_html(warm), max_node_words=2)
        pruner.prune_HTML(simp, bt, pruner.calculate_block_rankings("warm", simp, bt), tok, 64)
    except Exception:
        pass

    for line in iter(src.readline, ""):
        line = line.strip()
        if not line:
            continue
        task = json.loads(line)
        try:
            kind = task["task"]
            if kind == "prune":
                res = _prune_task(task, cfg, htmlrag, tok, pruner)
            elif kind == "clean":
                res = _clean_task(task, htmlrag)
            elif kind == "paths":
                res = _paths_task(task, htmlrag)
            else:
                res = {"task": kind, "error": f"unknown task {kind!r}"}
        except Exception as exc:
            res = {
                "task": task.get("task"),
                "id": task.get("id", task.get("page_id")),
                "error": f"{type(exc).__name__}: {exc}",
                "trace": traceback.format_exc()[-2000:],
            }
        dst.write(prefix + json.dumps(res) + "\n")
        dst.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
