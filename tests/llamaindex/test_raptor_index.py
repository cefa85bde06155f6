"""RaptorIndex and RaptorRetriever: building, the node contract, storage, insert, async.

Plumbing tests: small texts written here, the keyword embedder and the instant summariser of
``raptor_fakes`` (the end-to-end tests in ``tests/e2e/test_raptor_llamaindex.py`` use a real
paper and the real embedder). ``reduction_dim=16`` keeps these trees below UMAP's size, so they
build in a second.
"""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hrefine.errors import (
    ConfigError,
    EmptyInputError,
    HrefineError,
    InputTypeError,
    PersistenceError,
)
from hrefine.raptor import RaptorOptions, RaptorTree
from hrefine.testing import KeywordEmbedder
from llama_index.core import Document, Settings, StorageContext, load_index_from_storage
from llama_index.core.llms import MockLLM
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.schema import MetadataMode, NodeRelationship, TextNode
from raptor_fakes import Summariser

from llamaindex_hrefine import HrefineEmbedding, RaptorIndex, RaptorRetriever
from llamaindex_hrefine.raptor import RaptorIndexStruct, RaptorNotSupportedError

TEXTS = {
    "rivers": (
        "The Nile is the longest river in Africa and flows north into the Mediterranean Sea. "
        "Its two main branches, the White Nile and the Blue Nile, meet at Khartoum in Sudan. "
        "Farmers in Egypt have depended on the yearly Nile flood for thousands of years. "
        "The Aswan High Dam, finished in 1970, now holds the flood back in Lake Nasser. "
        "The Amazon carries more water than any other river on Earth. "
        "It drains a rainforest basin that covers much of Brazil, Peru and Colombia. "
        "River dolphins, piranhas and giant otters live in the Amazon and its tributaries. "
        "During the rainy season the Amazon floods forests for hundreds of kilometres."
    ),
    "volcanoes": (
        "Mount Vesuvius erupted in the year 79 and buried the Roman town of Pompeii in ash. "
        "Pliny the Younger watched the eruption from across the bay and described it in letters. "
        "Vesuvius is still active and last erupted in 1944, during the Second World War. "
        "Mauna Loa on Hawaii is the largest active volcano on the planet by volume. "
        "Its lava is runny basalt, so its eruptions build broad shield-shaped slopes. "
        "Krakatoa exploded in 1883 with a sound heard nearly five thousand kilometres away. "
        "The ash it threw into the sky made sunsets glow red around the world for months. "
        "Volcanologists measure gas, ground swelling and small earthquakes to forecast eruptions."
    ),
    "trains": (
        "The Shinkansen opened in 1964 between Tokyo and Osaka in time for the Olympic Games. "
        "Its trains run at up to 320 kilometres per hour on dedicated tracks. "
        "In over fifty years of service no passenger has died in a Shinkansen derailment. "
        "The Trans-Siberian Railway links Moscow with Vladivostok on the Pacific coast. "
        "The full journey covers 9,289 kilometres and crosses eight time zones. "
        "Steam locomotives were replaced on most lines by diesel and electric engines. "
        "George Stephenson built the Rocket locomotive for the Rainhill Trials of 1829. "
        "The Rocket won the trials with a top speed of about 48 kilometres per hour."
    ),
}
ETNA = (
    "Mount Etna in Sicily is the most active volcano in Europe and erupts every few years. "
    "Its lava flows have reached the city of Catania more than once in recorded history."
)
SETTINGS: dict[str, Any] = {"chunk_tokens": 40, "cluster_max_tokens": 200, "reduction_dim": 16}
QUESTION = "When did Vesuvius bury Pompeii?"


def documents() -> list[Document]:
    return [
        Document(
            text=text,
            id_=f"doc-{name}",
            metadata={"topic": name, "tags": ["geo", name]},
            excluded_llm_metadata_keys=["tags"],
        )
        for name, text in TEXTS.items()
    ]


def build(**kwargs: Any) -> RaptorIndex:
    args: dict[str, Any] = {"llm": Summariser(), "embed_model": KeywordEmbedder(), **SETTINGS}
    args.update(kwargs)
    return RaptorIndex.from_documents(documents(), **args)


@pytest.fixture(scope="module")
def index() -> RaptorIndex:
    return build()


def ranked(nodes: list[Any]) -> list[tuple[str, float, str]]:
    return [(n.node.node_id, round(float(n.score), 6), n.node.get_content()) for n in nodes]


# -- building ---------------------------------------------------------------------------------


