"""What ``hrefine demo`` (and ``make demo``) shows, offline: HtmlRAG on real pages, LongRefiner
on a real contract, then a RAPTOR tree built on a real story and queried with one of its
questions."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table

from hrefine.errors import ConfigError

if TYPE_CHECKING:
    from hrefine.eval import EvalItem

__all__ = [
    "LONGREFINER_BUDGET",
    "RAPTOR_BUDGET",
    "RAPTOR_OPENING_TOKENS",
    "RAPTOR_SUMMARY_TOKENS",
    "run_demo",
    "run_longrefiner_demo",
    "run_raptor_demo",
]

#: Token budget of the LongRefiner part.
LONGREFINER_BUDGET = 1024

#: The RAPTOR part builds on the opening of the shortest QuALITY story, whole lines up to this
#: many tokens (a tree small enough to print; an LLM passed as ``llm`` summarises for seconds).
RAPTOR_OPENING_TOKENS = 1500
#: Most new tokens per summary in the RAPTOR part (the paper's 100 cost a third more time).
RAPTOR_SUMMARY_TOKENS = 64
#: Token budget of the RAPTOR part's retrieval (collapsed tree).
RAPTOR_BUDGET = 400


def run_demo(
    *,
    page: str | None,
    max_tokens: int,
    data: Path | None,
    console: Console,
    raptor: bool = True,
) -> dict[str, Any]:
    """Run the HtmlRAG part (:func:`run_htmlrag_demo`), the LongRefiner part
    (:func:`run_longrefiner_demo`, under ``"longrefiner"``), then, with ``raptor``, the RAPTOR
    part (:func:`run_raptor_demo`), whose summary goes under ``"raptor"``."""
    summary = run_htmlrag_demo(page=page, max_tokens=max_tokens, data=data, console=console)
    summary["longrefiner"] = run_longrefiner_demo(data=data, console=console)
    if raptor:
        summary["raptor"] = run_raptor_demo(data=data, console=console)
    return summary


def run_htmlrag_demo(
    *, page: str | None, max_tokens: int, data: Path | None, console: Console
) -> dict[str, Any]:
    """Clean and prune WikiTableQuestions pages for their questions; print what happened."""
    from hrefine.eval import (
        DatasetUnavailableError,
        answer_containment,
        default_data_dir,
        load_dataset,
    )
    from hrefine.eval.text import html_to_text
    from hrefine.html import HtmlPruner, clean_html

    try:
        items = load_dataset("wtq", data_dir=data)
    except DatasetUnavailableError as exc:  # said on one line on stderr, like every mistake
        msg = f"{exc}; give --data, put ../shared beside the repo, or set HREFINE_DATA"
        raise DatasetUnavailableError(msg) from exc
    strict = [it for it in items if it.extra.get("strict")]
    if page:
        strict = [it for it in strict if it.doc_id == page]
        if not strict:
            pages = sorted({it.doc_id for it in items if it.extra.get("strict")})
            msg = f"no strict question on page {page!r}; the pages are {', '.join(pages[:5])}, ..."
            raise ConfigError(msg)
    # One question per page, first pages in file order: a fixed, content-independent pick.
    picked: list[EvalItem] = []
    seen: set[str] = set()
    for it in strict:
        if it.doc_id not in seen:
            picked.append(it)
            seen.add(it.doc_id)
        if len(picked) == 5:
            break

    console.print(
        Panel.fit(
            "HtmlRAG with the embedded all-MiniLM-L6-v2 embedder; budgets in Llama-3.2 tokens.\n"
            f"Data: {default_data_dir(data)}",
            title="hrefine demo",
        )
    )
    pruner = HtmlPruner()
    table = Table(title=f"Pruning WikiTableQuestions pages to {max_tokens} tokens")
    for col in ("page", "question", "raw kB", "cleaned kB", "tokens out", "answer kept", "s"):
        table.add_column(col)
    summary: dict[str, Any] = {"items": []}
    first_result = None
    for it in picked:
        raw = it.document
        start = time.perf_counter()
        cleaned = clean_html(raw)
        result = pruner.prune(raw, it.question, max_tokens)
        took = time.perf_counter() - start
        kept = answer_containment(html_to_text(result.html), it.answers) == 1.0
        table.add_row(
            it.doc_id,
            it.question[:60],
            f"{len(raw.encode()) / 1024:.0f}",
            f"{len(cleaned.encode()) / 1024:.0f}",
            f"{result.tokens}/{result.budget}",
            "yes" if kept else "no",
            f"{took:.2f}",
        )
        summary["items"].append({"page": it.doc_id, "kept": kept, "tokens": result.tokens})
        first_result = first_result or (it, result)
    console.print(table)
    if first_result is not None:
        first, result = first_result
        snippet = result.html if len(result.html) < 1800 else result.html[:1800] + " …"
        console.print(
            Panel(
                snippet,
                title=f"pruned HTML for: {first.question!r} (answer: {', '.join(first.answers)})",
            )
        )
    hits = sum(1 for it in summary["items"] if it["kept"])
    console.print(
        f"answer kept on {hits}/{len(summary['items'])} pages, "
        f"every output within {max_tokens} tokens."
    )
    return summary


def _opening(text: str, counter: Any, max_tokens: int) -> str:
    """The first whole lines of ``text`` that together fit ``max_tokens`` tokens."""
    lines = text.split("\n")
    kept: list[str] = []
    for line in lines:
        if counter.count("\n".join([*kept, line])) > max_tokens:
            break
        kept.append(line)
    return "\n".join(kept)


def _first_words(text: str, n: int) -> str:
    words = text.split()
    return " ".join(words[:n]) + (" …" if len(words) > n else "")


def run_longrefiner_demo(*, data: Path | None, console: Console) -> dict[str, Any]:
    """Refine a real CUAD contract for one of its questions with LongRefiner (no LLM: the
    contract's numbered clauses give the structure, all-MiniLM-L6-v2 and BM25 the scores); print
    the outline with what was kept, and whether the gold clause made it. Returns what it
    printed, as numbers."""
    from hrefine.eval import DatasetUnavailableError, answer_containment, load_dataset
    from hrefine.longrefiner import LongRefiner
    from hrefine.longrefiner.cli import kept_lines, structure_lines

    try:
        items = load_dataset("leval-cuad", data_dir=data)
    except DatasetUnavailableError as exc:
        console.print(f"[yellow]LongRefiner part skipped: {escape(str(exc))}[/yellow]")
        return {}
    # A fixed pick: the first contract's question on its expiration date.
    item = next((it for it in items if "Expiration Date" in it.question), items[0])
    console.print(
        Panel(
            "LongRefiner: the contract is split into its numbered sections and clauses (no "
            "model call), every paragraph scored against the question (all-MiniLM-L6-v2 plus "
            "BM25), a section scores the mean of its parts, and the best parts are kept to "
            f"{LONGREFINER_BUDGET:,} tokens, in document order. Contract {item.doc_id}, "
            f"{len(item.document):,} characters.",
            title="hrefine demo: LongRefiner",
        )
    )
    started = time.perf_counter()
    result = LongRefiner().refine(item.question, item.document, LONGREFINER_BUDGET)
    seconds = time.perf_counter() - started
    (doc,) = result.documents
    console.print(f"question: {item.question}", markup=False, highlight=False)
    for line in structure_lines(doc, item.doc_id, limit=24) + kept_lines(doc, limit=12):
        console.print(line, markup=False, highlight=False)
    found = answer_containment(result.text, item.answers, mode=item.answer_mode) or 0.0
    console.print(
        f"{result.tokens} of {result.budget} tokens kept from "
        f"{len(doc.structure.outline())} sections; the gold clause is "
        f"{'in' if found else 'NOT in'} the kept text ({seconds:.1f} s, models loaded)."
    )
    return {
        "doc": item.doc_id,
        "source": doc.structure.source,
        "sections": len(doc.structure.outline()),
        "kept": len(doc.kept),
        "tokens": result.tokens,
        "answer_found": bool(found),
        "seconds": round(seconds, 1),
    }


def run_raptor_demo(*, data: Path | None, console: Console, llm: Any = None) -> dict[str, Any]:
    """Build a RAPTOR tree on the opening of a real QuALITY story and answer one of its
    questions from it; print the layers, the summaries and the retrieved nodes.

    The story is the shortest of the shared QuALITY data (a fixed pick); its opening is
    :data:`RAPTOR_OPENING_TOKENS` tokens of whole lines. The question is the story's question
    whose gold option's words the opening holds most of (so that the opening can answer it).
    Summaries are the default extracts (no model), embeddings by all-MiniLM-L6-v2; nothing
    is downloaded (``llm`` writes the summaries instead, as in
    :meth:`RaptorTree.build <hrefine.raptor.RaptorTree.build>`). Returns what it printed, as
    numbers.
    """
    from hrefine.budget import default_counter
    from hrefine.eval import DatasetUnavailableError, load_dataset, option_recall
    from hrefine.raptor import RaptorTree, Source

    try:
        items = load_dataset("quality", data_dir=data)
    except DatasetUnavailableError as exc:
        console.print(f"[yellow]RAPTOR part skipped: {escape(str(exc))}[/yellow]")
        return {}
    by_doc: dict[str, list[EvalItem]] = {}
    for it in items:
        by_doc.setdefault(it.doc_id, []).append(it)
    doc_id = min(by_doc, key=lambda d: (len(by_doc[d][0].document), d))
    questions = by_doc[doc_id]
    started = time.perf_counter()
    opening = _opening(questions[0].document, default_counter(), RAPTOR_OPENING_TOKENS)
    item = max(questions, key=lambda it: option_recall(opening, it.answers[0]) or 0.0)
    stem = item.question.split("\n", 1)[0].strip()

    console.print(
        Panel(
            "RAPTOR: leaves of ~100 tokens, clustered (UMAP + Gaussian mixture) and summarised "
            "layer after layer, by default with no model (each summary is the leading "
            "sentences of its cluster's texts, so nothing is invented); embeddings by "
            "all-MiniLM-L6-v2. Retrieval returns leaves only by default (summaries did not "
            "measure better on the dev data; summary_rank='free' lets them compete). "
            f"The tree is built on the opening {RAPTOR_OPENING_TOKENS:,} tokens of QuALITY "
            f"story {doc_id} "
            f"({len(opening):,} of its {len(item.document):,} characters).",
            title="hrefine demo: RAPTOR",
        )
    )
    console.print("building the tree (one line per step on stderr)...")
    source = Source(opening, metadata={"source": f"quality/{doc_id}"}, id=doc_id)
    tree = RaptorTree.build([source], llm=llm, progress=True, summary_tokens=RAPTOR_SUMMARY_TOKENS)
    built = time.perf_counter() - started
    stats = tree.stats

    layers = Table(title=f"The tree: {len(tree)} nodes, {tree.layers} summary layers")
    for col in ("layer", "nodes", "clusters", "s", "first summary"):
        layers.add_column(col)
    per_layer = stats.get("nodes_per_layer", [])
    clusters = stats.get("clusters_per_layer", [])
    seconds = stats.get("layer_seconds", [])
    for level, count in enumerate(per_layer):
        ids = tree.tree.at_level(level)
        first = _first_words(tree.tree[ids[0]].text, 14) if level and ids else ""
        layers.add_row(
            "leaves" if level == 0 else str(level),
            str(count),
            str(clusters[level - 1]) if 0 < level <= len(clusters) else "",
            f"{seconds[level - 1]:.1f}" if 0 < level <= len(seconds) else "",
            first,
        )
    console.print(layers)

    nodes = tree.retrieve(stem, max_tokens=RAPTOR_BUDGET)
    found = Table(title=f"Retrieved for {stem!r} (collapsed tree, {RAPTOR_BUDGET} tokens)")
    for col in ("rank", "node", "layer", "score", "tokens", "text"):
        found.add_column(col)
    for rank, n in enumerate(nodes, 1):
        found.add_row(
            str(rank), f"#{n.id}", str(n.layer), f"{n.score:.3f}", str(n.tokens),
            _first_words(n.text, 24),
        )  # fmt: skip
    console.print(found)
    context = "\n\n".join(n.text for n in nodes)
    recall = option_recall(context, item.answers[0]) or 0.0
    console.print(
        f"gold option: {item.answers[0]!r}; {recall:.0%} of its words are in the retrieved "
        f"text. Tree built in {built:.0f} s, models loaded and "
        f"{sum(stats['nodes_per_layer'][1:])} summaries written on this machine "
        f"({stats.get('llm_calls', 0)} LLM calls)."
    )
    return {
        "doc": doc_id,
        "question": stem,
        "nodes_per_layer": list(per_layer),
        "retrieved": [n.id for n in nodes],
        "tokens": sum(n.tokens for n in nodes),
        "option_recall": recall,
        "seconds": round(built, 1),
    }
