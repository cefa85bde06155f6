"""The ``max_tokens`` read-limit check shared by EmbeddingScorer and SentenceTransformerEmbedder."""

from __future__ import annotations

import pytest
from hrefine.errors import ConfigError
from hrefine.models.embedder_protocol import check_max_tokens
from hrefine.models.scorers import EmbeddingScorer


@pytest.mark.parametrize("value", [None, 1, 512])
def test_accepts_none_and_whole_numbers(value: int | None) -> None:
    check_max_tokens(value)


@pytest.mark.parametrize("value", [0, -3, True, 1.5, "3"])
def test_refuses_the_rest(value: object) -> None:
    with pytest.raises(ConfigError, match=r"max_tokens must be a whole number >= 1 or None, got"):
        check_max_tokens(value)  # type: ignore[arg-type]


def test_the_scorer_checks_before_loading_its_embedder() -> None:
    with pytest.raises(ConfigError, match=r"got 0$"):
        EmbeddingScorer(None, max_tokens=0)
