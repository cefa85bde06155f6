"""RefineJob and the adapters' metadata, without a framework: small Markdown documents written
here, the embedded embedder, budgets in the regex tokenizer."""

from __future__ import annotations

import asyncio
import copy
import logging
import pickle

import pytest
from hrefine.budget import get_counter
from hrefine.errors import EmptyInputError, InputTypeError
from hrefine.longrefiner import LongRefiner, LongRefinerOptions
from hrefine.longrefiner.outcome import (
    METADATA_KEYS,
    RefineJob,
    RefinerSlot,
    check_query,
    kept_with_metadata,
)
from hrefine.models import Embedder

QUERY = "How long is the Volga river?"
RIVERS = (
    "# Rivers of Europe\n\n"
    "Europe has many rivers that carry trade and water.\n\n"
    "## The Volga\n\n"
    "The Volga is the longest river of Europe, about 3,530 kilometres from the Valdai Hills "
    "to the Caspian Sea.\n\n"
    "## The Rhine\n\n"
    "The Rhine reaches the North Sea at Rotterdam after flowing through six countries.\n"
)
BAKING = (
    "# Baking bread\n\n"
    "## Flour\n\n"
    "Bread flour has more protein than cake flour, so the dough holds its gas.\n\n"
    "## Proofing\n\n"
    "Let the dough rise in a warm place until it has doubled in size.\n"
)
MOUNTAINS = (
    "# Mountains\n\n"
    "## The Alps\n\n"
    "Mont Blanc is the highest peak of the Alps at 4,806 metres.\n\n"
    "## The Caucasus\n\n"
    "Elbrus, near the Volga basin, rises to 5,642 metres.\n"
)


@pytest.fixture(scope="module")
def refiner(embedder: Embedder) -> LongRefiner:
    return LongRefiner(embedder=embedder, tokenizer="regex")


def test_the_query_is_checked() -> None:
    assert check_query(QUERY) == QUERY
    with pytest.raises(InputTypeError, match="must be a str"):
        check_query(b"volga")
    with pytest.raises(EmptyInputError, match="query is empty"):
        check_query(" \n")


def test_one_outcome_per_document_under_one_shared_budget(refiner: LongRefiner) -> None:
    texts = [BAKING, RIVERS, MOUNTAINS]
    outcomes = RefineJob(refiner, texts, QUERY, 40).run()
    assert [o.index for o in outcomes] == [0, 1, 2]
    counter = get_counter("regex")
    assert sum(counter.count(o.text) for o in outcomes) <= 40
    rivers = outcomes[1]
    assert "3,530 kilometres" in rivers.text and rivers.kept
    assert rivers.structure == "markdown" and "The Volga" in rivers.sections_kept
    assert rivers.relevance == max(o.relevance or 0.0 for o in outcomes)
    assert all(o.scope == "shared" and o.budget == 40 for o in outcomes)
    assert rivers.analysis is not None and rivers.analysis.source == "off"


def test_a_document_given_twice_is_read_once(refiner: LongRefiner) -> None:
    # Was: both copies were structured and scored, and the shared budget kept the same
    # paragraphs twice while the other documents' were left out.
    texts = [RIVERS, BAKING, RIVERS, MOUNTAINS]
    result = refiner.refine(QUERY, texts, 60)
    once = refiner.refine(QUERY, [RIVERS, BAKING, "", MOUNTAINS], 60)
    assert [d.text for d in result.documents] == [d.text for d in once.documents]
    assert result.text.count("3,530 kilometres") == 1
    assert [d.repeat_of for d in result.documents] == [None, None, 0, None]
    assert "document 2 is the same text as document 0: read once" in result.notes
    assert "the same text as document 1: it was read once" in result.to_html()
    outcomes = RefineJob(refiner, [BAKING, *texts], QUERY, 60).run()
    assert outcomes[3].repeat_of == 1 and outcomes[3].reason == "the same text as input 1"
    assert outcomes[1].kept and not outcomes[3].kept
    assert asyncio.run(RefineJob(refiner, [BAKING, *texts], QUERY, 60).arun()) == outcomes


def test_the_async_path_gives_the_same_outcomes(refiner: LongRefiner) -> None:
    job = RefineJob(refiner, [BAKING, RIVERS, MOUNTAINS], QUERY, 40, top_n=2)
    assert asyncio.run(job.arun()) == job.run()


def test_top_n_gives_the_chosen_documents_the_whole_budget(refiner: LongRefiner) -> None:
    texts = [BAKING, RIVERS, MOUNTAINS]
    shared = RefineJob(refiner, texts, QUERY, 200).run()
    assert all(o.kept for o in shared)  # everything fits: each keeps something
    (best,) = [o for o in RefineJob(refiner, texts, QUERY, 200, top_n=1).run() if o.kept]
    assert best.index == 1 and best.text.count("\n\n") >= shared[1].text.count("\n\n")
    split = RefineJob(refiner, texts, QUERY, 30, top_n=3).run()
    assert [o.index for o in split if o.kept] == [0, 1, 2]
    assert all(o.scope == "split" and o.budget == 10 and o.tokens <= 10 for o in split)


def test_all_empty_documents_give_nothing_or_raise_when_strict(
    refiner: LongRefiner, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        assert RefineJob(refiner, ["", "  ", "<p> </p>"], QUERY, 50).run() == []
    assert "all 3 documents are empty" in caplog.text
    with pytest.raises(EmptyInputError):
        RefineJob(refiner, ["", " "], QUERY, 50, strict=True).run()
    assert RefineJob(refiner, [], QUERY, 50).run() == []


def test_metadata_is_a_copy_plus_the_documented_keys(refiner: LongRefiner) -> None:
    texts = ["", RIVERS, BAKING]
    outcomes = RefineJob(refiner, texts, QUERY, 30).run()
    inputs = [{"n": 0}, {"tags": ["geo"], "relevance_score": 0.7}, {"n": 2}]
    kept = kept_with_metadata(
        outcomes,
        unit="documents",
        metadata_of=lambda i: inputs[i],
        input_score_of=lambda i: inputs[i].get("relevance_score"),
    )
    assert kept[0][0].index == 1
    meta = kept[0][1]
    assert set(meta) - {"tags"} <= set(METADATA_KEYS)
    assert meta["tags"] == ["geo"] and meta["tags"] is not inputs[1]["tags"]
    assert meta["hrefine_input_score"] == 0.7 and meta["relevance_score"] != 0.7
    assert meta["hrefine_method"] == "longrefiner" and meta["hrefine_tokenizer"] == "regex"
    assert meta["hrefine_dropped_documents"] == len(texts) - len(kept)
    assert inputs[1] == {"tags": ["geo"], "relevance_score": 0.7}


def test_a_refiner_slot_is_copied_as_its_recipe(embedder: Embedder) -> None:
    defaults = LongRefinerOptions()

    class Owner:  # an adapter's fields: one per setting the adapters expose
        def __init__(self) -> None:
            for name in defaults.names():
                if name not in LongRefinerOptions.adapter_excluded:
                    setattr(self, name, getattr(defaults, name))

    slot = RefinerSlot()
    owner = Owner()
    built = slot.get(owner, {"embedder": (embedder, lambda e: e)})
    assert slot.get(owner, {"embedder": (embedder, lambda e: e)}) is built
    for twin in (pickle.loads(pickle.dumps(slot)), copy.deepcopy(slot)):
        assert twin._built is None
        assert isinstance(twin.get(owner, {"embedder": (embedder, lambda e: e)}), LongRefiner)
