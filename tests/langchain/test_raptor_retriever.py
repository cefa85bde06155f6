"""RaptorRetriever: the LangChain standard retriever suite, metadata, budgets, LLMs, async,
failures, growing, saving and loading.

One tree is built per module over short texts on four topics (written here), with the real
embedded embedder and an instant deterministic summariser; most tests load it from disk.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import pytest
from hrefine.budget import get_counter
from hrefine.errors import ConfigError, GenerationError, PersistenceError, TreeError
from hrefine.tree import NodeKind
from langchain_core.callbacks import AsyncCallbackManagerForLLMRun
from langchain_core.documents import Document
from langchain_core.language_models import FakeListChatModel, FakeListLLM
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.retrievers import BaseRetriever
from langchain_tests.integration_tests import RetrieversIntegrationTests
from loop_ticks import ticks_while
from pydantic import Field, ValidationError
from raptor_fakes import TOPICS, Summariser

from langchain_hrefine import HrefineEmbeddings, RaptorRetriever

QUERY = "How often does Halley's Comet come back?"


def make_documents() -> list[Document]:
    """24 short documents, six per topic, with nested metadata (to see it copied)."""
    return [
        Document(
            page_content=f"{text} Note {i} on {topic}: item {i * 7 + len(topic)}.",
            metadata={"topic": topic, "n": i, "tags": ["notes", topic]},
            id=f"{topic}-{i}",
        )
        for i in range(6)
        for topic, text in TOPICS.items()
    ]


class SummaryChat(FakeListChatModel):
    """A fake chat model that records each prompt and whether it came sync or async."""

    prompts: list[str] = Field(default_factory=list)
    systems: list[str] = Field(default_factory=list)
    sync_calls: int = 0
    async_calls: int = 0

    def _record(self, messages: list[BaseMessage]) -> None:
        self.systems.extend(str(m.content) for m in messages if isinstance(m, SystemMessage))
        self.prompts.append(str(messages[-1].content))

    def _call(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> str:
        self.sync_calls += 1
        self._record(messages)
        return str(super()._call(messages, *args, **kwargs))

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.async_calls += 1
        self._record(messages)
        await asyncio.sleep(0.001)
        text = str(FakeListChatModel._call(self, messages))
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])


class FailingChat(FakeListChatModel):
    """A chat model whose service is down."""

    def _call(self, *args: Any, **kwargs: Any) -> str:
        msg = "the service is down"
        raise ConnectionError(msg)


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The module's tree (default settings), built once and saved."""
    retriever = RaptorRetriever.from_documents(make_documents(), llm=Summariser())
    assert retriever.tree is not None
    assert retriever.tree.layers >= 1
    return retriever.save(tmp_path_factory.mktemp("raptor") / "tree")


@pytest.fixture
def retriever(saved: Path) -> RaptorRetriever:
    return RaptorRetriever.load(saved, llm=Summariser())


def _load_factory(saved: Path) -> Callable[..., BaseRetriever]:
    def make(**fields: Any) -> BaseRetriever:
        return RaptorRetriever.load(saved, llm=Summariser(), **fields)

    return make


class TestRaptorRetrieverStandard(RetrieversIntegrationTests):
    """LangChain's own retriever contract, with the retriever's defaults."""

    @pytest.fixture(autouse=True)
    def _saved(self, saved: Path) -> None:
        self.saved = saved

    @property
    def retriever_constructor(self) -> type[BaseRetriever]:
        # the standard tests call this with the fields; the tree is the module's, loaded
        return cast("type[BaseRetriever]", _load_factory(self.saved))

    @property
    def retriever_query_example(self) -> str:
        return QUERY


# -- results --------------------------------------------------------------------------------


