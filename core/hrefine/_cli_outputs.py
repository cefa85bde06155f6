"""What the refining verbs (``hrefine html prune``, ``hrefine refine``) share: their budget
tokenizer option, where the output goes (stdout or ``--output FILE``) and the ``--report`` page.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from hrefine._atomic import echo
from hrefine._cli_support import say, write_output
from hrefine._encodable import encodable

__all__ = [
    "BudgetTokenizer",
    "KeptReport",
    "emit",
    "finish",
    "output_option",
    "write_report_page",
    "written_to",
]

#: ``--tokenizer``: the tokenizer that counts a refining verb's budget.
BudgetTokenizer = Annotated[
    str | None,
    typer.Option(
        help="Tokenizer that counts the budget (your reader LLM's): llama-3.2 (default), "
        "a tokenizer.json or model folder, a cached model name, a tiktoken name "
        "(gpt-4o, cl100k_base), or regex.",
    ),
]

#: ``--report FILE``: the HTML page of what a refining verb kept and why.
KeptReport = Annotated[
    Path | None,
    typer.Option(
        "--report",
        help="Also write a self-contained HTML report of what was kept and why to this file.",
        dir_okay=False,
    ),
]


def output_option(what: str) -> Any:
    """``--output/-o FILE``: write ``what`` (e.g. "the pruned HTML (or the --json report)") to
    a file instead of stdout."""
    return typer.Option(
        "--output",
        "-o",
        help=f"Write {what} to this file instead of stdout.",
        dir_okay=False,
    )


def emit(text: str, output: Path | None, what: str) -> None:
    """Print ``text`` to stdout, or write it to ``output`` whole (``what`` names it in a
    failure's message)."""
    if output is None:
        echo(text)  # never fails on a character the terminal cannot show
    else:
        write_output(output, text, what)


def written_to(output: Path | None) -> str:
    """The end of a closing line: ``"; written to FILE"`` when the output went to a file."""
    return "" if output is None else encodable(f"; written to {output}")


def write_report_page(report: Path, page: Callable[[], str] | str) -> None:
    """Write the report ``page`` (drawn now, when a function) to ``report`` and say so."""
    write_output(report, page if isinstance(page, str) else page(), "report")
    say(encodable(f"report written to {report}"))


def finish(line: str, output: Path | None, report: Path | None, page: Callable[[], str]) -> None:
    """Close a refining verb: say ``line`` (and where the output went), then write the report
    ``page`` (drawn only then) when ``--report`` was given."""
    say(line + written_to(output))
    if report is not None:
        write_report_page(report, page)
