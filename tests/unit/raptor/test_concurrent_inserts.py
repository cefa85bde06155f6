"""Inserts at the same time into one RAPTOR tree (and into an empty LangChain retriever) run one
after the other: none fails, none is lost, a waiting coroutine does not block the event loop.

Small trees over the ``raptor_fakes`` topics, the keyword embedder and the fake summariser, made
slow where two calls have to overlap. Every wait is bounded, so a deadlock fails the test.
"""

from __future__ import annotations

import asyncio
import copy
import pickle
import threading
import time
from typing import Any

import pytest
from hrefine.errors import TreeError
from hrefine.raptor import RaptorTree
from hrefine.raptor.serial_insert import InsertLock, insert_lock
from hrefine.testing import KeywordEmbedder
from raptor_fakes import TOPICS, Summariser

SETTINGS: dict[str, Any] = {"chunk_tokens": 20, "reduction_dim": 8}
BASE = [TOPICS["volcano"], TOPICS["bread"]]
FIRST = [TOPICS["chess"]]
SECOND = [TOPICS["comet"]]
#: The most seconds a test waits for anything.
LIMIT = 60


def build(llm: Any) -> RaptorTree:
    return RaptorTree.build(BASE, llm=llm, embedder=KeywordEmbedder(), **SETTINGS)


def texts(raptor: RaptorTree) -> list[str]:
    return [n.text for n in raptor.tree]


def sequential(*batches: list[str]) -> RaptorTree:
    raptor = build(Summariser())
    for docs in batches:
        raptor.insert(docs)
    return raptor


def run_threads(*calls: Any) -> list[BaseException]:
    """Run each call in its own thread, all started together; the exceptions they raised."""
    errors: list[BaseException] = []
    start = threading.Barrier(len(calls))

    def run(call: Any) -> None:
        start.wait(LIMIT)
        try:
            call()
        except BaseException as exc:  # reported to the test
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(c,)) for c in calls]
    for t in threads:
        t.start()
    for t in threads:
        t.join(LIMIT)
    assert not any(t.is_alive() for t in threads), "an insert hung"
    return errors


def test_threaded_inserts_wait_for_each_other_and_both_are_added() -> None:
    raptor = build(Summariser(delay=0.05))  # each insert takes long enough to overlap
    errors = run_threads(lambda: raptor.insert(FIRST), lambda: raptor.insert(SECOND))
    assert errors == []  # was: TreeError for one of them, its documents not added
    sources = raptor.tree.metadata["sources"]
    assert len(sources) == 4
    assert len(raptor.stats["inserts"]) == 2
    # One after the other, in either order: the tree is the one sequential inserts make.
    assert texts(raptor) in (texts(sequential(FIRST, SECOND)), texts(sequential(SECOND, FIRST)))


def test_async_inserts_queue_without_blocking_the_event_loop() -> None:
    async def slow_llm(prompt: str) -> str:
        await asyncio.sleep(0.02)
        return Summariser()(prompt)

    raptor = build(Summariser())
    raptor._llm = slow_llm  # the async LLM, for the inserts
    raptor._summariser = None
    ticks = 0

    async def ticker(stop: asyncio.Event) -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            await asyncio.sleep(0.005)

    async def main() -> list[Any]:
        stop = asyncio.Event()
        tick = asyncio.create_task(ticker(stop))
        got = await asyncio.wait_for(
            asyncio.gather(raptor.ainsert(FIRST), raptor.ainsert(SECOND), return_exceptions=True),
            LIMIT,
        )
        stop.set()
        await tick
        return got

    results = asyncio.run(main())
    assert [r for r in results if isinstance(r, BaseException)] == []  # was: one TreeError
    assert len(raptor.tree.metadata["sources"]) == 4
    assert texts(raptor) in (texts(sequential(FIRST, SECOND)), texts(sequential(SECOND, FIRST)))
    assert ticks > 5  # the loop ran while the second insert waited


def test_a_coroutine_cancelled_while_waiting_holds_nothing() -> None:
    raptor = build(Summariser())
    lock = insert_lock(raptor)

    async def main() -> None:
        with lock:  # another thread's insert, as far as the coroutine can tell
            waiting = asyncio.ensure_future(raptor.ainsert(FIRST))
            await asyncio.sleep(0.05)
            assert not waiting.done()
            waiting.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiting
        await asyncio.wait_for(raptor.ainsert(SECOND), LIMIT)

    asyncio.run(main())
    assert not lock.locked()
    assert len(raptor.tree.metadata["sources"]) == 3  # only the second was added