def test_docstore_holds_every_tree_node_with_embedding_and_links(index: RaptorIndex) -> None:
    raptor = index.raptor_tree
    assert isinstance(index.index_struct, RaptorIndexStruct)
    assert raptor.layers >= 2
    ids = index.index_struct.node_ids
    assert len(ids) == len(raptor) == len(set(ids))
    for tree_node, node_id in zip(raptor.tree, ids, strict=True):
        stored = index.docstore.get_node(node_id)
        assert stored.get_content(metadata_mode=MetadataMode.NONE) == tree_node.text
        assert stored.embedding is not None
        assert np.allclose(stored.embedding, raptor.tree.embeddings[tree_node.id])  # type: ignore[index]
        children = stored.relationships.get(NodeRelationship.CHILD, [])
        assert [c.node_id for c in children] == [ids[c] for c in tree_node.children]  # type: ignore[union-attr]
        if tree_node.parents:
            assert stored.parent_node is not None
            assert stored.parent_node.node_id in {ids[p] for p in tree_node.parents}
        if tree_node.level == 0:
            assert stored.ref_doc_id == f"doc-{stored.metadata['topic']}"
        else:
            assert stored.ref_doc_id is None
        assert "hrefine_" not in stored.get_content(metadata_mode=MetadataMode.LLM)


def test_ref_doc_info_maps_each_document_to_its_leaves(index: RaptorIndex) -> None:
    info = index.ref_doc_info
    assert set(info) == {f"doc-{name}" for name in TEXTS}
    leaves = {index.index_struct.node_ids[i] for i in index.raptor_tree.tree.leaves}
    assert set().union(*(set(i.node_ids) for i in info.values())) == leaves


def test_input_documents_are_not_changed() -> None:
    docs = documents()
    before = [d.model_dump() for d in docs]
    RaptorIndex.from_documents(docs, llm=Summariser(), embed_model=KeywordEmbedder(), **SETTINGS)
    assert [d.model_dump() for d in docs] == before


def test_nodes_from_a_parser_keep_their_document_id() -> None:
    parser = SentenceSplitter(chunk_size=120, chunk_overlap=0)
    nodes = parser.get_nodes_from_documents(documents())
    index = RaptorIndex(nodes, llm=Summariser(), embed_model=KeywordEmbedder(), **SETTINGS)
    leaves = [
        index.docstore.get_node(index.index_struct.node_ids[i])
        for i in index.raptor_tree.tree.leaves
    ]
    assert {leaf.ref_doc_id for leaf in leaves} == {f"doc-{name}" for name in TEXTS}
    assert set(index.ref_doc_info) == {f"doc-{name}" for name in TEXTS}


def test_transformations_given_to_from_documents_run_first() -> None:
    index = build(transformations=[SentenceSplitter(chunk_size=60, chunk_overlap=0)])
    assert set(index.ref_doc_info) == {f"doc-{name}" for name in TEXTS}


def test_bad_settings_fail_before_anything_is_built() -> None:
    llm = Summariser()
    with pytest.raises(ConfigError, match="chunk_tokens"):
        RaptorIndex.from_documents(
            documents(), llm=llm, embed_model=KeywordEmbedder(), chunk_tokens=2
        )
    with pytest.raises(InputTypeError):
        RaptorIndex.from_documents(documents(), llm=llm, embed_model="not a model")
    assert llm.prompts == []


def test_a_llamaindex_llm_summarises_and_answers() -> None:
    mock = MockLLM(max_tokens=20)
    index = build(llm=mock)
    summaries = [n.text for n in index.raptor_tree.tree if n.level > 0]
    assert summaries and all(s.strip() for s in summaries)
    response = index.as_query_engine(k=3).query(QUESTION)  # answers with the index's MockLLM
    assert response.source_nodes
    assert Settings._llm is None  # type: ignore[attr-defined]


def test_query_engine_without_any_llm_refuses_rather_than_use_openai(index: RaptorIndex) -> None:
    assert Settings._llm is None  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match="llm="):
        index.as_query_engine()


# -- retrieval --------------------------------------------------------------------------------


