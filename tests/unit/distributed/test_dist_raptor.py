"""The raptor stage builds one tree per group, equal to RaptorTree.build in one process, and
a rerun calls the summariser not once more (calls counted across Ray's worker processes)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

ray = pytest.importorskip("ray")
# Ray's workers cannot import this test module: its classes travel by value.
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])


class CountingSummariser:
    """A fake LLM (the point here is plumbing): the first words of each text it is asked
    about; every call appends a line to a file, which Ray's worker processes share here."""

    def __init__(self, calls: Path) -> None:
        self.calls = calls

    def __call__(self, prompt: str) -> str:
        with self.calls.open("a", encoding="utf-8") as fh:
            fh.write("call\n")
        parts = [p for p in prompt.split("\n\n") if p.strip()][-3:]
        return " ".join(" ".join(p.split()[:12]) for p in parts)

    def count(self) -> int:
        return len(self.calls.read_text().splitlines()) if self.calls.exists() else 0


def _chapters() -> list[str]:
    """Paragraph runs of a real QuALITY story, as short documents."""
    from hrefine.eval.loaders import load_dataset

    story = load_dataset("leval-quality")[0].document
    paragraphs = [" ".join(p.split()) for p in story.split("\n\n") if len(p.split()) > 30]
    # few leaves per group (at most reduction_dim + 1): one cluster, no UMAP to compile
    return [" ".join(p.split()[:80]) for p in paragraphs[:6]]


@pytest.mark.parametrize("workers", [1, 2])
def test_raptor_stage_equals_core_and_rerun_calls_no_llm(
    local_ray: Any, tmp_path: Path, write_jsonl: Callable[..., Path], workers: int
) -> None:
    from hrefine.distributed import raptor_tree_from_row, read_output, run_stage
    from hrefine.raptor import RaptorTree, Source

    texts = _chapters()
    rows = [
        {"id": f"ch{i}", "group": "a" if i < 3 else "b", "text": t} for i, t in enumerate(texts)
    ]
    rows += [
        {"id": "e1", "group": "empty", "text": " "},
        {"id": "e2", "group": "empty", "text": ""},
    ]
    source = write_jsonl(tmp_path / "docs.jsonl", rows)
    summariser = CountingSummariser(tmp_path / "calls.txt")
    settings = {"llm": summariser, "chunk_tokens": 40, "max_layers": 2}
    out = str(tmp_path / "out")

    kwargs: dict[str, Any] = {"settings": settings, "group_column": "group", "workers": workers}
    first = run_stage("raptor", str(source), out, **kwargs)
    calls = summariser.count()
    second = run_stage("raptor", str(source), out, **kwargs)

    assert (first.ok, first.errors) == (2, 1)
    assert calls > 0
    assert (second.processed, second.skipped) == (0, 3)
    assert summariser.count() == calls  # no summary made twice

    table = read_output(out)
    assert table is not None
    by_id = {r["id"]: r for r in table.to_pylist()}
    assert by_id["empty"]["status"] == "error"
    assert "empty" in by_id["empty"]["error"]

    local = CountingSummariser(tmp_path / "local.txt")
    # group "b" built in this process, with the same settings, is the same tree
    members = rows[3:6]
    sources = [Source(r["text"], metadata={"id": r["id"]}, id=r["id"]) for r in members]
    expected = RaptorTree.build(sources, llm=local, chunk_tokens=40, max_layers=2)
    got = raptor_tree_from_row(by_id["b"])
    assert got.tree.to_dict() == expected.tree.to_dict()
    assert got.tree.embeddings is not None and expected.tree.embeddings is not None
    # bit for bit: a vector does not depend on the process, the batch or the thread count
    np.testing.assert_array_equal(got.tree.embeddings, expected.tree.embeddings)
    assert got.layers == expected.layers >= 1
    question = "Who is the story about?"
    assert [n.id for n in got.retrieve(question)] == [n.id for n in expected.retrieve(question)]


