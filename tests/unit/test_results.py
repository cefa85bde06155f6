"""hrefine.results: the conventions every method's adapters share."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
from hrefine.errors import ConfigError, InputTypeError
from hrefine.results import ResultOptions, by_relevance, unit_scores


def test_cosine_scores_are_divided_by_the_most_that_was_added_and_clipped() -> None:
    got = unit_scores([1.3, 0.65, -0.2, None], scale="cosine", extra=0.3)
    assert got[0] == 1.0 and got[1] == pytest.approx(0.5) and got[2] == 0.0 and got[3] is None


def test_relative_scores_put_the_best_at_one_and_nothing_matched_at_zero() -> None:
    assert unit_scores([4.0, 2.0, 0.0], scale="relative") == [1.0, 0.5, 0.0]
    assert unit_scores([0.0, 0.0], scale="relative") == [0.0, 0.0]


def test_logits_go_through_the_logistic_without_overflow() -> None:
    got = unit_scores([0.0, 1000.0, -1000.0, float("nan")], scale="logit")
    assert got[0] == 0.5 and got[1] == 1.0 and got[2] == 0.0 and got[3] is None
    assert all(v is None or (0.0 <= v <= 1.0 and not math.isnan(v)) for v in got)


def test_order_is_kept_by_every_scale() -> None:
    raw = [0.9, -0.1, 0.4, 2.5, 0.0]
    for scale in ("cosine", "relative", "unit", "logit"):
        got = unit_scores(raw, scale=scale, extra=2.0)
        ranked = sorted(range(5), key=lambda i: raw[i])
        assert [got[i] for i in ranked] == sorted(got)  # type: ignore[type-var]


def test_an_unknown_scale_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="unknown score scale 'z'"):
        unit_scores([1.0], scale="z")


def test_by_relevance_is_best_first_stable_and_can_keep_input_order() -> None:
    items = ["a", "b", "c", "d"]
    score = {"a": 0.2, "b": None, "c": 0.9, "d": 0.2}.get
    assert by_relevance(items, score) == ["c", "a", "d", "b"]
    assert by_relevance(items, score, keep_input_order=True) == items


def test_options_are_read_from_an_adapters_fields_and_checked() -> None:
    owner = SimpleNamespace(top_n=3, keep_input_order=True, strict=False)
    assert ResultOptions.of(owner) == ResultOptions(top_n=3, keep_input_order=True)
    with pytest.raises(ConfigError):
        ResultOptions(top_n=0)
    with pytest.raises(InputTypeError):
        ResultOptions(strict="yes")  # type: ignore[arg-type]
