"""The tree retrievers read a ``QueryBundle`` as LlamaIndex's ``VectorIndexRetriever`` does.

Its ``embedding`` when set; else the mean of the index embedder's embeddings of its
``custom_embedding_strs`` (what ``HyDEQueryTransform`` sets); else ``query_str`` is embedded,
exactly as before. What reads text (GARLIC's LLM prompt, the BM25 match) reads ``query_str``.
Both indexes use the real embedded embedder: which nodes a vector retrieves depends on it.
RAPTOR summarises with the instant ``raptor_fakes`` summariser, GARLIC searches with the
``garlic_fakes`` LLM (Yes once it has read ``FACT``, whatever the question).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from garlic_fakes import FACT, SMALL, garlic_llm, hotpot, hotpot_paragraphs
from hrefine.errors import ConfigError, EmptyInputError, InputTypeError
from hrefine.garlic import GarlicSearcher
from hrefine.models import Embedder
from hrefine.testing import KeywordEmbedder, ScriptedLM
from llama_index.core import Document
from llama_index.core.base.embeddings.base import mean_agg
from llama_index.core.indices.query.query_transform import HyDEQueryTransform
from llama_index.core.llms import CompletionResponse, CustomLLM, LLMMetadata
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.retrievers import TransformRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle
from raptor_fakes import Summariser

from llamaindex_hrefine import GarlicRetriever, RaptorIndex

TEXTS = {
    "rivers": (
        "The Nile is the longest river in Africa and flows north into the Mediterranean Sea. "
        "Farmers in Egypt have depended on the yearly Nile flood for thousands of years. "
        "The Amazon carries more water than any other river on Earth. "
        "River dolphins, piranhas and giant otters live in the Amazon and its tributaries."
    ),
    "volcanoes": (
        "Mount Vesuvius erupted in the year 79 and buried the Roman town of Pompeii in ash. "
        "Pliny the Younger watched the eruption from across the bay and described it in letters. "
        "Krakatoa exploded in 1883 with a sound heard nearly five thousand kilometres away. "
        "Volcanologists measure gas, ground swelling and small earthquakes to forecast eruptions."
    ),
    "trains": (
        "The Shinkansen opened in 1964 between Tokyo and Osaka in time for the Olympic Games. "
        "Its trains run at up to 320 kilometres per hour on dedicated tracks. "
        "The Trans-Siberian Railway links Moscow with Vladivostok on the Pacific coast. "
        "George Stephenson built the Rocket locomotive for the Rainhill Trials of 1829."
    ),
}
#: Small trees; ranked by the cosine alone (no BM25 match), as a vector index ranks, so a
#: vector retrieves exactly what its text does.
SETTINGS: dict[str, Any] = {
    "chunk_tokens": 40,
    "cluster_max_tokens": 200,
    "reduction_dim": 16,
    "lexical_weight": 0.0,
}
#: A per-query setting that turns the BM25 match on.
BM25 = {"lexical_weight": 0.5}
QUESTION = "When did Vesuvius bury Pompeii?"
OTHER = "How fast do the Shinkansen trains run?"
#: What the fake HyDE LLM writes: a hypothetical answer about trains, not volcanoes.
HYDE_DOC = "Bullet trains in Japan run at 320 kilometres per hour between Tokyo and Osaka."


class HydeLLM(CustomLLM):
    """A LlamaIndex LLM that answers every prompt with :data:`HYDE_DOC`."""

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="hyde-fake")

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return CompletionResponse(text=HYDE_DOC)

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        raise NotImplementedError


def documents() -> list[Document]:
    return [Document(text=text, id_=f"doc-{name}") for name, text in TEXTS.items()]


@pytest.fixture(scope="module")
def raptor(embedder: Embedder) -> RaptorIndex:
    return RaptorIndex.from_documents(
        documents(), llm=Summariser(), embed_model=embedder, **SETTINGS
    )


@pytest.fixture(scope="module")
def garlic(shared_data: Path) -> GarlicRetriever:
    docs = [Document(text=text, id_=title) for title, text in hotpot_paragraphs(shared_data)]
    return GarlicRetriever.from_documents(docs, llm=ScriptedLM(garlic_llm), **SMALL)


@pytest.fixture(scope="module")
def question(shared_data: Path) -> str:
    return str(hotpot(shared_data).question)


def seen(nodes: list[NodeWithScore]) -> list[tuple[int, float, float, str]]:
    """Each node's tree id, score, raw score and text, exact (no rounding)."""
    return [
        (
            n.node.metadata["hrefine_node_id"],
            float(n.score or 0.0),
            n.node.metadata["hrefine_raw_score"],
            n.node.get_content(),
        )
        for n in nodes
    ]


