"""#53 item 1: GARLIC fuses the BM25 match of a node's words into ``s`` (``lexical_weight``), with
the same fusion as RAPTOR and LongRefiner (:func:`hrefine.models.lexical.fuse`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hrefine.errors import ConfigError
from hrefine.garlic import GarlicGraph, GarlicOptions, GarlicSearcher
from hrefine.models.lexical import BM25Scorer, with_match
from hrefine.raptor.build import Source


@pytest.fixture(scope="module")
def graph(hotpot_item: Any, embedder: Any) -> GarlicGraph:
    """The default (no-model) graph of the item's ten paragraphs."""
    from hrefine.eval.loaders import hotpot_paragraph_text

    sources = [
        Source(hotpot_paragraph_text(p), {"title": p["title"]}, p["title"])
        for p in hotpot_item.extra["paragraphs"]
    ]
    return GarlicGraph.build(sources, embedder=embedder, chunk_tokens=128)


def test_a_heavy_lexical_weight_reads_the_best_bm25_match_first(
    graph: GarlicGraph, hotpot_item: Any
) -> None:
    question = hotpot_item.question
    top = {int(i) for i in graph.top_level()}
    texts = [n.text for n in graph.tree]
    match = BM25Scorer().score(question, texts)
    candidates = [i for i in range(len(texts)) if i not in top]
    best = max(float(match[i]) for i in candidates)
    assert best > 0  # the question shares words with the paragraphs
    result = GarlicSearcher(graph, lexical_weight=1000.0).search(question, max_steps=1)
    first = [v.id for v in result.visited if v.step == 1]
    assert len(first) == 1 and float(match[first[0]]) == pytest.approx(best)


def test_no_lexical_weight_is_the_cosine_walk(graph: GarlicGraph, hotpot_item: Any) -> None:
    question = hotpot_item.question
    plain = GarlicSearcher(graph).search(question, max_steps=3)
    zero = GarlicSearcher(graph, lexical_weight=0.0).search(question, max_steps=3)
    assert [v.id for v in plain.visited] == [v.id for v in zero.visited]
    assert GarlicOptions().lexical_weight == 0.0


def test_with_match_adds_nothing_at_weight_zero_and_checks_the_setting() -> None:
    dense = np.array([0.2, 0.5, 0.1])
    texts = ["apples and pears", "pears", "plums"]
    assert np.array_equal(with_match("pears", texts, dense, 0.0), dense)
    fused = with_match("plums", texts, dense, 1.0)
    assert fused[2] == pytest.approx(1.1) and fused[0] == pytest.approx(0.2)
    with pytest.raises(ConfigError, match="lexical_weight"):
        GarlicOptions(lexical_weight=-1.0)
