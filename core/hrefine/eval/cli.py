"""``hrefine eval``: evaluate methods on the shared data from the command line.

The main CLI mounts :data:`eval_app` as its ``eval`` command
(``app.add_typer(eval_app, name="eval")``). Heavy imports happen inside the command.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

__all__ = ["eval_app", "eval_command"]

eval_app = typer.Typer(
    help="Evaluate context compressors at several token budgets.",
    invoke_without_command=True,
    add_completion=False,
)


def _split(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def _parse_options(pairs: list[str]) -> dict[str, Any]:
    import json

    options: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            msg = f"--option expects key=value, got {pair!r}"
            raise typer.BadParameter(msg)
        try:
            options[key] = json.loads(raw)
        except json.JSONDecodeError:
            options[key] = raw
    return options


def _listing() -> str:
    from hrefine.eval.loaders import DATASETS, default_data_dir
    from hrefine.eval.methods import available_methods

    root = default_data_dir()
    lines = [f"methods: {', '.join(available_methods())} (or module:ClassName)", f"data: {root}"]
    for spec in DATASETS.values():
        state = "ok" if (root / spec.folder).is_dir() else "missing"
        lines.append(f"  {spec.name:<14} {state:<8} {spec.description}")
    return "\n".join(lines)


@eval_app.callback(invoke_without_command=True)
def eval_command(
    method: Annotated[
        str,
        typer.Option(
            "--method",
            "-m",
            help="Method(s), comma-separated: lead, bm25, embedding, htmlrag, or module:ClassName.",
        ),
    ] = "",
    dataset: Annotated[
        str,
        typer.Option(
            "--dataset",
            "-d",
            help="Dataset(s), comma-separated: wtq, leval-nq, leval-cuad, leval-qasper, "
            "leval-quality, hotpotqa, articles, or a .jsonl path.",
        ),
    ] = "",
    budgets: Annotated[
        str, typer.Option("--budgets", "-b", help="Token budgets, comma-separated.")
    ] = "512,1024,2048",
    limit: Annotated[
        int | None, typer.Option("--limit", "-n", help="Items per dataset (deterministic subset).")
    ] = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="Output folder.")] = Path("hrefine-eval"),
    name: Annotated[str, typer.Option(help="Base name of the output files.")] = "eval",
    data_dir: Annotated[
        Path | None, typer.Option(help="Data root (default: $HREFINE_DATA or ../shared/data).")
    ] = None,
    tokenizer: Annotated[
        str | None, typer.Option(help="Budget tokenizer: llama-3.2 (default), regex, or a path.")
    ] = None,
    all_questions: Annotated[
        bool, typer.Option("--all-questions", help="WTQ: keep non-strict questions too.")
    ] = False,
    option: Annotated[
        list[str] | None,
        typer.Option("--option", help="Method constructor option key=value (repeatable)."),
    ] = None,
    progress: Annotated[bool, typer.Option(help="Show a progress bar.")] = True,
    list_all: Annotated[
        bool, typer.Option("--list", help="List methods and datasets, then exit.")
    ] = False,
) -> None:
    """Run METHOD on DATASET at each budget; write JSON, Markdown and a PNG plot under OUT."""
    if list_all:
        typer.echo(_listing())
        raise typer.Exit(0)
    methods, datasets = _split(method), _split(dataset)
    if not methods or not datasets:
        typer.echo("give --method and --dataset (see --list)", err=True)
        raise typer.Exit(2)
    try:
        budget_list = [int(b) for b in _split(budgets)]
    except ValueError as exc:
        msg = f"--budgets must be integers, got {budgets!r}"
        raise typer.BadParameter(msg) from exc

    from hrefine.eval.report import markdown_tables, results_to_json, write_report
    from hrefine.eval.runner import run_many

    results = run_many(
        methods,
        datasets,
        budget_list,
        limit,
        data_dir=data_dir,
        tokenizer=tokenizer,
        strict_only=False if all_questions else None,
        method_options=_parse_options(option or []),
        progress=progress,
    )
    for r in results:
        if r.skipped:
            typer.echo(f"skipped {r.method} on {r.dataset}: {r.skipped}", err=True)
    if all(r.skipped for r in results):
        typer.echo("nothing was evaluated", err=True)
        raise typer.Exit(1)
    paths = write_report(results, out, name=name)
    typer.echo(markdown_tables(results_to_json(results)))
    typer.echo("wrote " + ", ".join(str(p) for p in paths.values()))
