"""Reading a corpus into Ray Data, and the output folder: what it holds and what is finished.

An output folder is one Parquet dataset, partitioned by ``status``: ``status=ok/`` holds the
results and ``status=error/`` the records that failed (their id, stage and reason). Every run
adds files of its own (never rewriting another run's), so a rerun only has to know which ids
are there already. Paths may be local or on any filesystem pyarrow and Ray read (``s3://``,
``gs://``, ``hdfs://``...).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
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
        Its rows as read, plus ``path`` (the file each row came from).
    """
    from hrefine.distributed.cluster import IO_CPUS, ray

    ray()
    import ray.data as rd

    names = [paths] if isinstance(paths, str) else list(paths)
    if not names:
        msg = "no input given; pass a .jsonl or .parquet file or folder"
        raise ConfigError(msg)
    fmt = _format_of(names[0], input_format)
    if fmt == "parquet":
        return rd.read_parquet(names, include_paths=True, num_cpus=IO_CPUS)
    return rd.read_json(names, lines=True, include_paths=True, num_cpus=IO_CPUS)


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


@dataclass(frozen=True)
class OutputState:
    """What an output folder holds already.

    Attributes
    ----------
    ok:
        Ids with a result.
    errors:
        Ids whose last try failed (and have no result).
    hashes:
        The settings hashes of the runs that wrote it.
    """

    ok: frozenset[str]
    errors: frozenset[str]
    hashes: frozenset[str]


def _filesystem(path: str) -> tuple[Any, str]:
    fs_mod = require("pyarrow.fs", "distributed")
    if "://" in path:
        fs, where = fs_mod.FileSystem.from_uri(path)
        return fs, where
    return fs_mod.LocalFileSystem(), path


def _dataset(path: str) -> Any | None:
    """The Parquet dataset at ``path``, or None when nothing was written there yet."""
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
    if not files:
        return None
    return pads.dataset(
        files, filesystem=fs, format="parquet", partitioning="hive", partition_base_dir=where
    )


def read_output(path: str, columns: Sequence[str] | None = None) -> Any | None:
    """The rows an output folder holds, as a pyarrow Table (None when it holds none).

    Parameters
    ----------
    path:
        The output folder (local or a URI).
    columns:
        The columns to read (default: all of them, ``status`` included).
    """
    ds = _dataset(path)
    if ds is None:
        return None
    return ds.to_table(columns=list(columns) if columns is not None else None)


def output_state(path: str) -> OutputState:
    """Which ids an output folder holds results and failures for.

    An id that failed in one run and succeeded in a later one counts as finished (``ok``).
    """
    table = read_output(path, ["id", "status", "options_hash"])
    if table is None:
        return OutputState(frozenset(), frozenset(), frozenset())
    ids = table.column("id").to_pylist()
    status = table.column("status").to_pylist()
    ok = frozenset(i for i, s in zip(ids, status, strict=True) if s == OK)
    failed = frozenset(i for i, s in zip(ids, status, strict=True) if s == ERROR) - ok
    hashes = frozenset(table.column("options_hash").to_pylist())
    return OutputState(ok=ok, errors=failed, hashes=hashes)
