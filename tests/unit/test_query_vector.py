"""A caller's query embedding (``query_vector``) in RAPTOR and GARLIC searches, and its check.

Small trees over texts written here, embedded with the keyword embedder (a vector given is
compared with one the tree's own embedder makes, so no model is needed), summarised with the
instant ``raptor_fakes`` summariser or GARLIC's no-model extractive points.
"""

from __future__ import annotations

import numpy as np
import pytest
from hrefine._query import check_query_vector
from hrefine.errors import ConfigError, InputTypeError
from hrefine.garlic import GarlicGraph, GarlicSearcher
from hrefine.raptor import RaptorTree
from hrefine.testing import KeywordEmbedder, ScriptedLM
from raptor_fakes import Summariser

TEXTS = [
    "The Nile floods every summer. Farmers along the Nile plant after the flood. "
    "The Aswan dam holds the Nile flood back in a lake.",
    "Vesuvius buried Pompeii in ash in the year 79. Pliny watched the eruption of Vesuvius. "
    "Volcanologists measure gas to forecast an eruption.",
    "The Shinkansen trains run between Tokyo and Osaka. Shinkansen trains are fast. "
    "Steam trains were replaced by electric trains.",
]
QUESTION = "When did Vesuvius bury Pompeii?"
OTHER = "How fast are the Shinkansen trains?"


@pytest.fixture(scope="module")
def words() -> KeywordEmbedder:
    return KeywordEmbedder()


@pytest.fixture(scope="module")
def raptor(words: KeywordEmbedder) -> RaptorTree:
    return RaptorTree.build(
        TEXTS, llm=Summariser(), embedder=words, chunk_tokens=16, reduction_dim=16
    )


@pytest.fixture(scope="module")
def graph(words: KeywordEmbedder) -> GarlicGraph:
    return GarlicGraph.build(
        TEXTS, embedder=words, chunk_tokens=16, batch_tokens=256, summary_tokens=48
    )


def test_check_query_vector_takes_a_flat_vector_of_the_nodes_size() -> None:
    rows = np.ones((3, 4), dtype=np.float32)
    got = check_query_vector([1, 2, 3, 4], rows, nodes="the nodes")
    assert got.dtype == np.float64 and got.tolist() == [1.0, 2.0, 3.0, 4.0]  # not normalised
    assert check_query_vector(np.ones((1, 4)), rows, nodes="the nodes").shape == (4,)
    assert check_query_vector([1.0, 2.0], None, nodes="the nodes").shape == (2,)
    with pytest.raises(ConfigError, match="has 3 dimensions but the nodes have 4; give an"):
        check_query_vector([1, 2, 3], rows, nodes="the nodes")
    with pytest.raises(ConfigError, match="; use the other model"):
        check_query_vector([1, 2, 3], rows, nodes="the nodes", fix="use the other model")
    with pytest.raises(InputTypeError, match="one flat vector"):
        check_query_vector(np.ones((2, 4)), rows, nodes="the nodes")
    with pytest.raises(InputTypeError, match="sequence of numbers"):
        check_query_vector("abcd", rows, nodes="the nodes")
    with pytest.raises(ConfigError, match="NaN or infinite"):
        check_query_vector([1.0, float("inf"), 0.0, 0.0], rows, nodes="the nodes")


def test_raptor_query_vector_replaces_only_the_query_embedding(
    raptor: RaptorTree, words: KeywordEmbedder
) -> None:
    own = raptor.embedder.embed_query(QUESTION)
    assert raptor.retrieve(QUESTION, query_vector=own) == raptor.retrieve(QUESTION)
    assert raptor.retrieve(QUESTION, query_vector=None) == raptor.retrieve(QUESTION)
    other = [float(x) for x in raptor.embedder.embed_query(OTHER)]
    before = words.calls
    got = raptor.retrieve(QUESTION, k=2, query_vector=other, lexical_weight=0.0)
    assert words.calls == before  # nothing embedded
    assert got == raptor.retrieve(OTHER, k=2, lexical_weight=0.0)
    with pytest.raises(ConfigError, match="8 dimensions but the tree's nodes have 256"):
        raptor.retrieve(QUESTION, query_vector=[1.0] * 8)


async def test_raptor_aretrieve_takes_a_query_vector(raptor: RaptorTree) -> None:
    other = raptor.embedder.embed_query(OTHER)
    got = await raptor.aretrieve(QUESTION, k=2, query_vector=other)
    assert got == raptor.retrieve(QUESTION, k=2, query_vector=other)
    assert got != raptor.retrieve(QUESTION, k=2)
    with pytest.raises(ConfigError, match="8 dimensions"):
        await raptor.aretrieve(QUESTION, query_vector=[1.0] * 8)


def test_garlic_query_vector_replaces_only_the_query_embedding(graph: GarlicGraph) -> None:
    searcher = GarlicSearcher(graph, llm=ScriptedLM(["No"] * 50))
    own = graph.embedder.embed_query(QUESTION)
    assert searcher.similarities(QUESTION, own).tolist() == searcher.similarities(QUESTION).tolist()
    other = graph.embedder.embed_query(OTHER)
    assert searcher.similarities(QUESTION, other).tolist() == searcher.similarities(OTHER).tolist()
    lm = ScriptedLM(["No"] * 50)
    by_vector = GarlicSearcher(graph, llm=lm).search(QUESTION, max_steps=3, query_vector=other)
    by_text = GarlicSearcher(graph, llm=ScriptedLM(["No"] * 50)).search(OTHER, max_steps=3)
    assert [v.id for v in by_vector.visited] == [v.id for v in by_text.visited]
    by_question = GarlicSearcher(graph, llm=ScriptedLM(["No"] * 50)).search(QUESTION, max_steps=3)
    assert [v.id for v in by_vector.visited] != [v.id for v in by_question.visited]
    assert by_vector.query == QUESTION and all(QUESTION in p for p in lm.prompts)
    with pytest.raises(ConfigError, match="8 dimensions but the graph's nodes have 256"):
        searcher.search(QUESTION, query_vector=[1.0] * 8)


def test_garlic_an_embedder_of_another_size_still_names_the_fix(graph: GarlicGraph) -> None:
    searcher = GarlicSearcher(graph, llm=ScriptedLM(["No"]), embedder=KeywordEmbedder(dim=32))
    with pytest.raises(ConfigError, match="search with the embedder the graph was built with"):
        searcher.search(QUESTION)
