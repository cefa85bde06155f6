"""GARLIC output fidelity (review of the no-model graph): a summary point's documents are the
inputs it copies, and a compressor's result never repeats a returned chunk as a point."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hrefine.budget import default_counter
from hrefine.garlic import GarlicGraph, GarlicSearcher
from hrefine.garlic.visited import REPEATS_CHUNKS, fit, fit_to_budget, visited_with_metadata
from hrefine.raptor import Source
from hrefine.repeats import repeats, sentences
from hrefine.tree import NodeKind

DUP = "Dup line about Animorphs companion books."


def _hotpot(shared_data: Path) -> tuple[str, list[Source]]:
    with (shared_data / "hotpotqa" / "questions.jsonl").open() as f:
        q = json.loads(f.readline())
    docs = [
        Source("".join(p["sentences"]), {"title": p["title"]}, f"d{i}")
        for i, p in enumerate(q["paragraphs"][:6])
    ]
    docs.append(Source(f"{DUP}\n\n{DUP}", {"title": "dup"}, "dup"))
    return str(q["question"]), docs


@pytest.fixture(scope="module")
def searched(shared_data: Path) -> tuple[Any, Any, list[Source]]:
    question, docs = _hotpot(shared_data)
    graph = GarlicGraph.build(docs)
    # as GarlicCompressor searches with fill (the budget bounds the leaves kept)
    searcher = GarlicSearcher(graph, options=graph.options.replace(max_tokens=None))
    return graph, searcher.search(question, fill_tokens=5000), docs


def test_a_no_model_point_is_sourced_to_the_inputs_it_copies(searched: Any) -> None:
    graph, result, docs = searched
    described = visited_with_metadata(result, graph.tree)
    points = [d for d in described if d.kind == "summary"]
    assert points
    by_id = {s.id: s.text for s in docs}
    dup = [d for d in points if d.node.text == DUP]
    assert [d.sources for d in dup] == [["dup"]]  # was every document of its batch
    for d in points:
        own = sentences(d.node.text)
        # every document named holds one of its sentences, every sentence is in one named
        assert all(any(s in by_id[str(src)] for s in own) for src in d.sources), d.node.text
        assert all(any(s in by_id[str(src)] for src in d.sources) for s in own), d.node.text
        assert "hrefine_copies" not in d.metadata


def test_the_edges_still_go_to_every_input_of_the_batch(searched: Any) -> None:
    graph, _, _ = searched
    tree = graph.tree
    narrower = 0
    for node in tree:
        if node.kind != NodeKind.SUMMARY:
            continue
        copies = node.metadata["hrefine_copies"]
        assert set(copies) <= set(node.children)
        assert abs(sum(tree.weight(node.id, c) for c in node.children) - 1.0) < 1e-6
        narrower += len(copies) < len(node.children)
    assert narrower  # the search follows the batch's edges, the sources only what is copied


def test_fit_leaves_out_points_that_repeat_returned_chunks(searched: Any) -> None:
    graph, result, _ = searched
    counter = default_counter()
    for budget in (300, 600, 5000):
        fitted = fit(result, budget, counter)
        assert fitted.kept == fit_to_budget(result, budget, counter)
        kept = [graph.tree[i] for i in fitted.kept]
        chunks = [n.text for n in kept if n.kind == NodeKind.CHUNK]
        assert chunks
        assert not [n.text for n in kept if n.kind != NodeKind.CHUNK and repeats(n.text, chunks)]
        assert sum(counter.count(n.text) for n in kept) <= budget
        assert fitted.dropped  # the extractive points restate the chunks returned
        assert set(fitted.dropped.values()) == {REPEATS_CHUNKS}
        assert not set(fitted.dropped) & set(fitted.kept)
        assert "repeat returned chunks" in fitted.notes[0]
    # at 5000 every chunk fits: the 350 tokens of repeated points are gone
    assert all(graph.tree[i].kind == NodeKind.CHUNK for i in fit(result, 5000, counter).kept)


def test_raptor_and_garlic_split_sentences_with_one_function() -> None:
    from hrefine.raptor import extractive, retrieve

    assert extractive.sentences is sentences
    assert retrieve.extract_sentences is sentences
    assert repeats("A b.  C d.", ["x A b. y", "C\nd. z"])
    assert not repeats("A b. C e.", ["x A b. y", "C d. z"])
    assert not repeats("  ", ["anything"])
