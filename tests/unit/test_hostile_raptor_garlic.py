"""Hostile input at the RAPTOR and GARLIC entry points (issues #36 and #38, "Bad input"): lone
surrogates in texts and queries, a blank RAPTOR query, Sources and collections of the wrong
shape, LlamaIndex queries that are not text, metadata a docstore cannot write, and a CLI
output folder that holds the other method's save. Fast: fake LLMs and the keyword embedder."""

from __future__ import annotations

import asyncio
import datetime
import threading
from pathlib import Path
from typing import Any

import pytest
from cli_checks import one_line_error as _one_line_error
from garlic_fakes import SMALL, garlic_llm
from hrefine.errors import ConfigError, EmptyInputError, InputTypeError, PersistenceError
from hrefine.garlic import GarlicGraph, GarlicSearcher
from hrefine.raptor import RaptorTree, Source
from hrefine.testing import KeywordEmbedder
from raptor_fakes import summary_of

CAT = "The cat sat on the mat near the door. Michael Grant wrote about it. " * 12
DOG = "Dogs bark at night in the old city by the river. " * 12
ODD = "The cat \ud800 sat on the mat near the door. " * 12


def strict_raptor_llm(prompt: str) -> str:
    """A summariser that sends its prompt as a hosted model's client does (strict UTF-8)."""
    prompt.encode("utf-8")
    return summary_of(prompt)


def strict_garlic_llm(prompt: str) -> str:
    """The GARLIC fake LLM behind a strict UTF-8 client."""
    prompt.encode("utf-8")
    return garlic_llm(prompt)


@pytest.fixture(scope="module")
def emb() -> KeywordEmbedder:
    return KeywordEmbedder(dim=64)


@pytest.fixture(scope="module")
def tree(emb: KeywordEmbedder) -> RaptorTree:
    return RaptorTree.build(
        [CAT, DOG], llm=strict_raptor_llm, embedder=emb, tokenizer="regex", reduction_dim=16
    )


@pytest.fixture(scope="module")
def graph(emb: KeywordEmbedder) -> GarlicGraph:
    return GarlicGraph.build(
        [CAT, DOG], lm=strict_garlic_llm, embedder=emb, tokenizer="regex", **SMALL
    )


# -- the core ---------------------------------------------------------------------------------


def test_a_lone_surrogate_in_a_document_reaches_no_tokenizer_or_llm(emb: KeywordEmbedder) -> None:
    source = Source(ODD, {"n": 1}, "odd")
    # the default (Llama-3.2) tokenizer refused the text with a raw TypeError; a strict LLM
    # client failed every summary
    tree = RaptorTree.build([source, DOG], llm=strict_raptor_llm, embedder=emb)
    leaf = tree.tree[tree.tree.leaves[0]]
    assert "\ufffd" in leaf.text and "\ud800" not in leaf.text
    start, end = leaf.metadata["hrefine_start"], leaf.metadata["hrefine_end"]
    assert ODD[start:end].replace("\ud800", "\ufffd") == leaf.text  # offsets still index it
    assert source.text == ODD  # the caller's Source is not changed
    assert tree.layers >= 1


def test_a_lone_surrogate_in_a_garlic_document_is_built(emb: KeywordEmbedder) -> None:
    graph = GarlicGraph.build(
        [ODD, DOG], lm=strict_garlic_llm, embedder=emb, tokenizer="regex", **SMALL
    )
    assert graph.levels >= 1
    assert all("\ud800" not in n.text for n in graph.tree)


@pytest.mark.parametrize("metadata", [None, ["a", "list"], "text"])
def test_a_source_whose_metadata_is_not_a_mapping_is_an_input_type_error(
    emb: KeywordEmbedder, metadata: Any
) -> None:
    docs = [Source("Some words here.", metadata)]
    with pytest.raises(InputTypeError, match="document 0"):
        RaptorTree.build(docs, llm=strict_raptor_llm, embedder=emb, tokenizer="regex")
    with pytest.raises(InputTypeError, match="document 0"):
        GarlicGraph.build(docs, lm=strict_garlic_llm, embedder=emb, tokenizer="regex", **SMALL)


@pytest.mark.parametrize("query", ["", "   \n\t"])
def test_a_blank_raptor_query_is_an_empty_input_error(tree: RaptorTree, query: str) -> None:
    with pytest.raises(EmptyInputError, match="query is empty"):
        tree.retrieve(query)
    with pytest.raises(EmptyInputError):
        asyncio.run(tree.aretrieve(query))


