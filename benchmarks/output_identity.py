"""Output identity: prove that a refactor changed no output, byte for byte.

Computes, with the embedded default models and no generative LLM (the deterministic paths), a
fixed small set of outputs over the shared data, and writes ``{case: {"sha256", "head"}}`` as
JSON (``head``: the output's first 200 characters, for a human). Run it on the code before a
refactor and after, then compare::

    python -m benchmarks.output_identity --out before.json     # on the old tree
    python -m benchmarks.output_identity --out after.json      # on the new tree
    python -m benchmarks.output_identity --compare before.json after.json

``--compare`` prints each case that differs (or is missing on one side) and exits 1 on any
difference, 0 when all are identical. ``--texts DIR`` (with ``--out``) also writes each case's
whole output into DIR, one file a case, so that two runs' differences can be read with
``diff -r``.

The cases: HtmlRAG (``htmlrag`` and ``htmlrag-bm25``) on WTQ and NQ pages; RAPTOR (extractive
summaries) on a QuALITY document; GARLIC with its extractive stand-in LLM on a Qasper document;
LongRefiner (no model) on CUAD and Qasper; the HTML report page of each method; the ``--help``
text of every command-line verb. Times shown in reports (seconds) are set to 0 before the page
is drawn, so that only what the code computes is compared. A run takes about 3 minutes on two
cores. To run an old commit's code, copy this file into a worktree of it and run it there::

    git worktree add /tmp/old <commit> && cp benchmarks/output_identity.py /tmp/old/benchmarks/
    cd /tmp/old && HREFINE_DATA=<repo>/../shared/data PYTHONPATH=/tmp/old/core:/tmp/old \
        <repo>/.venv/bin/python -m benchmarks.output_identity --out <repo>/old.json

The JSON records ``hrefine.__file__`` under ``"_meta"``, so which code ran is visible
(``--compare`` ignores it). The snapshot of commit 097afad, before the refactor of issue #56, is
``benchmarks/results/output_identity_097afad.json``; the newest is
``benchmarks/results/output_identity_5704056.json``: since 5704056 HtmlRAG keeps no heading
without text of its section, so its 7 compress cases that had one and its 3 report pages (a new
badge in the CSS) differ from 7751b13's on purpose, and no other case does (RAPTOR's and GARLIC's
outputs hand on their chunks before their summaries since 7751b13: 4 cases differ from 33caaa1's).
The newest is ``benchmarks/results/output_identity_9c45af7.json``; 9 of its 56 cases differ from
5704056's, each on purpose: GARLIC's 2 compress cases (its fill reads on past a leaf that does
not fit), RAPTOR's 2 compress cases and 2 report pages (UMAP's start fixed, so the clusters are
the same every build), and the ``--help`` of ``eval`` (the ``llm`` option's default) and of
``garlic build``/``garlic query`` (128-token leaves by default).
The newest is ``benchmarks/results/output_identity_3e52bb1.json``; 4 of its 56 cases differ from
9c45af7's, each on purpose: RAPTOR returns leaves only by default (``summary_rank="off"``), which
changes one RAPTOR compress case and the two RAPTOR report pages, and ``raptor query`` has a
``--summary-rank`` option.
The newest is ``benchmarks/results/output_identity_6793114.json``; against 4a8a364's code (the
start of the last refactoring session) one case differs: the ``--help`` of ``eval`` (``--option``
says how the methods of one run share it). Against ``output_identity_f318042.json`` 10 cases
differ, each on purpose: the ``--help`` of ``html prune``, ``refine``, ``garlic build``, ``garlic
query``, ``distributed garlic`` and ``distributed raptor`` (one ``--embedder`` option on each verb,
and ``garlic query --max-tokens`` says the top level is always read), of ``eval``, the two GARLIC
report pages (a note when the top level alone passes the budget) and the two RAPTOR report pages:
at f318042 a BM25 score imported numba before UMAP was held to AVX2, so the RAPTOR tree of the full
run was compiled for this CPU's AVX512; run alone (``--only``) f318042's page is 6793114's byte for
byte (fixed in 2a66f7b).
The newest is ``benchmarks/results/output_identity_439d7a2.json``: all 56 cases are 6793114's,
after the changes that read an input given twice once (HtmlRAG, LongRefiner, RAPTOR, GARLIC),
keep fenced code whole (LongRefiner) and stop an LLM batch at its first failure: every case
gives each method one document, which those changes leave as it was.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import io
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

__all__ = ["collect", "compare", "main"]

BUDGET = 400
_HEAD = 200
_META = "_meta"

# (dataset, number of questions) per method; the first questions of each dataset.
_HTMLRAG_DATA = (("wtq", 3), ("leval-nq", 2))
_LONGREFINER_DATA = (("leval-cuad", 2), ("leval-qasper", 2))
_RAPTOR_DATA = (("leval-quality", 2),)
_GARLIC_DATA = (("leval-qasper", 2),)

Case = tuple[str, Callable[[], str]]


def _digest(text: str) -> dict[str, str]:
    data = text.encode("utf-8", "surrogatepass")
    return {"sha256": hashlib.sha256(data).hexdigest(), "head": text.lstrip()[:_HEAD]}


def _items(dataset: str, count: int) -> list[Any]:
    from hrefine.eval.loaders import load_dataset

    return list(load_dataset(dataset))[:count]


# -- method outputs ---------------------------------------------------------------------------
def _compress(comp: Any, item: Any) -> str:
    return str(comp.compress(item.document, item.question, BUDGET))


def _compress_cases() -> Iterator[Case]:
    from hrefine.eval.methods import get_method

    for method in ("htmlrag", "htmlrag-bm25"):
        comp = get_method(method)
        for dataset, count in _HTMLRAG_DATA:
            for item in _items(dataset, count):
                yield f"compress/{method}/{dataset}/{item.id}", partial(_compress, comp, item)
    plans: tuple[tuple[str, dict[str, Any], tuple[tuple[str, int], ...]], ...] = (
        ("longrefiner", {}, _LONGREFINER_DATA),
        ("raptor", {"llm": "extractive"}, _RAPTOR_DATA),
        ("garlic", {"llm": "extractive"}, _GARLIC_DATA),
    )
    for method, opts, data in plans:
        comp = get_method(method, **opts)
        for dataset, count in data:
            for item in _items(dataset, count):
                yield f"compress/{method}/{dataset}/{item.id}", partial(_compress, comp, item)


# -- report pages -----------------------------------------------------------------------------
def _html_report(item: Any, title: str | None) -> str:
    from hrefine.html import HtmlPruner

    return (
        HtmlPruner(scorer="bm25").prune(item.document, item.question, BUDGET).to_html(title=title)
    )


def _html_notebook(item: Any) -> str:
    from hrefine.html import HtmlPruner
    from hrefine.html.report import render_notebook

    return render_notebook(HtmlPruner(scorer="bm25").prune(item.document, item.question, BUDGET))


def _raptor_report(comp: Any, item: Any, title: str | None) -> str:
    from hrefine.raptor.report import render_report

    tree = comp.tree_for(item.document)
    tree.stats = {**tree.stats, "build_seconds": 0.0}
    nodes = tree.retrieve(item.question, max_tokens=BUDGET)
    return str(render_report(tree, item.question, nodes, max_tokens=BUDGET, title=title))


def _garlic_report(comp: Any, item: Any, with_graph: bool) -> str:
    from hrefine.garlic import GarlicSearcher
    from hrefine.garlic.report import render_report

    graph = comp.graph_for(item.document)
    searcher = GarlicSearcher(graph, lm=comp.llm, embedder=comp.embedder)
    result = searcher.search(item.question, max_tokens=BUDGET)
    steps = tuple(dataclasses.replace(s, seconds=0.0) for s in result.trace)
    result = dataclasses.replace(result, seconds=0.0, trace=type(result.trace)(steps))
    if with_graph:
        return str(render_report(result, graph, title="identity"))
    return str(result.to_html())


def _longrefiner_report(item: Any, title: str | None) -> str:
    from hrefine.longrefiner import LongRefiner
    from hrefine.longrefiner.report import render_report

    result = LongRefiner().refine(item.question, item.document, BUDGET)
    result.timings = dict.fromkeys(result.timings, 0.0)
    return str(render_report(result, title=title, sources=["doc.txt"]))


def _report_cases() -> Iterator[Case]:
    from hrefine.eval.methods import get_method

    wtq = _items("wtq", 1)[0]
    nq = _items("leval-nq", 1)[0]
    yield "report/html/wtq", lambda: _html_report(wtq, "page.html")
    yield "report/html/nq-untitled", lambda: _html_report(nq, None)
    yield "report/html/notebook", lambda: _html_notebook(wtq)
    raptor = get_method("raptor", llm="extractive")
    quality = _items("leval-quality", 1)[0]
    yield "report/raptor/quality", lambda: _raptor_report(raptor, quality, "q.txt")
    yield "report/raptor/quality-untitled", lambda: _raptor_report(raptor, quality, None)
    garlic = get_method("garlic", llm="extractive")
    qasper = _items("leval-qasper", 1)[0]
    yield "report/garlic/qasper-graph", lambda: _garlic_report(garlic, qasper, True)
    yield "report/garlic/qasper-to_html", lambda: _garlic_report(garlic, qasper, False)
    cuad = _items("leval-cuad", 1)[0]
    yield "report/longrefiner/cuad", lambda: _longrefiner_report(cuad, "contract.txt")
    yield "report/longrefiner/qasper-untitled", lambda: _longrefiner_report(qasper, None)


# -- command-line help ------------------------------------------------------------------------
def _verbs() -> list[list[str]]:
    """Every command path of the ``hrefine`` CLI, the root first."""
    import typer.main
    from hrefine.cli import app

    root = typer.main.get_command(app)
    out: list[list[str]] = []

    def walk(cmd: Any, path: list[str]) -> None:
        out.append(path)
        for name in sorted(getattr(cmd, "commands", {}) or {}):
            walk(cmd.commands[name], [*path, name])

    walk(root, [])
    return out


def _help(path: list[str]) -> str:
    from hrefine.cli import main

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
        main([*path, "--help"])
    return buf.getvalue()


def _help_cases() -> Iterator[Case]:
    for path in _verbs():
        yield "help/" + (" ".join(path) or "hrefine"), partial(_help, path)


# -- running and comparing --------------------------------------------------------------------
def _file_name(case: str) -> str:
    """A file name for a case's text (``help/garlic build`` -> ``help__garlic_build.txt``)."""
    return case.replace("/", "__").replace(" ", "_") + ".txt"


