"""LlamaIndex GarlicRetriever and GarlicIndex: what a search returns, async, stop rules, LLM
kinds, errors, and the graph kept in (and loaded from) LlamaIndex's stores.

One graph is built per module over the paragraphs of a real HotpotQA item with the real
embedded embedder and the instant deterministic LLM of ``garlic_fakes`` (bullets for summary
prompts, Yes once ``FACT`` has been read).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from garlic_fakes import ANSWER, FACT, SMALL, garlic_llm, hotpot, hotpot_paragraphs
from hrefine.errors import (
    ConfigError,
    GenerationError,
    InputTypeError,
    NotSupportedError,
    PersistenceError,
)
from hrefine.garlic import GarlicGraph, GarlicSearcher
from hrefine.testing import ScriptedLM
from llama_index.core import Document, StorageContext, load_index_from_storage
from llama_index.core.llms import CompletionResponse, CustomLLM, LLMMetadata
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.postprocessor import SimilarityPostprocessor
from llama_index.core.schema import MetadataMode, NodeRelationship

from llamaindex_hrefine import GarlicIndex, GarlicRetriever


class GarlicLLM(CustomLLM):
    """A LlamaIndex LLM answering as :func:`garlic_llm`, counting its calls."""

    calls: int = 0

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="garlic-fake")

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        self.calls += 1
        return CompletionResponse(text=garlic_llm(prompt))

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        raise NotImplementedError


def make_documents(data: Path) -> list[Document]:
    return [
        Document(text=text, id_=title, metadata={"title": title})
        for title, text in hotpot_paragraphs(data)
    ]


@pytest.fixture(scope="module")
def question(shared_data: Path) -> str:
    return str(hotpot(shared_data).question)


@pytest.fixture(scope="module")
def built(shared_data: Path) -> GarlicRetriever:
    return GarlicRetriever.from_documents(
        make_documents(shared_data), llm=ScriptedLM(garlic_llm), **SMALL
    )


def test_returns_the_nodes_read_best_first(
    built: GarlicRetriever, question: str, shared_data: Path
) -> None:
    nodes = built.retrieve(question)
    result = built.last_result
    assert result is not None and result.stopped_by == "patience"
    ids = [n.node.metadata["hrefine_node_id"] for n in nodes]
    assert sorted(ids) == sorted(result.document_order)
    # Was document order, with every top-level summary point at 1.0: a threshold kept the
    # model's points and dropped the source. Now best first, scored by query similarity.
    position = {node_id: i for i, node_id in enumerate(result.document_order)}
    keys = [(-(n.score or 0.0), position[i]) for n, i in zip(nodes, ids, strict=True)]
    assert keys == sorted(keys)
    similarity = GarlicSearcher(built.graph, embedder=built.graph.embedder).similarities(question)
    assert [n.score for n in nodes] == pytest.approx([similarity[i] for i in ids])
    top = set(built.graph.top_level())
    assert len({n.score for n, i in zip(nodes, ids, strict=True) if i in top}) > 1
    cutoff = sorted(n.score or 0.0 for n in nodes)[len(nodes) // 2]
    kept = SimilarityPostprocessor(similarity_cutoff=cutoff).postprocess_nodes(nodes)
    assert [n.node.node_id for n in kept] == [n.node.node_id for n in nodes[: len(kept)]]
    originals = {d.id_: d for d in make_documents(shared_data)}
    (answer,) = [n for n in nodes if FACT in n.node.get_content(metadata_mode=MetadataMode.NONE)]
    meta = answer.node.metadata
    assert meta["hrefine_said_yes"] and meta["hrefine_kind"] == "chunk"
    assert meta["title"] == ANSWER and meta["hrefine_sources"] == [ANSWER]
    assert answer.node.ref_doc_id == ANSWER
    start, end = meta["hrefine_start"], meta["hrefine_end"]
    assert originals[ANSWER].text[start:end] == answer.node.get_content(MetadataMode.NONE)
    for n in nodes:
        assert n.score is not None and 0.0 <= n.score <= 1.0
        # the hrefine keys stay out of what the LLM reads
        shown = n.node.get_content(metadata_mode=MetadataMode.LLM)
        assert "hrefine_" not in shown
        if n.node.metadata["hrefine_kind"] == "summary":
            assert n.node.metadata["hrefine_children"]
            assert NodeRelationship.SOURCE not in n.node.relationships


async def test_aretrieve_gives_the_same_nodes(built: GarlicRetriever, question: str) -> None:
    sync = built.retrieve(question)
    got = await built.aretrieve(question)
    assert [n.node.node_id for n in got] == [n.node.node_id for n in sync]
    assert [n.score for n in got] == [n.score for n in sync]


def test_stop_rules(built: GarlicRetriever, question: str) -> None:
    limited = GarlicRetriever(built.graph, llm=ScriptedLM(garlic_llm), max_steps=1)
    limited.retrieve(question)
    assert limited.last_result is not None
    assert limited.last_result.stopped_by in ("max_steps", "patience")
    assert len(limited.last_result.trace) <= 2
    with pytest.raises(ConfigError, match="patience"):
        GarlicRetriever(built.graph, patience=0)
    with pytest.raises(InputTypeError, match="GarlicGraph"):
        GarlicRetriever("a graph")  # type: ignore[arg-type]


def test_a_llamaindex_llm_runs_prompt_only(
    shared_data: Path, question: str, tmp_path: Path
) -> None:
    llm = GarlicLLM()
    retriever = GarlicRetriever.from_documents(make_documents(shared_data)[:9], llm=llm, **SMALL)
    assert retriever.graph.edge_mode == "embedding"
    built_calls = llm.calls
    assert built_calls == retriever.graph.stats["calls"]
    nodes = retriever.retrieve(question)
    assert llm.calls > built_calls
    assert any(FACT in n.node.get_content(MetadataMode.NONE) for n in nodes)
    # a saved graph searches the same after loading
    loaded = GarlicGraph.load(retriever.graph.save(tmp_path / "g"))
    again = GarlicRetriever(loaded, llm=llm).retrieve(question)
    assert [n.node.node_id for n in again] == [n.node.node_id for n in nodes]


# -- GarlicIndex: the graph in LlamaIndex's stores ------------------------------------------


def test_index_persists_and_loads_the_same_graph(
    shared_data: Path, question: str, tmp_path: Path
) -> None:
    docs = make_documents(shared_data)
    before = [d.model_copy(deep=True) for d in docs]
    index = GarlicIndex.from_documents(docs, llm=ScriptedLM(garlic_llm), **SMALL)
    assert [d.model_dump() for d in docs] == [d.model_dump() for d in before]
    graph = index.garlic_graph
    assert len(index.index_struct.node_ids) == len(graph.tree)
    assert set(index.index_struct.node_ids) <= set(index.docstore.docs)
    assert ANSWER in index.ref_doc_info
    nodes = index.as_retriever().retrieve(question)
    assert any(FACT in n.node.get_content(MetadataMode.NONE) for n in nodes)

    index.storage_context.persist(persist_dir=str(tmp_path))
    storage = StorageContext.from_defaults(persist_dir=str(tmp_path))
    loaded = load_index_from_storage(storage, llm=ScriptedLM(garlic_llm))
    assert isinstance(loaded, GarlicIndex)
    assert loaded.garlic_graph.tree.to_dict() == graph.tree.to_dict()
    again = loaded.as_retriever().retrieve(question)
    assert [n.node.node_id for n in again] == [n.node.node_id for n in nodes]
    with pytest.raises(NotSupportedError):
        loaded.insert(Document(text="more"))


def test_an_edited_store_is_refused(shared_data: Path, tmp_path: Path) -> None:
    index = GarlicIndex.from_documents(
        make_documents(shared_data)[:2], llm=ScriptedLM(garlic_llm), **SMALL
    )
    struct = index.index_struct
    struct.edges = struct.edges[:-1]
    with pytest.raises(PersistenceError):
        GarlicIndex(index_struct=struct, storage_context=index.storage_context)
    with pytest.raises(ConfigError, match="needs nodes"):
        GarlicIndex()


def test_query_engine_answers_with_the_given_llm_and_never_falls_back_to_openai(
    shared_data: Path, question: str
) -> None:
    from llama_index.core.settings import Settings

    index = GarlicIndex.from_documents(
        make_documents(shared_data), llm=ScriptedLM(garlic_llm), **SMALL
    )
    assert Settings._llm is None  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match="llm="):
        index.as_query_engine()
    with pytest.raises(ConfigError, match="llm="):
        index.as_chat_engine()
    answerer = GarlicLLM()
    engine = index.as_query_engine(llm=answerer, max_steps=3)
    response = engine.query(question)
    assert answerer.calls >= 1 and response.source_nodes
    # the search stopped within the limit given to the engine: the top level and 3 nodes at most
    steps = {n.node.metadata["hrefine_step"] for n in response.source_nodes}
    assert max(steps) <= 3


def test_persist_and_from_persist_dir_keep_the_graph_and_refuse_what_json_cannot_store(
    shared_data: Path, question: str, tmp_path: Path
) -> None:
    import datetime

    docs = make_documents(shared_data)[:3]
    index = GarlicIndex.from_documents(docs, llm=ScriptedLM(garlic_llm), **SMALL)
    index.persist(str(tmp_path / "store"))
    loaded = GarlicIndex.from_persist_dir(str(tmp_path / "store"), llm=ScriptedLM(garlic_llm))
    assert loaded.garlic_graph.tree.to_dict() == index.garlic_graph.tree.to_dict()
    with pytest.raises(PersistenceError, match="holds 0 GARLIC indexes"):
        GarlicIndex.from_persist_dir(str(tmp_path / "store"), index_id="another")

    odd = [Document(text=d.text, metadata={"when": datetime.date(2002, 1, 1)}) for d in docs]
    dated = GarlicIndex.from_documents(odd, llm=ScriptedLM(garlic_llm), **SMALL)
    with pytest.raises(PersistenceError, match="cannot persist the GARLIC index"):
        dated.persist(str(tmp_path / "dated"))
    assert not (tmp_path / "dated").exists()


class HangingLLM(CustomLLM):
    """A LlamaIndex LLM whose every call waits until ``release`` is set."""

    release: Any

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="hanging")

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        self.release.wait(60)
        return CompletionResponse(text="No")

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        raise NotImplementedError


def test_a_llamaindex_llm_gets_llm_timeout(built: GarlicRetriever, shared_data: Path) -> None:
    # Was: the LLM was wrapped with the default 120 s, whatever llm_timeout said (a plain
    # callable did get it), for the index, the retriever's build and its search alike.
    release = threading.Event()
    llm = HangingLLM(release=release)
    docs = make_documents(shared_data)[:2]
    late = r"timed out after 0\.05s"
    try:
        with pytest.raises(GenerationError, match=late):
            GarlicIndex.from_documents(docs, llm=llm, llm_timeout=0.05, **SMALL)
        with pytest.raises(GenerationError, match=late):
            GarlicRetriever.from_documents(docs, llm=llm, llm_timeout=0.05, **SMALL)
        graph = built.graph
        hasty = GarlicGraph.from_tree(
            graph.tree, graph.options.replace(llm_timeout=0.05), embedder=graph.embedder
        )
        with pytest.raises(GenerationError, match=late):
            GarlicRetriever(hasty, llm=llm).retrieve("Who wrote it?")
    finally:
        release.set()


def test_a_chunk_keeps_what_its_document_hides_from_the_llm(
    shared_data: Path, question: str, tmp_path: Path
) -> None:
    # Was: every node returned was a new TextNode hiding only the hrefine keys, so metadata a
    # Document hid from the LLM (a raw blob here) went into every prompt, and its templates
    # were lost.
    blob = "RAW" * 50
    docs = [
        Document(
            text=d.text,
            id_=d.id_,
            metadata={**d.metadata, "raw": blob},
            excluded_llm_metadata_keys=["raw"],
            excluded_embed_metadata_keys=["raw"],
            metadata_template="<{key}>{value}",
        )
        for d in make_documents(shared_data)
    ]
    # given as an iterator, read once (the first fix built the templates from it twice)
    retriever = GarlicRetriever.from_documents(iter(docs), llm=ScriptedLM(garlic_llm), **SMALL)
    index = GarlicIndex.from_documents(docs, llm=ScriptedLM(garlic_llm), **SMALL)
    index.storage_context.persist(persist_dir=str(tmp_path))
    loaded = load_index_from_storage(
        StorageContext.from_defaults(persist_dir=str(tmp_path)), llm=ScriptedLM(garlic_llm)
    )
    for source in (retriever, index.as_retriever(), loaded.as_retriever()):
        nodes = source.retrieve(question)
        chunks = [n for n in nodes if n.node.metadata["hrefine_kind"] == "chunk"]
        assert chunks and len(chunks) < len(nodes)
        for n in nodes:
            assert n.node.metadata.get("raw", blob) == blob  # a chunk still holds it
            for mode in (MetadataMode.LLM, MetadataMode.EMBED):
                assert blob not in n.node.get_content(metadata_mode=mode)
        for n in chunks:
            assert f"<title>{n.node.metadata['title']}" in n.node.get_content(MetadataMode.LLM)


def test_filters_are_refused_rather_than_ignored(shared_data: Path) -> None:
    # Was: as_query_engine handed filters to RetrieverQueryEngine.from_args, which dropped them.
    from llama_index.core.llms import MockLLM
    from llama_index.core.vector_stores import MetadataFilters

    index = GarlicIndex.from_documents(
        make_documents(shared_data)[:2], llm=ScriptedLM(garlic_llm), **SMALL
    )
    filters = MetadataFilters.from_dict({"title": ANSWER})
    with pytest.raises(NotSupportedError, match="cannot narrow its results by filters"):
        index.as_query_engine(llm=MockLLM(), filters=filters)
    with pytest.raises(NotSupportedError, match="cannot narrow its results by filters"):
        index.as_retriever(filters=filters)
