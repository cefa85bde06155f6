"""LongRefinerCompressor on real long documents (CUAD contracts, a Qasper paper) with the
embedded embedder: shared budget, document order, metadata, top_n, prompt-only mode, bad input."""

from __future__ import annotations

import asyncio
import copy
import pickle
import threading
from pathlib import Path
from typing import Any

import pytest
from hrefine.budget import get_counter
from hrefine.errors import (
    BudgetTooSmallError,
    EmptyInputError,
    InputTypeError,
    ModelNotFoundError,
)
from hrefine.eval.loaders import EvalItem
from hrefine.longrefiner import LongRefinerOptions
from hrefine.models import Embedder
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.documents import BaseDocumentCompressor, Document
from langchain_core.language_models import FakeListChatModel
from langchain_core.messages import BaseMessage
from lc_helpers import Compress
from loop_ticks import ticks_while
from lr_data import (
    ANNOTATORS,
    CONTRACT,
    RENEWAL,
    contracts,
    cuad_item,
    has_answer,
    in_document_order,
    qasper_item,
)
from pydantic import Field, ValidationError

import langchain_hrefine
from langchain_hrefine import LongRefinerCompressor

#: A question about the paper as a whole (step 1 should call it global).
OVERVIEW = "What is this paper about, and how was its dataset built?"
#: The sections the fake model chooses in step 3 (titles of the paper's outline).
CHOSEN = ["Data Collection", "Conclusion and Future Work"]