def collect(only: str | None = None, texts: Path | None = None) -> dict[str, Any]:
    """Run every case (or those whose name contains ``only``); ``{case: digest}``. With
    ``texts``, each case's whole output is also written there, to be read with ``diff -r``."""
    # Fixed terminal size and no colour, so the help texts do not depend on the terminal.
    os.environ.update({"COLUMNS": "100", "LINES": "50", "NO_COLOR": "1", "TERM": "dumb"})
    os.environ.pop("FORCE_COLOR", None)
    import hrefine

    results: dict[str, Any] = {_META: {"hrefine": hrefine.__file__}}
    for group in (_help_cases, _compress_cases, _report_cases):
        for name, make in group():
            if only and only not in name:
                continue
            started = time.perf_counter()
            text = make()
            results[name] = _digest(text)
            if texts is not None:
                texts.mkdir(parents=True, exist_ok=True)
                (texts / _file_name(name)).write_text(text, "utf-8", errors="surrogatepass")
            print(f"{time.perf_counter() - started:7.2f} s  {name}", file=sys.stderr)
    return results


def _names(a: dict[str, Any], b: dict[str, Any], only: str | None = None) -> list[str]:
    return sorted(n for n in (set(a) | set(b)) - {_META} if not only or only in n)


def compare(a: dict[str, Any], b: dict[str, Any], only: str | None = None) -> list[str]:
    """The names of the cases that differ between two snapshots (or are in one only); with
    ``only``, of the cases whose name contains it."""
    names = _names(a, b, only)
    return [n for n in names if (a.get(n) or {}).get("sha256") != (b.get(n) or {}).get("sha256")]


