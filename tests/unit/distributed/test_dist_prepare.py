"""The task that runs before every stage: ids, input paths, groups, and finished rows dropped
(called here directly on pyarrow tables, as Ray calls it on each batch)."""

from __future__ import annotations

import pytest

pa = pytest.importorskip("pyarrow")


def _batch() -> object:
    return pa.table(
        {
            "id": ["a", None, "c"],
            "html": ["<p>one</p>", "<p>two</p>", "<p>three</p>"],
            "book": ["x", "x", "y"],
            "path": ["/data/p.jsonl"] * 3,
        }
    )


def test_rows_without_an_id_get_a_stable_hash_of_their_content() -> None:
    from hrefine.distributed.pipeline import prepare

    out = prepare(_batch(), id_column="id", group_column=None, done=[], group_key=False)
    again = prepare(_batch(), id_column="id", group_column=None, done=[], group_key=False)
    ids = out.column("id").to_pylist()
    assert ids[0] == "a" and ids[2] == "c"
    assert len(ids[1]) == 24 and ids[1] == again.column("id").to_pylist()[1]
    assert out.column("input_path").to_pylist() == ["/data/p.jsonl"] * 3
    assert "path" not in out.column_names


def test_finished_ids_and_groups_are_dropped_before_any_work() -> None:
    from hrefine.distributed.pipeline import prepare

    out = prepare(_batch(), id_column="id", group_column=None, done=["a", "c"], group_key=False)
    assert out.num_rows == 1 and out.column("html").to_pylist() == ["<p>two</p>"]
    grouped = prepare(_batch(), id_column="id", group_column="book", done=["x"], group_key=True)
    assert grouped.column("group").to_pylist() == ["y"]
    assert grouped.column("id").to_pylist() == ["c"]


def test_a_missing_group_column_is_named() -> None:
    from hrefine.distributed.pipeline import prepare
    from hrefine.errors import ConfigError

    with pytest.raises(ConfigError, match="no group column 'shelf'"):
        prepare(_batch(), id_column="id", group_column="shelf", done=[], group_key=True)
