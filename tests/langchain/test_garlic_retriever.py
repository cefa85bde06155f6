"""GarlicRetriever: the LangChain standard retriever suite, what a search returns, the LLM
kinds, async, call settings, saving and loading.

One graph is built per module over the paragraphs of a real HotpotQA item with the real
embedded embedder and an instant deterministic LLM (``garlic_fakes.garlic_llm``: bullets for
summary prompts, Yes once the answer word has been read); most tests load it from disk.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast
from uuid import UUID

import pytest
from garlic_fakes import ANSWER, FACT, SMALL, garlic_llm, hotpot, hotpot_paragraphs
from hrefine.errors import ConfigError, PersistenceError, TreeError
from hrefine.garlic import GarlicSearcher
from hrefine.testing import ScriptedLM
from langchain_core.callbacks import BaseCallbackHandler, CallbackManagerForLLMRun
from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.retrievers import BaseRetriever
from langchain_tests.integration_tests import RetrieversIntegrationTests
from loop_ticks import ticks_while
from pydantic import ValidationError

from langchain_hrefine import GarlicRetriever, HrefineEmbeddings


class GarlicChat(BaseChatModel):
    """A LangChain chat model answering as :func:`garlic_llm`, counting its calls."""

    calls: int = 0

    @property
    def _llm_type(self) -> str:
        return "garlic-fake-chat"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.calls += 1
        text = garlic_llm(str(messages[-1].content))
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])


def make_documents(data: Path) -> list[Document]:
    return [
        Document(page_content=text, metadata={"title": title, "tags": ["hotpot"]}, id=title)
        for title, text in hotpot_paragraphs(data)
    ]


@pytest.fixture(scope="module")
def question(shared_data: Path) -> str:
    return str(hotpot(shared_data).question)


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory, shared_data: Path) -> Path:
    """The module's graph, built once and saved."""
    retriever = GarlicRetriever.from_documents(
        make_documents(shared_data), llm=ScriptedLM(garlic_llm), **SMALL
    )
    assert retriever.graph is not None
    assert retriever.graph.levels >= 2
    return retriever.save(tmp_path_factory.mktemp("garlic") / "graph")


@pytest.fixture
def retriever(saved: Path) -> GarlicRetriever:
    return GarlicRetriever.load(saved, llm=ScriptedLM(garlic_llm))


def _load_factory(saved: Path) -> Callable[..., BaseRetriever]:
    def make(**fields: Any) -> BaseRetriever:
        return GarlicRetriever.load(saved, llm=ScriptedLM(garlic_llm), **fields)

    return make


class TestGarlicRetrieverStandard(RetrieversIntegrationTests):
    """LangChain's own retriever contract, with the retriever's defaults."""

    @pytest.fixture(autouse=True)
    def _saved(self, saved: Path, question: str) -> None:
        self.saved = saved
        self.question = question

    @property
    def retriever_constructor(self) -> type[BaseRetriever]:
        return cast("type[BaseRetriever]", _load_factory(self.saved))

    @property
    def retriever_query_example(self) -> str:
        return self.question


# -- results --------------------------------------------------------------------------------


def test_returns_what_the_search_read_best_first(
    retriever: GarlicRetriever, question: str, shared_data: Path
) -> None:
    docs = retriever.invoke(question)
    result = retriever.last_result
    graph = retriever.graph
    assert result is not None and graph is not None
    assert sorted(d.metadata["hrefine_node_id"] for d in docs) == sorted(result.document_order)
    assert len(docs) == len(result.visited)
    # Best first, document order on a tie (was document order, every top-level point at 1.0).
    position = {node_id: i for i, node_id in enumerate(result.document_order)}
    keys = [(-d.metadata["relevance_score"], position[d.metadata["hrefine_node_id"]]) for d in docs]
    assert keys == sorted(keys)
    # the fake says Yes once FACT is read (in a leaf): the search went down to it and stopped
    assert result.stopped_by == "patience"
    assert not any(FACT in graph.tree[i].text for i in graph.top_level())
    yes = [d for d in docs if d.metadata["hrefine_said_yes"]]
    assert len(yes) == 1 and FACT in yes[0].page_content
    assert yes[0].metadata["hrefine_kind"] == "chunk" and yes[0].metadata["title"] == ANSWER
    originals = {d.id: d for d in make_documents(shared_data)}
    top = set(graph.top_level())
    similarity = GarlicSearcher(graph, embedder=graph.embedder).similarities(question)
    assert (
        len({d.metadata["relevance_score"] for d in docs if d.metadata["hrefine_node_id"] in top})
        > 1
    )
    for doc in docs:
        meta = doc.metadata
        assert 0.0 <= meta["relevance_score"] <= 1.0
        assert meta["hrefine_search"]["stopped_by"] == "patience"
        assert meta["hrefine_search"]["said_yes_at"] == [yes[0].metadata["hrefine_step"]]
        assert meta["hrefine_search"]["mode"] == "prompt"
        if meta["hrefine_node_id"] in top:
            assert meta["hrefine_step"] == 0 and meta["hrefine_raw_score"] is None
        else:
            assert meta["hrefine_step"] >= 1 and meta["hrefine_raw_score"] is not None
        # The query similarity, comparable across chunks and summary points.
        assert meta["relevance_score"] == pytest.approx(similarity[meta["hrefine_node_id"]])
        if meta["hrefine_kind"] == "chunk":
            assert meta["hrefine_level"] == 0
            (source,) = meta["hrefine_sources"]
            original = originals[source]
            assert meta["title"] == original.metadata["title"] == source
            start, end = meta["hrefine_start"], meta["hrefine_end"]
            assert original.page_content[start:end] == doc.page_content
            assert "hrefine_source" not in meta and "hrefine_source_id" not in meta
        else:
            assert meta["hrefine_level"] >= 1 and meta["hrefine_children"]
            assert "title" not in meta
            assert set(meta["hrefine_sources"]) <= set(originals)