def point_writer(prompt: str) -> str:
    """A fake LLM for GARLIC (plumbing): a summary point of the first words of every other
    input line, four at most."""
    lines = [line for line in prompt.split("\n") if len(line.split()) > 8]
    return "\n".join("* " + " ".join(line.split()[:12]) for line in lines[::2][:4])


@pytest.mark.parametrize("workers", [1, 2])
def test_garlic_stage_equals_core(
    local_ray: Any, tmp_path: Path, write_jsonl: Callable[..., Path], workers: int
) -> None:
    from hrefine.distributed import garlic_graph_from_row, read_output, run_stage
    from hrefine.garlic import GarlicGraph
    from hrefine.raptor import Source

    texts = _chapters()[:3]
    rows = [{"id": f"ch{i}", "text": t, "book": "one"} for i, t in enumerate(texts)]
    source = write_jsonl(tmp_path / "docs.jsonl", rows)
    settings = {"lm": point_writer, "chunk_tokens": 40}
    out = str(tmp_path / "out")
    report = run_stage(
        "garlic", str(source), out, settings=settings, group_column="book", workers=workers
    )
    assert (report.ok, report.errors) == (1, 0)

    table = read_output(out)
    assert table is not None
    (row,) = table.to_pylist()
    got = garlic_graph_from_row(row)
    sources = [Source(r["text"], metadata={"id": r["id"]}, id=r["id"]) for r in rows]
    expected = GarlicGraph.build(sources, lm=point_writer, chunk_tokens=40)
    assert got.tree.to_dict() == expected.tree.to_dict()
    assert got.tree.embeddings is not None and expected.tree.embeddings is not None
    np.testing.assert_array_equal(got.tree.embeddings, expected.tree.embeddings)
    assert row["levels"] == expected.levels >= 1


def test_a_group_that_gains_a_member_is_built_again_and_a_null_group_is_alone(
    local_ray: Any, tmp_path: Path, write_jsonl: Callable[..., Path]
) -> None:
    """A rerun does what is missing: a new document of a built group rebuilds that group (it
    is never dropped), the unchanged groups stay skipped; rows without a group value are
    groups of their own, never one group named "None"."""
    from hrefine.distributed import read_output, run_stage

    texts = _chapters()
    rows = [
        {"id": "lake", "topic": "geo", "text": texts[0]},
        {"id": "harbour", "topic": "town", "text": texts[1]},
        {"id": "lone", "topic": None, "text": texts[2]},
        {"id": "loner", "text": texts[3]},
    ]
    source = write_jsonl(tmp_path / "docs.jsonl", rows)
    settings = {"llm": CountingSummariser(tmp_path / "calls.txt"), "chunk_tokens": 40}
    kwargs: dict[str, Any] = {"settings": settings, "group_column": "topic", "workers": 1}
    out = str(tmp_path / "out")
    first = run_stage("raptor", str(source), out, **kwargs)
    assert (first.ok, first.errors) == (4, 0)

    write_jsonl(
        tmp_path / "docs.jsonl", [*rows, {"id": "glacier", "topic": "geo", "text": texts[4]}]
    )
    second = run_stage("raptor", str(source), out, **kwargs)
    # geo is built again; the three other groups are skipped (not the output's four ids)
    assert (second.ok, second.errors, second.skipped) == (1, 0, 3)

    table = read_output(out, ["id", "members", "run_id"])
    assert table is not None
    latest = {r["id"]: r for r in sorted(table.to_pylist(), key=lambda r: r["run_id"])}
    assert sorted(latest) == ["geo", "lone", "loner", "town"]
    assert json.loads(latest["geo"]["members"]) == ["glacier", "lake"]
    assert latest["geo"]["run_id"] == second.run_id
    assert json.loads(latest["lone"]["members"]) == ["lone"]
    third = run_stage("raptor", str(source), out, **kwargs)
    assert third.processed == 0
