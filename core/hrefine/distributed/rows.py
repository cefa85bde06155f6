"""The input rows as the stages see them: their ids, their groups, and the stage's own columns
at fixed types.

:func:`prepare` runs as a Ray task on every input block, before any stage. It keeps only the
columns the stage reads, cast to one type each (so that blocks read with other types, a text
here and a list there, a number here and a string there, still make one dataset), gives each
row its ``id`` (its own, or a hash of its content) and ``input_path`` (and its ``group``), and
drops the rows that are finished. :func:`drop_built_groups` drops the groups an earlier run
built from the same members.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from hrefine.errors import InputTypeError

__all__ = ["INPUT_ERROR", "drop_built_groups", "prepare", "stage_columns"]

#: A column :func:`prepare` adds: why a row's value could not take its column's type (null
#: when it could). The stage records such a row as failed instead of processing it.
INPUT_ERROR = "_hrefine_input_error"


def stage_columns(stage: str, text_column: str, query_column: str) -> dict[str, str]:
    """The input columns ``stage`` reads, with the type each is cast to.

    ``"string"``, ``"list<string>"`` (a lone string becomes a one-item list) or ``"int64"``.
    """
    if stage == "refine":
        return {text_column: "list<string>", query_column: "string", "max_tokens": "int64"}
    if stage == "structure":
        return {text_column: "string", "title": "string"}
    return {text_column: "string"}


def _json_default(value: Any) -> Any:
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, bytes):
        return hashlib.sha256(value).hexdigest()
    return str(value)


def _canonical(value: Any) -> Any:
    """``value`` as the id hash sees it: a whole float as an int (a column with a gap reads
    as floats), NaN as missing."""
    if isinstance(value, float):
        if math.isnan(value):
            return None
        if value.is_integer():
            return int(value)
    return value


def content_id(values: Mapping[str, Any]) -> str:
    """The id of a row without one: a hash of its non-null values of the stage's columns.

    Null values are left out, so a row hashes the same whether its block gave it a null for a
    key it lacks or no such column at all; the JSON is the one of earlier versions (sorted
    keys, ASCII), so a row with all those columns set keeps the id it had.
    """
    plain = {k: c for k, v in values.items() if (c := _canonical(v)) is not None}
    blob = json.dumps(plain, sort_keys=True, default=_json_default)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:24]


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(_canonical(value))
    msg = f"holds a {type(value).__name__}, expected text"
    raise InputTypeError(msg)


def _convert(value: Any, kind: str) -> Any:
    """``value`` as a value of type ``kind``; raises InputTypeError (with the reason) when it is
    none; None for a missing value."""
    value = _canonical(value)
    if value is None:
        return None
    if kind == "int64":
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lstrip("+-").isdigit():
            return int(value)
        msg = f"holds {value!r}, expected a whole number"
        raise InputTypeError(msg)
    if kind == "list<string>":
        items = [value] if isinstance(value, (str, bytes)) else value
        if not isinstance(items, (list, tuple)):
            msg = f"holds a {type(value).__name__}, expected a text or a list of texts"
            raise InputTypeError(msg)
        return [_as_text(v) for v in items]
    return _as_text(value)


def _typed(pa: Any, name: str, kind: str, values: list[Any], bad: list[str | None]) -> Any:
    """The column ``name`` as a pyarrow array of ``kind``; a value that cannot take the type
    is null, and its row's reason goes into ``bad``."""
    out: list[Any] = []
    for i, value in enumerate(values):
        try:
            out.append(_convert(value, kind))
        except InputTypeError as exc:
            out.append(None)
            bad[i] = bad[i] or f"column {name!r} {exc}"
    arrow_type = pa.list_(pa.string()) if kind == "list<string>" else getattr(pa, kind)()
    return pa.array(out, arrow_type)


