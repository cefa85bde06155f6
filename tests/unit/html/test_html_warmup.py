"""warmup() with the generative stage: the LM given is loaded and stage 2 runs once."""

from __future__ import annotations

from typing import Any

from hrefine.html import HtmlPruner


def test_an_lm_like_object_is_used_as_it_is(fake_lm: Any) -> None:
    assert HtmlPruner(scorer="bm25", generative=True, lm=fake_lm)._lm() is fake_lm


def test_warmup_runs_the_generative_stage_once(fake_lm: Any) -> None:
    pruner = HtmlPruner(scorer="bm25", generative=True, lm=fake_lm)
    assert pruner.warmup() is pruner
    assert len(fake_lm.sessions) == 1  # stage 2 ran on the warm-up page
    pruner.warmup()
    assert len(fake_lm.sessions) == 1