def test_documents_are_ordered_by_relevance_with_their_metadata(retriever: RaptorRetriever) -> None:
    docs = retriever.invoke(QUERY)
    assert len(docs) == 10  # the default k
    scores = [d.metadata["relevance_score"] for d in docs]
    assert scores == sorted(scores, reverse=True)
    assert all(0.0 <= s <= 1.0 for s in scores)
    best = _best_leaf(docs)
    assert best.metadata["topic"] == "comet"
    assert best.metadata["hrefine_kind"] == "chunk"
    assert best.metadata["hrefine_layer"] == 0
    (source,) = best.metadata["hrefine_sources"]
    original = {d.id: d for d in make_documents()}[source]
    assert original.metadata["topic"] == "comet"
    start, end = best.metadata["hrefine_start"], best.metadata["hrefine_end"]
    assert original.page_content[start:end] == best.page_content
    assert "hrefine_source" not in best.metadata
    for doc in docs:
        meta = doc.metadata
        # The raw score is the cosine plus up to 0.5 of BM25 match (lexical_weight).
        assert meta["relevance_score"] == pytest.approx(
            min(1.0, max(0.0, meta["hrefine_raw_score"] / 1.5))
        )
        assert meta["hrefine_kind"] in ("chunk", "summary")
        assert isinstance(meta["hrefine_node_id"], int)
        if meta["hrefine_kind"] == "summary":
            assert meta["hrefine_layer"] >= 1
            assert meta["hrefine_children"]
            assert "topic" not in meta
            assert all(isinstance(s, str) for s in meta["hrefine_sources"])


def test_summaries_are_retrieved_for_broad_questions(retriever: RaptorRetriever) -> None:
    broad = "Comets, volcanoes, bread and chess"
    docs = retriever.invoke(broad, k=None, summary_rank="free")
    assert {d.metadata["hrefine_layer"] for d in docs} >= {0, 1}
    assert len(docs) == len(retriever.tree or [])
    # the default returns every leaf and no summary
    leaves = retriever.invoke(broad, k=None)
    assert {d.metadata["hrefine_layer"] for d in leaves} == {0}
    assert len(leaves) == (len(retriever.tree.tree.leaves) if retriever.tree else -1)
    retriever.summary_rank = "free"  # the field, for every call
    assert len(retriever.invoke(broad, k=None)) == len(docs)


def test_call_settings_change_one_call_only(retriever: RaptorRetriever) -> None:
    assert len(retriever.invoke(QUERY, k=2)) == 2
    assert retriever.tree is not None
    traversal = retriever.invoke(QUERY, mode="traversal", k=1, summary_rank="free")
    # one node per layer, from the root down to a leaf
    assert sorted(d.metadata["hrefine_layer"] for d in traversal) == list(
        range(retriever.tree.layers + 1)
    )
    # by default leaves only: that leaf first, then others of its branch in the summaries' places
    leaves = retriever.invoke(QUERY, mode="traversal", k=1)
    walked = next(d for d in traversal if d.metadata["hrefine_layer"] == 0)
    assert leaves[0].metadata["hrefine_node_id"] == walked.metadata["hrefine_node_id"]
    assert {d.metadata["hrefine_layer"] for d in leaves} == {0}
    assert 1 <= len(leaves) <= len(traversal)
    assert len(retriever.invoke(QUERY)) == 10
    retriever.k = 3
    assert len(retriever.invoke(QUERY)) == 3
    with pytest.raises(ConfigError, match="unknown argument"):
        retriever.invoke(QUERY, top_k=2)
    with pytest.raises(ConfigError, match="k"):
        retriever.invoke(QUERY, k=0)
    with pytest.raises(ConfigError, match="mode"):
        retriever.invoke(QUERY, mode="sideways")


def test_bad_fields_fail_at_construction() -> None:
    # pydantic reports the core's ConfigError (a ValueError) as a ValidationError.
    with pytest.raises(ValidationError, match="mode"):
        RaptorRetriever(mode="sideways")
    with pytest.raises(ValidationError, match="cluster_max_tokens"):
        RaptorRetriever(chunk_tokens=400, cluster_max_tokens=200)


