"""HtmlRagCompressor: new Documents, copied metadata, budgets, sync/async parity."""

from __future__ import annotations

import asyncio
import copy

import pytest
from hrefine.budget import get_counter
from hrefine.errors import EmptyInputError, HtmlParseError, InputTypeError
from hrefine.testing import KeywordEmbedder
from html_pages import SlowScorer
from langchain_core.documents import BaseDocumentCompressor, Document
from lc_helpers import Compress, KeywordEmbeddings, make_documents
from loop_ticks import ticks_while
from pydantic import ValidationError

from langchain_hrefine import HtmlRagCompressor

QUERY = "how many gold medals did Norway win at the 2014 Winter Olympics"


def _snapshot(docs: list[Document]) -> list[tuple[str, dict[str, object], str | None]]:
    return [(d.page_content, copy.deepcopy(d.metadata), d.id) for d in docs]


def _compressor(**kwargs: object) -> HtmlRagCompressor:
    kwargs.setdefault("tokenizer", "regex")
    kwargs.setdefault("scorer", "bm25")
    return HtmlRagCompressor(**kwargs)  # type: ignore[arg-type]


def test_is_a_langchain_document_compressor() -> None:
    assert issubclass(HtmlRagCompressor, BaseDocumentCompressor)


def test_unknown_field_is_rejected() -> None:
    with pytest.raises(ValidationError, match="max_token"):
        HtmlRagCompressor(max_token=10)  # type: ignore[call-arg]


@pytest.mark.parametrize("bad", [0, 2, True, 512.5, "512"])
def test_a_budget_that_cannot_work_is_rejected_at_construction(bad: object) -> None:
    with pytest.raises(ValidationError, match="max_tokens"):
        HtmlRagCompressor(max_tokens=bad)  # type: ignore[arg-type]


def test_bad_scorer_or_tokenizer_fails_at_construction() -> None:
    from hrefine.errors import ModelNotFoundError

    # pydantic reports the core's ConfigError (a ValueError) as a ValidationError.
    with pytest.raises(ValidationError, match="unknown scorer"):
        HtmlRagCompressor(scorer="embeding")
    with pytest.raises(ModelNotFoundError):
        HtmlRagCompressor(scorer="bm25", tokenizer="no/such-tokenizer")
    with pytest.raises(ValidationError, match="lexical_weight"):
        HtmlRagCompressor(scorer="bm25", lexical_weight=float("inf"))


def test_pickles_and_deep_copies_with_the_same_output(documents: list[Document]) -> None:
    import pickle

    compressor = _compressor(scorer="embedding", embeddings=KeywordEmbedder(), max_tokens=200)
    expected = [d.page_content for d in compressor.compress_documents(documents, QUERY)]
    for twin in (
        pickle.loads(pickle.dumps(compressor)),
        copy.deepcopy(compressor),
        compressor.model_copy(deep=True),
    ):
        assert twin._get_pruner() is not compressor._get_pruner()
        assert [d.page_content for d in twin.compress_documents(documents, QUERY)] == expected


def test_metadata_that_cannot_be_deep_copied_is_shared_and_a_prior_score_kept() -> None:
    import threading

    lock = threading.Lock()
    docs = make_documents()
    docs[0].metadata.update(client=lock, relevance_score=0.99)
    out = _compressor(max_tokens=400).compress_documents(docs, QUERY)
    first = next(d for d in out if d.id == docs[0].id)
    assert first.metadata["client"] is lock
    assert first.metadata["hrefine_input_score"] == 0.99
    assert first.metadata["relevance_score"] != 0.99
    assert docs[0].metadata["relevance_score"] == 0.99 and "hrefine_tokens" not in docs[0].metadata


async def test_inputs_untouched_and_outputs_are_new(
    compress: Compress, documents: list[Document]
) -> None:
    before = _snapshot(documents)
    out = await compress(_compressor(max_tokens=120), documents, QUERY)
    assert out
    assert _snapshot(documents) == before
    for doc in out:
        assert all(doc is not src for src in documents)
        assert all(doc.metadata is not src.metadata for src in documents)


async def test_metadata_copied_and_hrefine_keys_added(
    compress: Compress, documents: list[Document]
) -> None:
    out = await compress(_compressor(max_tokens=400), documents, QUERY)
    by_id = {d.id: d for d in documents}
    for doc in out:
        src = by_id[doc.id]
        for key, value in src.metadata.items():
            assert doc.metadata[key] == value
        assert doc.metadata["tags"] is not src.metadata["tags"]
        assert isinstance(doc.metadata["relevance_score"], float)
        assert doc.metadata["hrefine_method"] == "htmlrag"
        assert doc.metadata["hrefine_budget"] == 400
        assert doc.metadata["hrefine_budget_scope"] == "shared"
        assert doc.metadata["hrefine_tokenizer"] == "regex"
        assert 0 < doc.metadata["hrefine_blocks_kept"] <= doc.metadata["hrefine_blocks_total"]
        assert doc.metadata["hrefine_dropped_documents"] == len(documents) - len(out)