def test_a_raptor_tree_loaded_with_an_embedder_of_another_size_says_so(
    tree: RaptorTree, emb: KeywordEmbedder, tmp_path: Path
) -> None:
    # Was numpy's "matmul: Input operand 1 has a mismatch" (GARLIC already said it plainly).
    tree.save(tmp_path / "t")
    other = KeywordEmbedder(dim=emb.dim + 8)
    loaded = RaptorTree.load(tmp_path / "t", llm=strict_raptor_llm, embedder=other)
    with pytest.raises(ConfigError, match=r"has \d+ dimensions but the tree's nodes have"):
        loaded.retrieve("cat")
    with pytest.raises(ConfigError, match="the embedder the tree was built with"):
        asyncio.run(loaded.aretrieve("cat"))


def test_a_lone_surrogate_in_a_raptor_query_is_replaced(tree: RaptorTree) -> None:
    odd = tree.retrieve("cat \ud800 mat", k=3)
    assert [n.id for n in odd] == [n.id for n in tree.retrieve("cat \ufffd mat", k=3)]


def test_a_lone_surrogate_in_a_garlic_query_reaches_no_llm(graph: GarlicGraph) -> None:
    # a strict client failed every Yes/No question (a GenerationError after the retries)
    result = GarlicSearcher(graph, lm=strict_garlic_llm).search("who is Michael Grant \ud800")
    assert result.query == "who is Michael Grant \ufffd"
    assert result.trace and all(s.answer in {"Yes", "No"} for s in result.trace)


# -- LangChain --------------------------------------------------------------------------------


def test_langchain_entry_points_refuse_what_is_not_a_list_of_documents(
    emb: KeywordEmbedder,
) -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.documents import Document

    from langchain_hrefine import GarlicCompressor, GarlicRetriever, RaptorRetriever

    doc = Document(page_content=CAT)
    bads: tuple[Any, ...] = (None, 42, doc, {"page_content": CAT})
    for bad in bads:
        with pytest.raises(InputTypeError, match="list"):
            RaptorRetriever.from_documents(bad, llm=strict_raptor_llm, embeddings=emb)
        with pytest.raises(InputTypeError, match="list"):
            GarlicRetriever.from_documents(bad, llm=strict_garlic_llm, embeddings=emb)
    with pytest.raises(InputTypeError, match="list of strings"):
        RaptorRetriever.from_texts(None, llm=strict_raptor_llm, embeddings=emb)  # type: ignore[arg-type]
    compressor = GarlicCompressor(llm=strict_garlic_llm, embeddings=emb, tokenizer="regex", **SMALL)
    with pytest.raises(InputTypeError):
        compressor.compress_documents(None, "cat")  # type: ignore[arg-type]
    with pytest.raises(InputTypeError):
        asyncio.run(compressor.acompress_documents(None, "cat"))  # type: ignore[arg-type]


def test_langchain_raptor_refuses_a_blank_query_and_keeps_odd_documents(
    emb: KeywordEmbedder,
) -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.documents import Document

    from langchain_hrefine import RaptorRetriever

    docs = [Document(page_content=CAT, id="cat"), Document(page_content=DOG, id="dog")]
    retriever = RaptorRetriever.from_documents(
        docs, llm=strict_raptor_llm, embeddings=emb, tokenizer="regex", reduction_dim=16
    )
    with pytest.raises(EmptyInputError):
        retriever.invoke("  ")
    odd = Document(page_content=ODD, id="odd")
    retriever.add_documents([odd])  # a strict LLM client failed on the re-summaries
    assert odd.page_content == ODD
    assert any("\ufffd" in d.page_content for d in retriever.invoke("cat sat mat", k=20))


# -- LlamaIndex -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def li_index(emb: KeywordEmbedder) -> Any:
    pytest.importorskip("llama_index.core")
    from llama_index.core import Document

    from llamaindex_hrefine import RaptorIndex

    docs = [
        Document(text=CAT, id_="cat", metadata={"when": datetime.datetime(2020, 1, 1)}),
        Document(text=DOG, id_="dog"),
    ]
    return RaptorIndex.from_documents(
        docs, llm=strict_raptor_llm, embed_model=emb, tokenizer="regex", reduction_dim=16
    )


@pytest.fixture(scope="module")
def li_garlic(emb: KeywordEmbedder) -> Any:
    pytest.importorskip("llama_index.core")
    from llama_index.core import Document

    from llamaindex_hrefine import GarlicIndex

    docs = [Document(text=CAT, id_="cat"), Document(text=DOG, id_="dog")]
    return GarlicIndex.from_documents(
        docs, llm=strict_garlic_llm, embed_model=emb, tokenizer="regex", **SMALL
    )


