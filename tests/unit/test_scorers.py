from __future__ import annotations

from itertools import pairwise
from typing import Any

import hrefine.models._embed_cpu as _embed_cpu
import numpy as np
import pytest
from hrefine.models import BM25Scorer, get_scorer, lexical_tokens
from hrefine.models.embed import (
    CallableEmbedder,
    SentenceTransformerEmbedder,
    default_embedder_path,
    get_embedder,
)
from hrefine.models.lexical import plural_stem, query_window


def test_lexical_tokens_fold_case_accents_punctuation_and_thousands() -> None:
    assert lexical_tokens("Beaverbrook? Café 1,000") == ["beaverbrook", "cafe", "1000"]
    assert lexical_tokens("東京 Tokyo") == ["東", "京", "tokyo"]


def test_bm25_for_questions_drops_clitics_but_not_single_letters() -> None:
    text = "Handmaid's Tale, HANDMAID 'S, don\u2019t, we'll, 'sorry', Producer(s), vitamin D"
    words = ["handmaid", "tale", "handmaid", "don", "we", "sorry", "producer", "s", "vitamin", "d"]
    assert BM25Scorer(stopwords=None, questions=True)._words(text, frozenset()) == words
    assert BM25Scorer(stopwords=None)._words("Handmaid's", frozenset()) == ["handmaid", "s"]
    assert lexical_tokens("Handmaid's") == ["handmaid", "s"]  # metrics count these tokens


def test_bm25_ignores_question_words_and_possessive_s() -> None:
    # "when", "did" and the "'s" of "Handmaid's" once matched the infobox's "Producer(s)" rows
    # and any text saying "when": the season's premiere date lost to them.
    texts = [
        "Producer ( s ) Warren Littlefield",
        "When did it air? It is a show.",
        "Season 2 of The Handmaid 's Tale premiered on April 25 , 2018 .",
    ]
    query = "when did season 2 of handmaid's tale start"
    scores = BM25Scorer(stem=True, questions=True).score(query, texts)
    assert scores[0] == 0 and scores[1] == 0 and scores[2] > 0
    plain = BM25Scorer(stem=True).score(query, texts)  # the default matches every word
    assert plain[0] > 0 and plain[1] > 0


def test_bm25_is_case_and_punctuation_insensitive() -> None:
    texts = ["Lord Beaverbrook owned the Daily Express.", "The weather was fine.", ""]
    scores = BM25Scorer().score("who was beaverbrook?", texts)
    assert scores[0] > 0
    assert scores[1] == 0 and scores[2] == 0


def test_plural_stem_takes_off_plural_endings_only() -> None:
    words = ["carboxyalkyls", "floods", "cities", "glasses", "bus", "1990s", "status", "heroes"]
    stems = [plural_stem(w) for w in words]
    assert stems == ["carboxyalkyl", "flood", "city", "glasse", "bus", "1990s", "status", "heroe"]
    # A singular comes out as itself, so it meets its plural.
    assert [plural_stem(w) for w in ("carboxyalkyl", "flood", "city")] == stems[:3]


def test_bm25_matches_plural_and_singular_only_when_told_to() -> None:
    texts = ["Carboxyalkyl: halogenated carboxylic acids.", "Organic esters: acetic acid."]
    stemmed = BM25Scorer(stem=True).score("which reagents react with carboxyalkyls?", texts)
    assert stemmed[0] > 0 and stemmed[1] == 0
    exact = BM25Scorer().score("which reagents react with carboxyalkyls?", texts)
    assert np.all(exact == 0)


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


# Texts of very different lengths and scripts, for the batching and packing tests.
_MIXED_TEXTS = (
    "Tournament / Win–Loss: Australian Open | French Open",
    "",
    " ".join(["river"] * 300),  # past the read length: a row of its own when packed
    "東京タワーは何メートルですか",
    "a",
    "The Royal Bahamas Defence Force is the navy of The Bahamas. " * 4,
    "1,000 km²",
)


@pytest.fixture(scope="module")
def f32() -> SentenceTransformerEmbedder:
    """The default embedder held to float32, where batching must not change a vector (in
    bfloat16 an element of a text's vector moves by up to about 1e-3 with what it is batched
    with)."""
    return SentenceTransformerEmbedder(
        str(default_embedder_path()), max_seq_length=128, precision="float32"
    )


