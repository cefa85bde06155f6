"""Async plumbing found in review: the async entry points never wait on the loop's default
executor from inside it (no deadlock with an embedder whose async methods use it), the sync call
of an async LLM inside a loop names the public async methods, and calls abandoned after a
timeout never starve later ones. Every wait here has a bound, so a regression fails instead of
hanging."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
from typing import Any

import numpy as np
import pytest
from hrefine.errors import GenerationError
from hrefine.html import HtmlPruner
from hrefine.models._callable_embed import CallableEmbedder
from hrefine.models._loop import CallRunner
from hrefine.models.text_generator import TextGenerator
from hrefine.testing import KeywordEmbedder

from tests.html_pages import PAGES

GUARD = 30.0  # seconds: far above the few these tests take, far below "hangs forever"


def _executor_embedder() -> CallableEmbedder:
    """An embedding model like LangChain's default ``aembed_documents``: its async methods run
    the sync ones in the loop's default executor."""
    kw = KeywordEmbedder(dim=64)

    def docs(texts: list[str]) -> Any:
        return np.asarray(kw.embed(texts))

    def query(text: str) -> Any:
        return np.asarray(kw.embed_query(text))

    async def adocs(texts: list[str]) -> Any:
        return await asyncio.get_running_loop().run_in_executor(None, docs, texts)

    async def aquery(text: str) -> Any:
        return await asyncio.get_running_loop().run_in_executor(None, query, text)

    return CallableEmbedder(
        docs, query, aembed_documents=adocs, aembed_query=aquery, cache_size=0, name="exec"
    )


async def test_aprune_does_not_deadlock_on_an_embedder_using_the_default_executor() -> None:
    loop = asyncio.get_running_loop()
    # A small default executor makes the starvation certain: more concurrent calls than it
    # has workers, each waiting on an embedding coroutine that needs one of those workers.
    small = concurrent.futures.ThreadPoolExecutor(2)
    loop.set_default_executor(small)
    pruner = HtmlPruner(embedder=_executor_embedder())
    page = PAGES["olympics"]
    try:
        calls = [pruner.aprune(page, f"medals won by nation {i}", 60) for i in range(6)]
        results = await asyncio.wait_for(asyncio.gather(*calls), GUARD)
    finally:
        small.shutdown(wait=False)
    expected = pruner.prune(page, "medals won by nation 0", 60)
    assert [r.html for r in results[:1]] == [expected.html]
    assert all(r.html for r in results)


async def test_langchain_html_rag_acompress_with_executor_embeddings_does_not_deadlock() -> None:
    documents = pytest.importorskip("langchain_core.documents")
    embeddings = pytest.importorskip("langchain_core.embeddings")
    from langchain_hrefine import HtmlRagCompressor

    kw = KeywordEmbedder(dim=64)

    class ExecEmbeddings(embeddings.Embeddings):  # type: ignore[misc]
        """A typical third-party Embeddings: its async methods hop to the loop's default
        executor, as LangChain's defaults do."""

        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [list(map(float, v)) for v in kw.embed(texts)]

        def embed_query(self, text: str) -> list[float]:
            return list(map(float, kw.embed_query(text)))

        async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(None, self.embed_documents, texts)

        async def aembed_query(self, text: str) -> list[float]:
            return await asyncio.get_running_loop().run_in_executor(None, self.embed_query, text)

    small = concurrent.futures.ThreadPoolExecutor(2)
    asyncio.get_running_loop().set_default_executor(small)
    comp = HtmlRagCompressor(max_tokens=60, embeddings=ExecEmbeddings())
    pages = [documents.Document(page_content=PAGES["olympics"], metadata={"source": "o"})]
    try:
        calls = [comp.acompress_documents(pages, f"gold medals {i}") for i in range(6)]
        out = await asyncio.wait_for(asyncio.gather(*calls), GUARD)
    finally:
        small.shutdown(wait=False)
    assert all(docs and docs[0].page_content for docs in out)