def ids(nodes: list[NodeWithScore]) -> list[int]:
    return [n.node.metadata["hrefine_node_id"] for n in nodes]


def vector(embedder: Any, text: str) -> list[float]:
    """``text``'s query embedding as a LlamaIndex bundle holds one (a list of floats)."""
    return [float(x) for x in embedder.embed_query(text)]


def searcher(garlic: GarlicRetriever) -> tuple[GarlicRetriever, ScriptedLM]:
    """A fresh retriever on the module's graph, with an LLM that records its prompts."""
    lm = ScriptedLM(garlic_llm)
    return GarlicRetriever(garlic.graph, llm=lm), lm


# -- (a) a bundle's embedding is what the nodes are ranked by ---------------------------------


def test_raptor_ranks_by_the_bundle_embedding_and_bm25_reads_query_str(
    raptor: RaptorIndex, embedder: Embedder
) -> None:
    retriever = raptor.as_retriever(k=2)
    own, other = retriever.retrieve(QUESTION), retriever.retrieve(OTHER)
    assert ids(own) != ids(other)
    given = vector(embedder, OTHER)
    got = retriever.retrieve(QueryBundle(QUESTION, embedding=given))
    assert seen(got) == seen(other)  # was seen(own): the embedding was ignored
    # With the BM25 match on, the vector gives the cosine and the query text the match:
    # QUESTION's words are in no train chunk, OTHER's lift the Shinkansen one.
    tree = raptor.raptor_tree
    fused = {
        text: {n.id: n.score for n in tree.retrieve(text, k=None, query_vector=given, **BM25)}
        for text in (QUESTION, OTHER)
    }
    assert [fused[QUESTION][i] for i in ids(other)] == [raw for _, _, raw, _ in seen(other)]
    assert fused[OTHER][ids(other)[0]] > fused[QUESTION][ids(other)[0]]


def test_raptor_embeds_nothing_for_a_bundle_with_an_embedding() -> None:
    words = KeywordEmbedder()
    index = RaptorIndex.from_documents(documents(), llm=Summariser(), embed_model=words, **SETTINGS)
    retriever = index.as_retriever(k=2)
    given = vector(words, OTHER)
    before = words.calls
    got = retriever.retrieve(QueryBundle(QUESTION, embedding=given))
    assert words.calls == before  # LlamaIndex's convention: a set embedding is used as it is
    assert seen(got) == seen(retriever.retrieve(OTHER))


def test_garlic_ranks_by_the_bundle_embedding_and_its_llm_reads_query_str(
    garlic: GarlicRetriever, question: str
) -> None:
    other_text = "Michael Grant"
    graph_embedder = garlic.graph.embedder
    plain, _ = searcher(garlic)
    own = plain.retrieve(question)
    other = plain.retrieve(other_text)
    assert seen(own) != seen(other)
    retriever, lm = searcher(garlic)
    got = retriever.retrieve(QueryBundle(question, embedding=vector(graph_embedder, other_text)))
    # The walk and the scores follow the given vector (the fake LLM's Yes reads FACT, not the
    # question), as a search for the other text's does.
    assert seen(got) == seen(other)
    assert retriever.last_result is not None and retriever.last_result.query == question
    assert lm.prompts and all(question in p for p in lm.prompts)
    assert any(FACT in n.node.get_content() for n in got)