def test_caller_documents_are_not_changed_and_results_are_copies(saved: Path) -> None:
    docs = make_documents()
    before = copy.deepcopy(docs)
    retriever = RaptorRetriever.load(saved, llm=Summariser())
    retriever.add_documents(docs[:2])
    assert docs == before
    first = _best_leaf(retriever.invoke(QUERY))
    first.metadata["tags"].append("changed by the caller")
    first.metadata["topic"] = "changed"
    assert retriever.invoke(QUERY) == retriever.invoke(QUERY)
    assert _best_leaf(retriever.invoke(QUERY)).metadata["topic"] == "comet"


def _best_leaf(docs: list[Document]) -> Document:
    """The best-ranked leaf (summaries carry no source metadata)."""
    return next(d for d in docs if d.metadata["hrefine_kind"] == "chunk")


# -- budgets --------------------------------------------------------------------------------


@pytest.mark.parametrize("budget", [40, 150, 400])
def test_max_tokens_bounds_the_default_tokenizer_count(
    retriever: RaptorRetriever, budget: int
) -> None:
    counter = get_counter(None)
    docs = retriever.invoke(QUERY, k=None, max_tokens=budget)
    used = sum(counter.count(d.page_content) for d in docs)
    assert docs
    assert used <= budget
    assert used == sum(d.metadata["hrefine_tokens"] for d in docs)
    # the budget is filled: every node left out is bigger than the room left
    rest = len(retriever.invoke(QUERY, k=None))
    assert len(docs) == rest or budget - used < 60


def test_max_tokens_with_a_tiktoken_tokenizer_built_and_loaded(tmp_path: Path) -> None:
    counter = get_counter("cl100k_base")
    built = RaptorRetriever.from_documents(
        make_documents(), llm=Summariser(), tokenizer="cl100k_base", max_tokens=120, k=None
    )
    docs = built.invoke(QUERY)
    assert docs
    assert sum(counter.count(d.page_content) for d in docs) <= 120
    # the tokenizer's name is saved with the tree, and counts again on load
    loaded = RaptorRetriever.load(built.save(tmp_path / "tree"))
    assert loaded.tokenizer == "cl100k_base"
    assert loaded.max_tokens == 120
    assert loaded.invoke(QUERY) == docs


# -- LLMs -----------------------------------------------------------------------------------


def _summary_texts(retriever: RaptorRetriever) -> list[str]:
    assert retriever.tree is not None
    return [n.text for n in retriever.tree.tree if n.kind == NodeKind.SUMMARY]


def test_chat_model_summarises_each_cluster_once_and_its_text_is_stored() -> None:
    responses = [f"Summary number {i} of a cluster of notes." for i in range(20)]
    chat = SummaryChat(responses=responses)
    retriever = RaptorRetriever.from_documents(make_documents(), llm=chat, llm_concurrency=1)
    assert retriever.tree is not None
    clusters = sum(retriever.tree.stats["clusters_per_layer"])
    assert clusters >= 2
    assert (chat.sync_calls, chat.async_calls) == (clusters, 0)
    assert retriever.tree.stats["llm_calls"] == clusters
    # one call at a time: the answers are stored in the order they were given
    assert _summary_texts(retriever) == responses[:clusters]
    assert all(p.startswith("Write a summary of the following") for p in chat.prompts)
    # the paper's system message goes with each prompt
    assert chat.systems == ["You are a Summarizing Text Portal"] * clusters
    summary = retriever.invoke("Summary number", k=1, summary_rank="free")[0]
    assert summary.metadata["hrefine_kind"] == "summary"
    assert summary.page_content in responses


def test_langchain_llm_and_plain_callable_summarise() -> None:
    docs = make_documents()[:8]  # too few to cluster: one summary over them all
    llm = FakeListLLM(responses=["Notes on comets, volcanoes, bread and chess."])
    by_llm = RaptorRetriever.from_documents(docs, llm=llm)
    assert _summary_texts(by_llm) == ["Notes on comets, volcanoes, bread and chess."]

    async def summarise(prompt: str) -> str:
        return "An async callable's summary."

    by_callable = RaptorRetriever.from_documents(docs, llm=summarise)
    assert _summary_texts(by_callable) == ["An async callable's summary."]


