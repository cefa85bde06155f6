"""The embedder's per-call read limit (``max_tokens``), its vector cache, and offline loading."""

from __future__ import annotations

import functools
import json
import os
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from fresh_process import run_python
from hrefine.errors import ConfigError, InputTypeError
from hrefine.models import EmbeddingScorer, get_scorer
from hrefine.models._gate import ModelGate
from hrefine.models.embed import (
    CallableEmbedder,
    SentenceTransformerEmbedder,
    default_embedder,
    default_embedder_path,
    get_embedder,
)

# The 200th word piece: "[CLS]" then 198 of "river" (one piece each), then the word that differs.
_HEAD = " ".join(["river"] * 198)


@pytest.fixture(scope="module")
def long_texts() -> list[str]:
    """The leaf block texts of a real NQ page at 256 words: short and long (18 of the 76 run
    past 128 word pieces, some past 256)."""
    from hrefine.eval.loaders import load_dataset
    from hrefine.html import build_block_tree

    item = next(it for it in load_dataset("leval-nq") if it.id == "nq_12_q01")
    tree = build_block_tree(item.document, max_words=256)
    return [n.text for n in tree.nodes if n.text.strip() and not n.children]


def _pair(precision: str) -> tuple[SentenceTransformerEmbedder, SentenceTransformerEmbedder]:
    """The default model read to its own limit (256), and built to read 128."""
    path = str(default_embedder_path())
    full = SentenceTransformerEmbedder(path, precision=precision)
    capped = SentenceTransformerEmbedder(path, precision=precision, max_seq_length=128)
    return full, capped


@pytest.fixture(scope="module")
def f32_pair() -> tuple[SentenceTransformerEmbedder, SentenceTransformerEmbedder]:
    return _pair("float32")


def _paths(full: SentenceTransformerEmbedder, capped: SentenceTransformerEmbedder) -> Iterator[str]:
    """Set both embedders on each CPU path in turn, their caches emptied: the batch-invariant
    path, texts packed into rows, batches cut by word pieces, and ``model.encode`` with a fixed
    batch size."""
    invariant = [emb.model and emb._invariant for emb in (full, capped)]
    assert all(parts is not None for parts in invariant)
    yield "invariant"
    for emb in (full, capped):
        emb.clear_cache()
        emb._invariant = None  # as for a model of another family
        assert emb._pooling_for_packing() == "mean"
    yield "packed"
    for emb in (full, capped):
        emb.clear_cache()
        emb._packing = None  # as for a model that fails the packing check
    yield "token batches"
    for emb in (full, capped):
        emb.clear_cache()
        emb.batch_size = 8
    yield "fixed batch size"
    for emb, parts in zip((full, capped), invariant, strict=True):
        emb.clear_cache()
        emb._packing, emb.batch_size, emb._invariant = "mean", None, parts


def test_a_call_limit_gives_the_vectors_of_an_embedder_built_with_it(
    f32_pair: Any, long_texts: list[str]
) -> None:
    full, capped = f32_pair
    lengths = full.model.preprocess(long_texts)["attention_mask"].sum(dim=1).tolist()
    assert sum(n > 128 for n in lengths) > 10 and max(lengths) == 256
    query = f"{_HEAD} which kind of organisms use sulfur compounds"
    for path in _paths(full, capped):
        got = full.embed(long_texts, max_tokens=128)
        want = capped.embed(long_texts)
        assert np.array_equal(got, want), path
        # Its own limit reads the long texts further (the short ones, packed into wider rows,
        # move by rounding only).
        own = full.embed(long_texts)
        changed = [not np.allclose(a, b, atol=1e-5) for a, b in zip(own, want, strict=True)]
        assert changed == [n > 128 for n in lengths], path
        assert np.array_equal(full.embed_query(query, max_tokens=128), capped.embed_query(query))
        q, docs = full.embed_query_and_documents(query, long_texts[:9], max_tokens=128)
        q2, docs2 = capped.embed_query_and_documents(query, long_texts[:9])
        assert np.array_equal(q, q2) and np.array_equal(docs, docs2), path
    assert full.model.max_seq_length == 256  # back at its own limit between calls


def test_a_call_limit_in_bfloat16_gives_the_vectors_of_an_embedder_built_with_it(
    long_texts: list[str],
) -> None:
    full, capped = _pair("bfloat16")
    assert full.compute_dtype == capped.compute_dtype == "bfloat16"
    assert np.array_equal(full.embed(long_texts, max_tokens=128), capped.embed(long_texts))