async def test_sync_call_of_async_llm_in_a_loop_names_the_public_async_methods() -> None:
    async def llm(prompt: str) -> str:
        return prompt

    with pytest.raises(GenerationError) as err:
        TextGenerator(llm, name="my-llm")("x")
    text = str(err.value)
    assert "my-llm" in text
    assert "arefine" in text and "aprune" in text and "ainvoke" in text
    assert "asyncio.to_thread" in text
    assert "use agenerate()" not in text


def _hanging_then_healthy(hangs: int) -> tuple[Any, threading.Event, dict[str, int]]:
    release = threading.Event()
    state = {"calls": 0, "healthy": 0}
    lock = threading.Lock()

    def llm(prompt: str) -> str:
        with lock:
            state["calls"] += 1
            n = state["calls"]
        if n <= hangs:
            release.wait(GUARD)  # an API latency spike: these calls hang
        with lock:
            state["healthy"] += 1
        return prompt.upper()

    return llm, release, state


def test_calls_abandoned_after_timeout_do_not_poison_later_calls() -> None:
    # max_concurrency=1: the pool has 2 workers; 4 hanging calls (2 calls x 2 tries) hold them
    # all, and more. Later calls must still reach the (now healthy) LLM.
    llm, release, state = _hanging_then_healthy(hangs=4)
    gen = TextGenerator(llm, max_concurrency=1, retries=1, timeout=0.1, backoff=0)
    try:
        for _ in range(2):
            with pytest.raises(GenerationError, match="timed out"):
                gen("x")
        assert state["calls"] == 4
        assert [gen(p) for p in ("a", "b", "c")] == ["A", "B", "C"]
        assert state["calls"] == 7
    finally:
        release.set()


def test_too_many_abandoned_calls_are_named_in_the_error() -> None:
    release = threading.Event()
    runner = CallRunner(1, 2, "LLM slow")
    try:
        for _ in range(2):  # one on the pool's only worker, one on a thread of its own
            fut, call = runner.start(release.wait, GUARD)
            with pytest.raises(concurrent.futures.TimeoutError):
                runner.wait(fut, call, 0.05)
        assert runner.abandoned == 2
        with pytest.raises(GenerationError, match="2 calls to LLM slow abandoned after timing"):
            runner.start(release.wait, GUARD)
    finally:
        release.set()
    deadline = time.monotonic() + GUARD
    while runner.abandoned and time.monotonic() < deadline:
        time.sleep(0.01)
    assert runner.abandoned == 0
    fut, call = runner.start(lambda: "ok")
    assert runner.wait(fut, call, GUARD) == "ok"


def test_timeout_counts_from_the_start_of_the_call() -> None:
    release = threading.Event()
    runner = CallRunner(1, 4, "LLM x")
    started = threading.Event()

    def slow_start() -> str:
        started.set()
        return "done"

    try:
        held, held_call = runner.start(release.wait, GUARD)  # holds the only pool worker
        fut, call = runner.start(slow_start)
        assert runner.wait(fut, call, 0.5) == "done"
        assert started.is_set()
        assert not held.done()
    finally:
        release.set()
    assert runner.wait(held, held_call, GUARD) is True


async def test_agenerate_with_sync_llm_leaves_the_default_executor_free() -> None:
    loop = asyncio.get_running_loop()
    small = concurrent.futures.ThreadPoolExecutor(1)
    loop.set_default_executor(small)
    llm, release, state = _hanging_then_healthy(hangs=2)
    gen = TextGenerator(llm, max_concurrency=1, retries=1, timeout=0.1, backoff=0)
    try:
        with pytest.raises(GenerationError, match="timed out"):
            await asyncio.wait_for(gen.agenerate("x"), GUARD)
        # The abandoned calls hold none of the default executor's workers.
        assert await asyncio.wait_for(loop.run_in_executor(None, lambda: 7), GUARD) == 7
        assert await asyncio.wait_for(gen.agenerate("y"), GUARD) == "Y"
        assert state["calls"] == 3  # the two abandoned calls, then the healthy one
    finally:
        release.set()
        small.shutdown(wait=False)
