"""``hrefine distributed``: run a stage over a JSONL/Parquet corpus on a Ray cluster.

``hrefine distributed html|structure|raptor|garlic|refine --input IN --output OUT`` reads the
corpus, skips every id ``OUT`` holds already, runs the stage in an actor pool (``--workers``;
GPUs per actor when the cluster has them) and writes Parquet to ``OUT/status=ok/`` and the
failed records, with their reasons, to ``OUT/status=error/``. ``--address auto`` joins the cluster
``ray start`` made; without it a local Ray instance runs the stage. Ray Data's progress bars
show while it runs (``--quiet``: only the closing line, and none of Ray's log lines below ERROR).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any

import typer

from hrefine._cli_settings import EmbedderOpt, check_model_name, flag
from hrefine._cli_support import say
from hrefine._cli_verbs import Shared, option, verb
from hrefine._encodable import encodable
from hrefine._folders import folder_problem
from hrefine.distributed.groups import GarlicStage, RaptorStage
from hrefine.distributed.stages import REFINE_METHODS
from hrefine.errors import ConfigError
from hrefine.garlic import cli as garlic_cli
from hrefine.garlic.options import GarlicOptions
from hrefine.html.options import HtmlPrunerOptions
from hrefine.longrefiner.cli import check_model_switches
from hrefine.longrefiner.options import LongRefinerOptions
from hrefine.options import Options, check_int
from hrefine.raptor import cli as raptor_cli
from hrefine.raptor.options import RaptorOptions

__all__ = ["distributed_app", "quiet_ray_logs", "summary_line"]

distributed_app = typer.Typer(
    help="Run a stage over a JSONL/Parquet corpus on a Ray cluster (extra 'distributed').",
    no_args_is_help=True,
)

# Error lines shown at the end of a run (the rest are in the error output).
_SHOWN_ERRORS = 5

InputOpt = Annotated[
    list[str],
    typer.Option(
        "--input", "-i", help="JSONL or Parquet file or folder (local or a URI Ray reads)."
    ),
]
OutputOpt = Annotated[
    str,
    typer.Option(
        "--output", "-o", help="Output folder: status=ok/ and status=error/ Parquet files."
    ),
]
AddressOpt = Annotated[
    str | None,
    typer.Option(
        help="Ray cluster: auto (the one `ray start` made here), ray://host:10001, or "
        "nothing for a local instance."
    ),
]
WorkersOpt = Annotated[
    int | None,
    typer.Option(
        help="Actors in the pool (default: one per GPU on GPUs, else one per CPU but two)."
    ),
]
FormatOpt = Annotated[
    str | None, typer.Option("--format", help="jsonl or parquet (default: by the suffix).")
]
IdOpt = Annotated[
    str, typer.Option("--id-column", help="Column of row ids (none: a hash of the row).")
]
TextOpt = Annotated[str | None, typer.Option("--text-column", help="Column of the text.")]
BatchOpt = Annotated[int, typer.Option("--batch-size", help="Rows per batch of an actor.")]
GpusOpt = Annotated[
    float,
    typer.Option("--gpus-per-worker", help="GPUs per actor when the cluster has GPUs."),
]
RetryOpt = Annotated[
    bool,
    typer.Option("--retry-errors", help="Process again the rows that failed in earlier runs."),
]
QuietOpt = Annotated[bool, typer.Option("--quiet", help="No progress bars, only the last line.")]
TokenizerOpt = Annotated[
    str | None,
    typer.Option(
        help="Tokenizer of the token counts: llama-3.2 (default), a tokenizer.json or model "
        "folder, a cached model name, a tiktoken name, or regex."
    ),
]

#: A stage's own part: its options in, ``run_stage``'s stage arguments out.
StageArgs = Callable[..., dict[str, Any]]


def summary_line(report: Any) -> str:
    """The closing line of a run: results, failures, input rows skipped, pool and time."""
    where = f"{report.output.rstrip('/')}/status=error"
    failed = f"{report.errors} errors" + (f" (in {where})" if report.errors else "")
    gpus = f", {report.num_gpus:g} GPU each" if report.num_gpus else ""
    return encodable(
        f"{report.stage}: {report.ok} done, {failed}, {report.skipped} finished before and "
        f"skipped; {report.workers} worker{'' if report.workers == 1 else 's'}{gpus}; "
        f"{report.seconds:.1f} s; "
        f"output {report.output}"
    )


def _error_lines(output: str, run_id: str) -> list[str]:
    from hrefine.distributed import read_output

    table = read_output(output, ["id", "status", "error", "run_id"])
    if table is None:
        return []
    rows = [r for r in table.to_pylist() if r["run_id"] == run_id and r["status"] == "error"]
    lines = [encodable(f"  {r['id']}: {r['error']}") for r in rows[:_SHOWN_ERRORS]]
    if len(rows) > _SHOWN_ERRORS:
        lines.append(f"  ... and {len(rows) - _SHOWN_ERRORS} more")
    return lines


def _check_local_output(output: str) -> None:
    """Fail before Ray starts when a local output folder could not be made (missing parents
    are fine: the run makes them)."""
    if "://" in output:
        return
    problem = folder_problem(Path(output))
    if problem:
        msg = f"could not write to {output}: {problem}"
        raise ConfigError(msg)


@contextlib.contextmanager
def quiet_ray_logs(quiet: bool) -> Iterator[None]:
    """With ``quiet``, keep Ray's notices below ERROR off the terminal for the block.

    They are Ray Data's INFO lines about each dataset's execution and Ray's warnings about
    progress bars and token authentication; Ray's log files still get everything. Ray sets up
    its loggers when it is imported, so this imports it first; the levels are put back after.
    """
    if not quiet:
        yield
        return
    from hrefine.distributed.cluster import ray

    ray()  # imports ray and ray.data, whose import sets up their loggers
    core = logging.getLogger("ray")
    # Ray Data's own logger does not pass records on to "ray": its terminal handler is raised.
    consoles = [
        h
        for h in logging.getLogger("ray.data").handlers
        if type(h).__name__ != "SessionFileHandler"  # its log file, kept whole
    ]
    core_level, console_levels = core.level, [h.level for h in consoles]
    core.setLevel(logging.ERROR)
    for handler in consoles:
        handler.setLevel(logging.ERROR)
    try:
        yield
    finally:
        core.setLevel(core_level)
        for handler, level in zip(consoles, console_levels, strict=True):
            handler.setLevel(level)


def _run(stage: str, common: dict[str, Any], **stage_args: Any) -> None:
    from hrefine.distributed import run_stage

    _check_local_output(common["output"])
    quiet = common.pop("quiet")
    where = common["address"] or "a local Ray instance"
    if not quiet:
        say(encodable(f"{stage}: reading {', '.join(common['input'])} on {where}..."))
    with quiet_ray_logs(quiet):
        report = run_stage(stage, progress=not quiet, **common, **stage_args)
    for line in _error_lines(report.output, report.run_id):
        say(line)
    say(summary_line(report))


def _common(**values: Any) -> dict[str, Any]:
    values["input_format"] = values.pop("fmt")
    values["input"] = list(values["input"])
    return values


# The options every stage shares, in the order their help shows them (corpus, cluster, pool).
_SHARED = (
    option("input", InputOpt),
    option("output", OutputOpt),
    option("address", AddressOpt, None),
    option("workers", WorkersOpt, None),
    option("fmt", FormatOpt, None),
    option("id_column", IdOpt, "id"),
    option("text_column", TextOpt, None),
    option("batch_size", BatchOpt, 8),
    option("gpus_per_worker", GpusOpt, 1.0),
    option("retry_errors", RetryOpt, False),
    option("quiet", QuietOpt, False),
)


def _stage(
    name: str, *, batch_size: bool = True, gpus: bool = True
) -> Callable[[StageArgs], StageArgs]:
    """Register a stage's own part as ``hrefine distributed NAME``: the shared options first
    (``--batch-size`` and ``--gpus-per-worker`` only where the stage has them), then its own.
    The own part turns its options into :func:`~hrefine.distributed.run_stage`'s stage
    arguments (``settings``, and ``refine``'s query column and budget)."""
    left_out = {"batch_size"} - ({"batch_size"} if batch_size else set())
    left_out |= set() if gpus else {"gpus_per_worker"}
    shared = [p for p in _SHARED if p.name not in left_out]

    def run(common: Shared, own: StageArgs, values: dict[str, Any]) -> None:
        stage_args = own(**values)
        _check_settings(name, stage_args)  # a bad setting fails here, before Ray starts
        _run(name, _common(**common), **stage_args)

    def register(own: StageArgs) -> StageArgs:
        distributed_app.command(name)(verb(own, run, before=shared))
        return own

    return register


@_stage("html", gpus=False)
def html(
    keep_boilerplate: Annotated[
        bool, typer.Option("--keep-boilerplate", help="Keep navigation, footers and sidebars.")
    ] = False,
    max_words: Annotated[
        int, flag(HtmlPrunerOptions, "max_words", help="Most words of one block of the block tree.")
    ] = HtmlPrunerOptions.default("max_words"),
) -> dict[str, Any]:
    """Clean HTML pages and build their block trees (column html)."""
    return {"settings": {"boilerplate": not keep_boilerplate, "max_words": max_words}}


@_stage("structure")
def structure(
    structure: Annotated[
        str,
        typer.Option(
            "--structure", help="auto (markup, else the model), markup, model or paragraphs."
        ),
    ] = "auto",
    lm: Annotated[
        str | None,
        typer.Option(help="A local LM folder or cached name that structures plain text."),
    ] = None,
    tokenizer: TokenizerOpt = None,
) -> dict[str, Any]:
    """Structure long documents into sections and paragraphs (column text; title optional)."""
    settings: dict[str, Any] = {"structure": structure}
    if lm is not None:
        settings["lm"] = lm
    if tokenizer is not None:
        settings["tokenizer"] = tokenizer
    return {"settings": settings}


@_stage("raptor", batch_size=False)
def raptor(
    group_column: Annotated[
        str | None,
        typer.Option(help="Rows with the same value share a tree (default: a tree per row)."),
    ] = None,
    llm: Annotated[
        str | None,
        typer.Option(
            help="Summariser: a local model folder or cached name (default: no model, each "
            "summary is the leading sentences of its cluster's texts)."
        ),
    ] = None,
    embedder: EmbedderOpt = None,
    chunk_tokens: raptor_cli.ChunkTokensOpt = RaptorOptions.default("chunk_tokens"),
    summary_tokens: raptor_cli.SummaryTokensOpt = RaptorOptions.default("summary_tokens"),
    max_layers: raptor_cli.MaxLayersOpt = RaptorOptions.default("max_layers"),
    seed: raptor_cli.SeedOpt = RaptorOptions.default("seed"),
    tokenizer: TokenizerOpt = None,
) -> dict[str, Any]:
    """Build a RAPTOR tree per group of documents (column text), saved in the Parquet rows."""
    settings: dict[str, Any] = {
        "chunk_tokens": chunk_tokens,
        "summary_tokens": summary_tokens,
        "max_layers": max_layers,
        "seed": seed,
    }
    named = (("llm", llm), ("embedder", embedder), ("tokenizer", tokenizer))
    return _group_args(settings, named, group_column)


@_stage("garlic", batch_size=False)
def garlic(
    group_column: Annotated[
        str | None,
        typer.Option(help="Rows with the same value share a graph (default: a graph per row)."),
    ] = None,
    lm: Annotated[
        str | None,
        typer.Option(
            help="The LM: a local model folder or cached name (default: no model, the summary "
            "points are the inputs' first sentences, embedding edges)."
        ),
    ] = None,
    embedder: EmbedderOpt = None,
    chunk_tokens: garlic_cli.ChunkTokensOpt = GarlicOptions.default("chunk_tokens"),
    max_levels: garlic_cli.MaxLevelsOpt = GarlicOptions.default("max_levels"),
    edges: garlic_cli.EdgesOpt = GarlicOptions.default("edges"),
    tokenizer: TokenizerOpt = None,
) -> dict[str, Any]:
    """Build a GARLIC graph per group of documents (column text), saved in the Parquet rows."""
    settings: dict[str, Any] = {
        "chunk_tokens": chunk_tokens,
        "max_levels": max_levels,
        "edges": edges,
    }
    named = (("lm", lm), ("embedder", embedder), ("tokenizer", tokenizer))
    return _group_args(settings, named, group_column)


def _group_args(
    settings: dict[str, Any], named: tuple[tuple[str, Any], ...], group_column: str | None
) -> dict[str, Any]:
    """A group stage's arguments: ``settings`` with the ``named`` values that are given (None:
    the default)."""
    settings.update({name: value for name, value in named if value is not None})
    return {"settings": settings, "group_column": group_column}


def _check_settings(stage: str, args: dict[str, Any]) -> None:
    """Check a stage's arguments as its actors will take them, by building its options here:
    a bad setting is the usual one-line error before Ray starts (in an actor it was a
    traceback, or a failure on every row). The models are only named here: the actors load
    them, on machines that may be other than this one."""
    settings = dict(args["settings"])
    for name in ("lm", "llm"):
        check_model_name(name, settings.get(name))
    options_type: type[Options] = HtmlPrunerOptions
    if stage in ("raptor", "garlic"):
        group = RaptorStage if stage == "raptor" else GarlicStage
        options_type = group.types()[0]
        settings.pop(group.lm_setting, None)  # taken by the build, not by the options
    elif stage == "structure":
        options_type = LongRefinerOptions
        check_model_switches(settings.get("lm"), {"--structure": settings["structure"]})
    elif stage == "refine":
        method = args["method"]
        if method not in REFINE_METHODS:
            msg = f"method must be one of {', '.join(map(repr, REFINE_METHODS))}, got {method!r}"
            raise ConfigError(msg)
        check_int("max_tokens", args["max_tokens"], minimum=1)
        options_type = HtmlPrunerOptions if method == "htmlrag" else LongRefinerOptions
    options_type.build(**settings)


@_stage("refine")
def refine(
    method: Annotated[
        str, typer.Option(help="longrefiner (text) or htmlrag (prune HTML pages).")
    ] = "longrefiner",
    query_column: Annotated[str, typer.Option(help="Column of the queries.")] = "query",
    max_tokens: Annotated[
        int,
        typer.Option(
            "--max-tokens", "-n", help="Budget of rows without a max_tokens column of their own."
        ),
    ] = 1024,
    scorer: Annotated[str, typer.Option(help="embedding, bm25 or cross-encoder:<model>.")] = (
        "embedding"
    ),
    tokenizer: TokenizerOpt = None,
) -> dict[str, Any]:
    """Refine (query, documents) pairs to a token budget (columns query and documents)."""
    settings: dict[str, Any] = {"scorer": scorer}
    if tokenizer is not None:
        settings["tokenizer"] = tokenizer
    return {
        "settings": settings,
        "method": method,
        "query_column": query_column,
        "max_tokens": max_tokens,
    }
