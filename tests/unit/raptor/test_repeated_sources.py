"""A document given twice to a RAPTOR tree or a GARLIC graph is stored once.

Before, its chunks were leaves twice: summarised twice and returned twice by one retrieval
(the budget spent on the same text). Small texts, the keyword embedder and the fake
summariser.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hrefine.errors import PersistenceError
from hrefine.garlic import GarlicGraph
from hrefine.raptor import RaptorTree
from hrefine.testing import KeywordEmbedder
from hrefine.tree import NodeKind
from raptor_fakes import TOPICS, Summariser

SETTINGS: dict[str, Any] = {"chunk_tokens": 20, "reduction_dim": 8}
QUESTION = "volcano lava eruption"


def _leaf_texts(tree: Any) -> list[str]:
    return [tree[i].text for i in tree.leaves if tree[i].kind == NodeKind.CHUNK]


def test_a_repeated_document_adds_no_leaf_and_is_never_returned_twice() -> None:
    docs = [TOPICS["volcano"], TOPICS["bread"], TOPICS["volcano"], TOPICS["chess"]]
    raptor = RaptorTree.build(docs, llm=Summariser(), embedder=KeywordEmbedder(), **SETTINGS)
    once = RaptorTree.build(
        [TOPICS["volcano"], TOPICS["bread"], "", TOPICS["chess"]],
        llm=Summariser(),
        embedder=KeywordEmbedder(),
        **SETTINGS,
    )
    assert _leaf_texts(raptor.tree) == _leaf_texts(once.tree)
    assert raptor.tree.metadata["repeated_sources"] == [[2, 0]]
    texts = [n.text for n in raptor.retrieve(QUESTION, max_tokens=400)]
    assert len(texts) == len(set(texts)) and texts
    # an insert of a text the tree holds adds nothing either, and is recorded
    before = len(raptor)
    raptor.insert([TOPICS["bread"]])
    assert len(raptor) == before
    assert raptor.tree.metadata["repeated_sources"] == [[2, 0], [4, 1]]
    # a tree of distinct documents records none (its saved form is as before)
    assert "repeated_sources" not in once.tree.metadata


def test_the_record_survives_a_save_and_a_forged_one_is_refused(tmp_path: Path) -> None:
    docs = [TOPICS["volcano"], TOPICS["volcano"]]
    raptor = RaptorTree.build(docs, llm=Summariser(), embedder=KeywordEmbedder(), **SETTINGS)
    raptor.save(tmp_path / "t")
    loaded = RaptorTree.load(tmp_path / "t", embedder=KeywordEmbedder())
    assert loaded.tree.metadata["repeated_sources"] == [[1, 0]]
    raptor.tree.metadata["repeated_sources"] = [[0, 1]]  # a first copy after its repeat
    with pytest.raises(PersistenceError, match="repeated sources"):
        RaptorTree.from_tree(raptor.tree, raptor.options, embedder=KeywordEmbedder())
    graph = GarlicGraph.build(docs, embedder=KeywordEmbedder(), chunk_tokens=20)
    graph.tree.metadata["repeated_sources"] = "1"
    with pytest.raises(PersistenceError, match="repeated sources"):
        GarlicGraph.from_tree(graph.tree, graph.options, embedder=KeywordEmbedder())


def test_a_garlic_graph_stores_a_repeated_document_once() -> None:
    docs = [TOPICS["volcano"], TOPICS["bread"], TOPICS["volcano"]]
    graph = GarlicGraph.build(docs, embedder=KeywordEmbedder(), chunk_tokens=20)
    chunks = _leaf_texts(graph.tree)
    assert len(chunks) == len(set(chunks))
    assert graph.tree.metadata["repeated_sources"] == [[2, 0]]