def test_inputs_are_not_changed(shared_data: Path) -> None:
    docs = make_documents(shared_data)[:3]
    before = [d.model_copy(deep=True) for d in docs]
    retriever = GarlicRetriever.from_documents(docs, llm=ScriptedLM(garlic_llm), **SMALL)
    chunks = [d for d in retriever.invoke("Who is Victoria Hanley?") if "tags" in d.metadata]
    assert chunks  # the fake never says Yes: the search reads every node
    for doc in chunks:
        doc.metadata["tags"].append("changed")
    assert docs == before


def test_call_settings_change_one_call_only(retriever: GarlicRetriever, question: str) -> None:
    retriever.invoke(question, max_steps=1)
    assert retriever.last_result is not None
    assert retriever.last_result.stopped_by in ("max_steps", "patience")
    assert len(retriever.last_result.trace) <= 2
    retriever.invoke(question)
    assert retriever.last_result is not None and retriever.last_result.stopped_by == "patience"
    with pytest.raises(ConfigError, match="unknown argument"):
        retriever.invoke(question, top_k=2)
    # k keeps the k most relevant of what was read, best first.
    every = retriever.invoke(question)
    two = retriever.invoke(question, k=2)
    assert len(two) == min(2, len(every))
    assert [d.metadata["hrefine_node_id"] for d in two] == [
        d.metadata["hrefine_node_id"] for d in every[:2]
    ]
    with pytest.raises(ConfigError, match="patience"):
        retriever.invoke(question, patience=0)


def test_max_tokens_bounds_what_is_read(retriever: GarlicRetriever, question: str) -> None:
    full = retriever.invoke(question)
    top = sum(d.metadata["hrefine_tokens"] for d in full if d.metadata["hrefine_step"] == 0)
    docs = retriever.invoke(question, max_tokens=top + 1)
    assert retriever.last_result is not None
    assert retriever.last_result.stopped_by == "max_tokens"
    assert all(d.metadata["hrefine_step"] == 0 for d in docs)


def test_bad_fields_fail_at_construction() -> None:
    with pytest.raises(ValidationError, match="edges"):
        GarlicRetriever(edges="sideways")
    with pytest.raises(ValidationError, match="batch_tokens"):
        GarlicRetriever(chunk_tokens=400, batch_tokens=512)


def test_an_empty_retriever_returns_nothing_and_cannot_be_saved(tmp_path: Path) -> None:
    retriever = GarlicRetriever(llm=ScriptedLM(garlic_llm))
    assert retriever.invoke("anything") == []
    with pytest.raises(TreeError, match="no graph"):
        retriever.save(tmp_path / "g")


# -- LLMs, embeddings, async ----------------------------------------------------------------


def test_a_langchain_chat_model_runs_prompt_only(shared_data: Path, question: str) -> None:
    chat = GarlicChat()
    retriever = GarlicRetriever.from_documents(
        make_documents(shared_data), llm=chat, embeddings=HrefineEmbeddings(), **SMALL
    )
    assert retriever.graph is not None and retriever.graph.edge_mode == "embedding"
    built = chat.calls
    assert built == retriever.graph.stats["calls"]
    docs = retriever.invoke(question)
    assert chat.calls > built  # the search asked it Yes/No
    assert FACT in "".join(d.page_content for d in docs)


async def test_the_async_path_gives_the_same_documents(
    retriever: GarlicRetriever, question: str
) -> None:
    assert await retriever.ainvoke(question) == retriever.invoke(question)