@pytest.mark.parametrize("query", [None, 42, b"bytes", ["a"]])
def test_llamaindex_retrievers_refuse_a_query_that_is_not_text(
    li_index: Any, li_garlic: Any, query: Any
) -> None:
    from llama_index.core.schema import QueryBundle

    # LlamaIndex's own retrieve failed on its event model with a pydantic ValidationError
    for retriever in (li_index.as_retriever(), li_garlic.as_retriever()):
        with pytest.raises(InputTypeError, match="query must be a str"):
            retriever.retrieve(query)
        with pytest.raises(InputTypeError):
            asyncio.run(retriever.aretrieve(query))
    bundle = QueryBundle(query_str="x")
    bundle.query_str = query
    with pytest.raises(InputTypeError):
        li_index.as_retriever().retrieve(bundle)


def test_llamaindex_retrievers_refuse_a_blank_query(li_index: Any, li_garlic: Any) -> None:
    for retriever in (li_index.as_retriever(), li_garlic.as_retriever()):
        with pytest.raises(EmptyInputError):
            retriever.retrieve("   ")


def test_llamaindex_entry_points_refuse_what_is_not_a_list_of_nodes(
    emb: KeywordEmbedder, li_index: Any
) -> None:
    from llama_index.core import Document

    from llamaindex_hrefine import GarlicIndex, GarlicRetriever, RaptorIndex

    doc = Document(text=CAT)
    bads: tuple[Any, ...] = (None, 42, doc, "text")
    for bad in bads:
        with pytest.raises(InputTypeError, match="list of LlamaIndex"):
            RaptorIndex.from_documents(bad, llm=strict_raptor_llm, embed_model=emb)
        with pytest.raises(InputTypeError, match="list of LlamaIndex"):
            GarlicIndex.from_documents(bad, llm=strict_garlic_llm, embed_model=emb, **SMALL)
        with pytest.raises(InputTypeError, match="list of LlamaIndex"):
            GarlicRetriever.from_documents(bad, llm=strict_garlic_llm, embed_model=emb, **SMALL)
    before = len(li_index.raptor_tree)
    with pytest.raises(InputTypeError, match="list of LlamaIndex"):
        li_index.insert_nodes(None)
    assert len(li_index.raptor_tree) == before


def test_nested_metadata_is_shared_with_neither_the_caller_nor_the_results(
    emb: KeywordEmbedder,
) -> None:
    # Was: every copy shallow, so a caller's later edit reached the tree, and an edit of a
    # result's metadata changed the tree's node.
    meta: dict[str, Any] = {"tags": ["bio"], "info": {"rev": 1}}
    sources = [Source(CAT, metadata=meta, id="cat"), Source(DOG, metadata={"tags": []}, id="dog")]
    tree = RaptorTree.build(sources, llm=strict_raptor_llm, embedder=emb, tokenizer="regex")
    graph = GarlicGraph.build(sources, embedder=emb, tokenizer="regex")
    meta["tags"].append("caller's edit")
    node = next(n for n in tree.retrieve("cat sat mat", k=None) if n.metadata.get("tags"))
    assert node.metadata["tags"] == ["bio"]
    node.metadata["tags"].append("result's edit")
    assert tree.tree[node.id].metadata["tags"] == ["bio"]
    found = GarlicSearcher(graph).search("cat sat mat", fill_tokens=400)
    leaf = next(v for v in found.visited if v.metadata.get("tags"))
    assert leaf.metadata["tags"] == ["bio"]
    leaf.metadata["info"]["rev"] = 2
    assert graph.tree[leaf.id].metadata["info"] == {"rev": 1}


def test_garlic_shares_metadata_that_cannot_be_deep_copied(emb: KeywordEmbedder) -> None:
    # Was: TypeError "cannot pickle '_thread.lock'" once the search read a chunk, while the
    # other methods share such a value, as docs/integrations.md says.
    pytest.importorskip("langchain_core")
    from langchain_core.documents import Document

    from langchain_hrefine import GarlicCompressor, GarlicRetriever

    lock = threading.Lock()
    docs = [Document(page_content=CAT, metadata={"client": lock, "tags": ["a"]})]
    compressed = GarlicCompressor(max_tokens=50, embeddings=emb, tokenizer="regex")
    found = compressed.compress_documents(docs, "Who wrote about the cat?")
    retriever = GarlicRetriever.from_documents(docs, embeddings=emb, tokenizer="regex")
    found += retriever.invoke("Who wrote about the cat?")
    chunks = [d for d in found if d.metadata.get("hrefine_kind") == "chunk"]
    assert chunks and all(d.metadata["client"] is lock for d in chunks)
    assert docs[0].metadata == {"client": lock, "tags": ["a"]}


