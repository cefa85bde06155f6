"""A pruner fails when it is made, with a hint, rather than at its first call: a model named but
not on disk, a tokenizer name it cannot read, a misspelt scorer, an embedder that would be
ignored, an lm of the wrong kind. And what it is given (a model name, a cross-encoder object, a
tiktoken encoding) it takes; warmup() loads it all before the first call."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hrefine.errors import ConfigError, InputTypeError, ModelNotFoundError
from hrefine.html import HtmlPruner, HtmlPrunerOptions
from hrefine.models import LocalLM
from hrefine.models._local_files import require_local_model
from hrefine.models.rerank import PairScorer
from lm_fixture import PairsOnly, build_tiny_cross_encoder, build_tiny_lm

PAGE = (
    "<html><head><title>Radio</title></head><body><h1>Stations</h1>"
    "<p>KK93 plays country music in Yankton.</p>"
    "<p>The Wolf is a classic rock station on 104.1 FM.</p>"
    "<p>The weather in South Dakota is cold in winter.</p></body></html>"
)
MISSING = "hrefine-tests/no-such-model"


@pytest.fixture(scope="module")
def tiny_lm_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_lm(tmp_path_factory.mktemp("tiny-lm"))


@pytest.fixture(scope="module")
def tiny_cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_cross_encoder(tmp_path_factory.mktemp("tiny-ce"))


# -- lm by name ---------------------------------------------------------------------------------
def test_lm_given_as_a_folder_is_loaded_as_a_local_lm(tiny_lm_folder: Path) -> None:
    pruner = HtmlPruner(scorer="bm25", generative=True, lm=str(tiny_lm_folder))
    lm = pruner._lm()
    assert isinstance(lm, LocalLM) and lm.model_name_or_path == str(tiny_lm_folder)
    # A Path works too, and pruners naming the same model share it (its weights load once).
    assert HtmlPruner(scorer="bm25", generative=True, lm=tiny_lm_folder)._lm() is lm
    assert pruner.warmup() is pruner
    assert lm._model is not None  # warmup loaded the weights
    result = pruner.prune(PAGE * 3, "which station plays classic rock?", 40)
    assert result.tokens <= 40 and result.stats["prompt_tokens"] > 0  # stage 2 ran


def test_an_lm_not_on_disk_fails_when_the_pruner_is_made() -> None:
    with pytest.raises(ModelNotFoundError, match=f"generative LM '{MISSING}'.*huggingface-cli"):
        HtmlPruner(generative=True, lm=MISSING)


def test_an_lm_of_another_kind_is_a_type_error_when_made() -> None:
    class ChatModel:  # an LLM client: it generates, it cannot score tag paths
        def invoke(self, prompt: str) -> str:
            return prompt

    for bad in (3, ChatModel(), ["a"]):
        with pytest.raises(InputTypeError, match="as the generative stage's lm"):
            HtmlPrunerOptions(lm=bad)
    with pytest.raises(ConfigError, match="empty string"):
        HtmlPruner(lm=" ")


def test_a_name_in_the_hugging_face_cache_is_found_without_loading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import huggingface_hub.constants

    snapshot = tmp_path / "models--org--tiny" / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text("{}")
    (tmp_path / "models--org--tiny" / "refs").mkdir()
    (tmp_path / "models--org--tiny" / "refs" / "main").write_text("abc123")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path))
    assert require_local_model("org/tiny", "cross-encoder") == "org/tiny"
    with pytest.raises(ModelNotFoundError, match=str(tmp_path)):  # the message names the cache
        require_local_model("org/other", "cross-encoder")
    with pytest.raises(ModelNotFoundError):  # not a repository id at all
        require_local_model("no such/../model", "cross-encoder")


@pytest.mark.parametrize("path", ["/models/no-such-model", "./no-such", "~/no/such/model"])
def test_a_missing_folder_is_not_sent_to_the_hub_command(path: str) -> None:
    """A path that is not there is named as a missing folder: no `huggingface-cli download
    /models/...` (a path, which no hub command fetches)."""
    with pytest.raises(ModelNotFoundError, match="is not a folder on this machine") as caught:
        require_local_model(path, "generative LM")
    assert "huggingface-cli" not in str(caught.value)


def test_a_missing_embedder_folder_is_named_before_sentence_transformers_loads(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from hrefine.models.sentence_transformer import SentenceTransformerEmbedder

    embedder = SentenceTransformerEmbedder("/models/no-such-embedder")
    with caplog.at_level("WARNING"):
        with pytest.raises(ModelNotFoundError, match="is not a folder on this machine"):
            embedder.embed_query("x")
    # Was sentence-transformers' "Could not resolve the revision of '/models/...'" first.
    assert "revision" not in caplog.text


def test_a_missing_hub_name_gets_the_hub_command() -> None:
    with pytest.raises(ModelNotFoundError, match=f"huggingface-cli download {MISSING}"):
        require_local_model(MISSING, "generative LM")


# -- cross-encoders ----------------------------------------------------------------------------
def test_an_uncached_cross_encoder_fails_when_made_naming_what_was_looked_for() -> None:
    with pytest.raises(ModelNotFoundError, match=f"cross-encoder '{MISSING}'.*never downloads"):
        HtmlPruner(scorer=f"cross-encoder:{MISSING}")


def test_a_cross_encoder_folder_loads_on_warmup(tiny_cross_encoder: Path) -> None:
    pruner = HtmlPruner(scorer=f"Cross-Encoder:{tiny_cross_encoder}", lexical_weight=0)
    assert pruner.options.scorer == f"cross-encoder:{tiny_cross_encoder}"
    assert pruner.scorer._model is None  # found on disk, not loaded yet
    pruner.warmup()
    assert pruner.scorer._model is not None
    assert pruner.prune(PAGE, "classic rock station", 30).tokens <= 30


def test_a_sentence_transformers_cross_encoder_object_is_a_scorer(
    tiny_cross_encoder: Path,
) -> None:
    from sentence_transformers import CrossEncoder

    model = CrossEncoder(str(tiny_cross_encoder), device="cpu", local_files_only=True)
    pruner = HtmlPruner(scorer=model, lexical_weight=0)
    assert isinstance(pruner.scorer, PairScorer) and pruner.scorer.model is model
    texts = ["the wolf is a classic rock station", "the weather"]
    expected = model.predict([("classic rock", t) for t in texts], show_progress_bar=False)
    np.testing.assert_allclose(pruner.scorer.score("classic rock", texts), expected, rtol=1e-5)
    result = pruner.prune(PAGE, "classic rock station", 30)
    assert result.tokens <= 30 and result.stats["scorer"].startswith("cross-encoder:")


def test_a_langchain_style_cross_encoder_scores_the_blocks() -> None:
    model = PairsOnly()
    pruner = HtmlPruner(scorer=model, lexical_weight=0)
    assert pruner.scorer.name == "cross-encoder:fake/keyword-cross-encoder"
    result = pruner.prune(PAGE, "classic rock station", 24)
    assert model.pairs and all(q == "classic rock station" for q, _ in model.pairs)
    assert "The Wolf" in result.html and "weather" not in result.html


def test_an_hrefine_scorer_is_used_as_it_is() -> None:
    class Scorer:
        name = "mine"

        def score(self, query: str, texts: Sequence[str]) -> np.ndarray:
            return np.array([float("rock" in t) for t in texts])

    scorer = Scorer()
    assert HtmlPruner(scorer=scorer, lexical_weight=0).scorer is scorer


# -- scorer names -------------------------------------------------------------------------------
def test_scorer_names_are_case_insensitive_and_give_the_same_output() -> None:
    assert HtmlPruner(scorer=" BM25 ").options.scorer == "bm25"
    assert HtmlPrunerOptions(scorer="Embedding").scorer == "embedding"
    upper = HtmlPruner(scorer="BM25").prune(PAGE, "classic rock", 24)
    lower = HtmlPruner(scorer="bm25").prune(PAGE, "classic rock", 24)
    assert upper.html == lower.html


@pytest.mark.parametrize(
    ("name", "hint"),
    [
        ("embeding", "did you mean 'embedding'"),
        ("BM-25", "did you mean 'bm25'"),
        ("crossencoder:my/model", "did you mean 'cross-encoder:my/model'"),
        ("cross-encoder", "name the model after a colon"),
    ],
)
def test_a_misspelt_scorer_suggests_the_nearest_name(name: str, hint: str) -> None:
    with pytest.raises(ConfigError, match=f"unknown scorer.*{hint}"):
        HtmlPrunerOptions(scorer=name)


def test_a_scorer_name_near_nothing_suggests_nothing() -> None:
    with pytest.raises(ConfigError, match="unknown scorer") as caught:
        HtmlPrunerOptions(scorer="tfidf")
    assert "did you mean" not in str(caught.value)


# -- embedder without a use ---------------------------------------------------------------------
@pytest.mark.parametrize("scorer", ["bm25", f"cross-encoder:{MISSING}", PairsOnly()])
def test_an_embedder_with_a_scorer_that_ignores_it_is_a_config_error(
    scorer: Any, embedder: Any
) -> None:
    with pytest.raises(ConfigError, match="does not use one"):
        HtmlPruner(scorer=scorer, embedder=embedder)
    assert HtmlPruner(scorer="embedding", embedder=embedder).scorer.embedder is embedder


# -- warmup -------------------------------------------------------------------------------------
class CountingScorer:
    name = "counting"

    def __init__(self) -> None:
        self.calls = 0

    def score(self, query: str, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        return np.arange(len(texts), dtype=np.float32)


def test_warmup_runs_one_tiny_call_once_and_returns_the_pruner() -> None:
    scorer = CountingScorer()
    pruner = HtmlPruner(scorer=scorer, lexical_weight=0)
    assert pruner.warmup() is pruner
    calls = scorer.calls
    assert calls >= 1
    assert pruner.warmup() is pruner and scorer.calls == calls  # idempotent
    assert not copy.deepcopy(pruner)._warm  # a copy starts cold


def test_warmup_loads_the_default_embedder(embedder: Any) -> None:
    pruner = HtmlPruner().warmup()
    assert pruner.scorer.embedder is embedder and embedder._model is not None


@pytest.mark.parametrize("name", ["HuggingFaceTB/SmolLM2-135M-Instruct", "smollm2-135m-instruct"])
def test_the_embedded_models_own_name_gives_the_embedded_lm(name: str) -> None:
    from hrefine.models import default_lm

    pruner = HtmlPruner(generative=True, lm=name)
    assert pruner._lm() is default_lm()  # no Hugging Face cache needed, nothing loaded yet
