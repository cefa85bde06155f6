"""A local Ray instance (2 CPUs, no dashboard, workers offline) shared by the distributed tests,
and small corpora of real pages and documents from the shared evaluation data."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(scope="session")
def local_ray() -> Iterator[Any]:
    ray = pytest.importorskip("ray")
    from hrefine.distributed import offline_runtime_env

    started = not ray.is_initialized()
    if started:
        ray.init(
            num_cpus=2,
            include_dashboard=False,
            log_to_driver=False,
            configure_logging=False,
            runtime_env=offline_runtime_env(),
        )
    import ray.data as ray_data

    # On 2 CPUs the sort shuffle groups a handful of rows faster than the default hash
    # shuffle, which starts aggregator actors (the RAPTOR stage groups rows).
    context = ray_data.DataContext.get_current()
    strategy = context.shuffle_strategy
    context.shuffle_strategy = "sort_shuffle_pull_based"
    yield ray
    context.shuffle_strategy = strategy
    if started:
        ray.shutdown()


def _write_jsonl(path: Path, rows: Sequence[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def write_jsonl() -> Callable[[Path, Sequence[dict[str, Any]]], Path]:
    """``write_jsonl(path, rows)`` writes ``rows`` as JSON lines to ``path``."""
    return _write_jsonl


@pytest.fixture(scope="session")
def wtq_pages() -> list[dict[str, Any]]:
    """Three real Wikipedia pages of WTQ, each with one of its questions."""
    from hrefine.eval.loaders import load_dataset

    rows: dict[str, dict[str, Any]] = {}
    for item in load_dataset("wtq"):
        if item.doc_id not in rows:
            rows[item.doc_id] = {"id": item.doc_id, "html": item.document, "query": item.question}
        if len(rows) == 3:
            break
    return list(rows.values())


@pytest.fixture(scope="session")
def leval_docs() -> list[dict[str, Any]]:
    """Two real long documents of L-Eval (Qasper papers), each with one of its questions."""
    from hrefine.eval.loaders import load_dataset

    rows: dict[str, dict[str, Any]] = {}
    for item in load_dataset("leval-qasper"):
        if item.doc_id not in rows:
            rows[item.doc_id] = {"id": item.doc_id, "text": item.document, "query": item.question}
        if len(rows) == 2:
            break
    return list(rows.values())
