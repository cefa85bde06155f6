"""#53 items 2 and 4: with no LLM given, GARLIC builds and searches with no model.

The measured choice (docs/garlic.md): SmolLM2 kept no more of the evidence than the no-model
stand-in on HotpotQA and Qasper, and took minutes a paper on 2 cores. So the default graph's
summary points are sentences of the source, its edges are embedding edges, and a searcher of it
needs no model; a graph an LM built (attention edges) is still searched by an LM.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from hrefine.garlic import ExtractiveGarlicLM, GarlicGraph, GarlicSearcher
from hrefine.raptor.build import Source
from hrefine.tree import NodeKind

_SENTENCE = re.compile(r"(?<=[.!?;])\s+")
#: Small leaves and batches, so the three paragraphs make more than one level.
SETTINGS: dict[str, Any] = {"chunk_tokens": 64, "batch_tokens": 400, "summary_tokens": 48}


def test_the_default_graph_writes_only_sentences_of_the_source(
    paragraphs: list[Source], embedder: Any
) -> None:
    graph = GarlicGraph.build(paragraphs, embedder=embedder, **SETTINGS)
    assert graph.stats["llm"] == "extractive"
    assert graph.edge_mode == "embedding"
    # The stand-in wrote every batch's points, and none of that is an LLM call.
    assert sum(graph.stats["batches_per_level"]) > 0 and graph.stats["calls"] == 0
    source = " ".join(" ".join(p.text for p in paragraphs).split())
    points = [n for n in graph.tree if n.kind != NodeKind.CHUNK]
    assert points, "the default graph has summary points above its leaves"
    for node in points:
        for sentence in _SENTENCE.split(" ".join(node.text.split())):
            assert sentence in source, f"not a sentence of the source: {sentence!r}"


def test_a_searcher_of_the_default_graph_needs_no_model(
    paragraphs: list[Source], embedder: Any, hotpot_item: Any
) -> None:
    graph = GarlicGraph.build(paragraphs, embedder=embedder, **SETTINGS)
    searcher = GarlicSearcher(graph)
    assert isinstance(searcher.lm, ExtractiveGarlicLM)
    assert searcher.mode == "prompt"
    result = searcher.search(hotpot_item.question, fill_tokens=120)
    assert any(node.level == 0 for node in result.visited)  # source text, not only points


@pytest.mark.lm
def test_a_graph_an_lm_built_is_searched_by_an_lm(smol_graph: tuple[GarlicGraph, float]) -> None:
    graph, _ = smol_graph
    assert graph.edge_mode == "attention"
    assert GarlicSearcher(graph).mode == "attention"


def test_default_leaves_are_the_size_of_chunk_retrieval_units(
    shared_data: Any, embedder: Any
) -> None:
    # The paper's 300-token leaves fit once into a 512-token budget; the default's ~128 tokens
    # (the unit of the chunk retrieval GARLIC replaces) let a compressor's search fill it with
    # several pieces of evidence.
    from hrefine.budget import get_counter
    from hrefine.eval.loaders import load_dataset

    paper = load_dataset("qasper", data_dir=shared_data)[0]
    counter = get_counter(None)
    graph = GarlicGraph.build([paper.document], embedder=embedder)
    leaves = [n for n in graph.tree if n.kind == NodeKind.CHUNK]
    # Pieces are counted apart and joined, so a leaf's own count may pass 128 by a token or two.
    assert max(counter.count(n.text) for n in leaves) <= 132
    assert len(leaves) >= counter.count(paper.document) // 128
    result = GarlicSearcher(graph).search(paper.question, fill_tokens=512)
    assert sum(1 for n in result.visited if n.level == 0) >= 3
