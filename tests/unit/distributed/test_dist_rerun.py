"""Reruns: what an output folder says is finished (unreadable files, groups and their
members), each id's current row, the settings a rerun must share, and inputs whose types
differ from row to row (JSON texts that look like numbers stay texts)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hrefine.errors import ConfigError

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


def _write(folder: Path, name: str, rows: list[dict[str, Any]], status: str = "ok") -> Path:
    where = folder / f"status={status}"
    where.mkdir(parents=True, exist_ok=True)
    path = where / name
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def test_an_unreadable_output_file_is_skipped_with_a_warning(tmp_path: Path) -> None:
    """A writer killed mid-file leaves a truncated Parquet file: it must not block reruns."""
    from hrefine.distributed.io import output_state, read_output

    row = {"id": "p1", "options_hash": "h", "run_id": "r1"}
    _write(tmp_path, "a.parquet", [row])
    cut = _write(tmp_path, "b.parquet", [{**row, "id": f"p{i}"} for i in range(2, 40)])
    cut.write_bytes(cut.read_bytes()[: cut.stat().st_size // 2])

    with pytest.warns(RuntimeWarning, match="unreadable output file .*b.parquet"):
        state = output_state(str(tmp_path))
    assert state.ok == {"p1"}  # the cut file's rows are done again
    with pytest.warns(RuntimeWarning):
        table = read_output(str(tmp_path))
    assert table is not None and table.column("id").to_pylist() == ["p1"]


def test_a_groups_latest_row_gives_its_members(tmp_path: Path) -> None:
    from hrefine.distributed.io import output_state

    def row(gid: str, run: str, members: list[str] | None) -> dict[str, Any]:
        held = None if members is None else json.dumps(members)
        return {"id": gid, "options_hash": "h", "run_id": run, "members": held}

    _write(tmp_path, "1.parquet", [row("geo", "20250101T000000-a", ["lake"])])
    _write(tmp_path, "2.parquet", [row("geo", "20250102T000000-b", ["glacier", "lake"])])
    _write(tmp_path, "3.parquet", [row("town", "20250101T000000-a", None)], status="error")
    state = output_state(str(tmp_path))
    assert state.groups == {"geo": ("ok", ("glacier", "lake")), "town": ("error", None)}


class _Reached(Exception):
    """Raised where the run would start Ray: the settings were checked by then."""


def _hash_of(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, stage: str, **kwargs: Any) -> str:
    import hrefine.distributed.pipeline as pipeline

    seen: list[str] = []
    real = pipeline._io.settings_hash

    def record(*args: Any) -> str:
        seen.append(real(*args))
        return seen[-1]

    def stop(address: str | None) -> None:
        raise _Reached

    monkeypatch.setattr(pipeline._io, "settings_hash", record)
    monkeypatch.setattr(pipeline, "connect", stop)
    with pytest.raises(_Reached):
        pipeline.run_stage(stage, str(tmp_path / "in.jsonl"), str(tmp_path / "out"), **kwargs)
    return seen[-1]


def test_the_grouping_and_the_id_column_are_settings(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Another grouping builds other graphs: such a rerun must be refused, not mixed in."""
    plain = _hash_of(monkeypatch, tmp_path, "raptor")
    by_topic = _hash_of(monkeypatch, tmp_path, "raptor", group_column="topic")
    by_region = _hash_of(monkeypatch, tmp_path, "raptor", group_column="region")
    by_key = _hash_of(monkeypatch, tmp_path, "raptor", id_column="key")
    assert len({plain, by_topic, by_region, by_key}) == 4
    # the defaults hash as before (outputs written by earlier versions stay usable)
    assert _hash_of(monkeypatch, tmp_path, "html", group_column="topic") == _hash_of(
        monkeypatch, tmp_path, "html"
    )


def test_parquet_files_that_disagree_on_a_type_are_named(local_ray: Any, tmp_path: Path) -> None:
    from hrefine.distributed.io import read_corpus

    (tmp_path / "in").mkdir()
    pq.write_table(pa.table({"id": [1], "text": ["First."]}), tmp_path / "in/a.parquet")
    pq.write_table(pa.table({"id": ["x"], "text": ["Second."]}), tmp_path / "in/b.parquet")
    with pytest.raises(ConfigError, match="type of column 'id'"):
        read_corpus(str(tmp_path / "in"), input_format="parquet")