def test_retrieved_nodes_carry_relevance_and_provenance(index: RaptorIndex) -> None:
    nodes = index.as_retriever(k=6).retrieve(QUESTION)
    assert 0 < len(nodes) <= 6
    scores = [float(n.score) for n in nodes]  # type: ignore[arg-type]
    assert scores == sorted(scores, reverse=True)
    assert all(0.0 <= s <= 1.0 for s in scores)
    top = nodes[0].node
    assert "Pompeii" in top.get_content()
    for n in nodes:
        meta = n.node.metadata
        assert {"hrefine_raw_score", "hrefine_layer", "hrefine_kind", "hrefine_node_id"} <= set(
            meta
        )
        assert meta["hrefine_node_id"] in range(len(index.raptor_tree))
        assert "hrefine_" not in n.node.get_content(metadata_mode=MetadataMode.LLM)
        assert "hrefine_" not in n.node.get_content(metadata_mode=MetadataMode.EMBED)
        if meta["hrefine_kind"] == "chunk":
            doc = TEXTS[meta["topic"]]
            assert meta["hrefine_layer"] == 0
            assert n.node.ref_doc_id == f"doc-{meta['topic']}"
            assert meta["hrefine_sources"] == [n.node.ref_doc_id]
            assert doc[meta["hrefine_start"] : meta["hrefine_end"]] == n.node.get_content()
            assert "tags" not in n.node.get_content(metadata_mode=MetadataMode.LLM)  # kept
        else:
            assert meta["hrefine_layer"] >= 1
            assert set(meta["hrefine_sources"]) <= {f"doc-{name}" for name in TEXTS}
    # the stored nodes are not changed by retrieval
    stored = index.docstore.get_node(top.node_id)
    assert "hrefine_raw_score" not in stored.metadata


def test_budget_and_similarity_top_k(index: RaptorIndex) -> None:
    nodes = index.as_retriever(k=None, max_tokens=120).retrieve(QUESTION)
    assert sum(n.node.metadata["hrefine_tokens"] for n in nodes) <= 120
    assert len(index.as_retriever(similarity_top_k=2).retrieve(QUESTION)) == 2
    with pytest.raises(ConfigError):
        index.as_retriever(k=2, similarity_top_k=2)


def test_traversal_walks_down_one_node_per_layer(index: RaptorIndex) -> None:
    walk = index.as_retriever(mode="traversal", k=1, summary_rank="free").retrieve(QUESTION)
    layers = sorted(n.node.metadata["hrefine_layer"] for n in walk)
    assert layers == list(range(index.raptor_tree.layers + 1))
    # By default leaves only: the leaf the walk ends at first, others of its branch after it.
    leaves = index.as_retriever(mode="traversal", k=1).retrieve(QUESTION)
    walked = next(n for n in walk if not n.node.metadata["hrefine_layer"])
    assert leaves[0].node.node_id == walked.node.node_id
    assert {n.node.metadata["hrefine_layer"] for n in leaves} == {0}
    assert 1 <= len(leaves) <= len(walk)
    with pytest.raises(ConfigError, match="summary_rank"):
        index.as_retriever(summary_rank="sideways")


def test_bad_retriever_settings_fail_at_construction(index: RaptorIndex) -> None:
    with pytest.raises(ConfigError, match="mode"):
        index.as_retriever(mode="sideways")
    with pytest.raises(ConfigError):
        RaptorRetriever(index, k=0)
    with pytest.raises(InputTypeError):
        RaptorRetriever("not a tree")  # type: ignore[arg-type]


def test_filters_are_refused_rather_than_ignored(index: RaptorIndex) -> None:
    # Was: as_retriever(filters=...) and as_query_engine(filters=...) returned nodes of every
    # document, the ones the filter was to keep out included.
    from llama_index.core.vector_stores import MetadataFilters

    narrow = {
        "filters": MetadataFilters.from_dict({"topic": "comet"}),
        "doc_ids": ["doc-comet"],
        "node_ids": ["n"],
    }
    for key, value in narrow.items():
        with pytest.raises(RaptorNotSupportedError, match=f"cannot narrow its results by {key}"):
            index.as_retriever(**{key: value})
        with pytest.raises(RaptorNotSupportedError, match=key):
            index.as_query_engine(llm=MockLLM(), **{key: value})
        with pytest.raises(RaptorNotSupportedError, match=key):
            index.as_chat_engine(llm=MockLLM(), chat_mode="context", **{key: value})
    # what query and chat engines pass on is still taken
    assert index.as_query_engine(llm=MockLLM(), response_mode="compact", filters=None)


def test_retriever_over_a_core_tree(index: RaptorIndex) -> None:
    tree = RaptorTree.build(
        list(TEXTS.values()), llm=Summariser(), embedder=KeywordEmbedder(), **SETTINGS
    )
    retriever = RaptorRetriever(tree, k=4)
    first, again = retriever.retrieve(QUESTION), retriever.retrieve(QUESTION)
    assert ranked(first) == ranked(again)  # stable node ids
    assert "Pompeii" in first[0].node.get_content()
    assert first[0].node.metadata["hrefine_sources"] == []  # plain texts have no ids


