"""One pipeline run: read, skip what is finished, run a stage in an actor pool, write Parquet.

The plan Ray Data executes is ``read_json/read_parquet -> map_batches(prepare) ->
map_batches(Stage) (or groupby().map_groups(RaptorStage)) -> write_parquet``, streamed: no
stage waits for the whole corpus, and nothing is gathered on the driver but the finished ids.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import hrefine.distributed.io as _io
from hrefine.distributed.cluster import (
    IO_CPUS,
    connect,
    offline_runtime_env,
    plan_actors,
    tally,
)
from hrefine.distributed.groups import GarlicStage, GroupStage, RaptorStage
from hrefine.distributed.rows import drop_built_groups, prepare, stage_columns
from hrefine.distributed.stages import STAGES, Stage
from hrefine.errors import ConfigError

__all__ = ["DEFAULT_TEXT_COLUMNS", "RunReport", "prepare", "run_stage"]

#: The input column each stage reads its text from, unless told otherwise.
DEFAULT_TEXT_COLUMNS: dict[str, str] = {
    "html": "html",
    "structure": "text",
    "raptor": "text",
    "garlic": "text",
    "refine": "documents",
}
_ALL_STAGES: dict[str, type[Stage]] = {**STAGES, "raptor": RaptorStage, "garlic": GarlicStage}


@dataclasses.dataclass(frozen=True)
class RunReport:
    """What one run did.

    workers, num_gpus:
        The actor pool: actors, and GPUs per actor.
    seconds:
        Wall time of the run.
    """

    stage: str
    """``"html"``, ``"structure"``, ``"raptor"``, ``"garlic"`` or ``"refine"``."""
    output: str
    """The output folder (results under ``status=ok/``, failures under ``status=error/``)."""
    run_id: str
    """This run's id (the ``run_id`` column of the rows it wrote)."""
    ok: int
    """Rows (groups, for RAPTOR and GARLIC) this run processed into a result."""
    errors: int
    """Rows this run recorded as failed."""
    skipped: int
    """Input rows (groups, for RAPTOR and GARLIC) left out before any work because the
    output held their result (or failure) already; the ids the output holds for other
    inputs are not counted.
    """
    options_hash: str
    """The settings hash written in every row."""
    workers: int
    num_gpus: float
    seconds: float

    @property
    def processed(self) -> int:
        """Rows (or groups) this run did work on."""
        return self.ok + self.errors