async def test_afrom_documents_builds_off_the_loop(
    retriever: GarlicRetriever, question: str, shared_data: Path
) -> None:
    """The async build (the sync one in the default executor: GARLIC has no async build) keeps
    the event loop running and makes the graph the sync build makes."""
    built, ticks = await ticks_while(
        GarlicRetriever.afrom_documents(
            make_documents(shared_data), llm=ScriptedLM(garlic_llm), **SMALL
        ),
        interval=0.001,
    )
    assert ticks >= 2  # the loop ran while the graph was built
    assert built.graph is not None and retriever.graph is not None
    assert [n.text for n in built.graph.tree] == [n.text for n in retriever.graph.tree]
    assert await built.ainvoke(question) == retriever.invoke(question)
    pairs = hotpot_paragraphs(shared_data)[:4]
    from_texts = await GarlicRetriever.afrom_texts(
        [t for _, t in pairs], ids=[f"p{i}" for i in range(4)], llm=ScriptedLM(garlic_llm), **SMALL
    )
    assert from_texts.graph is not None
    assert from_texts.graph.tree.metadata["sources"] == ["p0", "p1", "p2", "p3"]


def test_from_texts_keeps_ids_and_metadata(shared_data: Path) -> None:
    pairs = hotpot_paragraphs(shared_data)[:4]
    retriever = GarlicRetriever.from_texts(
        [t for _, t in pairs],
        [{"title": title} for title, _ in pairs],
        ids=[f"p{i}" for i in range(4)],
        llm=ScriptedLM(garlic_llm),
        **SMALL,
    )
    chunks = [
        d for d in retriever.invoke("Victoria Hanley") if d.metadata["hrefine_kind"] == "chunk"
    ]
    for doc in chunks:
        (source,) = doc.metadata["hrefine_sources"]
        assert pairs[int(source[1:])][0] == doc.metadata["title"]
    with pytest.raises(ConfigError, match="metadatas"):
        GarlicRetriever.from_texts(["a", "b"], [{}], llm=ScriptedLM(garlic_llm))


# -- saving and loading ---------------------------------------------------------------------


def test_save_keeps_the_search_settings(retriever: GarlicRetriever, tmp_path: Path) -> None:
    retriever.patience = 2
    retriever.max_steps = 5
    before, retriever.lexical_weight = retriever.lexical_weight, 0.7
    try:
        loaded = GarlicRetriever.load(retriever.save(tmp_path / "g"), llm=ScriptedLM(garlic_llm))
    finally:
        retriever.lexical_weight = before
    assert (loaded.patience, loaded.max_steps, loaded.lexical_weight) == (2, 5, 0.7)
    assert loaded.chunk_tokens == SMALL["chunk_tokens"]
    assert loaded.graph is not None and retriever.graph is not None
    assert loaded.graph.tree.to_dict() == retriever.graph.tree.to_dict()
    again = GarlicRetriever.load(tmp_path / "g", llm=ScriptedLM(garlic_llm), patience=1)
    assert again.patience == 1


def test_load_rejects_a_folder_that_is_not_a_graph(tmp_path: Path) -> None:
    with pytest.raises(PersistenceError):
        GarlicRetriever.load(tmp_path)


# -- a LocalLM: attention edges and the KV-cached search ------------------------------------


@pytest.mark.slow  # ~2 minutes of SmolLM2 on two shared CPU cores
@pytest.mark.lm
def test_a_local_lm_builds_attention_edges_and_searches_with_its_cache(
    shared_data: Path, question: str
) -> None:
    from lm_fixture import load_default_lm

    lm = load_default_lm()
    docs = [d for d in make_documents(shared_data) if d.id == ANSWER]  # two leaves, one batch
    retriever = GarlicRetriever.from_documents(
        docs, llm=lm, max_steps=2, chunk_tokens=64, batch_tokens=400, summary_tokens=24
    )
    assert retriever.graph is not None and retriever.graph.edge_mode == "attention"
    out = retriever.invoke(question)
    result = retriever.last_result
    assert result is not None and result.mode == "attention"
    assert out and all(0.0 <= d.metadata["hrefine_p_yes"] <= 1.0 for d in out)
    # with the KV cache each step pre-fills only its node and the short question suffix
    assert result.prefilled_tokens < result.recompute_tokens or len(result.trace) == 1
    assert {d.metadata["hrefine_search"]["mode"] for d in out} == {"attention"}


class HangingChat(BaseChatModel):
    """A chat model whose every call waits until ``release`` is set."""

    release: Any

    @property
    def _llm_type(self) -> str:
        return "hanging-chat"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.release.wait(60)
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content="No"))])


