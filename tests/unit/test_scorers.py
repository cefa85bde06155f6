from __future__ import annotations

import numpy as np
import pytest
from hrefine.models import BM25Scorer, get_scorer, lexical_tokens
from hrefine.models.embed import CallableEmbedder, get_embedder


def test_lexical_tokens_fold_case_accents_punctuation_and_thousands() -> None:
    assert lexical_tokens("Beaverbrook? Café 1,000") == ["beaverbrook", "cafe", "1000"]
    assert lexical_tokens("東京 Tokyo") == ["東", "京", "tokyo"]


def test_bm25_is_case_and_punctuation_insensitive() -> None:
    texts = ["Lord Beaverbrook owned the Daily Express.", "The weather was fine.", ""]
    scores = BM25Scorer().score("who was beaverbrook?", texts)
    assert scores[0] > 0
    assert scores[1] == 0 and scores[2] == 0


def test_bm25_without_query_overlap_scores_zero_not_reverse_order() -> None:
    scores = BM25Scorer().score("zebra", ["a b", "c d"])
    assert np.all(scores == 0)


def test_embedding_scorer_ranks_relevant_text_first(embedder: object) -> None:
    scorer = get_scorer("embedding", embedder=embedder)
    texts = [
        "The French Connection won the Academy Award for Best Director (William Friedkin).",
        "Photosynthesis converts light energy into chemical energy in plants.",
    ]
    scores = scorer.score("who directed the french connection", texts)
    assert scores.shape == (2,)
    assert scores[0] > scores[1]


def test_default_embedder_rows_are_unit_length_and_cached(embedder: object) -> None:
    vecs = embedder.embed(["alpha", "beta", "alpha"])  # type: ignore[attr-defined]
    assert vecs.shape == (3, 384)
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    np.testing.assert_array_equal(vecs[0], vecs[2])
    with pytest.raises(TypeError, match="sequence of texts"):
        embedder.embed("alpha")  # type: ignore[attr-defined]


def test_framework_style_embedders_are_wrapped_and_normalised() -> None:
    class LangChainLike:
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [[float(len(t)), 1.0] for t in texts]

        def embed_query(self, text: str) -> list[float]:
            return [1.0, 0.0]

    emb = get_embedder(LangChainLike())
    assert isinstance(emb, CallableEmbedder)
    vecs = emb.embed(["abc"])
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-6)
    np.testing.assert_allclose(emb.embed_query("q"), [1.0, 0.0])


def test_unknown_scorer_names_are_rejected() -> None:
    with pytest.raises(ValueError, match="unknown scorer"):
        get_scorer("tfidf")
    with pytest.raises(TypeError, match="no score"):
        get_scorer(3)