def test_llamaindex_metadata_that_cannot_be_copied_is_an_input_type_error(
    emb: KeywordEmbedder,
) -> None:
    from llama_index.core import Document

    from llamaindex_hrefine import RaptorIndex

    doc = Document(text=CAT, metadata={"lock": threading.Lock()})
    with pytest.raises(InputTypeError, match="cannot be copied"):
        RaptorIndex.from_documents([doc], llm=strict_raptor_llm, embed_model=emb)


def test_garlic_index_as_retriever_names_an_unknown_argument(li_garlic: Any) -> None:
    with pytest.raises(ConfigError, match="top_k"):
        li_garlic.as_retriever(top_k=3)
    assert li_garlic.as_retriever(patience=2, verbose=False) is not None


def test_garlic_index_as_retriever_takes_similarity_top_k_as_k(li_garlic: Any) -> None:
    # Was a ConfigError, while RaptorIndex takes it and the LangChain retriever has k.
    read_all = {"patience": 100, "max_steps": 100}  # the fake says Yes early: read on
    every = li_garlic.as_retriever(**read_all).retrieve("Who wrote about the cat?")
    assert len(every) > 3
    three = li_garlic.as_retriever(similarity_top_k=3, **read_all).retrieve(
        "Who wrote about the cat?"
    )
    assert [n.node.node_id for n in three] == [n.node.node_id for n in every[:3]]
    two = li_garlic.as_retriever(k=2, **read_all).retrieve("Who wrote about the cat?")
    assert [n.node.node_id for n in two] == [n.node.node_id for n in every[:2]]
    with pytest.raises(ConfigError, match="not both"):
        li_garlic.as_retriever(k=2, similarity_top_k=3)
    with pytest.raises(ConfigError, match="k"):
        li_garlic.as_retriever(similarity_top_k=0)


def test_raptor_index_persist_refuses_metadata_json_cannot_store(
    li_index: Any, tmp_path: Path
) -> None:
    folder = tmp_path / "store"
    # LlamaIndex's writer raised a raw TypeError and left a truncated docstore.json
    with pytest.raises(PersistenceError, match="JSON cannot store"):
        li_index.persist(str(folder))
    assert not folder.exists()
    assert isinstance(li_index.raptor_tree.tree[0].metadata["when"], datetime.datetime)


def test_storage_context_persist_refuses_metadata_json_cannot_store_before_writing(
    li_index: Any, li_garlic: Any, emb: KeywordEmbedder, tmp_path: Path
) -> None:
    from llama_index.core import StorageContext, load_index_from_storage

    folder = tmp_path / "store"
    li_garlic.storage_context.persist(persist_dir=str(folder))  # a good store, already there
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    # Was a raw TypeError from LlamaIndex's writer, and docstore.json was left empty.
    with pytest.raises(PersistenceError, match="JSON cannot store") as caught:
        li_index.storage_context.persist(persist_dir=str(folder))
    assert "'when'" in str(caught.value) or "datetime" in str(caught.value)
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    # The store there is whole.
    loaded = load_index_from_storage(
        StorageContext.from_defaults(persist_dir=str(folder)),
        llm=strict_garlic_llm,
        embed_model=emb,
    )
    assert len(loaded.as_retriever().retrieve("cat")) >= 1


# -- the CLI ----------------------------------------------------------------------------------


def test_a_build_into_a_folder_holding_the_other_methods_save_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, tree: RaptorTree, graph: GarlicGraph
) -> None:
    doc = tmp_path / "doc.txt"
    doc.write_text(CAT, encoding="utf-8")
    raptor_dir, garlic_dir = tree.save(tmp_path / "r"), graph.save(tmp_path / "g")
    saved = {p: (p / "tree.json").read_bytes() for p in (raptor_dir, garlic_dir)}
    err = _one_line_error(capsys, ["raptor", "build", str(doc), "-o", str(garlic_dir)])
    assert "holds a GARLIC graph" in err
    err = _one_line_error(capsys, ["garlic", "build", str(doc), "-o", str(raptor_dir)])
    assert "holds a RAPTOR tree" in err
    assert {p: (p / "tree.json").read_bytes() for p in saved} == saved  # nothing replaced
