"""The html stage on a local Ray instance: same output as the core, bad records apart,
reruns that skip finished work, and output folders that refuse other settings."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hrefine import __version__
from hrefine.errors import ConfigError

pytest.importorskip("ray")


def _rows(output: Path) -> dict[str, dict[str, Any]]:
    from hrefine.distributed import read_output

    table = read_output(str(output))
    assert table is not None
    rows = table.to_pylist()
    ids = [r["id"] for r in rows]
    assert len(ids) == len(set(ids)), f"an id was written twice: {sorted(ids)}"
    return {r["id"]: r for r in rows}


def _bad_rows() -> list[dict[str, Any]]:
    return [
        {"id": "empty-page", "html": "   "},
        {"id": "no-text", "html": "<html><body><script>x()</script></body></html>"},
        {"id": "null-page", "html": None},
    ]


def test_html_stage_equals_core_and_keeps_bad_records_apart(
    local_ray: Any,
    wtq_pages: list[dict[str, Any]],
    tmp_path: Path,
    write_jsonl: Callable[..., Path],
) -> None:
    from hrefine.distributed import run_stage
    from hrefine.html import build_block_tree, clean_html

    source = write_jsonl(tmp_path / "pages.jsonl", [*wtq_pages, *_bad_rows()])
    report = run_stage("html", str(source), str(tmp_path / "out"), workers=2, batch_size=2)

    assert (report.ok, report.errors, report.skipped) == (3, 3, 0)
    rows = _rows(tmp_path / "out")
    for page in wtq_pages:
        row = rows[page["id"]]
        assert row["status"] == "ok"
        assert row["cleaned_html"] == clean_html(page["html"])
        tree = build_block_tree(page["html"])
        assert json.loads(row["block_tree"]) == json.loads(json.dumps(tree.to_dict()))
        assert row["blocks"] == sum(1 for n in tree.nodes if n.kind == "block") > 0
        # provenance
        assert row["input_path"].endswith("pages.jsonl")
        assert row["hrefine_version"] == __version__
        assert (row["method"], row["stage"]) == ("html", "html")
        assert row["options_hash"] == report.options_hash
        assert row["run_id"] == report.run_id
        assert row["processed_at"] is not None
    for bad in _bad_rows():
        row = rows[bad["id"]]
        assert row["status"] == "error"
        assert row["stage"] == "html"
        assert row["cleaned_html"] is None
        assert row["error"].startswith("EmptyInputError")
    assert (tmp_path / "out" / "status=error").is_dir()


def test_rerun_processes_only_what_is_not_finished(
    local_ray: Any,
    wtq_pages: list[dict[str, Any]],
    tmp_path: Path,
    write_jsonl: Callable[..., Path],
) -> None:
    from hrefine.distributed import run_stage

    out = str(tmp_path / "out")
    first = write_jsonl(tmp_path / "first.jsonl", [wtq_pages[0], _bad_rows()[0]])
    whole = write_jsonl(tmp_path / "whole.jsonl", [*wtq_pages, _bad_rows()[0]])

    one = run_stage("html", str(first), out, workers=1)
    two = run_stage("html", str(whole), out, workers=1)
    three = run_stage("html", str(whole), out, workers=1)

    assert (one.ok, one.errors) == (1, 1)
    # only the two pages the first run did not see are worked on; the failed one is finished
    assert (two.ok, two.errors, two.skipped) == (2, 0, 2)
    assert (three.processed, three.skipped) == (0, 4)
    rows = _rows(tmp_path / "out")
    assert sorted(rows) == sorted([*(p["id"] for p in wtq_pages), "empty-page"])
    assert {r["run_id"] for r in rows.values()} == {one.run_id, two.run_id}

    again = run_stage("html", str(whole), out, workers=1, retry_errors=True)
    assert (again.ok, again.errors, again.skipped) == (0, 1, 3)


def test_parquet_input_and_ids_from_content(
    local_ray: Any,
    wtq_pages: list[dict[str, Any]],
    tmp_path: Path,
    write_jsonl: Callable[..., Path],
) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq
    from hrefine.distributed import run_stage

    # no id column: each row is known by a hash of its content, stable across runs
    table = pa.table({"page": [p["html"] for p in wtq_pages[:2]]})
    pq.write_table(table, tmp_path / "pages.parquet")
    out = str(tmp_path / "out")
    first = run_stage("html", str(tmp_path / "pages.parquet"), out, text_column="page")
    second = run_stage("html", str(tmp_path / "pages.parquet"), out, text_column="page")
    assert (first.ok, second.processed, second.skipped) == (2, 0, 2)
    assert all(len(i) == 24 for i in _rows(tmp_path / "out"))


def test_output_of_other_settings_is_refused(
    local_ray: Any,
    wtq_pages: list[dict[str, Any]],
    tmp_path: Path,
    write_jsonl: Callable[..., Path],
) -> None:
    from hrefine.distributed import run_stage

    source = write_jsonl(tmp_path / "pages.jsonl", wtq_pages[:1])
    out = str(tmp_path / "out")
    run_stage("html", str(source), out)
    with pytest.raises(ConfigError, match="other settings"):
        run_stage("html", str(source), out, settings={"max_words": 128})


def test_a_missing_text_column_fails_before_any_work(
    local_ray: Any,
    wtq_pages: list[dict[str, Any]],
    tmp_path: Path,
    write_jsonl: Callable[..., Path],
) -> None:
    from hrefine.distributed import run_stage

    source = write_jsonl(tmp_path / "pages.jsonl", wtq_pages[:1])
    with pytest.raises(ConfigError, match=r"no column 'page'.*--text-column"):
        run_stage("html", str(source), str(tmp_path / "out"), text_column="page")
    assert not (tmp_path / "out").exists()
