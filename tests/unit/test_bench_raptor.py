"""The RAPTOR speed benchmark's pure helpers (benchmarks/_raptor_bench.py): no models."""

from __future__ import annotations

import pytest
from hrefine.raptor import DEFAULT_PROMPT, summary_prompt

from benchmarks._raptor_bench import (
    busy_seconds,
    context_marker,
    fake_summary,
    layer_waves,
    quantile,
    ratio,
    timing_stats,
)

# The pack's summariser prompt (llama-index's tree_summarize template), as it reaches the LLM.
PACK_PROMPT = (
    "Context information from multiple sources is below.\n"
    "---------------------\n"
    "{context_str}\n"
    "---------------------\n"
    "Given the information from multiple sources and not prior knowledge, answer the query.\n"
    "Query: Summarize the provided text, including as many key details as needed.\n"
    "Answer: "
)
TEXTS = [
    "The lighthouse keeper rowed to the mainland every Tuesday for oil and letters.",
    "In winter the crossing took twice as long, and twice he turned back in fog.",
]


def test_fake_summary_reads_the_texts_not_our_instructions() -> None:
    prompt = summary_prompt(DEFAULT_PROMPT, TEXTS)
    marker = context_marker(DEFAULT_PROMPT, "{context}")
    assert marker[0].endswith("as possible:")
    assert marker[1] == ":"
    assert fake_summary(prompt, marker, words=5) == "The lighthouse keeper rowed to"


def test_both_sides_summarise_the_same_texts_alike() -> None:
    ours = fake_summary(
        summary_prompt(DEFAULT_PROMPT, TEXTS), context_marker(DEFAULT_PROMPT, "{context}")
    )
    pack_prompt = PACK_PROMPT.replace("{context_str}", "\n\n".join(TEXTS))
    pack = fake_summary(pack_prompt, ("---------------------", "---------------------"))
    assert ours == pack
    assert len(ours.split()) == 28  # both texts are shorter than 60 words together


def test_fake_summary_is_short_for_a_long_cluster() -> None:
    long = " ".join(f"word{i}" for i in range(5000))
    out = fake_summary(summary_prompt(DEFAULT_PROMPT, [long]), ("as possible:", ":"))
    assert out.split() == [f"word{i}" for i in range(60)]


def test_fake_summary_without_markers_reads_the_whole_prompt() -> None:
    assert fake_summary("alpha  beta\ngamma delta", words=3) == "alpha beta gamma"
    assert fake_summary("alpha beta", ("not there", ""), words=1) == "alpha"
    assert fake_summary("alpha beta", ("", "not there")) == "alpha beta"
    assert fake_summary("say: alpha beta. end", ("say:", "end")) == "alpha beta."
    with pytest.raises(ValueError, match="at least 1"):
        fake_summary("alpha", words=0)


def test_context_marker_edges() -> None:
    assert context_marker("{context} then", "{context}") == ("", "then")
    assert context_marker("no placeholder", "{context}") == ("", "")
    assert context_marker("x" * 100 + " {context}", "{context}") == ("x" * 40, "")


def test_quantile_and_timing_stats() -> None:
    assert quantile([3.0, 1.0, 2.0], 0.5) == 2.0
    assert quantile([0.0, 10.0], 0.9) == pytest.approx(9.0)
    assert quantile([5.0], 0.9) == 5.0
    with pytest.raises(ValueError, match="no values"):
        quantile([], 0.5)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        quantile([1.0], 1.5)
    stats = timing_stats([0.010, 0.020, 0.030, 0.040])
    assert stats == {"n": 4, "median_ms": 25.0, "p90_ms": 37.0, "mean_ms": 25.0}
    assert timing_stats([]) == {"n": 0, "median_ms": None, "p90_ms": None, "mean_ms": None}


def test_ratio() -> None:
    assert ratio(10.0, 2.0) == 5.0
    assert ratio(None, 2.0) is None
    assert ratio(1.0, None) is None
    assert ratio(1.0, 0.0) is None


def test_layer_waves_follow_layers_not_clusters() -> None:
    # 40 clusters, then 6, then 1: 3 + 1 + 1 rounds at 16 concurrent calls, 47 sequentially.
    assert layer_waves([40, 6, 1], 16) == 5
    assert layer_waves([40, 6, 1], 1) == 47
    assert layer_waves([40, 6, 1], 64) == 3
    assert layer_waves([], 16) == 0
    with pytest.raises(ValueError, match="at least 1"):
        layer_waves([3], 0)


def test_busy_seconds_counts_overlaps_once() -> None:
    # Three concurrent calls, then one alone after a gap.
    calls = [(0.0, 0.2), (0.01, 0.21), (0.05, 0.2), (1.0, 1.2)]
    assert busy_seconds(calls) == pytest.approx(0.41)
    assert busy_seconds([(0.0, 0.2), (0.2, 0.4)]) == pytest.approx(0.4)
    assert busy_seconds([]) == 0.0
    with pytest.raises(ValueError, match="ends before"):
        busy_seconds([(1.0, 0.5)])