def test_cpu_token_batches_give_the_vectors_of_fixed_batches(
    f32: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Batches cut by word pieces (and tokenised in chunks) must not change a vector or its row.
    texts = list(_MIXED_TEXTS)
    model = f32.model
    assert model.device.type == "cpu"
    fixed = model.encode(texts, batch_size=8, convert_to_numpy=True, normalize_embeddings=True)
    monkeypatch.setattr(_embed_cpu, "CPU_BATCH_TOKENS", 40)  # several texts per batch, or one
    monkeypatch.setattr(_embed_cpu, "TOKENIZE_CHUNK", 3)  # chunks of 3, 3 and 1
    for workers in (1, 2):  # batches one after another, or two at a time
        by_tokens = _embed_cpu.encode_by_tokens(model, texts, workers)
        assert by_tokens.shape == (len(texts), 384)
        np.testing.assert_allclose(by_tokens, fixed, atol=1e-5)


def test_packed_rows_give_each_text_its_own_vector(
    f32: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Several texts share a row of the transformer, each attending only to itself: no vector
    # and no row of the output may change, whatever the rows and batches.
    texts = [*_MIXED_TEXTS, "Year | Team | Goals"]
    model = f32.model
    assert f32._pooling_for_packing() == "mean"
    fixed = model.encode(texts, batch_size=8, convert_to_numpy=True, normalize_embeddings=True)
    limit = model.max_seq_length
    pieces = _embed_cpu.piece_reader(model, limit)
    for batch_tokens, chunk, workers in ((40, 3, 1), (40, 3, 2), (512, 2048, 2)):
        monkeypatch.setattr(_embed_cpu, "CPU_BATCH_TOKENS", batch_tokens)
        monkeypatch.setattr(_embed_cpu, "TOKENIZE_CHUNK", chunk)
        packed = _embed_cpu.encode_packed(model, texts, "mean", pieces, limit, workers)
        np.testing.assert_allclose(packed, fixed, atol=1e-5)
    # The short texts did share rows.
    lengths = [int(n) for n in model.preprocess(texts)["attention_mask"].sum(dim=1)]
    rows = _embed_cpu.pack_rows(lengths, limit)
    assert len(rows) < len(texts)


def test_piece_reader_reads_the_word_pieces_of_the_models_own_tokenizer(
    embedder: object,
) -> None:
    # The Rust tokenizer called directly (and the model's path, its padding taken off) give
    # the ids the model's own tokenisation gives, cut to the same length.
    texts = list(_MIXED_TEXTS)
    model = embedder.model  # type: ignore[attr-defined]
    features = model.preprocess(texts)
    lengths = features["attention_mask"].sum(dim=1).tolist()
    want = [row[:n] for row, n in zip(features["input_ids"].tolist(), lengths, strict=True)]
    got = _embed_cpu.piece_reader(model, model.max_seq_length)(texts)
    assert got["input_ids"] == want
    assert max(len(ids) for ids in got["input_ids"]) == model.max_seq_length
    # A model without a Rust tokenizer is read through its own tokenisation.
    from types import SimpleNamespace

    bare = SimpleNamespace(
        _modules={"0": SimpleNamespace(tokenizer=None)},
        max_seq_length=model.max_seq_length,
        preprocess=model.preprocess,
    )
    assert _embed_cpu.piece_reader(bare, model.max_seq_length)(texts)["input_ids"] == want


@pytest.mark.parametrize(("precision", "atol"), [("float32", 1e-6), ("bfloat16", 2e-3)])
def test_query_and_documents_in_one_pass_give_the_separate_vectors(
    precision: str, atol: float
) -> None:
    fresh = SentenceTransformerEmbedder(
        str(default_embedder_path()), max_seq_length=128, precision=precision
    )
    texts = ["Year | Team | Goals", "The Trent flooded in February 1795.", "a"]
    query, docs = fresh.embed_query_and_documents("when was the highest flood?", texts)
    fresh.clear_cache()
    np.testing.assert_allclose(query, fresh.embed_query("when was the highest flood?"), atol=atol)
    np.testing.assert_allclose(docs, fresh.embed(texts), atol=atol)
    assert docs.shape == (3, 384)
    with pytest.raises(TypeError, match="sequence of texts"):
        fresh.embed_query_and_documents("q", "not a list")


def test_pack_rows_fill_rows_without_overflow_or_loss() -> None:
    lengths = [128, 5, 60, 60, 3, 127, 1, 64, 64, 30]
    rows = _embed_cpu.pack_rows(lengths, 128)
    assert sorted(k for row in rows for k in row) == list(range(len(lengths)))
    assert all(sum(lengths[k] for k in row) <= 128 for row in rows)
    assert len(rows) == 5  # 128 | 127+1 | 64+64 | 60+60+5+3 | 30
    assert _embed_cpu.pack_rows([], 128) == []


def test_batch_bounds_cover_every_row_once_and_even_out_over_workers() -> None:
    _batch_bounds = _embed_cpu.batch_bounds
    widths = [128] * 17 + [100, 60, 30]
    # One worker: batches of about 512 word pieces, one after another.
    assert _batch_bounds(widths, 512, 1) == [(0, 4), (4, 8), (8, 12), (12, 16), (16, 20)]
    for workers in (2, 3):
        bounds = _batch_bounds(widths, 512, workers)
        assert bounds[0][0] == 0 and bounds[-1][1] == len(widths)
        assert all(a < b for a, b in bounds)
        assert all(b == c for (_, b), (c, _) in pairwise(bounds))
        assert len(bounds) % workers == 0  # 5 batches' worth of rows, shared in 6
        padded = [widths[a] * (b - a) for a, b in bounds]  # rows × the first, widest row
        assert max(padded) <= 512 and min(padded) >= 0.5 * max(padded)
    # A wide row then many narrow ones (texts not packed): no batch is padded past the budget.
    widths = [100] + [1] * 1000
    for workers in (1, 2):
        bounds = _batch_bounds(widths, 512, workers)
        assert [i for a, b in bounds for i in range(a, b)] == list(range(len(widths)))
        assert all(widths[a] * (b - a) <= 512 for a, b in bounds)
    # No more rows than workers: one row each. No rows: no batches.
    assert _batch_bounds([40, 30], 512, 2) == [(0, 1), (1, 2)]
    assert _batch_bounds([128], 512, 2) == [(0, 1)]
    assert _batch_bounds([], 512, 2) == []


def test_a_model_whose_vectors_change_when_packed_is_not_packed(
    embedder: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The one-off check compares packed vectors with encode()'s; a model that fails it (here:
    # rows that ignore the mask) embeds as before, with the same vectors.
    def leaky(*args: Any) -> np.ndarray:
        vecs = real(*args)
        return np.roll(vecs, 1, axis=1)

    real = _embed_cpu.run_rows
    monkeypatch.setattr(_embed_cpu, "run_rows", leaky)
    monkeypatch.setattr(embedder, "_invariant", None)  # as for a model of another family
    monkeypatch.setattr(embedder, "_packing", False)  # not checked yet
    assert embedder._pooling_for_packing() is None  # type: ignore[attr-defined]
    texts = ["Year | Team | Goals", "a"]
    got = embedder._encode(texts, embedder.read_limit)  # type: ignore[attr-defined]
    fixed = embedder.model.encode(texts, convert_to_numpy=True, normalize_embeddings=True)  # type: ignore[attr-defined]
    np.testing.assert_allclose(got, fixed, atol=1e-5)


def test_only_transformer_pooling_models_are_packed() -> None:
    from types import SimpleNamespace

    _packable_pooling = _embed_cpu.packable_pooling

    class Transformer:
        auto_model = SimpleNamespace(config=SimpleNamespace(_attn_implementation="sdpa"))

    class Pooling:
        pooling_mode = "max"

    class Dense:
        pass

    assert _packable_pooling(SimpleNamespace(_modules={"0": Transformer(), "1": Pooling()})) is None
    mean = Pooling()
    mean.pooling_mode = "mean"
    three = {"0": Transformer(), "1": mean, "2": Dense()}
    assert _packable_pooling(SimpleNamespace(_modules=three)) is None


def test_token_batches_only_for_right_padded_models_without_a_default_prompt() -> None:
    # Batches are cut from the left and take no prompt: any other model goes through encode().
    from types import SimpleNamespace

    _plain_right_padded = _embed_cpu.plain_right_padded
    right = SimpleNamespace(padding_side="right")
    assert _plain_right_padded(SimpleNamespace(default_prompt_name=None, tokenizer=right))
    left = SimpleNamespace(padding_side="left")
    assert not _plain_right_padded(SimpleNamespace(default_prompt_name=None, tokenizer=left))
    assert not _plain_right_padded(SimpleNamespace(default_prompt_name="query", tokenizer=right))


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
    from hrefine import ConfigError
    from hrefine.html import HtmlPruner

    for bad in ("tfidf", "embeding", "cross-encoder:", "cross-encoder: "):
        with pytest.raises(ConfigError, match="unknown scorer"):
            get_scorer(bad)
        with pytest.raises(ConfigError, match="unknown scorer"):  # when built, not when used
            HtmlPruner(scorer=bad)
    with pytest.raises(TypeError, match="no score"):
        get_scorer(3)
    with pytest.raises(TypeError, match="no score"):
        HtmlPruner(scorer=3)


def test_query_window_reads_the_start_unless_more_query_words_fall_later() -> None:
    words = [f"w{i}" for i in range(100)]
    text = " ".join(words)
    terms = BM25Scorer(stem=True).terms("the final electron acceptor")
    assert terms == {"final", "electron", "acceptor"}
    assert query_window("a short text", terms, 10) == "a short text"
    assert query_window(text, terms, 10) == " ".join(words[:10])  # no query word: the start
    late = " ".join([*words[:60], "the final Électron acceptors", *words[60:]])
    window = query_window(late, terms, 12, stem=True)
    assert window in late and "final Électron acceptors" in window  # case, accents, plural
    assert len(window.split()) == 12
    assert window.startswith("w54 ")  # the earliest start, in steps of 3, that holds all 3
    # As many query words at the start as later: the start.
    both = f"final {text} final"
    assert query_window(both, terms, 10) == "final " + " ".join(words[:9])
    with pytest.raises(ValueError, match="size"):
        query_window(text, terms, 0)


def test_query_window_finds_the_sentence_past_a_paragraphs_start() -> None:
    # A real NQ paragraph of 101 words: the sentence naming the question's subject starts
    # at word 45, past what 45 words from the start would read.
    from hrefine.eval.loaders import load_dataset
    from hrefine.html import build_block_tree

    item = next(it for it in load_dataset("leval-nq") if it.id == "nq_12_q01")
    tree = build_block_tree(item.document, max_words=256)
    text = next(n.text for n in tree.nodes if "as final electron acceptors" in n.text)
    terms = BM25Scorer(stem=True).terms(item.question)
    window = query_window(text, terms, 45, stem=True)
    assert "as final electron acceptors" in window and window in text
    assert "as final electron acceptors" not in query_window(text, frozenset(), 45)


def _bm25s_scores(scorer: BM25Scorer, query: str, texts: list[str]) -> np.ndarray:
    """The same scores from a bm25s index of the texts (the library's own computation)."""
    import bm25s

    stop = scorer._stop()
    corpus = [scorer._words(t, stop) or ["\x00"] for t in texts]
    vocab: dict[str, int] = {}
    ids = [[vocab.setdefault(w, len(vocab)) for w in doc] for doc in corpus]
    q_ids = [vocab[w] for w in scorer._words(query, stop) if w in vocab]
    if not q_ids:
        return np.zeros(len(texts), dtype=np.float32)
    index = bm25s.BM25(k1=scorer.k1, b=scorer.b)
    index.index(bm25s.tokenization.Tokenized(ids=ids, vocab=vocab), show_progress=False)
    return np.asarray(index.get_scores(q_ids), dtype=np.float32)


@pytest.mark.parametrize(
    ("stem", "stopwords", "questions"),
    [(False, "en", False), (True, "en", False), (True, None, False), (True, "en", True)],
)
def test_bm25_gives_bm25s_scores_on_a_real_pages_blocks(
    stem: bool, stopwords: str | None, questions: bool
) -> None:
    from hrefine.eval.loaders import load_dataset
    from hrefine.html import build_block_tree

    item = next(it for it in load_dataset("leval-nq") if it.id == "nq_12_q01")
    tree = build_block_tree(item.document, max_words=64)
    texts = [n.text for n in tree.nodes if n.text] + ["", "the of and"]
    assert len(texts) > 50
    scorer = BM25Scorer(stem=stem, stopwords=stopwords, questions=questions)
    # A repeated query word counts twice, as in bm25s; the second call reads remembered counts.
    for query in (item.question, "electron electron chain", item.question):
        ours = scorer.score(query, texts)
        assert ours.dtype == np.float32 and (ours > 0).sum() > 3
        np.testing.assert_allclose(ours, _bm25s_scores(scorer, query, texts), rtol=1e-5)
    assert scorer.score("zebra quagga", texts).tolist() == [0.0] * len(texts)
    # A passage as the query has more distinct words than most blocks: their own words are
    # walked instead of the query's, to the same scores.
    passage = " ".join(texts[:60])
    assert len(scorer.terms(passage)) > max(len(set(t.split())) for t in texts[60:])
    np.testing.assert_allclose(
        scorer.score(passage, texts), _bm25s_scores(scorer, passage, texts), rtol=1e-5
    )
    # Texts too long to have their counts remembered are counted each time, to the same scores.
    long_texts = [t * (2000 // max(1, len(t)) + 1) for t in texts[:20]]
    assert min(len(t) for t in long_texts) > 1024
    np.testing.assert_allclose(
        scorer.score(item.question, long_texts),
        _bm25s_scores(scorer, item.question, long_texts),
        rtol=1e-5,
    )


def test_bm25_parameters_at_their_limits_and_outside() -> None:
    texts = ["cat dog", "dog", "cat cat", ""]
    for k1, b in ((0.0, 0.75), (1.5, 0.0), (1.5, 1.0)):
        scorer = BM25Scorer(k1=k1, b=b)
        ours = scorer.score("cat", texts)
        assert np.isfinite(ours).all() and ours[1] == 0.0 and ours[3] == 0.0
        np.testing.assert_allclose(ours, _bm25s_scores(scorer, "cat", texts), rtol=1e-5)
    for k1, b in ((-0.1, 0.75), (1.5, 1.1), (1.5, -0.1)):
        with pytest.raises(ValueError, match="k1 >= 0"):
            BM25Scorer(k1=k1, b=b)


def test_the_embedder_pickles_as_its_settings_and_loads_again(embedder: Any) -> None:
    import pickle

    texts = ["The 1972 Nobel Prize in Physics", "cooking pasta"]
    expected = embedder.embed(texts)  # the model is loaded
    twin = pickle.loads(pickle.dumps(embedder))
    assert twin._model is None and len(twin._cache) == 0  # settings only, nothing loaded
    assert twin.model_name_or_path == embedder.model_name_or_path
    np.testing.assert_allclose(twin.embed(texts), expected, atol=1e-5)


def _real_block_texts(shared_data: Any) -> list[str]:
    """The scoring texts (headings as context, then the text) of a real WTQ page's blocks."""
    from hrefine.html import build_block_tree

    page = (shared_data / "wtq" / "pages" / "203-0.html").read_bytes()
    tree = build_block_tree(page, max_words=64)
    return [
        f"{n.metadata.get('context') or ''}\n{n.text}".strip()
        for n in tree.nodes
        if n.text.strip() and not n.children
    ]


def test_bfloat16_embedder_keeps_float32s_vectors_and_packing(shared_data: Any, f32: Any) -> None:
    import torch

    texts = _real_block_texts(shared_data)
    assert len(texts) > 20
    half = SentenceTransformerEmbedder(
        str(default_embedder_path()), max_seq_length=128, precision="bfloat16"
    )
    assert half.compute_dtype == "bfloat16" and f32.compute_dtype == "float32"
    got, want = half.embed(texts), f32.embed(texts)
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    assert got.dtype == np.float32
    assert float((got * want).sum(axis=1).min()) > 0.9999
    # The same order of texts for a query (what a pruner ranks by).
    q = "which year had the most wins?"
    assert (
        np.argsort(-(got @ half.embed_query(q)))[:5].tolist()
        == np.argsort(-(want @ f32.embed_query(q)))[:5].tolist()
    )
    # Only the linear layers' weights turned (in the batch-invariant path's own copies):
    # embeddings and norms stay float32, and the model itself is left in float32.
    parts = half._invariant
    assert parts is not None and parts.dtype == torch.bfloat16
    for layer in parts.layers:
        assert {layer.qkv_w.dtype, layer.out_w.dtype, layer.up_w.dtype} == {torch.bfloat16}
        assert layer.down_w.dtype == torch.bfloat16 and layer.ln1[0].dtype == torch.float32
    assert parts.word.dtype == parts.ln[0].dtype == torch.float32
    linears = [m for m in half.model.modules() if isinstance(m, torch.nn.Linear)]
    assert linears and all(m.weight.dtype == torch.float32 for m in linears)


def test_bfloat16_linears_of_a_model_without_the_invariant_path(
    shared_data: Any, f32: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A model the batch-invariant path does not compute takes the batched path, its linear
    # layers turned to bfloat16 in place (norms stay float32), still packed.
    import torch
    from hrefine.models import sentence_transformer as embedder_module

    monkeypatch.setattr(embedder_module, "invariant_encoder", lambda *_: None)
    texts = _real_block_texts(shared_data)
    half = SentenceTransformerEmbedder(
        str(default_embedder_path()), max_seq_length=128, precision="bfloat16"
    )
    assert half.compute_dtype == "bfloat16" and half._invariant is None
    got, want = half.embed(texts), f32.embed(texts)
    assert float((got * want).sum(axis=1).min()) > 0.9999
    model = half.model
    linears = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
    assert linears and all(m.weight.dtype == torch.bfloat16 for m in linears)
    norms = [m for m in model.modules() if isinstance(m, torch.nn.LayerNorm)]
    assert norms and all(m.weight.dtype == torch.float32 for m in norms)
    assert half._pooling_for_packing() == "mean"


def test_auto_precision_is_float32_on_every_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    # "auto" took bfloat16 where the CPU had it natively (and a timed tile ran faster): the
    # vectors, and what every method kept, then differed from one machine to another.
    from hrefine.models import device

    monkeypatch.delenv("HREFINE_EMBED_PRECISION", raising=False)
    for native in (False, True):
        monkeypatch.setattr(device, "native_bf16", lambda _device, native=native: native)
        auto = SentenceTransformerEmbedder(str(default_embedder_path()), max_seq_length=128)
        assert auto.precision == "auto" and auto.compute_dtype == "float32", native
    # The environment variable decides for "auto", and only for "auto".
    for value in ("float32", "bfloat16"):
        monkeypatch.setenv("HREFINE_EMBED_PRECISION", value)
        auto = SentenceTransformerEmbedder(str(default_embedder_path()), max_seq_length=128)
        assert auto.compute_dtype == value
    pinned = SentenceTransformerEmbedder(
        str(default_embedder_path()), max_seq_length=128, precision="float32"
    )
    assert pinned.compute_dtype == "float32"
    monkeypatch.setenv("HREFINE_EMBED_PRECISION", "float16")
    with pytest.raises(ValueError, match="HREFINE_EMBED_PRECISION"):
        _ = SentenceTransformerEmbedder(str(default_embedder_path())).compute_dtype
    with pytest.raises(ValueError, match="precision must be one of"):
        SentenceTransformerEmbedder("unused", precision="float16")


def test_a_pickled_embedder_keeps_its_precision() -> None:
    import pickle

    half = SentenceTransformerEmbedder(
        str(default_embedder_path()), max_seq_length=128, precision="bfloat16"
    )
    vec = half.embed(["Tournament / Win–Loss"])
    twin = pickle.loads(pickle.dumps(half))
    assert twin._dtype == "" and twin.precision == "bfloat16"  # resolved again on load
    assert twin.compute_dtype == "bfloat16"
    np.testing.assert_allclose(twin.embed(["Tournament / Win–Loss"]), vec, atol=1e-6)


def test_fuse_adds_the_scaled_match_and_nothing_without_one() -> None:
    from hrefine.models.lexical import fuse

    dense = np.array([0.5, 0.2, 0.1])
    assert fuse(dense, np.array([2.0, 4.0, 0.0]), 0.5).tolist() == [0.75, 0.7, 0.1]
    assert fuse(dense, np.zeros(3), 0.5).tolist() == dense.tolist()
    assert fuse(dense, np.array([1.0, 0, 0]), 0.0).tolist() == dense.tolist()


def test_windowed_scorer_reads_every_word() -> None:
    from hrefine.models.scorers import WindowedScorer, base_scorer

    # A block whose answer sits past the first 128 word pieces: read once, only its opening
    # counts; read in windows, the window holding the answer decides.
    filler = " ".join(["the committee met again to discuss routine budget matters"] * 25)
    block = f"Minutes\n{filler} The comet Halley returns every 76 years to the inner system."
    other = "Minutes\nThe observatory lists telescopes, domes and opening hours for visitors."
    query = "How often does Halley's comet return?"
    once = get_scorer("embedding", max_tokens=128)
    windowed = WindowedScorer(once, 40)
    assert base_scorer(windowed) is once
    assert len(windowed.windows(block)) > 3
    assert all(w.startswith("Minutes\n") for w in windowed.windows(block))
    assert windowed.windows(other) == [other]
    plain = once.score(query, [block, other])
    fine = windowed.score(query, [block, other])
    assert fine[0] > plain[0] + 0.1
    assert fine[0] > fine[1]
    assert fine[1] == pytest.approx(plain[1], abs=1e-6)  # short texts are read as they are