# -- (b) custom_embedding_strs (HyDE) are embedded and averaged -------------------------------


def test_raptor_embeds_and_averages_custom_embedding_strs(
    raptor: RaptorIndex, embedder: Embedder
) -> None:
    retriever = raptor.as_retriever(k=3)
    one = QueryBundle(QUESTION, custom_embedding_strs=[OTHER])
    assert seen(retriever.retrieve(one)) == seen(
        retriever.retrieve(QueryBundle(QUESTION, embedding=vector(embedder, OTHER)))
    )
    both = QueryBundle(QUESTION, custom_embedding_strs=[HYDE_DOC, QUESTION])
    got = retriever.retrieve(both)
    # BaseEmbedding.get_agg_embedding_from_queries: the mean of the query embeddings.
    mean = mean_agg([vector(embedder, HYDE_DOC), vector(embedder, QUESTION)])
    assert seen(got) == seen(retriever.retrieve(QueryBundle(QUESTION, embedding=mean)))
    assert ids(got) != ids(retriever.retrieve(QUESTION))
    assert both.embedding is None  # the caller's bundle is not changed


def test_hyde_through_a_transform_retriever(raptor: RaptorIndex, embedder: Embedder) -> None:
    retriever = raptor.as_retriever(k=3)
    hyde = TransformRetriever(retriever, HyDEQueryTransform(llm=HydeLLM(), include_original=True))
    got = hyde.retrieve(QUESTION)
    mean = mean_agg([vector(embedder, HYDE_DOC), vector(embedder, QUESTION)])
    assert seen(got) == seen(retriever.retrieve(QueryBundle(QUESTION, embedding=mean)))
    assert ids(got) != ids(retriever.retrieve(QUESTION))


def test_garlic_embeds_custom_embedding_strs(garlic: GarlicRetriever, question: str) -> None:
    graph_embedder = garlic.graph.embedder
    strs = ["Michael Grant", question]
    got, _ = searcher(garlic)
    nodes = got.retrieve(QueryBundle(question, custom_embedding_strs=strs))
    mean = mean_agg([vector(graph_embedder, s) for s in strs])
    same, _ = searcher(garlic)
    assert seen(nodes) == seen(same.retrieve(QueryBundle(question, embedding=mean)))
    plain, _ = searcher(garlic)
    assert seen(nodes) != seen(plain.retrieve(question))


# -- (c) a bundle with neither gives exactly the old results ----------------------------------


@pytest.mark.parametrize("mode", ["collapsed", "traversal"])
def test_raptor_plain_bundle_is_the_old_search_to_the_bit(raptor: RaptorIndex, mode: str) -> None:
    tree = raptor.raptor_tree
    retriever = raptor.as_retriever(mode=mode, k=3)
    plain = seen(retriever.retrieve(QueryBundle(QUESTION)))
    assert plain == seen(retriever.retrieve(QUESTION))
    old = tree.retrieve(QUESTION, mode=mode, k=3)  # the core embeds query_str itself
    assert [(n.id, n.relevance, n.score, n.text) for n in old] == plain
    assert tree.retrieve(QUESTION, mode=mode, k=3, query_vector=None) == old
    # The embedding of query_str itself, given, is the same search, every float equal.
    own = tree.embedder.embed_query(QUESTION)
    assert tree.retrieve(QUESTION, mode=mode, k=3, query_vector=own) == old
    assert seen(retriever.retrieve(QueryBundle(QUESTION, custom_embedding_strs=[QUESTION]))) == (
        plain
    )


def test_garlic_plain_bundle_is_the_old_search_to_the_bit(
    garlic: GarlicRetriever, question: str
) -> None:
    retriever, _ = searcher(garlic)
    plain = seen(retriever.retrieve(QueryBundle(question)))
    again, _ = searcher(garlic)
    assert plain == seen(again.retrieve(question))
    core = GarlicSearcher(garlic.graph, llm=ScriptedLM(garlic_llm))
    old = core.similarities(question)
    assert plain == [(i, min(1.0, float(old[i])), raw, text) for i, _, raw, text in plain]
    own = garlic.graph.embedder.embed_query(question)
    assert core.similarities(question, own).tolist() == old.tolist()
    result = core.search(question, query_vector=own)
    assert retriever.last_result is not None
    assert result.document_order == retriever.last_result.document_order