def test_llm_that_raises_is_a_generation_error_and_nothing_is_built() -> None:
    with pytest.raises(GenerationError, match="service is down"):
        RaptorRetriever.from_documents(
            make_documents(), llm=FailingChat(responses=["x"]), llm_retries=0
        )
    with pytest.raises(GenerationError):
        RaptorRetriever.from_documents(make_documents(), llm=Summariser(fail=True), llm_retries=0)
    # a chat model's empty answer is no summary
    with pytest.raises(GenerationError, match="no summary"):
        RaptorRetriever.from_documents(make_documents(), llm=SummaryChat(responses=[" "]))
    empty = RaptorRetriever(llm=Summariser(fail=True), llm_retries=0)
    with pytest.raises(GenerationError):
        empty.add_documents(make_documents())
    assert empty.tree is None
    assert empty.invoke(QUERY) == []


def test_failed_insert_leaves_the_tree_as_it_was(saved: Path) -> None:
    retriever = RaptorRetriever.load(saved, llm=Summariser(fail=True), llm_retries=0)
    assert retriever.tree is not None
    size, before = len(retriever.tree), retriever.invoke(QUERY)
    extra = [
        Document(page_content=d.page_content + " Extra.", id=f"x{i}")
        for i, d in enumerate(make_documents()[:6])
    ]
    with pytest.raises(GenerationError):
        retriever.add_documents(extra)
    assert len(retriever.tree) == size
    assert retriever.invoke(QUERY) == before


def test_add_documents_grows_the_tree_and_finds_the_new_text(saved: Path) -> None:
    retriever = RaptorRetriever.load(saved, llm=Summariser())
    assert retriever.tree is not None
    size = len(retriever.tree)
    new = Document(
        page_content="The Perseid meteor shower peaks every August, from the debris of "
        "comet Swift-Tuttle.",
        metadata={"topic": "meteors"},
        id="perseids",
    )
    retriever.add_documents([new])
    assert len(retriever.tree) > size
    best = retriever.invoke("When does the Perseid meteor shower peak?", k=1)[0]
    assert best.metadata["hrefine_sources"] == ["perseids"]
    assert best.metadata["topic"] == "meteors"
    with pytest.raises(ConfigError, match="keyword"):
        retriever.add_documents([new], ids=["a"])


def test_empty_retriever_builds_on_first_add() -> None:
    retriever = RaptorRetriever(llm=Summariser(), k=2)
    assert retriever.invoke(QUERY) == []
    retriever.add_documents(make_documents()[:8])
    docs = retriever.invoke(QUERY)
    assert len(docs) == 2
    assert docs[0].metadata["topic"] == "comet"


def test_from_texts_takes_metadatas_and_ids() -> None:
    docs = make_documents()[:8]
    retriever = RaptorRetriever.from_texts(
        [d.page_content for d in docs],
        [d.metadata for d in docs],
        ids=[d.id for d in docs],
        llm=Summariser(),
        embeddings=HrefineEmbeddings(),
    )
    best = retriever.invoke(QUERY, k=1)[0]
    assert best.metadata["topic"] == "comet"
    assert best.metadata["hrefine_sources"] in (["comet-0"], ["comet-1"])
    no_ids = RaptorRetriever.from_texts([d.page_content for d in docs], llm=Summariser())
    assert no_ids.invoke(QUERY, k=1)[0].metadata["hrefine_sources"] in ([3], [7])
    with pytest.raises(ConfigError, match="metadatas"):
        RaptorRetriever.from_texts(["a b c", "d e f"], [{}], llm=Summariser())


# -- async ----------------------------------------------------------------------------------


async def test_afrom_texts_awaits_the_chat_model_without_blocking_the_loop() -> None:
    docs = make_documents()
    chat = SummaryChat(responses=[f"Async summary {i}." for i in range(20)])
    retriever, ticks = await ticks_while(
        RaptorRetriever.afrom_texts(
            [d.page_content for d in docs], [d.metadata for d in docs], llm=chat
        )
    )
    assert retriever.tree is not None
    clusters = sum(retriever.tree.stats["clusters_per_layer"])
    assert (chat.async_calls, chat.sync_calls) == (clusters, 0)
    assert len(chat.systems) == clusters
    assert set(_summary_texts(retriever)) <= set(chat.responses)
    assert ticks >= 5  # the loop kept running during the build
    # ainvoke inside the running loop gives what invoke gives
    assert await retriever.ainvoke(QUERY, k=4) == retriever.invoke(QUERY, k=4)


