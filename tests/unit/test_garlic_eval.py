"""GARLIC as an eval method: one graph per document across questions and budgets, budgets met,
the visited texts in document order, a record per call, and the extractive stand-in LLM."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hrefine.budget import get_counter
from hrefine.errors import ConfigError
from hrefine.eval import evaluate_items
from hrefine.eval.garlic_method import ExtractiveGarlicLM, GarlicCall, GarlicCompressor
from hrefine.eval.loaders import load_dataset
from hrefine.eval.methods import available_methods, get_method
from hrefine.eval.text import SEPARATOR
from hrefine.garlic import SEARCH_PROMPT, SUMMARY_PROMPT
from hrefine.garlic.search import STOP_REASONS, search_prompt
from hrefine.garlic.summarise import summary_prompt
from hrefine.models.smollm2 import SMOLLM2_NAME
from hrefine.raptor.build import START
from hrefine.repeats import repeats

BUDGETS = (128, 512)


@pytest.fixture(scope="module")
def paper_items(shared_data: Path) -> list[Any]:
    """Every Qasper question on the first paper (several questions, one document)."""
    items = load_dataset("qasper", data_dir=shared_data)
    first = items[0].doc_id
    same = [it for it in items if it.doc_id == first]
    assert len(same) >= 3
    return same


@pytest.fixture(scope="module")
def hotpot_items(shared_data: Path) -> list[Any]:
    return load_dataset("hotpotqa", data_dir=shared_data, limit=3)


def test_registered_with_the_stand_in() -> None:
    assert "garlic" in available_methods()
    method = get_method("GARLIC", llm="extractive", patience=2)
    assert isinstance(method, GarlicCompressor)
    assert (method.name, method.options.patience) == ("garlic", 2)
    assert isinstance(method.llm, ExtractiveGarlicLM)
    with pytest.raises(ConfigError, match="max_tokens"):
        get_method("garlic", llm="extractive", max_tokens=100)


def test_default_is_the_library_default_no_model() -> None:
    # What `hrefine eval -m garlic` measures is what GarlicGraph.build gives with no LLM.
    for method in (get_method("garlic"), GarlicCompressor(llm=None)):
        assert isinstance(method.llm, ExtractiveGarlicLM)
    named = GarlicCompressor(llm="default")
    assert named._model_names() == (SMOLLM2_NAME, "all-MiniLM-L6-v2")  # the paper's model, named


def test_one_graph_per_document_across_questions_and_budgets(
    paper_items: list[Any], embedder: Any
) -> None:
    counter = get_counter(None)
    method = GarlicCompressor(llm="extractive", tokenizer=counter, embedder=embedder)
    rows = evaluate_items(method, paper_items, BUDGETS, tokenizer=counter, fail_fast=True)

    assert method.builds == 1 and method.llm_calls == 0  # no model: the stand-in extracts
    assert len(rows) == len(method.records) == len(paper_items) * len(BUDGETS)
    for row in rows:
        assert row.error is None
        assert not row.over_budget and 0 < row.tokens_out <= row.budget
    built = [r for r in method.records if r.build_seconds > 0]
    assert len(built) == 1  # only the first call paid for the graph
    for rec in method.records:
        assert rec.visited >= 1 and rec.steps >= 0
        assert rec.stopped_by in STOP_REASONS
        # Prompt-only mode has no KV cache: every step pays for the whole prompt.
        assert rec.prefilled_tokens == rec.recompute_tokens > 0
        assert rec.tokens_out <= rec.budget


def test_graphs_are_cached_on_disk_and_a_rerun_builds_nothing(
    hotpot_items: list[Any], embedder: Any, tmp_path: Path
) -> None:
    counter = get_counter(None)
    item = hotpot_items[0]
    named = {"tokenizer": counter, "embedder": "all-MiniLM-L6-v2", "cache_dir": tmp_path}
    first = GarlicCompressor(llm="extractive", **named)
    first._embedder = embedder  # the session's loaded model, under its name
    out = first.compress(item.document, item.question, 512)
    assert (first.builds, first.loads) == (1, 0)
    saved = [p for p in tmp_path.iterdir() if p.is_dir()]
    assert len(saved) == 1 and (tmp_path / f"{saved[0].name}.stats.json").is_file()

    again = GarlicCompressor(llm="extractive", **named)
    again._embedder = embedder
    assert again.compress(item.document, item.question, 512) == out
    assert (again.builds, again.loads) == (0, 1)
    assert again.graph_stats[next(iter(first.graph_stats))]["calls"] == first.llm_calls
    # A search-only setting shares the graph; a build setting makes another one.
    assert GarlicCompressor(llm="extractive", patience=2, **named).cache_key(
        item.document
    ) == again.cache_key(item.document)
    assert GarlicCompressor(llm="extractive", chunk_tokens=64, **named).cache_key(
        item.document
    ) != again.cache_key(item.document)
    # An LLM object without a name is never cached on disk.
    assert GarlicCompressor(llm=ExtractiveGarlicLM(), **named).cache_key(item.document) is None


def test_output_is_the_visited_leaves_in_document_order(
    hotpot_items: list[Any], embedder: Any
) -> None:
    counter = get_counter(None)
    method = GarlicCompressor(llm="extractive", tokenizer=counter, embedder=embedder)
    for item in hotpot_items:
        out = method.compress(item.document, item.question, 512)
        assert counter.count(out) <= 512
        graph = method.graph_for(item.document)
        start = {n.text: int(n.metadata[START]) for n in graph.tree if n.level == 0}
        starts = [start[part] for part in out.split(SEPARATOR) if part in start]
        assert starts and starts == sorted(starts)
    assert method.builds == len({it.doc_id for it in hotpot_items})
    method.compress(hotpot_items[0].document, hotpot_items[0].question, 256)
    assert method.builds == len({it.doc_id for it in hotpot_items})  # kept, not rebuilt


def test_a_summary_point_never_splits_the_chunks_of_a_paragraph(
    shared_data: Path, embedder: Any
) -> None:
    """A budget that holds the whole question keeps both supporting paragraphs whole: the
    chunks come in document order and the summary points after them (a summary point used to
    sort before its first chunk, between two chunks of one paragraph)."""
    items = load_dataset("hotpotqa", data_dir=shared_data)
    (item,) = [it for it in items if it.id == "5abd259d55429924427fcf1a"]
    counter = get_counter(None)
    method = GarlicCompressor(llm="extractive", tokenizer=counter, embedder=embedder)
    out = method.compress(item.document, item.question, 2048)
    flat = " ".join(out.split())
    for paragraph in item.extra["supporting_paragraphs"]:
        assert " ".join(paragraph.split()) in flat
    graph = method.graph_for(item.document)
    level = {n.text: n.level for n in graph.tree}
    levels = [level[part] for part in out.split(SEPARATOR)]
    assert 0 in levels
    assert levels == sorted(levels)  # every chunk before every summary point
    # The stand-in's points copy first sentences: none that only repeats kept chunks is kept.
    parts = out.split(SEPARATOR)
    chunks = [p for p, lv in zip(parts, levels, strict=True) if lv == 0]
    points = [p for p, lv in zip(parts, levels, strict=True) if lv > 0]
    assert not [p for p in points if repeats(p, chunks)]


def test_a_tiny_budget_is_still_met(hotpot_items: list[Any], embedder: Any) -> None:
    counter = get_counter(None)
    method = GarlicCompressor(llm="extractive", tokenizer=counter, embedder=embedder)
    item = hotpot_items[0]
    for budget in (8, 40):
        assert counter.count(method.compress(item.document, item.question, budget)) <= budget


def test_stand_in_halves_its_inputs_with_their_first_sentences() -> None:
    lm = ExtractiveGarlicLM()
    lines = [
        "Paris is the capital of France. It is large.",
        "Berlin is in Germany. It has a wall.",
        "Rome is old. It has seven hills.",
    ]
    answer = lm(summary_prompt(SUMMARY_PROMPT, lines))
    assert answer.splitlines() == [
        "* Paris is the capital of France. Berlin is in Germany.",
        "* Rome is old.",
    ]


def test_stand_in_says_yes_when_every_question_word_is_read() -> None:
    lm = ExtractiveGarlicLM()
    question = "What is the capital of France?"
    assert lm(search_prompt(SEARCH_PROMPT, question, ["Berlin is in Germany."])) == "No"
    assert lm(search_prompt(SEARCH_PROMPT, question, ["Paris: capital of France."])) == "Yes"


def test_benchmark_sums_the_search_costs_per_budget() -> None:
    from benchmarks.garlic import garlic_costs

    def call(budget: int, prefilled: int, recompute: int, yes: bool) -> GarlicCall:
        return GarlicCall(
            document="d",
            query="q",
            budget=budget,
            visited=3,
            leaves=1,
            steps=2,
            said_yes=yes,
            stopped_by="patience" if yes else "max_tokens",
            prefilled_tokens=prefilled,
            recompute_tokens=recompute,
            tokens_out=100,
            seconds=0.5,
            build_seconds=2.0 if budget == 512 else 0.0,
        )

    costs = garlic_costs(
        [call(512, 100, 400, True), call(512, 200, 400, False), call(1024, 5, 5, True)]
    )
    at = costs["512"]
    assert (at["prefilled_tokens"], at["recompute_tokens"], at["kv_saving"]) == (300, 800, 0.625)
    assert at["said_yes"] == 0.5 and at["stopped_by"] == {"patience": 1, "max_tokens": 1}
    assert costs["1024"]["kv_saving"] == 0.0 and costs["build_s"] == 4.0
