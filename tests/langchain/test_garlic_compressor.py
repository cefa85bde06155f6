"""GarlicCompressor: a GARLIC search over the given Documents, returned within the budget.

The documents are the paragraphs of a real HotpotQA item; the LLM is the instant deterministic
``garlic_fakes.garlic_llm`` and the embedder the real embedded one.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from garlic_fakes import ANSWER, FACT, SMALL, garlic_llm, hotpot, hotpot_paragraphs
from hrefine.budget import get_counter
from hrefine.errors import EmptyInputError, InputTypeError, ModelNotFoundError
from hrefine.testing import ScriptedLM
from langchain_core.documents import Document
from lc_helpers import Compress
from pydantic import ValidationError

from langchain_hrefine import GarlicCompressor


def make_documents(data: Path) -> list[Document]:
    return [
        Document(page_content=text, metadata={"title": title, "tags": ["hotpot"]}, id=title)
        for title, text in hotpot_paragraphs(data)
    ]


def words(text: str) -> int:
    return len(text.split())


async def test_what_the_search_read_comes_back_in_document_order(
    shared_data: Path, compress: Compress
) -> None:
    docs = make_documents(shared_data)
    before = [d.model_copy(deep=True) for d in docs]
    compressor = GarlicCompressor(max_tokens=4000, fill=False, llm=ScriptedLM(garlic_llm), **SMALL)
    out = await compress(compressor, docs, str(hotpot(shared_data).question))
    assert docs == before
    steps = [d.metadata["hrefine_step"] for d in out]
    assert 0 in steps and max(steps) >= 1
    # the fake said Yes on the chunk that holds FACT, and the search stopped there
    (yes,) = [d for d in out if d.metadata["hrefine_said_yes"] and d.metadata["hrefine_step"]]
    assert FACT in yes.page_content and yes.metadata["title"] == ANSWER
    assert {d.metadata["hrefine_search"]["stopped_by"] for d in out} == {"patience"}
    originals = {d.id: d for d in docs}
    for doc in out:
        if doc.metadata["hrefine_kind"] == "chunk":
            (source,) = doc.metadata["hrefine_sources"]
            start, end = doc.metadata["hrefine_start"], doc.metadata["hrefine_end"]
            assert originals[source].page_content[start:end] == doc.page_content


def test_fill_spends_the_budget_on_leaves(shared_data: Path) -> None:
    docs = make_documents(shared_data)
    question = str(hotpot(shared_data).question)
    budget = 300
    paper = GarlicCompressor(max_tokens=budget, fill=False, llm=ScriptedLM(garlic_llm), **SMALL)
    filled = GarlicCompressor(max_tokens=budget, llm=ScriptedLM(garlic_llm), **SMALL)
    early = paper.compress_documents(docs, question)
    full = filled.compress_documents(docs, question)
    # without fill the budget bounds everything read, summary points included; with it the walk
    # reads on until the next leaf would not fit, and leaves are kept first
    assert early[0].metadata["hrefine_search"]["stopped_by"] == "max_tokens"
    assert full[0].metadata["hrefine_search"]["stopped_by"] == "filled"
    counter = get_counter(None)
    chunk_tokens = [
        [counter.count(d.page_content) for d in out if d.metadata["hrefine_kind"] == "chunk"]
        for out in (early, full)
    ]
    assert sum(chunk_tokens[1]) > sum(chunk_tokens[0])
    assert sum(chunk_tokens[1]) > budget - SMALL["chunk_tokens"]
    assert sum(counter.count(d.page_content) for d in full) <= budget


@pytest.mark.parametrize("budget", [10, 40, 150, 400])
def test_the_budget_is_never_passed(shared_data: Path, budget: int) -> None:
    docs = make_documents(shared_data)
    compressor = GarlicCompressor(
        max_tokens=budget, tokenizer=words, llm=ScriptedLM(garlic_llm), **SMALL
    )
    out = compressor.compress_documents(docs, "Who wrote the Animorphs books?")
    counter = get_counter(words)
    used = sum(counter.count(d.page_content) for d in out)
    assert used <= budget
    assert all(d.metadata["hrefine_tokens"] == words(d.page_content) for d in out)
    if budget >= 150:
        assert len(out) >= 2
    # each node read comes back once
    ids = [d.metadata["hrefine_node_id"] for d in out]
    assert len(set(ids)) == len(ids)


async def test_every_document_says_how_many_inputs_were_dropped(
    shared_data: Path, compress: Compress, caplog: pytest.LogCaptureFixture
) -> None:
    # Was: no hrefine_dropped_documents (nor hrefine_budget, hrefine_method), although most
    # inputs were left out; integrations.md promises it of every compressor.
    docs = [*make_documents(shared_data), Document(page_content="  ", id="blank")]
    compressor = GarlicCompressor(
        max_tokens=150, tokenizer=words, llm=ScriptedLM(garlic_llm), **SMALL
    )
    with caplog.at_level(logging.INFO, logger="hrefine.results"):
        out = await compress(compressor, docs, str(hotpot(shared_data).question))
    returned = {
        source
        for d in out
        if d.metadata["hrefine_kind"] == "chunk"
        for source in d.metadata["hrefine_sources"]
    }
    assert out and 0 < len(returned) < len(docs) - 1
    dropped = len(docs) - len(returned)
    counter = get_counter(words)
    for doc in out:
        assert doc.metadata["hrefine_dropped_documents"] == dropped
        assert doc.metadata["hrefine_method"] == "garlic"
        assert doc.metadata["hrefine_budget"] == 150
        assert doc.metadata["hrefine_tokenizer"] == counter.name
    logged = " ".join(r.getMessage() for r in caplog.records)
    assert "GARLIC left out 1 of" in logged and "(no text): indices [" in logged
    assert "(no chunk within the budget)" in logged


def test_a_tokenizer_that_is_not_there_fails_at_construction() -> None:
    # Was: made without error, ModelNotFoundError at the first call (the other compressors
    # raise when made, as integrations.md says).
    with pytest.raises(ModelNotFoundError):
        GarlicCompressor(tokenizer="no/such-tokenizer")


def test_nothing_to_compress_gives_nothing() -> None:
    compressor = GarlicCompressor(llm=ScriptedLM(garlic_llm))
    assert compressor.compress_documents([], "anything") == []
    assert compressor.compress_documents([Document(page_content="  ")], "anything") == []


def test_bad_inputs_and_fields_fail() -> None:
    with pytest.raises(ValidationError, match="max_tokens"):
        GarlicCompressor(max_tokens=0)
    with pytest.raises(ValidationError, match="edges"):
        GarlicCompressor(edges="sideways")
    compressor = GarlicCompressor(llm=ScriptedLM(garlic_llm))
    with pytest.raises(InputTypeError, match="Document"):
        compressor.compress_documents(["a text"], "q")  # type: ignore[list-item]


def test_an_empty_query_is_refused_before_the_graph_is_built(shared_data: Path) -> None:
    # Was: the graph was built first (its LLM calls paid for) and the search refused the query.
    calls: list[str] = []

    def llm(prompt: str) -> str:
        calls.append(prompt)
        return garlic_llm(prompt)

    compressor = GarlicCompressor(llm=llm, **SMALL)
    for query in ("", "  \n"):
        with pytest.raises(EmptyInputError, match="query is empty"):
            compressor.compress_documents(make_documents(shared_data)[:3], query)
    with pytest.raises(InputTypeError, match="query must be a str"):
        compressor.compress_documents(make_documents(shared_data)[:3], None)  # type: ignore[arg-type]
    assert calls == []


def test_a_document_given_twice_is_read_once_and_named(
    shared_data: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Was: its chunks were built twice and the same text could come back twice.
    docs = make_documents(shared_data)
    copy = Document(page_content=docs[0].page_content, metadata={"title": "copy"}, id="copy")
    compressor = GarlicCompressor(max_tokens=4000, fill=False, llm=ScriptedLM(garlic_llm), **SMALL)
    with caplog.at_level(logging.INFO, logger="hrefine.results"):
        out = compressor.compress_documents([*docs, copy], str(hotpot(shared_data).question))
    chunks = [d.page_content for d in out if d.metadata["hrefine_kind"] == "chunk"]
    assert len(chunks) == len(set(chunks))
    assert all("copy" not in d.metadata["hrefine_sources"] for d in out)
    logged = " ".join(r.getMessage() for r in caplog.records)
    assert f"the same text as input 0): indices [{len(docs)}]" in logged