def test_a_langchain_chat_model_gets_llm_timeout(saved: Path, shared_data: Path) -> None:
    # Was: the chat model was wrapped with the default 120 s, whatever llm_timeout said (a plain
    # callable did get it), for the build, the search and the compressor alike.
    from hrefine.errors import GenerationError

    from langchain_hrefine import GarlicCompressor

    release = threading.Event()
    chat = HangingChat(release=release)
    docs = make_documents(shared_data)[:2]
    try:
        with pytest.raises(GenerationError, match=r"timed out after 0\.05s"):
            GarlicRetriever.from_documents(docs, llm=chat, llm_timeout=0.05, **SMALL)
        loaded = GarlicRetriever.load(saved, llm=chat, llm_timeout=0.05)
        with pytest.raises(GenerationError, match=r"timed out after 0\.05s"):
            loaded.invoke("Who wrote it?")
        compressor = GarlicCompressor(llm=chat, llm_timeout=0.05, max_tokens=200, **SMALL)
        with pytest.raises(GenerationError, match=r"timed out after 0\.05s"):
            compressor.compress_documents(docs, "Who wrote it?")
    finally:
        release.set()


class ChatEvents(BaseCallbackHandler):
    """Records the runs it hears of: each chat model call with the run it belongs to (the
    outermost run above it: the chain ``llm | StrOutputParser()`` stands between)."""

    def __init__(self) -> None:
        self.retrievers: list[UUID] = []
        self.chats: list[UUID | None] = []
        self.parents: dict[UUID, UUID | None] = {}

    def on_retriever_start(
        self, serialized: dict[str, Any], query: str, *, run_id: UUID, **kwargs: Any
    ) -> None:
        self.retrievers.append(run_id)

    def on_chain_start(
        self,
        serialized: dict[str, Any] | None,
        inputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        self.parents[run_id] = parent_run_id

    def root(self, run: UUID | None) -> UUID | None:
        while run is not None and self.parents.get(run) is not None:
            run = self.parents[run]
        return run

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        self.chats.append(parent_run_id)


async def test_the_search_s_llm_calls_are_children_of_the_retriever_run(
    saved: Path, shared_data: Path, question: str
) -> None:
    # Was: run_manager was unused, so a caller's callbacks (tracing, cost) never heard the
    # search's Yes/No calls, on either path.
    from langchain_hrefine import GarlicCompressor

    chat = GarlicChat()
    retriever = GarlicRetriever.load(saved, llm=chat)
    for path in ("sync", "async"):
        events = ChatEvents()
        before = chat.calls
        if path == "sync":
            retriever.invoke(question, config={"callbacks": [events]})
        else:
            await retriever.ainvoke(question, config={"callbacks": [events]})
        assert chat.calls > before
        roots = [events.root(parent) for parent in events.chats]
        assert roots == [events.retrievers[0]] * (chat.calls - before)
    compressor = GarlicCompressor(llm=chat, max_tokens=300, **SMALL)
    docs = make_documents(shared_data)[:4]
    events = ChatEvents()
    before = chat.calls
    await compressor.acompress_documents(docs, question, callbacks=[events])
    compressor.compress_documents(docs, question, callbacks=[events])
    assert len(events.chats) == chat.calls - before > 0


async def test_the_llm_runs_in_the_config_of_the_chain_around_it(
    saved: Path, shared_data: Path, question: str
) -> None:
    # The callbacks above were first set as a config of their own, which dropped the chain's
    # configurable fields and recursion limit for the LLM calls (a model chosen per request by
    # a configurable field fell back to its default).
    from langchain_core.runnables import RunnableLambda
    from langchain_core.runnables.config import RunnableConfig

    from langchain_hrefine import CompressionRetriever, GarlicCompressor

    seen: list[tuple[Any, Any]] = []

    def llm(prompt: str, config: RunnableConfig) -> str:
        seen.append((config.get("configurable", {}).get("user"), config.get("recursion_limit")))
        return garlic_llm(prompt)

    config: RunnableConfig = {"configurable": {"user": "u-42"}, "recursion_limit": 99}
    retriever = GarlicRetriever.load(saved, llm=RunnableLambda(llm))
    chain = RunnableLambda(lambda q: q) | retriever
    chain.invoke(question, config=config)
    await chain.ainvoke(question, config=config)
    docs = make_documents(shared_data)[:4]
    compressor = GarlicCompressor(llm=RunnableLambda(llm), max_tokens=300, **SMALL)
    outer = CompressionRetriever(base_retriever=retriever, base_compressor=compressor)
    (RunnableLambda(lambda q: q) | outer).invoke(question, config=config)
    compressor.compress_documents(docs, question, callbacks=[ChatEvents()])
    assert seen and set(seen) == {("u-42", 99), (None, 25)}
    assert seen[-1] == (None, 25)  # called outside any chain: the defaults
