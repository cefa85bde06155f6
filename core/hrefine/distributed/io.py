"""Reading a corpus into Ray Data, and the output folder: what it holds and what is finished.

An output folder is one Parquet dataset, partitioned by ``status``: ``status=ok/`` holds the
results and ``status=error/`` the records that failed (their id, stage and reason). Every run
adds files of its own (never rewriting another run's), so a rerun only has to know which ids
are there already. Paths may be local or on any filesystem pyarrow and Ray read (``s3://``,
``gs://``, ``hdfs://``...).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from hrefine._optional import require
from hrefine.errors import ConfigError

__all__ = [
    "ERROR",
    "OK",
    "OutputState",
    "output_state",
    "read_corpus",
    "read_output",
    "row_ids",
    "settings_hash",
]

#: ``status`` of a row that holds a result, and of one that records a failure.
OK = "ok"
ERROR = "error"

_JSON_SUFFIXES = (".jsonl", ".json", ".jsonl.gz", ".json.gz", ".jsonl.zst", ".json.zst")


def _format_of(path: str, given: str | None) -> str:
    if given is not None:
        if given not in {"jsonl", "parquet"}:
            msg = f"input format must be 'jsonl' or 'parquet', got {given!r}"
            raise ConfigError(msg)
        return given
    name = path.rstrip("/").lower()
    if name.endswith(".parquet"):
        return "parquet"
    if name.endswith(_JSON_SUFFIXES):
        return "jsonl"
    msg = (
        f"cannot tell the format of {path!r} from its name; give a .jsonl or .parquet path, "
        "or say which with --format jsonl|parquet"
    )
    raise ConfigError(msg)


def read_corpus(paths: str | Sequence[str], *, input_format: str | None = None) -> Any:
    """A Ray Dataset over JSONL or Parquet files (a file, a folder, or several of them).

    Parameters
    ----------
    paths:
        Local paths or URIs Ray reads (``s3://bucket/pages/``...).
    input_format:
        ``"jsonl"`` or ``"parquet"``; None: told by the first path's suffix.

    Returns
    -------
    ray.data.Dataset
        Its rows as read, plus ``path`` (the file each row came from). JSON values keep
        their JSON types: a text that looks like a number or a date stays a text.
    """
    from hrefine.distributed.cluster import IO_CPUS, ray

    ray()
    import ray.data as rd

    names = [paths] if isinstance(paths, str) else list(paths)
    if not names:
        msg = "no input given; pass a .jsonl or .parquet file or folder"
        raise ConfigError(msg)
    fmt = _format_of(names[0], input_format)
    try:
        if fmt == "parquet":
            return rd.read_parquet(names, include_paths=True, num_cpus=IO_CPUS)
        # not rd.read_json: its pandas reader turns texts like "007" into numbers
        from hrefine.distributed.jsonl import read_jsonl

        return read_jsonl(names, num_cpus=IO_CPUS)
    except (TypeError, ValueError) as exc:  # pyarrow's ArrowTypeError, ArrowInvalid
        found = re.search(r"Unable to merge: Field (\S+) has incompatible types: (.*)", str(exc))
        if found is None:
            raise
        msg = (
            f"the input files disagree on the type of column {found.group(1)!r} "
            f"({found.group(2).strip()}); write it with one type in every file"
        )
        raise ConfigError(msg) from exc


def row_ids(ids: Sequence[Any] | None, texts: Sequence[Any]) -> list[str]:
    """Each row's id: its own when given, else a hash of its content (stable across runs,
    which is what lets a rerun recognise it)."""
    if ids is not None:
        return [str(i) for i in ids]
    return [hashlib.sha256(_as_bytes(t)).hexdigest()[:24] for t in texts]


def _as_bytes(value: Any) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass")
    return json.dumps(_plain(value), sort_keys=True, ensure_ascii=False).encode("utf-8")


def _plain(value: Any) -> Any:
    """numpy arrays and scalars (as Ray hands them over) as plain lists and numbers."""
    if hasattr(value, "tolist"):
        return value.tolist()
    return value


def settings_hash(stage: str, method: str, settings: Mapping[str, Any]) -> str:
    """A short hash of what makes a stage's output what it is: stage, method and settings."""
    blob = json.dumps(
        {"stage": stage, "method": method, "settings": dict(settings)},
        sort_keys=True,
        default=repr,
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


@dataclasses.dataclass(frozen=True)
class OutputState:
    """What an output folder holds already."""

    ok: frozenset[str]
    """Ids with a result."""
    errors: frozenset[str]
    """Ids whose last try failed (and have no result)."""
    hashes: frozenset[str]
    """The settings hashes of the runs that wrote it."""
    groups: Mapping[str, tuple[str, tuple[str, ...] | None]] = dataclasses.field(
        default_factory=dict
    )
    """For a group stage's output: each group's latest row (of the latest run that wrote
    one), as its status and its members' ids (None when not recorded).
    """


def _filesystem(path: str) -> tuple[Any, str]:
    fs_mod = require("pyarrow.fs", "distributed")
    if "://" in path:
        fs, where = fs_mod.FileSystem.from_uri(path)
        return fs, where
    return fs_mod.LocalFileSystem(), path


def _readable(fs: Any, files: Sequence[str]) -> list[str]:
    """``files`` but those whose Parquet footer cannot be read (a writer killed mid-file
    leaves such a file), with a warning naming each."""
    pq = require("pyarrow.parquet", "distributed")
    good = []
    for name in files:
        try:
            with fs.open_input_file(name) as handle:
                pq.ParquetFile(handle).metadata  # noqa: B018 - reads the footer
            good.append(name)
        except (OSError, ValueError) as exc:  # ArrowInvalid is a ValueError
            warnings.warn(
                f"skipped the unreadable output file {name!r} ({exc}); its rows count as not "
                "done, so a rerun does them again; delete the file",
                RuntimeWarning,
                stacklevel=4,
            )
    return good


def _dataset(path: str, *, check: bool = False) -> Any | None:
    """The Parquet dataset at ``path``, or None when nothing was written there yet.

    ``check``: leave out the files that cannot be read (each is read's footer first).
    """
    pads = require("pyarrow.dataset", "distributed")
    fs_mod = require("pyarrow.fs", "distributed")
    fs, where = _filesystem(path)
    info = fs.get_file_info(where)
    if info.type == fs_mod.FileType.NotFound:
        return None
    if info.type != fs_mod.FileType.Directory:
        msg = f"the output {path!r} is a file; give a folder"
        raise ConfigError(msg)
    selector = fs_mod.FileSelector(where, recursive=True)
    files = [f.path for f in fs.get_file_info(selector) if f.path.endswith(".parquet")]
    if check:
        files = _readable(fs, files)
    if not files:
        return None
    return pads.dataset(
        files, filesystem=fs, format="parquet", partitioning="hive", partition_base_dir=where
    )


def read_output(
    path: str, columns: Sequence[str] | None = None, *, latest: bool = False
) -> Any | None:
    """The rows an output folder holds, as a pyarrow Table (None when it holds none).

    Parameters
    ----------
    path:
        The output folder (local or a URI).
    columns:
        The columns to read (default: all of them, ``status`` included).
    latest:
        Only each id's current row: that of the latest run that wrote one (within one run, a
        result wins over a failure). Without it, an id that failed and then succeeded with
        ``--retry-errors`` has its old failures too (runs never rewrite each other's files),
        and a group built again has a row per build.
    """
    if not latest:
        return _read(path, columns)
    keys = ("id", "status", "run_id")
    table = _read(
        path, None if columns is None else [*columns, *(k for k in keys if k not in columns)]
    )
    if table is None:
        return None
    table = table.take(_latest_rows(*(table.column(k).to_pylist() for k in keys)))
    return table if columns is None else table.select(list(columns))


def _latest_rows(ids: Sequence[str], status: Sequence[str], runs: Sequence[str]) -> list[int]:
    """The index of each id's current row, in table order: the latest ``run_id`` (run ids
    begin with the run's UTC time); within one run, a result wins over a failure."""
    best: dict[str, tuple[tuple[str, bool], int]] = {}
    for i, (row_id, state, run) in enumerate(zip(ids, status, runs, strict=True)):
        key = (run or "", state == OK)
        if row_id not in best or key >= best[row_id][0]:
            best[row_id] = (key, i)
    return sorted(i for _, i in best.values())


def _read(path: str, columns: Sequence[str] | None, optional: Sequence[str] = ()) -> Any | None:
    """:func:`read_output`, plus the ``optional`` columns the dataset has."""

    def table(ds: Any) -> Any:
        if ds is None:
            return None
        if columns is None:
            return ds.to_table()
        names = ds.schema.names
        return ds.to_table(columns=[*columns, *(c for c in optional if c in names)])

    try:
        return table(_dataset(path))
    except (OSError, ValueError) as exc:
        if isinstance(exc, ConfigError):
            raise
    # A file no one can read (a writer killed mid-file) must not block every later run.
    return table(_dataset(path, check=True))


def output_state(path: str) -> OutputState:
    """Which ids an output folder holds results and failures for.

    An id that failed in one run and succeeded in a later one counts as finished (``ok``).
    """
    table = _read(path, ["id", "status", "options_hash", "run_id"], optional=["members"])
    if table is None:
        return OutputState(frozenset(), frozenset(), frozenset())
    ids = table.column("id").to_pylist()
    status = table.column("status").to_pylist()
    ok = frozenset(i for i, s in zip(ids, status, strict=True) if s == OK)
    failed = frozenset(i for i, s in zip(ids, status, strict=True) if s == ERROR) - ok
    hashes = frozenset(table.column("options_hash").to_pylist())
    groups: dict[str, tuple[str, tuple[str, ...] | None]] = {}
    if "members" in table.column_names:
        runs = table.column("run_id").to_pylist()
        members = table.column("members").to_pylist()
        # run ids start with the run's UTC time: the last row per group is the latest run's
        for _, gid, state, held in sorted(zip(runs, ids, status, members, strict=True)):
            groups[gid] = (state, None if held is None else tuple(json.loads(held)))
    return OutputState(ok=ok, errors=failed, hashes=hashes, groups=groups)