def test_a_failed_insert_releases_the_lock_and_leaves_the_tree() -> None:
    raptor = build(Summariser())
    before = texts(raptor)
    raptor._llm = Summariser(fail=True)
    raptor._summariser = None
    raptor.options = raptor.options.replace(llm_retries=0)
    with pytest.raises(Exception, match="service is down"):
        raptor.insert(FIRST)
    assert texts(raptor) == before
    assert not insert_lock(raptor).locked()


def test_a_tree_replaced_during_an_insert_is_still_refused() -> None:
    raptor = build(Summariser())
    other = copy.deepcopy(raptor.tree)

    def replacing_llm(prompt: str) -> str:
        raptor.tree = other  # not an insert: nothing waits for it
        return Summariser()(prompt)

    raptor._llm = replacing_llm
    raptor._summariser = None
    with pytest.raises(TreeError, match="replaced while this insert ran"):
        raptor.insert(FIRST)
    assert raptor.tree is other


def test_the_lock_is_fresh_in_a_copy_or_a_pickle() -> None:
    lock = InsertLock()
    with lock:
        assert not copy.deepcopy(lock).locked()
        assert not pickle.loads(pickle.dumps(lock)).locked()
    raptor = build(None)  # the no-model summariser (the fake holds a lock of its own)
    with insert_lock(raptor):
        twin = copy.deepcopy(raptor)
        assert insert_lock(twin) is not insert_lock(raptor)
        assert not insert_lock(twin).locked()
    assert insert_lock(raptor) is insert_lock(raptor)


# -- LangChain: an empty retriever's first add_documents -------------------------------------


def _empty_retriever(llm: Any) -> Any:
    pytest.importorskip("langchain_core")
    from langchain_hrefine import RaptorRetriever

    return RaptorRetriever(llm=llm, embeddings=KeywordEmbedder(), **SETTINGS)


def _docs(batch: list[str], name: str) -> list[Any]:
    from langchain_core.documents import Document

    return [Document(page_content=t, id=f"{name}{i}") for i, t in enumerate(batch)]


def test_threaded_add_documents_on_an_empty_retriever_keeps_both() -> None:
    retriever = _empty_retriever(Summariser(delay=0.05))
    a, b = _docs(BASE, "a"), _docs(FIRST + SECOND, "b")
    errors = run_threads(lambda: retriever.add_documents(a), lambda: retriever.add_documents(b))
    assert errors == []
    # was: both built a tree, the last one replacing the first, whose documents were lost
    assert sorted(retriever.tree.tree.metadata["sources"]) == ["a0", "a1", "b0", "b1"]


def test_async_add_documents_on_an_empty_retriever_keeps_both() -> None:
    retriever = _empty_retriever(Summariser(delay=0.02))
    a, b = _docs(BASE, "a"), _docs(FIRST + SECOND, "b")

    async def main() -> list[Any]:
        calls = asyncio.gather(
            retriever.aadd_documents(a), retriever.aadd_documents(b), return_exceptions=True
        )
        return list(await asyncio.wait_for(calls, LIMIT))

    started = time.perf_counter()
    assert asyncio.run(main()) == [None, None]
    assert time.perf_counter() - started < LIMIT
    assert sorted(retriever.tree.tree.metadata["sources"]) == ["a0", "a1", "b0", "b1"]


def test_an_ainsert_cancelled_while_summarising_leaves_the_tree_and_stops_its_calls() -> None:
    built = build(Summariser())
    before = built.tree.to_dict()
    summary_calls = {"started": 0, "finished": 0}

    async def slow_llm(prompt: str) -> str:
        summary_calls["started"] += 1
        await asyncio.sleep(0.3)
        summary_calls["finished"] += 1
        return "A summary."

    raptor = RaptorTree(built.tree, built.options, llm=slow_llm, embedder=KeywordEmbedder())

    async def main() -> None:
        task = asyncio.ensure_future(raptor.ainsert(FIRST))
        for _ in range(int(LIMIT / 0.01)):  # until the first summary call is in flight
            if summary_calls["started"]:
                break
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.sleep(0.5)  # the loop lives on: no call it cancelled comes back

    asyncio.run(main())
    assert summary_calls["started"] >= 1 and summary_calls["finished"] == 0
    assert raptor.tree.to_dict() == before
    assert not insert_lock(raptor).locked()
