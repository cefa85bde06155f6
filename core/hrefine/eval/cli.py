"""``hrefine eval``: evaluate methods on the shared data from the command line.

The main CLI mounts :func:`eval_command` as its ``eval`` command (``app.command("eval")``: a
command, not a group, so its help shows no ``COMMAND`` it does not have) and prints the user's
mistakes (an unknown method or dataset, a budget below 1, a bad tokenizer, no data folder) as
one line. :data:`eval_app` runs the same command alone. Heavy imports happen inside the command.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Annotated, Any

import typer

from hrefine._cli_settings import announce_loading_with, check_limit
from hrefine._cli_support import check_output_folder, loading_line, say
from hrefine.errors import ConfigError, DatasetUnavailableError
from hrefine.eval.methods import RENAMED_METHODS, available_methods

__all__ = ["eval_app", "eval_command"]

_RENAMED_HELP = ", ".join(f"{old} -> {new}" for old, new in RENAMED_METHODS.items())
# Registered methods that build a store per document with the ``llm`` option (SmolLM2 only
# when it is ``default``).
_STORE_METHODS = {"raptor", "raptor-traversal", "garlic"}
# Registered methods whose default scorer is the embedded all-MiniLM-L6-v2.
_EMBEDDING_METHODS = {
    "chunks-embedding",
    "htmlrag",
    "htmlrag-generative",
    "longrefiner",
    "longrefiner-lm",
    *_STORE_METHODS,
}

eval_app = typer.Typer(add_completion=False)

# Every registered method, from the registry itself, so that a new one is never left out.
_METHODS_HELP = (
    f"Method(s), comma-separated: {', '.join(available_methods())}, or module:ClassName "
    "(--list says what each is). Settings go with --option, e.g. llm=extractive|default|<model "
    "folder> (raptor, garlic: no model unless told; default is SmolLM2) or lm=<model "
    "folder> (longrefiner-lm). Renamed, still accepted: "
    f"{_RENAMED_HELP}."
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


def _check_options(methods: list[str], options: dict[str, Any], counter: Any) -> None:
    """Build each method once to check ``options`` (models load on first use, so this is
    cheap): a misspelt or invalid option, or a method that fails to build, is reported before
    the loading line; a method whose optional package is missing is left to the run, which
    skips it saying why."""
    from hrefine.eval.methods import build_methods

    for method, (_, left) in zip(
        methods, build_methods(methods, options, tokenizer=counter), strict=True
    ):
        if left:
            say(f"hrefine: note: {method} takes no option {', '.join(left)}; it runs without")


def _budgets(value: str) -> list[int]:
    try:
        budgets = [int(b) for b in _split(value)]
    except ValueError as exc:
        msg = f"--budgets must be whole token counts (e.g. 512,1024), got {value!r}"
        raise ConfigError(msg) from exc
    if not budgets or min(budgets) < 1:
        msg = f"--budgets must be positive token counts (e.g. 512,1024), got {value!r}"
        raise ConfigError(msg)
    return budgets


def _methods(names: list[str]) -> list[str]:
    """Registered names as the registry spells them; a renamed one says its new name."""
    from hrefine.eval.methods import resolve_method_name

    resolved = []
    for name in names:
        key = resolve_method_name(name)
        if name.strip().lower() in RENAMED_METHODS:
            old = f"method {name!r} is now called {key!r}"
            say(f"hrefine: warning: {old}; the old name will be removed")
        resolved.append(key)
    return resolved


def _check_datasets(names: list[str], data_dir: Path | None) -> None:
    """Unknown dataset names and a missing data folder fail before anything loads."""
    from hrefine.eval.loaders import DATASETS, default_data_dir, resolve_dataset_name

    named = [n for n in names if not n.endswith(".jsonl")]
    for name in named:
        if resolve_dataset_name(name) not in DATASETS:
            close = difflib.get_close_matches(resolve_dataset_name(name), list(DATASETS), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            msg = (
                f"unknown dataset {name!r}; use one of {', '.join(sorted(DATASETS))} or a "
                f".jsonl path{hint}"
            )
            raise ConfigError(msg)
    root = default_data_dir(data_dir)
    if named and not root.is_dir():
        msg = (
            f"no evaluation data folder at {root}; give --data-dir, set HREFINE_DATA, or put "
            "the shared data in ../shared/data beside the repository"
        )
        raise DatasetUnavailableError(msg)


def _loading(methods: list[str], options: dict[str, Any], tokenizer: str | None) -> None:
    scorer = options.get("scorer")
    embedding = scorer == "embedding" or (scorer is None and bool(_EMBEDDING_METHODS & {*methods}))
    generative = "htmlrag-generative" in methods or options.get("generative") is True
    # RAPTOR and GARLIC use no model unless told: ``llm=default`` names the embedded SmolLM2.
    generative |= bool(_STORE_METHODS & {*methods}) and options.get("llm") == "default"
    generative |= "longrefiner-lm" in methods and options.get("lm", "default") == "default"
    line = loading_line(
        tokenizer=tokenizer, scorer="embedding" if embedding else None, generative=generative
    )
    embedder = options.get("embedder")  # named as given: the default one never loads then
    announce_loading_with(line, embedder if isinstance(embedder, str) and embedder else None)


def _listing() -> str:
    from hrefine.eval.loaders import DATASETS, default_data_dir

    root = default_data_dir()
    lines = [
        f"methods: {', '.join(available_methods())} (or module:ClassName)",
        f"renamed (old names still work): {_RENAMED_HELP}",
        f"data: {root}",
    ]
    for spec in DATASETS.values():
        state = "ok" if (root / spec.folder).is_dir() else "missing"
        lines.append(f"  {spec.name:<14} {state:<8} {spec.description}")
    return "\n".join(lines)


@eval_app.command()
def eval_command(
    method: Annotated[str, typer.Option("--method", "-m", help=_METHODS_HELP)] = "",
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
        str | None,
        typer.Option(
            help="Budget tokenizer: llama-3.2 (default), a tokenizer.json or model folder, a "
            "cached model name, a tiktoken name (gpt-4o, cl100k_base), or regex."
        ),
    ] = None,
    all_questions: Annotated[
        bool, typer.Option("--all-questions", help="WTQ: keep non-strict questions too.")
    ] = False,
    half: Annotated[
        str,
        typer.Option(
            help="Documents to ask on: all, tune or check (the half `hrefine train` leaves "
            "out by default, to check an adapter on documents it never saw)."
        ),
    ] = "all",
    option: Annotated[
        list[str] | None,
        typer.Option(
            "--option",
            help="Method constructor option key=value (repeatable), e.g. a trained adapter: "
            "generative_adapter=DIR, query_analysis_adapter=DIR. With several methods, each "
            "gets the options it takes (a note names the others); one no method takes fails.",
        ),
    ] = None,
    progress: Annotated[bool, typer.Option(help="Show a progress bar.")] = True,
    list_all: Annotated[
        bool, typer.Option("--list", help="List methods and datasets, then exit.")
    ] = False,
) -> None:
    """Evaluate context compressors at several token budgets.

    Run METHOD on DATASET at each budget; write JSON, Markdown and a PNG plot under OUT.
    """
    if list_all:
        typer.echo(_listing())
        raise typer.Exit(0)
    methods, datasets = _split(method), _split(dataset)
    if not methods or not datasets:
        typer.echo("give --method and --dataset (see --list)", err=True)
        raise typer.Exit(2)
    budget_list = _budgets(budgets)
    check_limit(limit, "--limit/-n", "item per dataset")
    methods = _methods(methods)
    _check_datasets(datasets, data_dir)
    check_output_folder(out, "evaluation report")  # before the run, not after it
    options = _parse_options(option or [])
    if half not in ("all", "tune", "check"):
        msg = f"--half must be all, tune or check, got {half!r}"
        raise ConfigError(msg)

    from hrefine.budget import get_counter
    from hrefine.eval.report import markdown_tables, results_to_json, write_report
    from hrefine.eval.runner import run_many

    counter = get_counter(tokenizer)  # a bad tokenizer fails here, before the models load
    _check_options(methods, options, counter)
    _loading(methods, options, tokenizer)
    results = run_many(
        methods,
        datasets,
        budget_list,
        limit,
        data_dir=data_dir,
        tokenizer=counter,
        strict_only=False if all_questions else None,
        method_options=options,
        progress=progress,
        half=None if half == "all" else half,  # type: ignore[arg-type]
    )
    for r in results:
        if r.skipped:
            typer.echo(f"skipped {r.method} on {r.dataset}: {r.skipped}", err=True)
    if all(r.skipped for r in results):
        typer.echo("nothing was evaluated", err=True)
        raise typer.Exit(1)
    try:
        paths = write_report(results, out, name=name)
    except OSError as exc:
        msg = f"could not save the evaluation report to {out}: {exc.strerror or exc}"
        raise ConfigError(msg) from exc
    typer.echo(markdown_tables(results_to_json(results)))
    typer.echo("wrote " + ", ".join(str(p) for p in paths.values()))