def test_rows_of_other_types_make_one_run(
    local_ray: Any, tmp_path: Path, write_jsonl: Callable[..., Path]
) -> None:
    """documents a text in one row and a list in another, a budget on one row only, an
    unrelated column of two types: every row gets its result, none stops the run."""
    from hrefine.distributed import read_output, run_stage

    source = write_jsonl(
        tmp_path / "pairs.jsonl",
        [
            {
                "id": "q1",
                "query": "cats",
                "documents": "Cats are small mammals. They purr.",
                "max_tokens": 20,
                "year": 2001,
            },
            {
                "id": "q2",
                "query": "dogs",
                "documents": ["Dogs bark.", "Dogs are loyal."],
                "year": "unknown",
            },
        ],
    )
    out = str(tmp_path / "out")
    report = run_stage(
        "refine", str(source), out, settings={"scorer": "bm25"}, max_tokens=64, workers=1
    )
    assert (report.ok, report.errors) == (2, 0)
    table = read_output(out, ["id", "budget", "documents"])
    assert table is not None
    rows = {r["id"]: r for r in table.to_pylist()}
    assert rows["q1"]["budget"] == 20 and rows["q2"]["budget"] == 64
    assert rows["q2"]["documents"] == 2


def test_latest_keeps_each_ids_current_row(tmp_path: Path) -> None:
    """status=error/ keeps the failures a later --retry-errors run fixed; latest=True gives
    each id's outcome: the row of its latest run, a result over a failure of one run."""
    from hrefine.distributed.io import read_output

    schema = pa.schema([(k, pa.string()) for k in ("id", "run_id", "options_hash", "error")])

    def write(name: str, status: str, run: str, rows: dict[str, str | None]) -> None:
        where = tmp_path / f"status={status}"
        where.mkdir(exist_ok=True)
        got = [{"id": i, "run_id": run, "options_hash": "h", "error": e} for i, e in rows.items()]
        pq.write_table(pa.Table.from_pylist(got, schema=schema), where / name)

    one, two, three = "20250101T000000-a", "20250102T000000-b", "20250103T000000-c"
    write("1.parquet", "ok", one, {"g": None, "geo": None})
    write("1.parquet", "error", one, {"bad": "Empty"})
    write("2a.parquet", "error", two, {"bad": "Empty", "still": "Empty", "geo": "Broken"})
    write("2b.parquet", "error", two, {"twin": "Empty"})
    write("2.parquet", "ok", two, {"twin": None})
    write("3.parquet", "ok", three, {"bad": None})

    every = read_output(str(tmp_path), ["id", "status"])
    assert every is not None and every.num_rows == 9  # the fixed failures are still there
    table = read_output(str(tmp_path), ["id", "error"], latest=True)
    assert table is not None and table.column_names == ["id", "error"]
    outcome = {r["id"]: r["error"] for r in table.to_pylist()}
    assert outcome == {"g": None, "bad": None, "still": "Empty", "geo": "Broken", "twin": None}
    whole = read_output(str(tmp_path), latest=True)
    assert whole is not None and whole.num_rows == 5 and "status" in whole.column_names
    assert read_output(str(tmp_path / "none"), latest=True) is None


def test_json_lines_keep_their_types(tmp_path: Path) -> None:
    pytest.importorskip("ray.data")
    from hrefine.distributed.jsonl import json_rows

    text = b'{"id": "007", "n": 1}\n\n{"id": 42, "s": "\\ud83d \\ud83d\\ude00"}\n{"id": "1e3"}'
    pieces = [text[i : i + 5] for i in range(0, len(text), 5)]  # lines cut across reads
    blocks = list(json_rows(pieces, "p.jsonl", block_bytes=30))
    assert [[r["id"] for r in b] for b in blocks] == [["007", 42], ["1e3"]]
    assert blocks[0][1]["s"] == "\ufffd \U0001f600"  # a lone surrogate Arrow cannot store
    assert next(json_rows([b'{"s": "a\xed\xa0\xbd"}'], "p.jsonl")) == [{"s": "a\ufffd"}]
    with pytest.raises(ConfigError, match=r"p.jsonl, line 2: a JSON list"):
        list(json_rows([b'{"id": 1}\n[1, 2]\n'], "p.jsonl"))
    with pytest.raises(ConfigError, match=r"p.jsonl, line 1: not JSON"):
        list(json_rows([b"{oops\n"], "p.jsonl"))


def test_ids_that_look_like_numbers_stay_text(
    local_ray: Any, tmp_path: Path, write_jsonl: Callable[..., Path]
) -> None:
    """pandas' JSON reader made "007" the number 7: the output's ids differed from the input's
    (and a rerun redid every row)."""
    from hrefine.distributed import read_output, run_stage

    ids = ["007", "0042", "1e3"]
    rows = [
        {"id": i, "html": f"<p>Page {n}: the harbour and the lake.</p>"} for n, i in enumerate(ids)
    ]
    source = str(write_jsonl(tmp_path / "pages.jsonl", rows))
    out = str(tmp_path / "out")
    first = run_stage("html", source, out, workers=1)
    assert (first.ok, first.errors) == (3, 0)
    table = read_output(out, ["id"])
    assert table is not None and sorted(table.column("id").to_pylist()) == sorted(ids)
    again = run_stage("html", source, out, workers=1)
    assert (again.processed, again.skipped) == (0, 3)
