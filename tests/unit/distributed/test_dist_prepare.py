"""The task that runs before every stage: ids, input paths, groups, the stage's columns at
fixed types, and finished rows dropped (called here directly on pyarrow tables, as Ray calls
it on each block)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

pa = pytest.importorskip("pyarrow")

_HTML = {"html": "string"}


def _batch() -> Any:
    return pa.table(
        {
            "id": ["a", None, "c"],
            "html": ["<p>one</p>", "<p>two</p>", "<p>three</p>"],
            "book": ["x", "x", "y"],
            "path": ["/data/p.jsonl"] * 3,
        }
    )


def _prepare(batch: Any, **kwargs: Any) -> Any:
    from hrefine.distributed.pipeline import prepare

    given = {"columns": _HTML, "id_column": "id", "group_column": None, "done": []}
    return prepare(batch, **{**given, "group_key": False, **kwargs})


def test_rows_without_an_id_get_a_stable_hash_of_their_content() -> None:
    out = _prepare(_batch())
    ids = out.column("id").to_pylist()
    assert ids[0] == "a" and ids[2] == "c"
    assert len(ids[1]) == 24 and ids[1] == _prepare(_batch()).column("id").to_pylist()[1]
    assert out.column("input_path").to_pylist() == ["/data/p.jsonl"] * 3
    assert "path" not in out.column_names and "book" not in out.column_names


def test_a_content_id_ignores_the_nulls_a_block_fills_in() -> None:
    """Ray gives a JSON row the keys other rows of its block have, as nulls: the id of a row
    must not depend on the rows it was read with."""
    columns = {"text": "string", "title": "string"}
    alone = pa.Table.from_pylist([{"text": "Doc B body."}])
    beside = pa.Table.from_pylist([{"text": "Doc A body.", "title": "A"}, {"text": "Doc B body."}])
    one = _prepare(alone, columns=columns).column("id").to_pylist()[0]
    two = _prepare(beside, columns=columns).column("id").to_pylist()[1]
    assert one == two
    # a row with every column set keeps the id of earlier versions (all its columns hashed)
    old = hashlib.sha256(json.dumps({"text": "Doc B body."}, sort_keys=True).encode()).hexdigest()
    assert one == old[:24]


def test_finished_ids_are_dropped_before_any_work() -> None:
    out = _prepare(_batch(), done=["a", "c"])
    assert out.num_rows == 1 and out.column("html").to_pylist() == ["<p>two</p>"]


def test_groups_are_named_by_their_column_and_a_null_group_is_its_own() -> None:
    batch = pa.Table.from_pylist(
        [
            {"id": "lake", "topic": "geo", "text": "a"},
            {"id": "glacier", "topic": None, "text": "b"},
            {"id": "harbour", "text": "c"},
            {"id": "market", "topic": None, "text": "d"},
        ]
    )
    out = _prepare(batch, columns={"text": "string"}, group_column="topic", group_key=True)
    assert out.column("group").to_pylist() == ["geo", "glacier", "harbour", "market"]
    # a block without the column at all: every row its own group, too
    lone = _prepare(_batch(), group_column="shelf", group_key=True, done=["x"])
    assert lone.column("group").to_pylist() == lone.column("id").to_pylist()
    assert lone.num_rows == 3  # a group stage drops whole groups later, not rows here


def test_columns_take_one_type_whatever_the_block_read() -> None:
    """documents: a text or a list; max_tokens with a gap (floats); other columns dropped,
    so blocks read with other types make one dataset."""
    columns = {"documents": "list<string>", "query": "string", "max_tokens": "int64"}
    batch = pa.table(
        {
            "id": [1, 2, 3, 4],
            "query": ["cats", "dogs", "seven", "owls"],
            "documents": ["Cats purr.", "Dogs bark.", "Seven.", "Owls hoot."],
            "max_tokens": [20.0, float("nan"), 5.0, 2.5],
            "year": [2001, 2002, 2003, 2004],
        }
    )
    out = _prepare(batch, columns=columns)
    assert out.schema.field("documents").type == pa.list_(pa.string())
    assert out.column("documents").to_pylist()[0] == ["Cats purr."]
    assert out.column("max_tokens").to_pylist()[:3] == [20, None, 5]
    assert out.column("id").to_pylist() == ["1", "2", "3", "4"]
    assert "year" not in out.column_names
    from hrefine.distributed.rows import INPUT_ERROR

    errors = out.column(INPUT_ERROR).to_pylist()
    assert errors[:3] == [None, None, None]
    assert "'max_tokens'" in errors[3] and "whole number" in errors[3]
    listed = _prepare(pa.table({"documents": [["A.", "B."]], "query": [7]}), columns=columns)
    assert listed.column("documents").to_pylist() == [["A.", "B."]]
    assert listed.column("query").to_pylist() == ["7"]
    assert pa.concat_tables([out, listed.select(out.column_names)]).num_rows == 5


def test_a_group_is_dropped_only_when_built_from_the_same_members() -> None:
    from hrefine.distributed.rows import drop_built_groups

    def group(name: str, ids: list[str]) -> Any:
        return pa.table({"id": ids, "group": [name] * len(ids)})

    built = {"geo": ("lake",), "town": ("harbour",), "old": None}
    assert drop_built_groups(group("town", ["harbour"]), built=built).num_rows == 0
    assert drop_built_groups(group("geo", ["glacier", "lake"]), built=built).num_rows == 2
    assert drop_built_groups(group("new", ["x"]), built=built).num_rows == 1
    # a failure recorded without its members (earlier versions) stays finished
    assert drop_built_groups(group("old", ["y", "z"]), built=built).num_rows == 0


def test_a_counted_block_or_group_is_counted_once_however_often_ray_runs_it() -> None:
    from hrefine.distributed.cluster import _Counter

    counter = _Counter()
    counter.add("rows:block-1", 2)
    counter.add("rows:block-1", 2)  # the same block's task, retried after a failure
    counter.add("group:g", 1)
    assert counter.read() == 3


def test_skipped_rows_are_counted_per_block_through_the_runs_actor(local_ray: Any) -> None:
    from hrefine.distributed.cluster import tally
    from hrefine.distributed.rows import drop_built_groups

    counter = tally()
    try:
        for _ in range(2):  # a task Ray runs again reads the same block
            kept = _prepare(_batch(), done=["a", "c"], tally=counter)
            assert kept.num_rows == 1
        other = _batch().set_column(3, "path", pa.array(["/data/q.jsonl"] * 3))
        _prepare(other, done=["a"], tally=counter)  # another file's block: its own count
        group = pa.table({"id": ["a", "b"], "group": ["g", "g"]})
        for _ in range(2):
            assert drop_built_groups(group, built={"g": ["b", "a"]}, tally=counter).num_rows == 0
        assert local_ray.get(counter.read.remote()) == 2 + 1 + 1
    finally:
        local_ray.kill(counter)


def test_a_binary_text_column_is_decoded_as_a_pages_bytes_are() -> None:
    from hrefine.distributed.stages import HtmlStage

    stage = HtmlStage({}, {}, "text")
    french = "<p>Le contrat est régi par le droit français.</p>"
    for encoding in ("utf-8", "latin-1", "utf-16"):
        assert stage.text({"text": french.encode(encoding)}) == french
