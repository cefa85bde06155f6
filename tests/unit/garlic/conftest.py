"""GARLIC fixtures: a real HotpotQA item, and the graph SmolLM2 builds over it (once a session)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from hrefine.garlic.graph import GarlicGraph
from hrefine.raptor.build import Source

#: The SmolLM2 build: small leaves and batches, so three batches make level 1 and one the top.
SMOL_SETTINGS: dict[str, Any] = {"chunk_tokens": 64, "batch_tokens": 400, "summary_tokens": 48}


@pytest.fixture(scope="session")
def hotpot_item(shared_data: Path) -> Any:
    from hrefine.eval.loaders import load_dataset

    return load_dataset("hotpotqa", data_dir=shared_data)[0]


@pytest.fixture(scope="session")
def paragraphs(hotpot_item: Any) -> list[Source]:
    """The item's first three paragraphs, each a Source with its title as id and metadata."""
    from hrefine.eval.loaders import hotpot_paragraph_text

    return [
        Source(hotpot_paragraph_text(p), {"title": p["title"]}, p["title"])
        for p in hotpot_item.extra["paragraphs"][:3]
    ]


@pytest.fixture(scope="session")
def smol_graph(paragraphs: list[Source], embedder: Any) -> tuple[GarlicGraph, float]:
    """The graph SmolLM2 builds over ``paragraphs`` (attention edges), and its seconds."""
    from lm_fixture import load_default_lm

    lm = load_default_lm()
    embedder.embed(["load the embedder before the clock starts"])
    started = time.perf_counter()
    graph = GarlicGraph.build(paragraphs, lm=lm, embedder=embedder, **SMOL_SETTINGS)
    return graph, time.perf_counter() - started