async def test_aadd_documents_and_afrom_documents(saved: Path) -> None:
    chat = SummaryChat(responses=["An async summary of notes."])
    retriever = await RaptorRetriever.afrom_documents(make_documents()[:8], llm=chat)
    await retriever.aadd_documents(make_documents()[8:12])
    assert chat.sync_calls == 0
    assert retriever.tree is not None
    assert len(retriever.tree.tree.leaves) == 12
    docs = await retriever.ainvoke(QUERY, k=3)
    assert len(docs) == 3


# -- persistence ----------------------------------------------------------------------------


def test_save_and_load_give_the_same_results(saved: Path, tmp_path: Path) -> None:
    first = RaptorRetriever.load(saved, llm=Summariser(), k=5, mode="traversal")
    again = RaptorRetriever.load(first.save(tmp_path / "again"), llm=Summariser())
    assert (again.k, again.mode) == (5, "traversal")
    for query in (QUERY, "What does a sourdough starter need?", "Sicilian Defence"):
        assert again.invoke(query) == first.invoke(query)
    assert len(again.invoke(QUERY, k=2, mode="collapsed")) == 2
    # traversal keeps k per layer, from the roots down
    layers = [d.metadata["hrefine_layer"] for d in again.invoke(QUERY, k=2, summary_rank="free")]
    assert all(layers.count(level) <= 2 for level in set(layers))
    assert 0 in layers
    # leaves only (the default): the leaves take the summaries' places
    leaves = [d.metadata["hrefine_layer"] for d in again.invoke(QUERY, k=2)]
    assert set(leaves) == {0} and len(leaves) <= len(layers)


def test_save_needs_a_tree_and_load_a_saved_one(tmp_path: Path) -> None:
    with pytest.raises(TreeError, match="no tree"):
        RaptorRetriever().save(tmp_path / "nothing")
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "tree.json").write_text("{}", encoding="utf-8")
    with pytest.raises(PersistenceError):
        RaptorRetriever.load(tmp_path / "junk")
    with pytest.raises(ConfigError, match="k"):
        RaptorRetriever.load(tmp_path / "junk", k=-1)


@pytest.mark.parametrize("how", ["pickle", "deepcopy", "model_copy"])
def test_a_built_retriever_pickles_and_copies_with_its_chat_model(how: str) -> None:
    # Was: TypeError (the summariser's thread pool and lock) or a local function that pickle
    # could not reach, with or without an LLM; integrations.md promises both work.
    import pickle

    chat = SummaryChat(responses=[f"Summary number {i} of the notes." for i in range(40)])
    retriever = RaptorRetriever.from_documents(make_documents(), llm=chat, llm_concurrency=1)
    copies: dict[str, Callable[[RaptorRetriever], RaptorRetriever]] = {
        "pickle": lambda r: pickle.loads(pickle.dumps(r)),
        "deepcopy": copy.deepcopy,
        "model_copy": lambda r: r.model_copy(deep=True),
    }
    twin = copies[how](retriever)
    # the default tokenizer travels as the way to make it again, not as its 7 MB vocabulary
    assert len(pickle.dumps(retriever)) < 1_000_000
    assert twin.invoke(QUERY) == retriever.invoke(QUERY)
    assert twin.tree is not None and retriever.tree is not None
    size = len(retriever.tree)
    twin.add_documents(
        [Document(page_content=f"Meteors streak across the sky {i}.") for i in range(8)]
    )
    assert len(twin.tree) > size and len(retriever.tree) == size
    # the copy summarises with its own copy of the chat model, the system message first
    assert isinstance(twin.llm, SummaryChat) and twin.llm.systems
    assert set(twin.llm.systems) == {"You are a Summarizing Text Portal"}
