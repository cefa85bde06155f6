"""What ``hrefine demo`` (and ``make demo``) shows: HtmlRAG on real pages, offline."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.panel import Panel
from rich.table import Table

if TYPE_CHECKING:
    from hrefine.eval import EvalItem

__all__ = ["run_demo"]


def run_demo(
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
    except DatasetUnavailableError as exc:
        console.print(f"[red]{exc}[/red]: put ../shared beside the repo or set HREFINE_DATA.")
        raise SystemExit(2) from exc
    strict = [it for it in items if it.extra.get("strict")]
    if page:
        strict = [it for it in strict if it.doc_id == page]
        if not strict:
            console.print(f"[red]no strict question on page {page}[/red]")
            raise SystemExit(2)
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
