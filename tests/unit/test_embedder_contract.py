"""What any embedder hrefine wraps must give back, and the settings it is made with: a wrong
shape, a misspelt setting or device, and a cached query vector changed by its caller are each
caught where they happen (found by a user review, 2026-12-01)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hrefine.errors import ConfigError, ModelOutputError
from hrefine.models import get_embedder
from hrefine.models.device import pick_device
from hrefine.models.sentence_transformer import SentenceTransformerEmbedder

TEXTS = ["Paris is the capital of France.", "The Rhine flows to the North Sea."]


@pytest.mark.parametrize(
    ("returned", "expected"),
    [
        (np.ones((2, 2, 2)), r"shape \(2, 2, 2\); expected one row for each of the 2 texts"),
        (np.ones((3, 4)), r"shape \(3, 4\); expected one row for each of the 2 texts"),
        ([[1.0, 2.0], [1.0]], "not rows of numbers"),
        ([["a", "b"], ["c", "d"]], "not rows of numbers"),
    ],
)
def test_a_callable_embedders_rows_of_another_shape_are_refused(
    returned: Any, expected: str
) -> None:
    # Was: a (2, 2, 2) answer became 4 rows, so 2 texts got 4 scores.
    embedder = get_embedder(lambda texts: returned)
    with pytest.raises(ModelOutputError, match=expected):
        embedder.embed(TEXTS)


class _TwoRowQueries:
    """LangChain-style embeddings whose query vector comes back as two rows."""

    def embed_documents(self, texts: list[str]) -> Any:
        return np.ones((len(texts), 3))

    def embed_query(self, text: str) -> Any:
        return np.ones((2, 3))


def test_a_callable_embedders_query_vector_must_be_one_vector() -> None:
    wrapped = get_embedder(_TwoRowQueries())
    with pytest.raises(ModelOutputError, match="expected one vector for the query"):
        wrapped.embed_query("Where is Paris?")


def test_a_cached_query_vector_is_not_the_callers_to_change() -> None:
    embedder = get_embedder(lambda texts: np.arange(1, 1 + 3 * len(texts)).reshape(-1, 3))
    first = embedder.embed_query("Where is Paris?")
    first *= 0  # the caller's array, not the cache's
    assert np.linalg.norm(embedder.embed_query("Where is Paris?")) == pytest.approx(1.0)


def test_a_llamaindex_embed_model_is_read_through_its_text_methods() -> None:
    pytest.importorskip("llama_index.core")
    from llama_index.core.embeddings import MockEmbedding

    # Was: taken as a plain callable (it is a node transform too), failing inside LlamaIndex.
    embedder = get_embedder(MockEmbedding(embed_dim=8))
    assert embedder.embed(TEXTS).shape == (2, 8)
    assert embedder.embed_query("Where is Paris?").shape == (8,)


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        ({"cache_size": -1}, "cache_size must be a whole number >= 0"),
        ({"cache_size": 1.5}, "cache_size must be a whole number >= 0"),
        ({"cache_size": "10"}, "cache_size must be a whole number >= 0"),
        ({"batch_size": 0}, "batch_size must be a whole number >= 1"),
    ],
)
def test_embedder_settings_are_checked_when_it_is_made(
    settings: dict[str, Any], expected: str
) -> None:
    with pytest.raises(ConfigError, match=expected):
        SentenceTransformerEmbedder("/models/any", **settings)


def test_an_empty_embedder_name_and_an_unknown_device_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="embedder name is empty"):
        get_embedder("  ")
    default = get_embedder(None)
    assert isinstance(default, SentenceTransformerEmbedder)
    odd = SentenceTransformerEmbedder(default.model_name_or_path, device="tpu")
    with pytest.raises(ConfigError, match="unknown device 'tpu'"):
        odd.embed(TEXTS)  # was torch's bare RuntimeError


def test_cuda_asked_for_without_cuda_is_a_config_error() -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(ConfigError, match="sees no CUDA device"):
        pick_device("cuda")  # was torch's "Torch not compiled with CUDA enabled" later


def test_checking_the_settings_leaves_the_name_alone() -> None:
    # A first version of the check reused the name parameter as its loop variable.
    assert SentenceTransformerEmbedder("/models/mini", cache_size=10).name == "mini"
    assert SentenceTransformerEmbedder("/models/mini", name="mine", batch_size=4).name == "mine"


@pytest.mark.parametrize("size", [-1, 1.5, "10", True])
def test_every_embedder_checks_cache_size_the_same_way(size: object) -> None:
    # One check (the vector cache's) for the sentence-transformers and the callable embedder.
    from hrefine.models import CallableEmbedder

    for make in (
        lambda: SentenceTransformerEmbedder("/models/any", cache_size=size),  # type: ignore[arg-type]
        lambda: CallableEmbedder(lambda texts: [[1.0] * 4 for _ in texts], cache_size=size),  # type: ignore[arg-type]
    ):
        with pytest.raises(ConfigError, match=r"cache_size must be a whole number >= 0, got "):
            make()