def _describe(value: Any) -> Any:
    """A stable stand-in of a setting for the settings hash (a callable by its name)."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, (list, tuple)):
        return [_describe(v) for v in value]
    kind = value if isinstance(value, type) or callable(value) else type(value)
    return f"{getattr(kind, '__module__', '?')}.{getattr(kind, '__qualname__', repr(kind))}"


def run_stage(
    stage: str,
    input: str | Sequence[str],
    output: str,
    *,
    settings: Mapping[str, Any] | None = None,
    method: str | None = None,
    text_column: str | None = None,
    id_column: str = "id",
    group_column: str | None = None,
    query_column: str = "query",
    max_tokens: int = 1024,
    input_format: str | None = None,
    workers: int | None = None,
    gpus_per_worker: float = 1.0,
    batch_size: int = 8,
    address: str | None = None,
    retry_errors: bool = False,
    progress: bool = False,
) -> RunReport:
    """Run one hrefine stage over a JSONL/Parquet corpus on Ray Data, into a Parquet folder.

    Parameters
    ----------
    stage:
        ``"html"`` (clean + block tree), ``"structure"`` (LongRefiner's section trees),
        ``"raptor"`` (a RAPTOR tree per group), ``"garlic"`` (a GARLIC graph per group) or
        ``"refine"`` (LongRefiner or HtmlRAG on (query, documents) pairs).
    input:
        JSONL or Parquet files or folders, local or any URI Ray reads.
    output:
        Output folder (local or URI): ``status=ok/`` and ``status=error/`` Parquet files.
    settings:
        The core object's settings (:class:`~hrefine.longrefiner.LongRefinerOptions`,
        :class:`~hrefine.html.HtmlPrunerOptions`, :class:`~hrefine.raptor.RaptorOptions` or
        :class:`~hrefine.garlic.GarlicOptions` fields; ``boilerplate`` and ``max_words`` for
        ``html``).
    method:
        For ``refine``: ``"longrefiner"`` (default) or ``"htmlrag"``.
    text_column:
        The column holding each row's text (default: ``html`` for ``html``, ``documents``
        for ``refine``, else ``text``).
    id_column:
        The column of row ids; a row without one gets a hash of its content.
    group_column:
        For ``raptor`` and ``garlic``: rows with the same value share a graph (default: one
        per row).
    query_column, max_tokens:
        For ``refine``: the query column, and the budget of rows without a ``max_tokens``.
    input_format:
        ``"jsonl"`` or ``"parquet"`` (default: by the input's suffix).
    workers:
        Actors in the pool (default: one per GPU for a model stage on GPUs, else one per CPU
        but two, which the reads, the block splitting and the writes keep).
    gpus_per_worker:
        GPUs per actor on a cluster with GPUs (a fraction packs several actors on one GPU).
    batch_size:
        Rows per batch handed to an actor (and per block, so that every actor gets work).
    address:
        The Ray cluster (``"auto"``, ``"ray://host:10001"``); None: this process's Ray, or a
        local instance.
    retry_errors:
        Process the rows that failed in an earlier run again (by default they count as
        finished, like the rows with a result).
    progress:
        Show Ray Data's progress bars.

    Returns
    -------
    RunReport
        Counts of this run's results and failures, the rows skipped, the pool and the time.

    Raises
    ------
    ConfigError
        An unknown stage or method, a bad path, or an output folder written with other
        settings (a rerun must use the same ones, or a new folder).
    MissingDependencyError
        Ray is not installed (extra ``distributed``).
    """
    started = time.perf_counter()
    if stage not in _ALL_STAGES:
        msg = f"unknown stage {stage!r}; use one of {sorted(_ALL_STAGES)}"
        raise ConfigError(msg)
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        msg = f"batch_size must be a positive int, got {batch_size!r}"
        raise ConfigError(msg)
    cls = _ALL_STAGES[stage]
    grouped = issubclass(cls, GroupStage)
    values = dict(settings or {})
    how = method or ("longrefiner" if stage == "refine" else stage)
    column = text_column or DEFAULT_TEXT_COLUMNS[stage]
    shown = {k: _describe(v) for k, v in values.items()}
    shown.update(text_column=column, query_column=query_column, max_tokens=max_tokens)
    # Other ids or other groups make other rows; named only when not the default, so that
    # outputs written with the defaults before these were hashed keep their hash.
    if id_column != "id":
        shown["id_column"] = id_column
    if grouped and group_column is not None:
        shown["group_column"] = group_column
    options_hash = _io.settings_hash(stage, how, shown)

    state = _io.output_state(output)
    others = state.hashes - {options_hash}
    if others:
        msg = (
            f"the output {output!r} holds results made with other settings (hash "
            f"{', '.join(sorted(others))}, now {options_hash}); rerun with the same settings "
            "to finish it, or give a new --output"
        )
        raise ConfigError(msg)
    done = state.ok if retry_errors else state.ok | state.errors
    # A group stage skips a group only when its members are those it was built from.
    built = {
        g: m for g, (status, m) in state.groups.items() if status == _io.OK or not retry_errors
    }

    connect(address)
    from hrefine import __version__
    from hrefine.distributed.cluster import ray

    rd = ray().data
    plan = plan_actors(workers, uses_model=cls.needs_model(values), gpus_per_worker=gpus_per_worker)
    run_id = f"{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{uuid.uuid4().hex[:8]}"
    provenance = {
        "method": how,
        "hrefine_version": __version__,
        "options_hash": options_hash,
        "run_id": run_id,
    }
    kwargs: dict[str, Any] = {
        "settings": values,
        "provenance": provenance,
        "text_column": column,
    }
    if stage == "refine":
        kwargs.update(method=how, query_column=query_column, max_tokens=max_tokens)

    context = rd.DataContext.get_current()
    shown_bars = context.enable_progress_bars
    context.enable_progress_bars = progress
    # The tasks that drop finished rows (groups) count them here: the input's rows that were
    # skipped, not the ids the output holds (those of other inputs too).
    counter = tally() if (built if grouped else done) else None
    skipped = 0
    try:
        source = _io.read_corpus(input, input_format=input_format)
        needed = [column, group_column] if grouped else [column]
        if stage == "refine":
            needed.append(query_column)
        _check_columns(source, [c for c in needed if c is not None])
        ds = source.map_batches(
            prepare,
            batch_format="pyarrow",
            # one block a call: blocks read with other types are only merged once prepared
            batch_size=None,
            num_cpus=IO_CPUS,
            fn_kwargs={
                "columns": stage_columns(stage, column, query_column),
                "id_column": id_column,
                "group_column": group_column,
                "done": sorted(done),
                "group_key": grouped,
                "tally": counter,
            },
        )
        if grouped and built:
            ds = ds.groupby("group").map_groups(
                drop_built_groups,
                batch_format="pyarrow",
                num_cpus=IO_CPUS,
                fn_kwargs={"built": built, "tally": counter},
            )
        if grouped:
            ds = ds.groupby("group").map_groups(
                cls,
                batch_format="pyarrow",
                fn_constructor_kwargs=kwargs,
                # offline even when the caller started Ray without our runtime_env
                runtime_env=offline_runtime_env(),
                **plan.remote_args(),
            )
        else:
            if plan.split_blocks:
                ds = _small_blocks(ds, batch_size)
            ds = ds.map_batches(
                cls,
                batch_format="pyarrow",
                batch_size=batch_size,
                fn_constructor_kwargs=kwargs,
                # offline even when the caller started Ray without our runtime_env
                runtime_env=offline_runtime_env(),
                **plan.remote_args(),
            )
        ds.write_parquet(output, partition_cols=["status"], ray_remote_args={"num_cpus": IO_CPUS})
        if counter is not None:
            skipped = ray().get(counter.read.remote())
    finally:
        context.enable_progress_bars = shown_bars
        if counter is not None:
            ray().kill(counter)

    ok, errors = _counts(output, run_id)
    return RunReport(
        stage=stage,
        output=output,
        run_id=run_id,
        ok=ok,
        errors=errors,
        skipped=skipped,
        options_hash=options_hash,
        workers=plan.workers,
        num_gpus=plan.num_gpus,
        seconds=time.perf_counter() - started,
    )


def _check_columns(ds: Any, needed: Sequence[str]) -> None:
    """Fail before any work when the input lacks a column the stage reads (Ray reads the
    first file for its schema)."""
    schema = ds.schema()
    names = set(getattr(schema, "names", None) or [])
    missing = [c for c in needed if c not in names]
    if names and missing:
        msg = (
            f"the input has no column {', '.join(map(repr, missing))}; its columns are "
            f"{sorted(names - {'path'})}; name the right one with --text-column, "
            "--group-column or --query-column"
        )
        raise ConfigError(msg)


def _small_blocks(ds: Any, rows: int) -> Any:
    """``ds`` in blocks of at most ``rows`` rows, streamed: the pool hands out whole blocks, so
    a file read as one big block would otherwise keep every actor but one idle."""
    try:
        return ds.repartition(target_num_rows_per_block=rows)
    except TypeError:  # Ray before streaming repartition: the blocks stay as read
        return ds


def _counts(output: str, run_id: str) -> tuple[int, int]:
    """Results and failures the run ``run_id`` wrote into ``output``."""
    table = _io.read_output(output, ["status", "run_id"])
    if table is None:
        return 0, 0
    ok = errors = 0
    for status, run in zip(
        table.column("status").to_pylist(), table.column("run_id").to_pylist(), strict=True
    ):
        if run == run_id:
            ok += status == _io.OK
            errors += status == _io.ERROR
    return ok, errors