class RecordingChatModel(FakeListChatModel):
    """A fake chat model that answers from its list in order and records each prompt."""

    prompts: list[str] = Field(default_factory=list)

    def _call(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> str:
        self.prompts.append("\n".join(str(m.content) for m in messages))
        return super()._call(messages, stop, run_manager, **kwargs)


@pytest.fixture(scope="module")
def renewal(shared_data: Path) -> EvalItem:
    return cuad_item(shared_data, RENEWAL)


@pytest.fixture(scope="module")
def paper(shared_data: Path) -> EvalItem:
    return qasper_item(shared_data, ANNOTATORS)


@pytest.fixture(scope="module")
def corpus(shared_data: Path) -> dict[str, str]:
    return contracts(shared_data)


def _docs(corpus: dict[str, str], paper: EvalItem) -> list[Document]:
    """Two contracts and the paper, with nested metadata (to check it is copied)."""
    docs = [
        Document(
            page_content=corpus[d],
            metadata={"source": f"{d}.txt", "tags": ["cuad", d], "info": {"lang": "en"}},
            id=d,
        )
        for d in (CONTRACT, "cuad_02")
    ]
    paper_doc = Document(
        page_content=paper.document,
        metadata={"source": "qasper_01.txt", "tags": ["qasper"], "info": {"lang": "en"}},
        id="qasper_01",
    )
    return [*docs, paper_doc]


def _compressor(embedder: Embedder, **fields: Any) -> LongRefinerCompressor:
    return LongRefinerCompressor(embeddings=embedder, **fields)


def _snapshot(docs: list[Document]) -> list[tuple[str, dict[str, Any], str | None]]:
    return [(d.page_content, copy.deepcopy(d.metadata), d.id) for d in docs]


def test_is_a_document_compressor_exported_from_the_package() -> None:
    assert issubclass(LongRefinerCompressor, BaseDocumentCompressor)
    assert "LongRefinerCompressor" in langchain_hrefine.__all__


def test_every_refiner_setting_is_a_field_that_reaches_the_refiner(embedder: Embedder) -> None:
    settings = set(LongRefinerOptions.names()) - LongRefinerOptions.adapter_excluded
    fields = set(LongRefinerCompressor.model_fields)
    assert settings <= fields
    assert {"lm", "llm", "embeddings", "tokenizer", "max_tokens", "top_n", "strict"} <= fields
    assert LongRefinerCompressor.model_fields["max_tokens"].default == 2048
    compressor = _compressor(embedder, leaf_tokens=120, tokenizer="regex")
    first = compressor.refiner
    assert first.options.leaf_tokens == 120 and first.counter.name == "regex"
    assert first.options.embedder is embedder
    assert compressor.refiner is first  # nothing changed: not rebuilt
    compressor.global_weight = 0.2
    assert compressor.refiner is not first
    assert compressor.refiner.options.global_weight == 0.2


def test_bad_settings_fail_at_construction() -> None:
    for bad in (0, -5, True, 512.5, "512"):
        with pytest.raises(ValidationError, match="max_tokens"):
            LongRefinerCompressor(max_tokens=bad)
    with pytest.raises(ValidationError, match="max_token"):
        LongRefinerCompressor(max_token=10)  # type: ignore[call-arg]
    with pytest.raises(ValidationError, match="structure"):
        LongRefinerCompressor(structure="chapters")
    with pytest.raises(ValidationError, match="needs a model"):
        LongRefinerCompressor(structure="model")
    with pytest.raises(ValidationError, match="not both"):
        LongRefinerCompressor(lm="default", llm=lambda p: p)
    with pytest.raises(InputTypeError, match="as LongRefiner's llm"):
        LongRefinerCompressor(llm=3)
    with pytest.raises(ValidationError, match="embeddings"):
        LongRefinerCompressor(embeddings=3)  # type: ignore[arg-type]
    with pytest.raises(ModelNotFoundError):
        LongRefinerCompressor(tokenizer="no/such-tokenizer")


@pytest.mark.parametrize("tokenizer", [None, "cl100k_base", "regex"])
async def test_shared_budget_is_met_in_the_given_tokenizer(
    compress: Compress,
    embedder: Embedder,
    corpus: dict[str, str],
    paper: EvalItem,
    renewal: EvalItem,
    tokenizer: str | None,
) -> None:
    counter = get_counter(tokenizer)
    docs = _docs(corpus, paper)
    out = await compress(
        _compressor(embedder, max_tokens=400, tokenizer=tokenizer), docs, renewal.question
    )
    assert out
    counts = [counter.count(d.page_content) for d in out]
    assert counts == [d.metadata["hrefine_tokens"] for d in out]
    assert sum(counts) <= 400
    # As the reader sees them: the documents one after another, joined as their units are.
    assert counter.count("\n\n".join(d.page_content for d in out)) <= 400
    assert sum(counts) > 300  # the budget is used, not wasted
    assert {d.metadata["hrefine_tokenizer"] for d in out} == {counter.name}
    assert {d.metadata["hrefine_budget"] for d in out} == {400}


async def test_kept_text_is_in_document_order_and_the_inputs_are_untouched(
    compress: Compress,
    embedder: Embedder,
    corpus: dict[str, str],
    paper: EvalItem,
    renewal: EvalItem,
) -> None:
    docs = _docs(corpus, paper)
    before = _snapshot(docs)
    out = await compress(_compressor(embedder, max_tokens=1024), docs, renewal.question)
    assert _snapshot(docs) == before
    sources = {d.id: d.page_content for d in docs}
    for doc in out:
        assert all(doc is not src and doc.metadata is not src.metadata for src in docs)
        assert doc.metadata["tags"] is not next(d for d in docs if d.id == doc.id).metadata["tags"]
        assert len(doc.page_content) < len(sources[doc.id])
        assert in_document_order(doc.page_content, sources[doc.id])


def test_the_answer_clause_is_kept_with_the_documented_metadata(
    embedder: Embedder, corpus: dict[str, str], paper: EvalItem, renewal: EvalItem
) -> None:
    docs = _docs(corpus, paper)
    compressor = _compressor(embedder, max_tokens=1024)
    out = compressor.compress_documents(docs, renewal.question)
    contract = next(d for d in out if d.id == CONTRACT)
    assert has_answer(contract.page_content, renewal)
    meta = contract.metadata
    assert meta["source"] == f"{CONTRACT}.txt" and meta["tags"] == ["cuad", CONTRACT]
    assert 0.0 < meta["relevance_score"] <= 1.0
    assert meta["hrefine_raw_score"] == pytest.approx(meta["relevance_score"])
    assert meta["hrefine_method"] == "longrefiner"
    assert meta["hrefine_budget_scope"] == "shared"
    assert meta["hrefine_tokenizer"] == "llama-3.2"
    assert meta["hrefine_structure"] == "numbered"  # the contract's own clause numbers
    outline = {title for _, title, _ in compressor.refiner.structure(corpus[CONTRACT]).outline()}
    kept = meta["hrefine_sections_kept"]
    assert kept and set(kept) <= outline | {"Abstract"}
    assert any("TERM" in t.upper() for t in kept)  # the renewal clause's section
    # No model: the query analysis is off and both scores weigh the same.
    assert meta["hrefine_query_type"] == {
        "label": "local",
        "w_local": 0.5,
        "w_global": 0.5,
        "source": "off",
    }
    assert meta["hrefine_sections_selected"] == []
    assert meta["hrefine_dropped_documents"] == len(docs) - len(out)
    assert meta["hrefine_notes"] == []
    assert "hrefine_input_score" not in meta


async def test_output_is_ordered_by_relevance_or_kept_in_input_order(
    compress: Compress, embedder: Embedder, corpus: dict[str, str], paper: EvalItem
) -> None:
    docs = _docs(corpus, paper)
    out = await compress(_compressor(embedder, max_tokens=1500), docs, paper.question)
    scores = [d.metadata["relevance_score"] for d in out]
    assert scores == sorted(scores, reverse=True) and out[0].id == "qasper_01"
    assert has_answer(out[0].page_content, paper)
    kept = await compress(
        _compressor(embedder, max_tokens=1500, keep_input_order=True), docs, paper.question
    )
    order = [d.id for d in docs]
    assert [d.id for d in kept] == sorted((d.id for d in kept), key=order.index)
    assert sorted(d.id for d in kept) == sorted(d.id for d in out)


async def test_top_n_returns_the_most_relevant_with_the_whole_budget(
    compress: Compress,
    embedder: Embedder,
    corpus: dict[str, str],
    paper: EvalItem,
    renewal: EvalItem,
) -> None:
    docs = _docs(corpus, paper)
    shared = await compress(_compressor(embedder, max_tokens=600), docs, paper.question)
    assert len(shared) > 1
    (best,) = await compress(_compressor(embedder, max_tokens=600, top_n=1), docs, paper.question)
    assert best.id == "qasper_01" and has_answer(best.page_content, paper)
    alone = next(d for d in shared if d.id == "qasper_01")
    assert alone.metadata["hrefine_tokens"] < best.metadata["hrefine_tokens"] <= 600
    assert best.metadata["hrefine_dropped_documents"] == len(docs) - 1
    two = await compress(_compressor(embedder, max_tokens=600, top_n=2), docs, renewal.question)
    assert len(two) == 2 and sum(d.metadata["hrefine_tokens"] for d in two) <= 600


async def test_top_n_splits_a_budget_too_small_to_share(
    compress: Compress,
    embedder: Embedder,
    corpus: dict[str, str],
    paper: EvalItem,
    renewal: EvalItem,
) -> None:
    docs = _docs(corpus, paper)
    shared = await compress(_compressor(embedder, max_tokens=60), docs, renewal.question)
    assert len(shared) < len(docs)  # 60 tokens shared: not every document keeps a unit
    out = await compress(_compressor(embedder, max_tokens=60, top_n=3), docs, renewal.question)
    assert sorted(d.id for d in out) == sorted(d.id for d in docs)
    counter = get_counter(None)
    for doc in out:
        assert doc.metadata["hrefine_budget_scope"] == "split"
        assert doc.metadata["hrefine_budget"] == 20
        assert 0 < counter.count(doc.page_content) == doc.metadata["hrefine_tokens"] <= 20


def test_a_prior_score_is_kept_and_metadata_that_cannot_be_deep_copied_is_shared(
    embedder: Embedder, paper: EvalItem
) -> None:
    lock = threading.Lock()
    doc = Document(page_content=paper.document, metadata={"client": lock, "relevance_score": 0.9})
    (out,) = _compressor(embedder, max_tokens=200).compress_documents([doc], paper.question)
    assert out.metadata["client"] is lock
    assert out.metadata["hrefine_input_score"] == 0.9
    assert out.metadata["relevance_score"] != 0.9
    assert doc.metadata == {"client": lock, "relevance_score": 0.9}


def test_prompt_only_mode_asks_the_chat_model_for_steps_one_and_three(
    embedder: Embedder, paper: EvalItem
) -> None:
    import json

    model = RecordingChatModel(responses=["[Global]", json.dumps(CHOSEN)])
    compressor = _compressor(embedder, max_tokens=600, llm=model)
    doc = Document(page_content=paper.document, metadata={"title": "OLID"}, id="qasper_01")
    (out,) = compressor.compress_documents([doc], OVERVIEW)

    assert len(model.prompts) == 2  # the paper has headings: no structuring call
    analysis, selection = model.prompts
    assert "[Local]" in analysis and OVERVIEW in analysis
    assert "Title: OLID" in selection and "Section" in selection and OVERVIEW in selection
    assert all(title in selection for title in CHOSEN)
    query_type = out.metadata["hrefine_query_type"]
    assert query_type["label"] == "global" and query_type["source"] == "llm"
    assert query_type["w_global"] > query_type["w_local"]
    assert out.metadata["hrefine_sections_selected"] == CHOSEN
    assert set(CHOSEN) <= set(out.metadata["hrefine_sections_kept"])
    assert out.metadata["hrefine_notes"] == []
    assert get_counter(None).count(out.page_content) <= 600


async def test_prompt_only_mode_on_the_async_path_with_a_plain_callable(
    embedder: Embedder, paper: EvalItem
) -> None:
    import json

    asked: list[str] = []

    def llm(prompt: str) -> str:
        asked.append(prompt)
        return "[Local]" if "[Local]" in prompt else json.dumps(["Data Collection"])

    compressor = _compressor(embedder, max_tokens=300, llm=llm)
    (out,) = await compressor.acompress_documents(
        [Document(page_content=paper.document)], paper.question
    )
    assert len(asked) == 2
    assert out.metadata["hrefine_query_type"]["label"] == "local"
    assert out.metadata["hrefine_sections_selected"] == ["Data Collection"]
    assert has_answer(out.page_content, paper)


async def test_an_answer_naming_no_label_or_section_is_noted(
    embedder: Embedder, paper: EvalItem
) -> None:
    compressor = _compressor(embedder, max_tokens=300, llm=lambda prompt: "I cannot tell.")
    (out,) = await compressor.acompress_documents(
        [Document(page_content=paper.document)], paper.question
    )
    assert out.metadata["hrefine_query_type"]["source"] == "fallback"
    assert out.metadata["hrefine_sections_selected"] == []
    notes = " ".join(out.metadata["hrefine_notes"])
    assert "query analysis" in notes and "global selection" in notes


async def test_no_documents_gives_no_documents(compress: Compress, embedder: Embedder) -> None:
    assert await compress(_compressor(embedder), [], "when does the term end?") == []


async def test_all_documents_empty_gives_nothing_or_an_error_when_strict(
    compress: Compress, embedder: Embedder, caplog: pytest.LogCaptureFixture
) -> None:
    docs = [
        Document(page_content=""),
        Document(page_content="  \n\n "),
        Document(page_content="<p> </p>"),
    ]
    with caplog.at_level("WARNING"):
        assert await compress(_compressor(embedder), docs, "when does the term end?") == []
    assert "all 3 documents are empty" in caplog.text
    with pytest.raises(EmptyInputError, match="empty"):
        await compress(_compressor(embedder, strict=True), docs, "when does the term end?")


async def test_an_empty_document_among_others_is_left_out_and_counted(
    compress: Compress, embedder: Embedder, paper: EvalItem
) -> None:
    docs = [Document(page_content=" ", id="blank"), Document(page_content=paper.document, id="p")]
    (out,) = await compress(_compressor(embedder, max_tokens=300), docs, paper.question)
    assert out.id == "p" and out.metadata["hrefine_dropped_documents"] == 1


async def test_wrong_input_types_and_queries_are_clear_errors(
    compress: Compress, embedder: Embedder, paper: EvalItem
) -> None:
    compressor = _compressor(embedder)
    doc = Document(page_content=paper.document)
    with pytest.raises(InputTypeError, match="LangChain Documents"):
        await compress(compressor, paper.document, paper.question)  # type: ignore[arg-type]
    with pytest.raises(InputTypeError, match="document 1 is a str"):
        await compress(compressor, [doc, paper.document], paper.question)  # type: ignore[list-item]
    with pytest.raises(InputTypeError, match="query must be a str"):
        await compress(compressor, [doc], None)  # type: ignore[arg-type]
    with pytest.raises(EmptyInputError, match="query is empty"):
        await compress(compressor, [doc], "   ")


async def test_a_budget_of_one_token_is_a_clear_error_or_one_token(
    compress: Compress,
    embedder: Embedder,
    corpus: dict[str, str],
    paper: EvalItem,
    renewal: EvalItem,
) -> None:
    docs = _docs(corpus, paper)
    # The best clause starts with its number, "11.1": three tokens, so not even a word fits.
    with pytest.raises(BudgetTooSmallError, match="raise the budget"):
        await compress(_compressor(embedder, max_tokens=1), docs, renewal.question)
    text = "The Volga is the longest river in Europe.\n\nThe Danube flows through ten countries."
    (out,) = await compress(
        _compressor(embedder, max_tokens=1), [Document(page_content=text)], "longest river?"
    )
    assert out.page_content == "The"
    assert get_counter(None).count(out.page_content) == out.metadata["hrefine_tokens"] == 1


async def test_a_budget_below_every_paragraph_cuts_the_best_one_and_says_so(
    compress: Compress, embedder: Embedder
) -> None:
    text = (
        "The Volga is the longest river in Europe, flowing 3,530 kilometres to the Caspian.\n\n"
        "The Danube flows through ten countries on its way to the Black Sea."
    )
    (out,) = await compress(
        _compressor(embedder, max_tokens=4), [Document(page_content=text)], "longest river?"
    )
    assert out.page_content.startswith("The Volga")  # the best paragraph, cut at a word end
    assert get_counter(None).count(out.page_content) == out.metadata["hrefine_tokens"] <= 4
    assert any("cut to fit" in n for n in out.metadata["hrefine_notes"])


def test_pickles_and_deep_copies_with_the_same_output(embedder: Embedder, paper: EvalItem) -> None:
    docs = [Document(page_content=paper.document, id="p")]
    compressor = LongRefinerCompressor(max_tokens=300, llm=FakeListChatModel(responses=["[Local]"]))
    expected = [d.page_content for d in compressor.compress_documents(docs, paper.question)]
    for twin in (
        pickle.loads(pickle.dumps(compressor)),
        copy.deepcopy(compressor),
        compressor.model_copy(deep=True),
    ):
        assert twin.refiner is not compressor.refiner
        assert [d.page_content for d in twin.compress_documents(docs, paper.question)] == expected


def test_sync_and_async_give_the_same_documents(
    embedder: Embedder, corpus: dict[str, str], paper: EvalItem, renewal: EvalItem
) -> None:
    docs = _docs(corpus, paper)
    compressor = _compressor(embedder, max_tokens=500, top_n=2)
    sync = compressor.compress_documents(docs, renewal.question)
    asyn = asyncio.run(compressor.acompress_documents(docs, renewal.question))
    assert [(d.page_content, d.metadata, d.id) for d in sync] == [
        (d.page_content, d.metadata, d.id) for d in asyn
    ]


async def test_the_async_path_does_not_block_the_event_loop(
    embedder: Embedder, corpus: dict[str, str], renewal: EvalItem
) -> None:
    compressor = _compressor(embedder, max_tokens=500, leaf_tokens=100)  # new leaves: embedded now
    out, ticks = await ticks_while(
        compressor.acompress_documents([Document(page_content=corpus[CONTRACT])], renewal.question),
        interval=0.01,
    )
    assert out and ticks >= 5


def test_warmup_returns_the_compressor(embedder: Embedder) -> None:
    compressor = _compressor(embedder, max_tokens=64)
    assert compressor.warmup() is compressor