def prepare(
    batch: Any,
    *,
    columns: Mapping[str, str],
    id_column: str,
    group_column: str | None,
    done: Sequence[str],
    group_key: bool,
    tally: Any | None = None,
) -> Any:
    """Give each row ``id``, ``input_path`` (and ``group``) and the stage's ``columns`` at
    their types, drop every other column, and drop the finished rows.

    Parameters
    ----------
    batch:
        One input block, a pyarrow Table (``path``: the file each row came from).
    columns:
        The stage's columns and their types (:func:`stage_columns`); a column the block lacks
        is null.
    id_column:
        The column of row ids; a row without one gets :func:`content_id` of its columns.
    group_column:
        The column of group names (with ``group_key``): a row whose value is null or missing
        is a group of its own, named by its id, as every row is without a group column.
    done:
        Finished ids, dropped here (for a row stage; a group stage drops whole groups later,
        :func:`drop_built_groups`, as a group's rows may lie in several blocks).
    group_key:
        Add the ``group`` column.
    tally:
        The run's counter actor (:func:`~hrefine.distributed.cluster.tally`), told how many
        rows were dropped as finished.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    names = batch.column_names
    rows = batch.num_rows

    def values(name: str | None) -> list[Any]:
        return batch.column(name).to_pylist() if name in names else [None] * rows

    raw = {name: values(name) for name in columns}
    hashed = dict(raw)
    if group_key and group_column is not None:
        hashed[group_column] = values(group_column)  # hashed as earlier versions did
    given = values(id_column)
    ids = [
        _name(v)
        if _canonical(v) is not None
        else content_id({k: col[i] for k, col in hashed.items()})
        for i, v in enumerate(given)
    ]
    bad: list[str | None] = [None] * rows
    typed = {name: _typed(pa, name, kind, raw[name], bad) for name, kind in columns.items()}
    paths = batch.column("path") if "path" in names else pa.nulls(rows, pa.string())
    out = pa.table(
        {
            **typed,
            "id": pa.array(ids, pa.string()),
            "input_path": pc.cast(paths, pa.string()),
            INPUT_ERROR: pa.array(bad, pa.string()),
        }
    )
    if group_key:
        named = values(group_column) if group_column is not None else [None] * rows
        groups = [ids[i] if _canonical(v) is None else _name(v) for i, v in enumerate(named)]
        out = out.append_column("group", pa.array(groups, pa.string()))
    if not done or group_key:
        return out
    finished = pc.is_in(out.column("id"), value_set=pa.array(list(done), pa.string()))
    kept = out.filter(pc.invert(pc.fill_null(finished, False)))
    # The block's ids and paths are its key: a retried task reads the same block again.
    block = hashlib.sha256()
    for value in (*ids, *paths.to_pylist()):
        block.update(f"{value}\0".encode("utf-8", "surrogatepass"))
    _tell(tally, f"rows:{block.hexdigest()}", rows - kept.num_rows)
    return kept


def _tell(tally: Any | None, key: str, count: int) -> None:
    """Count ``count`` skipped rows (or groups) under ``key`` on the run's counter, if any."""
    if tally is not None and count:
        import ray

        # waited for, so that every count is in before the run's last block is written
        ray.get(tally.add.remote(key, count))


def _name(value: Any) -> str:
    """An id or a group name as text (a number as written, anything else as JSON)."""
    try:
        return _as_text(value)
    except InputTypeError:
        return json.dumps(value, sort_keys=True, default=_json_default)


def drop_built_groups(
    group: Any, *, built: Mapping[str, Sequence[str] | None], tally: Any | None = None
) -> Any:
    """``group`` (one group's rows), or none of them when an earlier run built that group
    from the same members.

    ``built`` maps a finished group to its members' ids (None: not recorded, as in failures
    written by earlier versions, which count as finished whatever the members). A group that
    gained or lost a member is built again. A dropped group counts one on ``tally`` (the
    run's counter actor, if any).
    """
    name = str(group.column("group")[0].as_py()) if group.num_rows else None
    if name is None or name not in built:
        return group
    members = built[name]
    if members is None or sorted(members) == sorted(group.column("id").to_pylist()):
        _tell(tally, f"group:{name}", 1)
        return group.slice(0, 0)
    return group
