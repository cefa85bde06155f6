"""The embedders' vector caches are shared by threads (issue #41, item 9): many threads on
overlapping texts never fail and get the vectors a single thread gets."""

from __future__ import annotations

import copy
import hashlib
import pickle
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import numpy as np
import pytest
from hrefine.models import CallableEmbedder, SentenceTransformerEmbedder
from hrefine.models._embed_state import VectorCache
from hrefine.models.embed import default_embedder_path

THREADS = 8


@contextmanager
def _frequent_switches() -> Iterator[None]:
    """Make the interpreter switch threads every microsecond, so races show up."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def _in_threads(work: Callable[[int], object]) -> list[object]:
    with _frequent_switches(), ThreadPoolExecutor(THREADS) as pool:
        return list(pool.map(work, range(THREADS)))


def _vector(text: str) -> np.ndarray:
    """A fixed vector per text (what a deterministic model gives)."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return np.frombuffer(digest, dtype=np.uint8).astype(np.float32)[:8] + 1.0


def test_the_cache_itself_survives_eight_threads_hammering_it() -> None:
    # A tiny cache over a few keys: a key found by one thread is evicted by another before
    # the first marks it used. Unlocked, that raised KeyError (773 of them in the issue).
    cache = VectorCache(2)
    keys = [bytes([i]) * 16 for i in range(4)]

    def work(seed: int) -> int:
        wrong = 0
        for pick in np.random.default_rng(seed).integers(len(keys), size=40_000):
            key = keys[pick]
            vec = cache.get(key)
            if vec is None:
                cache.put(key, np.full(4, key[0], dtype=np.float32))
            elif vec[0] != key[0]:
                wrong += 1
        return wrong

    assert _in_threads(work) == [0] * THREADS
    assert len(cache) == 2


def _texts(seed: int) -> list[list[str]]:
    """Calls of a thread: overlapping batches drawn from 40 texts, with repeats."""
    rng = np.random.default_rng(seed)
    return [[f"text number {int(i)}" for i in rng.integers(40, size=6)] for _ in range(150)]


def test_callable_embedder_threads_get_the_single_thread_vectors() -> None:
    calls = 0
    lock = threading.Lock()

    def model(texts: list[str]) -> np.ndarray:
        nonlocal calls
        with lock:
            calls += 1
        return np.stack([_vector(t) for t in texts])

    shared = CallableEmbedder(model, cache_size=10)  # small: evictions all the time
    alone = CallableEmbedder(model, cache_size=0)

    def work(seed: int) -> list[np.ndarray]:
        out = []
        for batch in _texts(seed):
            out.append(shared.embed(batch))
            out.append(shared.embed_query(batch[0])[None, :])
        return out

    results = _in_threads(work)
    for seed, got in enumerate(results):
        assert isinstance(got, list)
        expected = []
        for batch in _texts(seed):
            expected += [alone.embed(batch), alone.embed_query(batch[0])[None, :]]
        for a, b in zip(got, expected, strict=True):
            np.testing.assert_array_equal(a, b)
    assert len(shared._cache) <= 10


def test_a_copy_or_pickle_of_a_cache_is_empty_with_its_own_lock() -> None:
    cache = VectorCache(5)
    cache.put(b"k" * 16, np.ones(3, dtype=np.float32))
    for twin in (copy.deepcopy(cache), pickle.loads(pickle.dumps(cache))):
        assert len(twin) == 0 and twin.size == 5
        twin.put(b"x" * 16, np.zeros(3, dtype=np.float32))
        assert len(twin) == 1 and len(cache) == 1


@pytest.fixture(scope="module")
def small_cache_embedder() -> SentenceTransformerEmbedder:
    # float32: in bfloat16 a vector moves with the texts batched beside it.
    path = str(default_embedder_path())
    return SentenceTransformerEmbedder(path, cache_size=12, precision="float32")


def test_bundled_embedder_threads_get_the_single_thread_vectors(
    small_cache_embedder: SentenceTransformerEmbedder,
) -> None:
    emb = small_cache_embedder
    texts = [f"Paragraph {i} about the population of town {i % 7}." for i in range(30)]
    alone = SentenceTransformerEmbedder(
        str(default_embedder_path()), cache_size=0, precision="float32"
    )
    expected = {t: alone.embed([t])[0] for t in texts}

    def work(seed: int) -> list[tuple[list[str], np.ndarray]]:
        rng = np.random.default_rng(seed)
        out = []
        for _ in range(12):
            batch = [texts[int(i)] for i in rng.integers(len(texts), size=4)]
            out.append((batch, emb.embed(batch)))
            query = texts[int(rng.integers(len(texts)))]
            out.append(([query], emb.embed_query(query)[None, :]))
        return out

    results = _in_threads(work)
    for got in results:
        assert isinstance(got, list)
        for batch, vecs in got:
            # Within float32 rounding of the texts batched beside it.
            np.testing.assert_allclose(vecs, np.stack([expected[t] for t in batch]), atol=1e-5)
    assert len(emb._cache) <= 12


def test_threads_that_start_together_load_the_model_once() -> None:
    emb = SentenceTransformerEmbedder(str(default_embedder_path()))
    barrier = threading.Barrier(4)

    def first_use(_: int) -> int:
        barrier.wait()
        return id(emb.model)

    with ThreadPoolExecutor(4) as pool:
        assert len(set(pool.map(first_use, range(4)))) == 1
