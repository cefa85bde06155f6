"""Same input, same output: a text's vector from the default embedder is the same bit for bit
alone or in a batch of mixed lengths, in any order, fresh or cached, on one thread or two, on
every compute path this CPU can take, and (in float32) the same under every instruction set.

The paths: float32; bfloat16 linears in oneDNN's AVX512-BF16 kernels and in its AMX kernels
(each forced with ``ONEDNN_MAX_CPU_ISA`` in a process of its own, skipped with the reason where
the CPU lacks the instructions); and bfloat16 on a CPU without either, where it is emulated. Ray
workers against the main process are in ``tests/unit/distributed``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fresh_process import call_in_process, held_to_avx2, per_cpu
from hrefine.models import SentenceTransformerEmbedder
from hrefine.models import _embed_invariant as invariant
from hrefine.models import sentence_transformer as embedder_module
from hrefine.models.embed import default_embedder_path


def _cpu_has(check: str) -> bool:
    import torch

    return bool(getattr(getattr(torch, "cpu", None), check, lambda: False)())


def _native_bf16() -> bool:
    return _cpu_has("_is_avx512_bf16_supported") or _cpu_has("_is_amx_tile_supported")


#: (name, precision, oneDNN ISA cap or None, why it is skipped here or None)
PATHS: list[tuple[str, str, str | None, str | None]] = [
    ("float32", "float32", None, None),
    (
        "bfloat16 AVX512-BF16",
        "bfloat16",
        "AVX512_CORE_BF16",
        None if _cpu_has("_is_avx512_bf16_supported") else "this CPU has no AVX512-BF16",
    ),
    (
        "bfloat16 AMX",
        "bfloat16",
        "AVX512_CORE_AMX",
        None if _cpu_has("_is_amx_tile_supported") else "this CPU has no AMX",
    ),
    (
        "bfloat16 emulated",
        "bfloat16",
        None,
        "bfloat16 runs natively on this CPU (its native paths are tested above)"
        if _native_bf16()
        else None,
    ),
]


def mixed_texts(data: Path) -> list[str]:
    """Texts of a real contract of very different lengths: one word, a heading, sentences, a
    paragraph, and one past the model's 256 word pieces."""
    from hrefine.eval.loaders import load_dataset

    document = next(iter(load_dataset("leval-cuad", data_dir=data))).document
    paragraphs = [" ".join(p.split()) for p in document.split("\n") if p.strip()]
    by_length = sorted(paragraphs, key=len)
    picks = [by_length[0], by_length[len(by_length) // 4], by_length[len(by_length) // 2]]
    picks += [by_length[-1], " ".join(by_length[-3:])]  # the last one: over 256 word pieces
    sentences = [s.strip() + "." for p in paragraphs[:12] for s in p.split(". ") if s.strip()]
    return ["Agreement", *picks, *sentences[:20], "a"]


def check_paths(data: Path, precision: str) -> dict[str, Any]:
    """Run in a process of its own: embed the texts every way and say which agree."""
    import torch

    texts = mixed_texts(data)
    path = str(default_embedder_path())
    fresh = SentenceTransformerEmbedder(path, precision=precision, cache_size=0)
    batch = fresh.embed(texts)
    alone = np.vstack([fresh.embed([t]) for t in texts])
    backwards = fresh.embed(texts[::-1])[::-1]
    # Cached: a few texts embedded first, on their own, then the whole batch around them.
    cached = SentenceTransformerEmbedder(path, precision=precision)
    cached.embed(texts[3:6])
    from_cache = cached.embed(texts)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    one_thread = SentenceTransformerEmbedder(path, precision=precision, cache_size=0).embed(texts)
    torch.set_num_threads(threads)
    query = fresh.embed_query(texts[7])
    return {
        "dtype": fresh.compute_dtype,
        "invariant_path": fresh._invariant is not None,
        "texts": len(texts),
        "longest": max(len(ids) for ids in fresh._pieces(None)(texts)["input_ids"]),
        "alone": bool(np.array_equal(alone, batch)),
        "order": bool(np.array_equal(backwards, batch)),
        "cache": bool(np.array_equal(from_cache, batch)),
        "threads": bool(np.array_equal(one_thread, batch)),
        "query": bool(np.array_equal(query, batch[7])),
        "unit": bool(np.allclose(np.linalg.norm(batch, axis=1), 1.0, atol=1e-5)),
    }


@pytest.mark.parametrize(("name", "precision", "isa", "skip"), PATHS, ids=[p[0] for p in PATHS])
def test_a_vector_is_the_same_alone_and_in_a_batch_of_mixed_lengths(
    shared_data: Path, name: str, precision: str, isa: str | None, skip: str | None
) -> None:
    if skip:
        pytest.skip(skip)
    env = dict(os.environ)
    env.pop("HREFINE_EMBED_PRECISION", None)
    env["OMP_NUM_THREADS"] = "2"  # two threads, so that one thread is a change
    if isa:
        env["ONEDNN_MAX_CPU_ISA"] = isa  # read once, when oneDNN first runs: a new process
    call = "__import__('json').dumps(t.check_paths(Path(sys.argv[2]), sys.argv[3]))"
    got = json.loads(call_in_process(__file__, call, str(shared_data), precision, env=env))
    assert got["dtype"] == precision and got["invariant_path"], got
    assert got["longest"] == 256 and got["texts"] > 20, got  # the batch does mix lengths
    for what in ("alone", "order", "cache", "threads", "query", "unit"):
        assert got[what], f"{name}: vectors differ by {what}: {got}"


@pytest.fixture(scope="module")
def f32() -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder(
        str(default_embedder_path()), precision="float32", cache_size=0
    )


def test_full_tiles_and_cut_passes_give_the_same_vectors(
    shared_data: Path, f32: SentenceTransformerEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Where the size check fails (every tile then full), and where a call is cut into passes
    # of a few word pieces each, no vector moves.
    texts = mixed_texts(shared_data)
    want = f32.embed(texts)
    assert f32._small_tiles  # this CPU passes the check
    monkeypatch.setattr(f32, "_small_tiles", False)
    assert np.array_equal(f32.embed(texts), want)
    assert np.array_equal(f32.embed([texts[2]]), want[2:3])
    monkeypatch.setattr(embedder_module, "_INVARIANT_CHUNK_TOKENS", 60)
    assert np.array_equal(f32.embed(texts), want)


def test_the_invariant_path_gives_the_models_own_vectors(
    shared_data: Path, f32: SentenceTransformerEmbedder
) -> None:
    # It computes the model's arithmetic, not an approximation: sentence-transformers' own
    # encode, one text at a time, agrees to float32 rounding.
    texts = mixed_texts(shared_data)
    own = f32.model.encode(texts, batch_size=1, normalize_embeddings=True, convert_to_numpy=True)
    np.testing.assert_allclose(f32.embed(texts), own, atol=1e-6)


def test_a_failed_size_check_is_seen(
    shared_data: Path, f32: SentenceTransformerEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The check compares bits: a kernel whose rows moved with the size of the call fails it.
    parts = f32._invariant
    assert parts is not None
    pieces = f32._pieces(None)
    assert invariant.small_tiles_hold(parts, pieces)
    real = invariant._linear

    def size_dependent(x: Any, weight: Any, bias: Any) -> Any:
        out = real(x, weight, bias)
        return out + 1e-6 * (x.shape[0] < invariant.ROW_TILE)

    monkeypatch.setattr(invariant, "_linear", size_dependent)
    assert not invariant.small_tiles_hold(parts, pieces)


def test_other_models_and_settings_take_the_batched_paths() -> None:
    from types import SimpleNamespace

    # Not a BERT encoder, or not mean/CLS pooling: no invariant path.
    bare = SimpleNamespace(_modules={"0": SimpleNamespace(auto_model=object())})
    assert invariant.invariant_encoder(bare, "mean") is None
    # A fixed batch size asks for sentence-transformers' own batches.
    fixed = SentenceTransformerEmbedder(str(default_embedder_path()), batch_size=8)
    assert fixed.compute_dtype in ("float32", "bfloat16") and fixed._invariant is None


def test_one_thread_map_runs_each_item_on_one_torch_thread() -> None:
    import torch
    from hrefine.models.device import one_thread_map

    seen = one_thread_map(lambda x: (x, torch.get_num_threads()), list(range(7)))
    assert seen == [(x, 1) for x in range(7)]
    assert one_thread_map(lambda x: x, []) == []


def vector_digest(data: Path) -> str:
    """Run in a process of its own: the sha256 of the float32 vectors of the mixed texts."""
    import hashlib

    fresh = SentenceTransformerEmbedder(
        str(default_embedder_path()), precision="float32", cache_size=0
    )
    vectors = np.ascontiguousarray(fresh.embed(mixed_texts(data)), dtype="<f4")
    return hashlib.sha256(vectors.tobytes()).hexdigest()


#: Instruction sets forced on torch's own kernels (``ATEN_CPU_CAPABILITY``) and on its matrix
#: products (oneDNN, MKL), each in a process of its own (the libraries read them once): how
#: another CPU computes, on this one. A setting above what the CPU has falls back to its best.
CPUS: list[tuple[str, dict[str, str]]] = [
    ("as found", {}),
    ("AVX2", held_to_avx2()),
    (
        "AVX512",
        {
            "ATEN_CPU_CAPABILITY": "avx512",
            "ONEDNN_MAX_CPU_ISA": "AVX512_CORE",
            "MKL_ENABLE_INSTRUCTIONS": "AVX512",
        },
    ),
    ("no vector units", {"ATEN_CPU_CAPABILITY": "default", "MKL_ENABLE_INSTRUCTIONS": "SSE4_2"}),
]

#: The digest of :func:`vector_digest`, recorded on an AMD CPU with AVX512-BF16 under each
#: setting of :data:`CPUS` (all four the same).
RECORDED_DIGEST = "5a8f98b426cd2ea2425fd71970d9c70377ebe36d3dafdfdc1855f852b2d29217"


def test_the_float32_vectors_are_the_same_on_every_cpu(shared_data: Path) -> None:
    # In float32 the kernels' own orders of addition moved the last bits of a vector from one
    # instruction set to another, and RAPTOR then built another tree on another machine. The
    # full-precision path computes in float64 and rounds each vector, so no bit moves.
    digests = per_cpu(__file__, "t.vector_digest(Path(sys.argv[2]))", CPUS, str(shared_data))
    assert set(digests.values()) == {RECORDED_DIGEST}, digests