def _load(path: str) -> dict[str, Any]:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        msg = f"{path}: not a snapshot (a JSON object of cases)"
        raise SystemExit(msg)
    return data


def main(argv: list[str] | None = None) -> int:
    """Write a snapshot (``--out``) or compare two (``--compare A B``); the exit status."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.output_identity")
    parser.add_argument("--out", help="write the snapshot JSON here")
    parser.add_argument("--compare", nargs=2, metavar=("A", "B"), help="compare two snapshots")
    parser.add_argument("--only", help="run (or compare) only the cases whose name contains this")
    parser.add_argument("--texts", help="with --out: also write each case's whole output here")
    args = parser.parse_args(argv)
    if args.compare:
        a, b = (_load(p) for p in args.compare)
        diff = compare(a, b, args.only)
        for name in diff:
            left, right = a.get(name), b.get(name)
            if left is None or right is None:
                print(f"{name}: only in {args.compare[0] if right is None else args.compare[1]}")
            else:
                print(f"{name}: differs\n  A: {left['head']!r}\n  B: {right['head']!r}")
        total = len(_names(a, b, args.only))
        print(f"{len(diff)} of {total} cases differ" if diff else f"all {total} cases identical")
        return 1 if diff else 0
    if not args.out:
        parser.error("give --out PATH or --compare A B")
    results = collect(args.only, Path(args.texts) if args.texts else None)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n", "utf-8")
    print(f"{len(results) - 1} cases written to {args.out} ({results[_META]['hrefine']})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