def test_the_cache_keeps_each_limits_vectors_apart(
    f32_pair: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    full, capped = f32_pair
    texts = [f"{_HEAD} mountains", f"{_HEAD} oceans"]
    full.clear_cache()
    short = full.embed(texts, max_tokens=128)
    whole = full.embed(texts)
    assert np.array_equal(short[0], short[1])  # the last words are past 128 pieces
    assert not np.array_equal(whole[0], whole[1])
    assert len(full._cache) == 4
    encoded: list[int | None] = []
    real = full._encode

    def counted(texts: list[str], limit: int | None) -> np.ndarray:
        encoded.append(limit)
        return real(texts, limit)

    monkeypatch.setattr(full, "_encode", counted)
    assert np.array_equal(full.embed(texts, max_tokens=128), short)
    assert np.array_equal(full.embed(texts), whole)
    # A limit past the model's own reads to it: the same vectors, from the same entries.
    assert np.array_equal(full.embed(texts, max_tokens=1000), whole)
    assert encoded == [] and len(full._cache) == 4
    assert np.array_equal(full.embed(texts, max_tokens=64)[0], full.embed(texts, max_tokens=64)[1])
    assert encoded == [64]
    # An embedder built to read 128 reads no further when a call asks for more.
    assert np.array_equal(capped.embed(texts, max_tokens=256), short)
    assert capped.read_limit == 128 and full.read_limit == 256


def test_clear_cache_empties_the_vector_cache(f32_pair: Any) -> None:
    full, _ = f32_pair
    vec = full.embed(["The 1972 Nobel Prize in Physics"])
    assert len(full._cache) > 0
    full.clear_cache()
    assert len(full._cache) == 0
    assert np.array_equal(full.embed(["The 1972 Nobel Prize in Physics"]), vec)
    assert len(full._cache) == 1


def test_threads_with_different_limits_get_their_own_vectors(long_texts: list[str]) -> None:
    # No cache, so every call runs the model: limits 64, 128 and the model's own, side by side.
    emb = SentenceTransformerEmbedder(str(default_embedder_path()), cache_size=0)
    texts = long_texts[:24]
    want = {limit: emb.embed(texts, max_tokens=limit) for limit in (64, 128, None)}
    assert not np.array_equal(want[128], want[None])
    calls = [limit for _ in range(4) for limit in (64, 128, None)]
    with ThreadPoolExecutor(max_workers=6) as pool:
        got = list(pool.map(lambda limit: emb.embed(texts, max_tokens=limit), calls))
    for limit, vecs in zip(calls, got, strict=True):
        assert np.array_equal(vecs, want[limit]), limit
    assert emb.model.max_seq_length == 256


def test_read_limits_run_one_limits_passes_together_and_another_after_them() -> None:
    # The embedder's gate over the model's shared max_seq_length (as SentenceTransformerEmbedder
    # makes it when the model loads).
    model = SimpleNamespace(max_seq_length=256)
    limits = ModelGate(functools.partial(setattr, model, "max_seq_length"), 256, rest=256)
    release = threading.Event()
    seen: list[tuple[str, int]] = []  # (pass, the model's limit when it started)

    def run(name: str, limit: int, entered: threading.Event) -> None:
        with limits.hold(limit):
            seen.append((name, model.max_seq_length))
            entered.set()
            release.wait(10)

    events = {name: threading.Event() for name in ("a", "b", "c", "d")}
    a = threading.Thread(target=run, args=("a", 128, events["a"]))
    b = threading.Thread(target=run, args=("b", 128, events["b"]))
    a.start()
    assert events["a"].wait(10)
    b.start()
    assert events["b"].wait(10)  # the same limit: side by side
    c = threading.Thread(target=run, args=("c", 256, events["c"]))
    c.start()
    time.sleep(0.2)
    assert not events["c"].is_set()  # another limit waits for them
    d = threading.Thread(target=run, args=("d", 128, events["d"]))
    d.start()
    time.sleep(0.2)
    assert not events["d"].is_set()  # and, once one waits, so does the limit in use
    release.set()
    for t in (a, b, c, d):
        t.join(10)
    assert seen == [("a", 128), ("b", 128), ("c", 256), ("d", 128)]
    assert model.max_seq_length == 256  # its own limit once no pass runs


def test_the_default_embedder_reads_past_128_word_pieces(embedder: Any) -> None:
    # The 200th word piece changes: the default embedder reads it, a call with 128 does not.
    texts = [f"{_HEAD} mountains", f"{_HEAD} oceans"]
    vecs = embedder.embed(texts)
    assert not np.array_equal(vecs[0], vecs[1])
    short = embedder.embed(texts, max_tokens=128)
    assert np.array_equal(short[0], short[1])
    assert default_embedder().max_seq_length is None and embedder.read_limit == 256


def test_embedding_scorer_passes_its_limit_to_embedders_that_take_it(f32_pair: Any) -> None:
    full, capped = f32_pair
    texts = [f"{_HEAD} mountains", "Sulfur bacteria use sulfate as the final electron acceptor."]
    query = "which bacteria use sulfate"
    limited = EmbeddingScorer(full, max_tokens=128).score(query, texts)
    assert np.array_equal(limited, EmbeddingScorer(capped).score(query, texts))
    assert np.array_equal(
        get_scorer("embedding", embedder=full, max_tokens=128).score(query, texts), limited
    )
    assert not np.array_equal(EmbeddingScorer(full).score(query, texts), limited)

    class Recording:
        """An embedder of another library's kind: embed and embed_query, one taking a limit."""

        name = "recording"

        def __init__(self) -> None:
            self.asked: list[tuple[str, int | None]] = []

        def embed(self, texts: list[str], *, max_tokens: int | None = None) -> np.ndarray:
            self.asked.append(("embed", max_tokens))
            return np.ones((len(texts), 2), dtype=np.float32) / np.sqrt(2)

        def embed_query(self, text: str) -> np.ndarray:
            self.asked.append(("embed_query", None))
            return np.array([1.0, 0.0], dtype=np.float32)

    rec = Recording()
    EmbeddingScorer(rec, max_tokens=64).score(query, texts)  # type: ignore[arg-type]
    assert rec.asked == [("embed_query", None), ("embed", 64)]
    # A wrapped framework embedder reads its texts its own way.
    wrapped = CallableEmbedder(lambda ts: [[float(len(t)), 1.0] for t in ts])
    assert EmbeddingScorer(wrapped, max_tokens=128).score(query, texts).shape == (2,)
    # Other scorers take no limit and are unaffected by one.
    assert get_scorer("bm25", max_tokens=128).score(query, texts)[1] > 0


def test_bad_limits_and_embedders_raise_hrefine_errors(f32_pair: Any) -> None:
    full, _ = f32_pair
    for bad in (0, -3, 1.5, True, "128"):
        with pytest.raises(ConfigError, match="max_tokens"):
            full.embed(["a"], max_tokens=bad)
        with pytest.raises(ConfigError, match="max_tokens"):
            EmbeddingScorer(full, max_tokens=bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="max_seq_length"):
        SentenceTransformerEmbedder("unused", max_seq_length=0)
    with pytest.raises(ConfigError, match="cpu_workers"):
        SentenceTransformerEmbedder("unused", cpu_workers=0)
    with pytest.raises(InputTypeError, match="sequence of texts"):
        full.embed("one string")
    with pytest.raises(InputTypeError, match="as an embedder"):
        get_embedder(3)
    with pytest.raises(InputTypeError, match="no score"):
        get_scorer(3)


_OFFLINE_SCRIPT = """
import json, os, socket

tries = []

class NoNetwork(socket.socket):
    def __init__(self, *args, **kwargs):
        tries.append(repr(args))
        raise OSError("this test allows no network")

socket.socket = NoNetwork

from hrefine.errors import ModelNotFoundError
from hrefine.models import SentenceTransformerEmbedder, default_embedder

vec = default_embedder().embed(["Rome is the capital of Italy."])
try:
    SentenceTransformerEmbedder("hrefine-test/no-such-model").model
    missing = "loaded"
except ModelNotFoundError:
    missing = "ModelNotFoundError"
print(json.dumps({
    "shape": list(vec.shape),
    "missing": missing,
    "tries": tries,
    "offline_env": {k: os.environ.get(k) for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")},
}))
"""


def test_models_load_without_the_network_or_offline_variables(tmp_path: Any) -> None:
    # A process with no HF_HUB_OFFLINE/TRANSFORMERS_OFFLINE and sockets that cannot be made
    # loads the default embedder and embeds, gets ModelNotFoundError for a model it does not
    # have, tries no connection, and finds its environment as it was.
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE")
    }
    env["HF_HOME"] = str(tmp_path / "hf")  # an empty Hugging Face cache
    out = json.loads(run_python(_OFFLINE_SCRIPT, env=env, timeout=300))
    assert out == {
        "shape": [1, 384],
        "missing": "ModelNotFoundError",
        "tries": [],
        "offline_env": {"HF_HUB_OFFLINE": None, "TRANSFORMERS_OFFLINE": None},
    }