async def test_together_budget_is_met_in_the_given_tokenizer(
    compress: Compress, documents: list[Document]
) -> None:
    counter = get_counter("regex")
    out = await compress(_compressor(max_tokens=150), documents, QUERY)
    counts = [counter.count(d.page_content) for d in out]
    assert counts == [d.metadata["hrefine_tokens"] for d in out]
    assert sum(counts) <= 150


async def test_per_document_budget_applies_to_each_document(
    compress: Compress, documents: list[Document]
) -> None:
    counter = get_counter("regex")
    out = await compress(_compressor(max_tokens=60, prune_together=False), documents, QUERY)
    assert len(out) == len(documents)
    for doc in out:
        assert doc.metadata["hrefine_budget_scope"] == "document"
        assert doc.metadata["hrefine_budget"] == 60
        assert counter.count(doc.page_content) <= 60
    assert sum(counter.count(d.page_content) for d in out) > 60


async def test_together_mode_keeps_the_answer_and_reports_dropped_documents(
    compress: Compress, documents: list[Document]
) -> None:
    out = await compress(_compressor(max_tokens=60), documents, QUERY)
    assert [d.id for d in out] == ["doc-olympics"]
    assert "Norway" in out[0].page_content
    assert out[0].metadata["hrefine_dropped_documents"] == len(documents) - 1


async def test_keyword_embeddings_rank_the_answer_block_first(
    compress: Compress, documents: list[Document]
) -> None:
    embeddings = KeywordEmbeddings()
    compressor = _compressor(max_tokens=80, scorer="embedding", embeddings=embeddings)
    out = await compress(
        compressor, documents, "What is the frequency of the station called The Wolf?"
    )
    assert embeddings.query_calls >= 1
    assert embeddings.document_calls >= 1
    best = max(out, key=lambda d: d.metadata["relevance_score"])
    assert best.id == "doc-radio"
    assert "WNAX-FM" in best.page_content
    assert "104.1" in best.page_content


async def test_output_is_ordered_by_relevance_or_kept_in_input_order(compress: Compress) -> None:
    docs = make_documents()
    out = await compress(_compressor(max_tokens=5000), docs, QUERY)
    scores = [d.metadata["relevance_score"] for d in out]
    assert scores == sorted(scores, reverse=True) and out[0].id == "doc-olympics"
    assert all(0.0 <= s <= 1.0 for s in scores)
    assert all(isinstance(d.metadata["hrefine_raw_score"], float) for d in out)
    kept = await compress(_compressor(max_tokens=5000, keep_input_order=True), docs, QUERY)
    assert [d.id for d in kept] == [d.id for d in docs]


async def test_empty_document_list_gives_empty_list(compress: Compress) -> None:
    assert await compress(_compressor(), [], QUERY) == []


async def test_empty_query_is_a_clear_error(compress: Compress, documents: list[Document]) -> None:
    with pytest.raises(EmptyInputError, match="query is empty"):
        await compress(_compressor(), documents, "  ")


def test_sync_and_async_give_the_same_documents(documents: list[Document]) -> None:
    for together in (True, False):
        compressor = _compressor(max_tokens=90, prune_together=together)
        sync = compressor.compress_documents(documents, QUERY)
        asyn = asyncio.run(compressor.acompress_documents(documents, QUERY))
        assert [(d.page_content, d.metadata, d.id) for d in sync] == [
            (d.page_content, d.metadata, d.id) for d in asyn
        ]


def test_changing_a_setting_rebuilds_the_pruner() -> None:
    compressor = _compressor(max_tokens=100)
    first = compressor._get_pruner()
    compressor.max_words = 32
    assert compressor._get_pruner() is not first


def test_end_tag_and_lexical_settings_reach_the_pruner(documents: list[Document]) -> None:
    compact = _compressor(max_tokens=400, lexical_weight=0.5)
    full = _compressor(max_tokens=400, omit_end_tags=False, lexical_weight=0)
    assert (
        compact._get_pruner().options.lexical_weight == 0.5
        and compact._get_pruner().options.omit_end_tags
    )
    assert (
        full._get_pruner().options.lexical_weight == 0
        and not full._get_pruner().options.omit_end_tags
    )
    with_tags = "".join(d.page_content for d in full.compress_documents(documents, QUERY))
    without = "".join(d.page_content for d in compact.compress_documents(documents, QUERY))
    assert "</td>" in with_tags and "</td>" not in without
    with pytest.raises(ValidationError):
        _compressor(lexical_weight=-1)


async def test_async_path_does_not_block_the_event_loop(documents: list[Document]) -> None:
    compressor = _compressor(scorer=SlowScorer(), max_tokens=200)
    out, ticks = await ticks_while(compressor.acompress_documents(documents, QUERY), interval=0.01)
    assert out
    assert out[0].metadata["relevance_score"] is not None
    assert ticks >= 5


@pytest.mark.parametrize("together", [True, False])
async def test_empty_page_is_left_out_and_reported(compress: Compress, together: bool) -> None:
    docs = [*make_documents()[:2], Document(page_content="<html><body> </body></html>", id="empty")]
    out = await compress(_compressor(max_tokens=2000, prune_together=together), docs, QUERY)
    assert [d.id for d in out] == ["doc-olympics", "doc-radio"]
    assert all(d.metadata["hrefine_dropped_documents"] == 1 for d in out)