# -- (d) an embedding of the wrong size is a clear error ---------------------------------------


def _retrievers(raptor: RaptorIndex, garlic: GarlicRetriever) -> dict[str, Any]:
    return {"raptor": raptor.as_retriever(k=2), "garlic": searcher(garlic)[0]}


@pytest.mark.parametrize("which", ["raptor", "garlic"])
async def test_a_wrong_size_embedding_is_a_clear_error(
    raptor: RaptorIndex, garlic: GarlicRetriever, which: str
) -> None:
    retriever = _retrievers(raptor, garlic)[which]
    bundle = QueryBundle(QUESTION, embedding=[0.5] * 8)
    nodes = "tree's" if which == "raptor" else "graph's"
    expected = rf"8 dimensions but the {nodes} nodes have 384; give an embedding made by"
    with pytest.raises(ConfigError, match=expected):
        retriever.retrieve(bundle)
    with pytest.raises(ConfigError, match=expected):
        await retriever.aretrieve(bundle)
    with pytest.raises(ConfigError, match="NaN or infinite"):
        retriever.retrieve(QueryBundle(QUESTION, embedding=[float("nan")] * 384))


@pytest.mark.parametrize("which", ["raptor", "garlic"])
def test_bad_custom_embedding_strs_are_clear_errors(
    raptor: RaptorIndex, garlic: GarlicRetriever, which: str
) -> None:
    retriever = _retrievers(raptor, garlic)[which]
    with pytest.raises(EmptyInputError, match="custom_embedding_strs is empty"):
        retriever.retrieve(QueryBundle(QUESTION, custom_embedding_strs=[]))
    with pytest.raises(EmptyInputError, match=r"custom_embedding_strs\[1\] is empty"):
        retriever.retrieve(QueryBundle(QUESTION, custom_embedding_strs=[OTHER, "  "]))
    with pytest.raises(InputTypeError, match=r"custom_embedding_strs\[0\] is a int"):
        retriever.retrieve(QueryBundle(QUESTION, custom_embedding_strs=[3]))  # type: ignore[list-item]
    with pytest.raises(InputTypeError, match="sequence of numbers"):
        retriever.retrieve(QueryBundle(QUESTION, embedding=["x"] * 384))  # type: ignore[list-item]


# -- (e) aretrieve reads a bundle as retrieve does ---------------------------------------------


async def test_raptor_aretrieve_reads_the_bundle_as_retrieve_does(
    raptor: RaptorIndex, embedder: Embedder
) -> None:
    retriever = raptor.as_retriever(k=2)
    bundles = [
        QueryBundle(QUESTION, embedding=vector(embedder, OTHER)),
        QueryBundle(QUESTION, custom_embedding_strs=[HYDE_DOC, QUESTION]),
        QueryBundle(QUESTION),
    ]
    got = [seen(await retriever.aretrieve(b)) for b in bundles]
    assert got == [seen(retriever.retrieve(b)) for b in bundles]
    assert got[0] != got[2] and got[1] != got[2]


async def test_garlic_aretrieve_reads_the_bundle_as_retrieve_does(
    garlic: GarlicRetriever, question: str
) -> None:
    graph_embedder = garlic.graph.embedder
    bundles = [
        QueryBundle(question, embedding=vector(graph_embedder, "Michael Grant")),
        QueryBundle(question, custom_embedding_strs=["Michael Grant"]),
        QueryBundle(question),
    ]
    got = [seen(await searcher(garlic)[0].aretrieve(b)) for b in bundles]
    assert got == [seen(searcher(garlic)[0].retrieve(b)) for b in bundles]
    assert got[0] == got[1] != got[2]
