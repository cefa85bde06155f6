"""The spread statistics and summaries of the like-for-like speed benchmark
(benchmarks/htmlrag_speed.py, benchmarks/_speed_stats.py); no models are loaded."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks._htmlrag_speed_report import render_markdown
from benchmarks._speed_stats import percentile, ratios, spread
from benchmarks.htmlrag_speed import _ref_times, one_line, summarize


@pytest.mark.parametrize("q", [0, 10, 25, 50, 90, 100])
@pytest.mark.parametrize("values", [[3.0], [1.0, 9.0], [5.0, 1.0, 4.0, 2.0, 3.0], [2.5] * 4])
def test_percentile_matches_numpy_linear(values: list[float], q: float) -> None:
    assert percentile(values, q) == pytest.approx(float(np.percentile(values, q)))


def test_percentile_interpolates_between_ranks() -> None:
    # 11 values 0..10: p10 is the second, p90 the tenth; 4 values: p10 sits 0.3 of the way.
    assert percentile(list(range(11)), 10) == pytest.approx(1.0)
    assert percentile(list(range(11)), 90) == pytest.approx(9.0)
    assert percentile([10.0, 20.0, 30.0, 40.0], 10) == pytest.approx(13.0)


@pytest.mark.parametrize("q", [-1, 100.5])
def test_percentile_rejects_q_out_of_range(q: float) -> None:
    with pytest.raises(ValueError, match="within 0 and 100"):
        percentile([1.0, 2.0], q)


def test_percentile_of_nothing_is_an_error() -> None:
    with pytest.raises(ValueError, match="no values"):
        percentile([], 50)


def test_spread_counts_values_under_the_target() -> None:
    s = spread([2.0, 4.99, 5.0, 7.0, None, 12.0], target=5.0)
    assert s["n"] == 5  # None is left out
    assert s["under"] == 2  # 5.0 itself meets the target
    assert s["share_under"] == pytest.approx(0.4)
    assert s["median"] == pytest.approx(5.0)
    assert (s["min"], s["max"]) == (2.0, 12.0)
    assert s["p10"] < s["median"] < s["p90"]


def test_spread_without_values_or_target() -> None:
    empty = spread([None], target=5.0)
    assert empty["n"] == 0
    assert empty["median"] is None
    assert empty["share_under"] is None
    assert "share_under" not in spread([1.0, 2.0])


def test_ratios_keep_shared_keys_with_a_positive_denominator() -> None:
    theirs = {"a": 10.0, "b": 6.0, "c": None, "d": 1.0, "e": 3.0}
    ours = {"a": 2.0, "b": 0.0, "c": 1.0, "e": None}
    assert ratios(theirs, ours) == {"a": 5.0}


def test_ref_times_sums_ranking_and_prune_and_reports_failures() -> None:
    ok = {
        "clean_tree_s": 0.5,
        "questions": [
            {"id": "q", "rank_s": 2.0, "prune": {"1024": {"html": "<p>x</p>", "prune_s": 0.25}}}
        ],
    }
    assert _ref_times(ok, "q") == (2.25, 2.75, "<p>x</p>", None)
    failed = {
        "clean_tree_s": 0.5,
        "questions": [
            {
                "id": "q",
                "rank_s": 2.0,
                "prune": {"1024": {"html": "", "prune_s": 0.1, "error": "IndexError: list index"}},
            }
        ],
    }
    assert _ref_times(failed, "q") == (None, None, "", "IndexError: list index")
    assert _ref_times(None, "q")[3] == "no record from the reference runner"
    assert _ref_times({"error": "boom"}, "q")[3] == "boom"


def _row(ds: str, qid: str, ours: float, theirs: float, hit: float | None) -> dict:
    s = {"hrefine@256": ours, "hrefine@128": ours / 2, "htmlrag@256": theirs, "htmlrag@128": theirs}
    return {
        "ds": ds,
        "id": qid,
        "doc": qid,
        "s": s,
        # Ours spends 90% of its call in the model, theirs half.
        "model_s": {k: v * (0.9 if k.startswith("hrefine") else 0.5) for k, v in s.items()},
        "e2e_s": {"htmlrag@256": theirs + 1, "htmlrag@128": theirs + 1},
        "hits": {k: hit for k in s},
        "parse_s": 0.01,
    }


def test_summarize_per_dataset_and_overall() -> None:
    rows = [
        _row("wtq", "w1", 1.0, 8.0, 1.0),
        _row("wtq", "w2", 1.0, 3.0, 0.0),
        _row("leval-nq", "n1", 2.0, 6.0, None),  # a yes/no answer: not scored
    ]
    pages = [
        {"ds": d, "doc": r["id"], "parse_s": 0.01, "ours_clean_tree_s": 0.05, "ref_clean_tree_s": 1}
        for d, r in (("wtq", rows[0]), ("wtq", rows[1]), ("leval-nq", rows[2]))
    ]
    res = summarize(rows, pages, [])
    like = res["cold"]["like for like, 256 word pieces"]
    assert like["wtq"]["median"] == pytest.approx(5.5)  # 8x and 3x
    assert like["wtq"]["under"] == 1
    assert like["leval-nq"]["median"] == pytest.approx(3.0)
    assert like["all"]["n"] == 3
    shipped = res["cold"]["as shipped (htmlrag 256, hrefine 128)"]["all"]
    assert shipped["median"] == pytest.approx(6.0)  # 16x, 6x and 6x
    assert res["cold_e2e"]["like for like, 256 word pieces"]["wtq"]["median"] == pytest.approx(6.5)
    share = res["model_share"]
    assert share["hrefine@256"]["all"]["median"] == pytest.approx(0.9)
    assert share["htmlrag@128"]["wtq"]["median"] == pytest.approx(0.5)
    ceiling = res["ceiling"]["like for like, 256 word pieces"]["wtq"]
    assert ceiling["median"] == pytest.approx(5.5 / 0.9)  # the ratio with ours at its model time
    q = res["quality"]["hrefine@256"]
    assert q["wtq"] == {"containment": 0.5, "n": 2, "errors": 0}
    assert q["leval-nq"] == {"containment": None, "n": 0, "errors": 0}
    assert res["floor"]["hrefine clean + block tree"]["all"]["median"] == pytest.approx(5.0)
    assert res["floor"]["hrefine clean + block tree (ms)"]["wtq"]["median"] == pytest.approx(50.0)
    assert res["memory"]["pages"] == 0


def test_report_and_summary_line_render_from_a_result() -> None:
    rows = [_row("wtq", "w1", 1.0, 8.0, 1.0), _row("leval-nq", "n1", 2.0, 6.0, 0.0)]
    rows[1]["ref_errors"] = {"htmlrag@128": "IndexError: list index out of range"}
    pages = [
        {"ds": r["ds"], "doc": r["id"], "parse_s": 0.01, "ours_clean_tree_s": 0.04} for r in rows
    ]
    mem = [
        {
            "ds": "wtq",
            "doc": "w1",
            "hrefine": {
                "dtype": "float32",
                "before_kib": 600 * 1024,
                "peak_kib": 640 * 1024,
                "rise_kib": 40 * 1024,
                "seconds": 1.0,
            },
            "htmlrag": {
                "dtype": "float32",
                "before_kib": 580 * 1024,
                "peak_kib": 780 * 1024,
                "rise_kib": 200 * 1024,
                "seconds": 5.0,
            },
        }
    ]
    res = {
        "target": 5.0,
        "budget": 1024,
        "max_words": 256,
        "limit": 1,
        "mem_pages": 1,
        "questions": 2,
        "wall_s": 12.0,
        "created": "now",
        "selection": {
            "wtq": {"questions": 1, "pages": 1},
            "leval-nq": {"questions": 1, "pages": 1},
        },
        "dtype": {"hrefine@256": "float32", "htmlrag@256": "float32"},
        "hardware": {"cpu": "cpu", "cores": 2, "load_avg_at_end": [1.0]},
        "reference": {"error": None},
        "per_question": rows,
        **summarize(rows, pages, mem),
    }
    assert res["memory"]["rise_ratio"]["median"] == pytest.approx(5.0)
    line = one_line(res)
    assert "256/256 5.5x (p10 3.5, p90 7.5; 50% under 5x)" in line  # 8x and 3x
    assert "rise 40-40 vs 200-200 MiB" in line
    page = render_markdown(res)
    assert "| like for like, 256 word pieces | WTQ | 1 | 8.0× | 8.0× | 8.0× |" in page
    assert "| hrefine clean + block tree / parse | NQ | 1 | 4.0× | 4.0× | 4.0× |" in page
    assert "| hrefine | 600 | 640 / 640 / 640 | 40 / 40 / 40 |" in page
    assert "| htmlrag@256: model share of the call (%) | WTQ | 1 | 50 | 50 | 50 | 50 – 50 |" in page
    assert "## Ceiling: theirs / our model seconds alone" in page
    assert "Calls that raised (counted as misses above, left out of the speed rows): " in page
    assert "htmlrag@128 1 (" in page