def test_aretrieve_runs_in_a_running_loop_without_blocking_it(index: RaptorIndex) -> None:
    threads: list[str] = []

    class Watching(KeywordEmbedder):
        def embed_query(self, text: str) -> Any:
            threads.append(threading.current_thread().name)
            return super().embed_query(text)

    tree = RaptorTree(index.raptor_tree.tree, index.raptor_tree.options, embedder=Watching())
    retriever = RaptorRetriever(tree, k=4)

    async def main() -> tuple[list[Any], list[Any]]:
        return await retriever.aretrieve(QUESTION), await index.as_retriever(k=4).aretrieve(
            QUESTION
        )

    from_tree, from_index = asyncio.run(main())
    assert threads and threads[0] != threading.main_thread().name  # embedded in an executor
    assert [n.node.get_content() for n in from_tree] == [n.node.get_content() for n in from_index]
    assert ranked(from_index) == ranked(index.as_retriever(k=4).retrieve(QUESTION))


# -- storage ----------------------------------------------------------------------------------


def test_persist_and_load_give_equal_retrieval(index: RaptorIndex, tmp_path: Path) -> None:
    index.storage_context.persist(persist_dir=str(tmp_path))
    loaded = load_index_from_storage(
        StorageContext.from_defaults(persist_dir=str(tmp_path)),
        llm=Summariser(),
        embed_model=KeywordEmbedder(),
    )
    assert isinstance(loaded, RaptorIndex)
    for mode in ("collapsed", "traversal"):
        want = index.as_retriever(mode=mode, k=3).retrieve(QUESTION)
        assert ranked(loaded.as_retriever(mode=mode, k=3).retrieve(QUESTION)) == ranked(want)
    assert loaded.raptor_tree.options == index.raptor_tree.options
    again = RaptorIndex.from_persist_dir(str(tmp_path), embed_model=KeywordEmbedder(), k=2)
    assert len(again.as_retriever().retrieve(QUESTION)) == 2  # a setting changed on load