@pytest.mark.parametrize("together", [True, False])
async def test_all_pages_empty_gives_no_documents_or_an_error_when_strict(
    compress: Compress, together: bool, caplog: pytest.LogCaptureFixture
) -> None:
    docs = [Document(page_content=""), Document(page_content="<p> </p>")]
    with caplog.at_level("WARNING"):
        assert await compress(_compressor(prune_together=together), docs, QUERY) == []
    assert "all 2 pages are empty" in caplog.text
    with pytest.raises(EmptyInputError, match="empty"):
        await compress(_compressor(prune_together=together, strict=True), docs, QUERY)


async def test_top_n_returns_that_many_under_a_shared_budget(compress: Compress) -> None:
    docs = make_documents()
    out = await compress(_compressor(max_tokens=200, top_n=3), docs, QUERY)
    assert len(out) == 3 and out[0].id == "doc-olympics"
    assert sum(d.metadata["hrefine_tokens"] for d in out) <= 200
    assert all(d.metadata["hrefine_dropped_documents"] == len(docs) - 3 for d in out)


def test_core_embedder_accepted_and_junk_rejected(documents: list[Document]) -> None:
    compressor = _compressor(scorer="embedding", embeddings=KeywordEmbedder(), max_tokens=200)
    assert compressor.compress_documents(documents, QUERY)
    with pytest.raises(ValidationError, match="embeddings"):
        HtmlRagCompressor(embeddings=3)  # type: ignore[arg-type]


def test_every_pruner_setting_is_a_field_that_reaches_the_pruner() -> None:
    from hrefine.html import HtmlPrunerOptions

    settings = set(HtmlPrunerOptions.names()) - HtmlPrunerOptions.adapter_excluded
    assert settings <= set(HtmlRagCompressor.model_fields)
    compressor = _compressor(max_tokens=100)
    first = compressor._get_pruner()
    assert first.options.demote_back_matter and first.options.narrow_tables
    compressor.demote_back_matter = False
    assert compressor._get_pruner() is not first
    assert compressor._get_pruner().options.demote_back_matter is False
    compressor.cleaned_cache = 0
    assert compressor._get_pruner()._cleaned.max_pages == 0
    assert compressor._get_pruner().options.split_paragraphs is True
    compressor.split_paragraphs = False
    assert compressor._get_pruner().options.split_paragraphs is False
    with pytest.raises(ValidationError, match="cleaned_cache"):
        HtmlRagCompressor(cleaned_cache=-1)


def test_warmup_loads_the_pruner_once_and_returns_the_compressor() -> None:
    compressor = _compressor(scorer="embedding", embeddings=KeywordEmbeddings())
    assert compressor.warmup() is compressor
    embeddings = compressor.embeddings
    assert isinstance(embeddings, KeywordEmbeddings) and embeddings.document_calls >= 1
    calls = embeddings.document_calls
    compressor.warmup()  # idempotent: no second tiny call
    assert embeddings.document_calls == calls


async def test_a_document_that_cannot_be_read_is_named_in_metadata(compress: Compress) -> None:
    docs = make_documents()
    bad = Document(page_content="%PDF-1.7\n" + "\x00\x01\x02 stream" * 300, id="doc-pdf")
    out = await compress(_compressor(max_tokens=5000), [*docs, bad], QUERY)
    assert {d.id for d in out} == {d.id for d in docs}
    failed = out[0].metadata["hrefine_failed_documents"]
    assert [f["index"] for f in failed] == [len(docs)] and "PDF" in failed[0]["error"]
    with pytest.raises(HtmlParseError, match="could not be read"):
        await compress(_compressor(max_tokens=5000, strict=True), [*docs, bad], QUERY)


def test_a_call_whose_only_page_cannot_be_read_logs_why(caplog: pytest.LogCaptureFixture) -> None:
    # Was: "none of the 1 pages has text to prune", as if the PDF were an empty page.
    bad = Document(page_content="%PDF-1.7\n1 0 obj << >> stream", id="doc-pdf")
    with caplog.at_level("WARNING", logger="hrefine"):
        assert _compressor(max_tokens=500).compress_documents([bad], QUERY) == []
    assert "page 0: HtmlParseError" in caplog.text and "PDF" in caplog.text


async def test_an_item_that_is_not_a_document_is_named() -> None:
    # Was: AttributeError ('str' object has no attribute 'page_content') on both paths.
    compressor = HtmlRagCompressor(max_tokens=100, scorer="bm25", tokenizer="regex")
    page = Document(page_content="<p>Paris is the capital of France.</p>")
    for docs, index, kind in ((["<p>x</p>"], 0, "str"), ([page, None], 1, "NoneType")):
        message = f"document {index} is a {kind}; pass a list of LangChain Documents"
        with pytest.raises(InputTypeError, match=message):
            compressor.compress_documents(docs, "capital")  # type: ignore[arg-type]
        with pytest.raises(InputTypeError, match=message):
            await compressor.acompress_documents(docs, "capital")  # type: ignore[arg-type]
