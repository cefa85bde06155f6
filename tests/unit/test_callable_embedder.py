"""CallableEmbedder (a framework's embedding model behind the core protocol): vectors kept by
content, bounded, and async methods awaited on the caller's loop for an async entry point."""

from __future__ import annotations

import asyncio
import copy
import threading

import numpy as np
import pytest
from hrefine.errors import ConfigError
from hrefine.models import CallableEmbedder
from hrefine.models._loop import caller_loop, run_in_worker


class Model:
    """A deterministic model recording what it is asked, and on which thread."""

    def __init__(self) -> None:
        self.documents: list[list[str]] = []
        self.queries: list[str] = []
        self.async_documents: list[list[str]] = []
        self.async_queries: list[str] = []
        self.threads: list[str] = []

    @staticmethod
    def vector(text: str) -> list[float]:
        return [float(len(text)), float(sum(map(ord, text)) % 97), 1.0]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.documents.append(texts)
        return [self.vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        self.queries.append(text)
        return self.vector(text)

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        asyncio.get_running_loop()
        self.threads.append(threading.current_thread().name)
        self.async_documents.append(texts)
        return [self.vector(t) for t in texts]

    async def aembed_query(self, text: str) -> list[float]:
        self.async_queries.append(text)
        return self.vector(text)


def _embedder(model: Model, **kwargs: int) -> CallableEmbedder:
    return CallableEmbedder(
        model.embed_documents,
        model.embed_query,
        aembed_documents=model.aembed_documents,
        aembed_query=model.aembed_query,
        **kwargs,
    )


def test_each_text_is_embedded_once_across_calls() -> None:
    model = Model()
    emb = _embedder(model)
    first = emb.embed(["a", "bb", "a", "ccc"])
    again = emb.embed(["ccc", "a", "dddd"])
    assert model.documents == [["a", "bb", "ccc"], ["dddd"]]
    np.testing.assert_array_equal(first[3], again[0])
    np.testing.assert_allclose(np.linalg.norm(again, axis=1), 1.0, rtol=1e-6)
    np.testing.assert_array_equal(emb.embed_query("q"), emb.embed_query("q"))
    assert model.queries == ["q"]
    emb.embed(["a"])  # all cached: no call at all
    assert len(model.documents) == 2


def test_a_query_and_a_document_of_the_same_text_are_kept_apart() -> None:
    model = Model()
    emb = CallableEmbedder(model.embed_documents, lambda text: [0.0, 0.0, 1.0])
    emb.embed(["same"])
    assert not np.allclose(emb.embed_query("same"), emb.embed(["same"])[0])


def test_the_cache_is_bounded_and_can_be_turned_off() -> None:
    model = Model()
    emb = _embedder(model, cache_size=2)
    emb.embed(["a", "b", "c"])
    emb.embed(["a"])  # evicted by b and c
    assert model.documents[-1] == ["a"]
    uncached = Model()
    off = _embedder(uncached, cache_size=0)
    off.embed(["a"])
    off.embed(["a"])
    assert uncached.documents == [["a"], ["a"]]
    with pytest.raises(ConfigError, match="cache_size"):
        _embedder(model, cache_size=-1)


def test_a_copy_starts_with_an_empty_cache() -> None:
    model = Model()
    emb = _embedder(model)
    emb.embed(["a"])
    twin = copy.deepcopy(emb)
    assert len(twin._cache) == 0 and twin.embed(["a"]).shape == (1, 3)


def test_async_methods_run_on_the_callers_loop_for_an_async_call() -> None:
    model = Model()
    emb = _embedder(model)

    def work() -> np.ndarray:
        assert caller_loop() is not None
        emb.embed_query("q")
        return emb.embed(["x", "y"])

    async def main() -> np.ndarray:
        return await run_in_worker(work)

    out = asyncio.run(main())
    assert out.shape == (2, 3)
    assert model.async_documents == [["x", "y"]] and model.async_queries == ["q"]
    assert model.documents == [] and model.queries == []
    assert model.threads == ["MainThread"]  # awaited on the loop, not in the worker
    # A sync call (no loop waiting for it) uses the sync methods.
    emb.embed(["z"])
    assert model.documents == [["z"]]
    assert caller_loop() is None
