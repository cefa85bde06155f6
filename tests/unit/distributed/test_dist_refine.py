"""The structure and refine stages on a local Ray instance equal the single-process core on
real L-Eval documents and WTQ pages, with the embedded embedder loaded once per actor."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("ray")


def _by_id(output: Path) -> dict[str, dict[str, Any]]:
    from hrefine.distributed import read_output

    table = read_output(str(output))
    assert table is not None
    return {r["id"]: r for r in table.to_pylist()}


@pytest.mark.parametrize("workers", [1, 2])
def test_structure_stage_equals_core(
    workers: int,
    local_ray: Any,
    leval_docs: list[dict[str, Any]],
    tmp_path: Path,
    write_jsonl: Callable[..., Path],
) -> None:
    from hrefine.distributed import run_stage
    from hrefine.longrefiner import LongRefiner

    bad = {"id": "blank", "text": "  \n  "}
    source = write_jsonl(tmp_path / "docs.jsonl", [*leval_docs, bad])
    report = run_stage("structure", str(source), str(tmp_path / "out"), workers=workers)

    assert (report.ok, report.errors) == (2, 1)
    rows = _by_id(tmp_path / "out")
    refiner = LongRefiner()
    for doc in leval_docs:
        expected = refiner.structure(doc["text"])
        row = rows[doc["id"]]
        assert row["source"] == expected.source
        assert json.loads(row["structure"]) == json.loads(json.dumps(expected.tree.to_dict()))
        assert row["sections"] == sum(1 for n in expected.tree.nodes if n.kind == "section")
        assert row["sections"] > 1
    assert rows["blank"]["status"] == "error"
    assert rows["blank"]["error"].startswith("EmptyInputError")


@pytest.mark.parametrize("workers", [1, 2])
def test_refine_stage_equals_core_for_longrefiner_and_htmlrag(
    workers: int,
    local_ray: Any,
    leval_docs: list[dict[str, Any]],
    wtq_pages: list[dict[str, Any]],
    tmp_path: Path,
    write_jsonl: Callable[..., Path],
) -> None:
    from hrefine.distributed import run_stage
    from hrefine.html import HtmlPruner
    from hrefine.longrefiner import LongRefiner

    pairs = [{"id": d["id"], "query": d["query"], "documents": [d["text"]]} for d in leval_docs]
    pairs.append({"id": "no-query", "query": "", "documents": [leval_docs[0]["text"]]})
    source = write_jsonl(tmp_path / "pairs.jsonl", pairs)
    # BM25, then the default scorer (the embedded embedder, run in Ray's worker processes)
    for scorer in ("bm25", None):
        out = tmp_path / f"lr-{scorer}"
        settings = {"scorer": scorer} if scorer else {}
        report = run_stage(
            "refine", str(source), str(out), max_tokens=200, settings=settings, workers=workers
        )
        assert (report.ok, report.errors) == (2, 1)
        rows = _by_id(out)
        refiner = LongRefiner(**settings)
        for d in leval_docs:
            expected = refiner.refine(d["query"], [d["text"]], 200)
            assert rows[d["id"]]["text"] == expected.text
            assert rows[d["id"]]["tokens"] == expected.tokens <= 200
            assert rows[d["id"]]["method"] == "longrefiner"
        assert rows["no-query"]["status"] == "error"

    # HtmlRAG with the embedded embedder (loaded once in the actor) on real pages
    pages = [{"id": p["id"], "query": p["query"], "documents": p["html"]} for p in wtq_pages[:2]]
    source = write_jsonl(tmp_path / "pages.jsonl", pages)
    report = run_stage(
        "refine",
        str(source),
        str(tmp_path / "hr"),
        method="htmlrag",
        max_tokens=300,
        workers=workers,
    )
    assert (report.ok, report.errors) == (2, 0)
    rows = _by_id(tmp_path / "hr")
    pruner = HtmlPruner()
    for p in wtq_pages[:2]:
        expected = pruner.prune(p["html"], p["query"], 300)
        assert rows[p["id"]]["text"] == expected.html
        assert rows[p["id"]]["tokens"] == expected.tokens <= 300