def _persisted(index: RaptorIndex, folder: Path) -> dict[str, Any]:
    index.storage_context.persist(persist_dir=str(folder))
    return json.loads((folder / "docstore.json").read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def _load(folder: Path) -> RaptorIndex:
    return RaptorIndex.from_persist_dir(str(folder), embed_model=KeywordEmbedder())


def test_an_edited_node_text_is_refused(index: RaptorIndex, tmp_path: Path) -> None:
    store = _persisted(index, tmp_path)
    data = store["docstore/data"]
    node_id = index.index_struct.node_ids[0]
    data[node_id]["__data__"]["text"] = "Vesuvius never erupted."
    (tmp_path / "docstore.json").write_text(json.dumps(store), encoding="utf-8")
    with pytest.raises(PersistenceError, match="checksum"):
        _load(tmp_path)
    with pytest.raises(PersistenceError, match="checksum"):
        load_index_from_storage(
            StorageContext.from_defaults(persist_dir=str(tmp_path)), embed_model=KeywordEmbedder()
        )


def test_a_missing_node_is_refused(index: RaptorIndex, tmp_path: Path) -> None:
    store = _persisted(index, tmp_path)
    del store["docstore/data"][index.index_struct.node_ids[-1]]
    (tmp_path / "docstore.json").write_text(json.dumps(store), encoding="utf-8")
    with pytest.raises(PersistenceError, match="not in the docstore"):
        _load(tmp_path)


def test_a_truncated_file_is_refused(index: RaptorIndex, tmp_path: Path) -> None:
    _persisted(index, tmp_path)
    path = tmp_path / "docstore.json"
    path.write_bytes(path.read_bytes()[:1000])
    with pytest.raises(PersistenceError):
        _load(tmp_path)


def test_an_edited_index_struct_is_refused(index: RaptorIndex, tmp_path: Path) -> None:
    _persisted(index, tmp_path)
    path = tmp_path / "index_store.json"
    store = json.loads(path.read_text(encoding="utf-8"))
    (entry,) = store["index_store/data"].values()
    struct = json.loads(entry["__data__"])
    struct["edges"] = struct["edges"][:-1]
    entry["__data__"] = json.dumps(struct)
    path.write_text(json.dumps(store), encoding="utf-8")
    with pytest.raises(PersistenceError, match="checksum"):
        _load(tmp_path)
    struct["format"] = 99
    entry["__data__"] = json.dumps(struct)
    path.write_text(json.dumps(store), encoding="utf-8")
    with pytest.raises(PersistenceError, match="format"):
        _load(tmp_path)


def test_an_empty_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(PersistenceError):
        RaptorIndex.from_persist_dir(str(tmp_path))


# -- insert and delete ------------------------------------------------------------------------


def test_insert_resummarises_only_the_ancestors_of_the_new_leaves(tmp_path: Path) -> None:
    llm = Summariser()
    index = build(llm=llm)
    before = {n.id: n.text for n in index.raptor_tree.tree}
    calls = len(llm.prompts)
    index.insert(Document(text=ETNA, id_="doc-etna", metadata={"topic": "etna"}))
    tree = index.raptor_tree.tree
    (stats,) = index.raptor_tree.stats["inserts"]
    new_leaves = [n.id for n in tree if n.level == 0 and n.id not in before]
    assert new_leaves
    above = {a for leaf in new_leaves for a in tree.ancestors(leaf)}
    changed = {i for i, text in before.items() if tree[i].text != text}
    made = {n.id for n in tree if n.id not in before and n.level > 0}
    assert changed and changed <= above  # only ancestors were summarised again
    assert made <= above
    assert len(llm.prompts) - calls == len(changed) + len(made)
    assert len(llm.prompts) - calls == stats["resummarised"] + stats["new_nodes"]
    assert len(llm.prompts) - calls < sum(1 for n in tree if n.level > 0)
    # the docstore follows: new leaves under the new document, changed summaries rewritten
    assert set(index.ref_doc_info["doc-etna"].node_ids) == {
        index.index_struct.node_ids[i] for i in new_leaves
    }
    for i in changed:
        stored = index.docstore.get_node(index.index_struct.node_ids[i])
        assert stored.get_content() == tree[i].text
    assert index.docstore.get_document_hash("doc-etna") is not None
    hits = index.as_retriever(k=3).retrieve("Which volcano is the most active in Europe?")
    assert any("Etna" in n.node.get_content() for n in hits)
    # and the grown index persists and loads
    index.storage_context.persist(persist_dir=str(tmp_path))
    loaded = _load(tmp_path)
    assert ranked(loaded.as_retriever(k=3).retrieve(QUESTION)) == ranked(
        index.as_retriever(k=3).retrieve(QUESTION)
    )


def test_ainsert_matches_insert() -> None:
    sync, other = build(), build()
    extra = Document(text=ETNA, id_="doc-etna", metadata={"topic": "etna"})
    sync.insert(extra)
    asyncio.run(other.ainsert(extra))
    assert [n.text for n in other.raptor_tree.tree] == [n.text for n in sync.raptor_tree.tree]
    assert set(other.ref_doc_info) == set(sync.ref_doc_info)


def test_insert_nodes_does_not_change_or_store_them(index: RaptorIndex) -> None:
    local = build()
    node = TextNode(text=ETNA, id_="etna-node", metadata={"topic": "etna"})
    before = node.model_dump()
    local.insert_nodes([node])
    assert node.model_dump() == before
    assert local.docstore.get_node("etna-node", raise_error=False) is None
    assert "etna-node" in local.ref_doc_info  # the node's own id is its document


def test_delete_is_refused_and_deletes_nothing(index: RaptorIndex) -> None:
    count = len(index.docstore.docs)
    for call in (
        lambda: index.delete_ref_doc("doc-rivers"),
        lambda: index.delete_nodes([index.index_struct.node_ids[0]]),
        lambda: asyncio.run(index.adelete_ref_doc("doc-rivers")),
        lambda: index.update_ref_doc(documents()[0]),
    ):
        with pytest.raises(RaptorNotSupportedError, match="cannot delete") as err:
            call()
        assert isinstance(err.value, HrefineError)
        assert isinstance(err.value, NotImplementedError)
    assert len(index.docstore.docs) == count


def test_loading_with_another_tokenizer_recounts_and_stays_loadable(
    index: RaptorIndex, tmp_path: Path
) -> None:
    index.storage_context.persist(persist_dir=str(tmp_path / "a"))
    loaded = RaptorIndex.from_persist_dir(
        str(tmp_path / "a"), embed_model=KeywordEmbedder(), tokenizer="regex"
    )
    tree = loaded.raptor_tree
    counts = tree.counter.count_many([n.text for n in tree.tree])
    assert [n.metadata["hrefine_tokens"] for n in tree.tree] == counts
    nodes = loaded.as_retriever(k=None, max_tokens=100).retrieve(QUESTION)
    assert sum(tree.counter.count(n.node.get_content()) for n in nodes) <= 100
    loaded.storage_context.persist(persist_dir=str(tmp_path / "b"))
    # Saved again, the counts are the regex tokenizer's: loaded with it they stand as saved,
    # and loaded with the default tokenizer they are counted again in that one.
    again = RaptorIndex.from_persist_dir(
        str(tmp_path / "b"), embed_model=KeywordEmbedder(), tokenizer="regex"
    )
    assert [n.metadata["hrefine_tokens"] for n in again.raptor_tree.tree] == counts
    default = _load(tmp_path / "b").raptor_tree
    assert [n.metadata["hrefine_tokens"] for n in default.tree] == default.counter.count_many(
        [n.text for n in default.tree]
    )


def _stores_agree(index: RaptorIndex) -> None:
    """Every docstore node holds its tree node's token count, in the index's tokenizer."""
    tree = index.raptor_tree
    counts = tree.counter.count_many([n.text for n in tree.tree])
    assert [n.metadata["hrefine_tokens"] for n in tree.tree] == counts
    stored = index.docstore.get_nodes(index.index_struct.node_ids)
    assert [n.metadata["hrefine_tokens"] for n in stored] == counts


def _grown_and_reloaded(index: RaptorIndex, folder: Path) -> RaptorIndex:
    """``index`` after an insert, persisted and loaded again (as docs/raptor.md shows)."""
    index.insert(Document(text=ETNA, id_="doc-etna"))
    index.storage_context.persist(persist_dir=str(folder))
    storage = StorageContext.from_defaults(persist_dir=str(folder))
    loaded = load_index_from_storage(storage, llm=Summariser(), embed_model=KeywordEmbedder())
    assert isinstance(loaded, RaptorIndex)
    assert len(loaded.raptor_tree.tree) == len(index.raptor_tree.tree)
    return loaded


def test_a_named_tokenizer_is_saved_and_the_stores_follow_a_recount(tmp_path: Path) -> None:
    built = build(tokenizer="regex")
    built.storage_context.persist(persist_dir=str(tmp_path / "a"))
    storage = StorageContext.from_defaults(persist_dir=str(tmp_path / "a"))
    loaded = load_index_from_storage(storage, llm=Summariser(), embed_model=KeywordEmbedder())
    assert isinstance(loaded, RaptorIndex)
    assert loaded.raptor_tree.counter.name == "regex"  # not Llama-3.2's, silently
    _stores_agree(loaded)
    assert _grown_and_reloaded(loaded, tmp_path / "b").raptor_tree.counter.name == "regex"
    # Another tokenizer given on load: the docstore takes its counts along with the tree.
    chars = RaptorIndex.from_persist_dir(
        str(tmp_path / "a"), llm=Summariser(), embed_model=KeywordEmbedder(), tokenizer=len
    )
    _stores_agree(chars)
    # Unnamed, ``len`` is not saved: the reload counts again (in Llama-3.2's tokens) and the
    # stores follow, so the insert's checksum over the whole tree matches them.
    again = _grown_and_reloaded(chars, tmp_path / "c")
    _stores_agree(again)
    _grown_and_reloaded(again, tmp_path / "d")


def test_an_index_needs_nodes() -> None:
    with pytest.raises(ConfigError, match="from_documents"):
        RaptorIndex(llm=Summariser())
    with pytest.raises(EmptyInputError, match="empty"):
        RaptorIndex.from_documents([Document(text="  ")], llm=Summariser())
    with pytest.raises(InputTypeError, match="Document"):
        RaptorIndex.from_documents(["plain text"], llm=Summariser())  # type: ignore[list-item]


def test_models_given_as_settings_or_options_are_converted_too(index: RaptorIndex) -> None:
    options = RaptorOptions(**SETTINGS, llm=Summariser())
    other = RaptorIndex.from_documents(
        documents(), options=options, embedder=HrefineEmbedding(KeywordEmbedder())
    )
    assert [n.text for n in other.raptor_tree.tree] == [n.text for n in index.raptor_tree.tree]
    want = [(n.node.get_content(), n.score) for n in index.as_retriever(k=3).retrieve(QUESTION)]
    got = [(n.node.get_content(), n.score) for n in other.as_retriever(k=3).retrieve(QUESTION)]
    assert got == want
