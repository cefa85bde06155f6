"""The public test kit (``hrefine.testing``): users build their own tests on it, so it is tested."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from hrefine.errors import GenerationError
from hrefine.models import Embedder, as_text_generator
from hrefine.testing import KeywordEmbedder, ScriptedLM, keyword_tokens


def test_keyword_tokens_fold_case_and_drop_stopwords_and_punctuation() -> None:
    assert keyword_tokens("Who won THE Gold-medal?") == ["won", "gold", "medal"]


def test_keyword_embedder_is_an_embedder_with_unit_rows() -> None:
    emb = KeywordEmbedder(dim=32)
    assert isinstance(emb, Embedder)
    vecs = emb.embed(["gold medal", "rain in june", "the of and"])
    assert vecs.shape == (3, 32) and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs[:2], axis=1), 1.0)
    assert not vecs[2].any()  # only stopwords: the zero vector
    assert emb.calls == 1 and emb.texts_embedded == 3


def test_keyword_embedder_ranks_overlap_and_is_deterministic() -> None:
    a, b = KeywordEmbedder(dim=64), KeywordEmbedder(dim=64)
    docs = ["Russia won 13 gold medals", "Lisbon rainfall in October"]
    scores = a.embed(docs) @ a.embed_query("how many gold medals did Russia win")
    assert scores[0] > scores[1]
    assert np.array_equal(a.embed(docs), b.embed(docs))


def test_keyword_vocabulary_mode_ignores_other_words() -> None:
    emb = KeywordEmbedder(keywords=["Gold", "Silver"])
    assert emb.dim == 2
    assert np.allclose(emb.embed_query("gold gold silver bronze"), np.array([2, 1]) / np.sqrt(5))


def test_keyword_embedder_rejects_wrong_types_and_sizes() -> None:
    emb = KeywordEmbedder()
    with pytest.raises(TypeError):
        emb.embed("one string")
    with pytest.raises(TypeError):
        emb.embed_query(["a list"])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="dim"):
        KeywordEmbedder(dim=0)
    with pytest.raises(ValueError, match="keywords"):
        KeywordEmbedder(keywords=[])


def test_scripted_lm_replays_records_and_runs_out_loudly() -> None:
    lm = ScriptedLM(["yes", "no"])
    assert [lm("p1"), lm("p2")] == ["yes", "no"]
    assert lm.prompts == ["p1", "p2"]
    with pytest.raises(GenerationError, match="cycle=True"):
        lm("p3")
    cyc = ScriptedLM(["a"], cycle=True)
    assert [cyc("x"), cyc("y")] == ["a", "a"]


def test_scripted_lm_from_function_works_as_text_generator() -> None:
    lm = ScriptedLM(lambda prompt: prompt.upper())
    gen = as_text_generator(lm)
    assert gen.generate("hello") == "HELLO"
    assert asyncio.run(lm.acall("x")) == "X"
    with pytest.raises(ValueError):
        ScriptedLM([])
