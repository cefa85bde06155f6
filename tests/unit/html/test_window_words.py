"""``window_words``: a dense scorer reads a long block in windows, so its last words count."""

from __future__ import annotations

import pytest
from hrefine.errors import ConfigError
from hrefine.html import HtmlPruner, HtmlPrunerOptions

FILLER = " ".join(["The committee met again to discuss routine budget matters."] * 22)
PAGE = f"""<html><body>
<h1>Observatory news</h1>
<p>{FILLER} Halley's comet returns to the inner solar system every 76 years.</p>
<p>The observatory dome opens to visitors on Saturdays; telescopes are booked online.</p>
<p>Parking is free after six in the evening, and the cafe serves soup.</p>
</body></html>"""
QUERY = "How often does Halley's comet return?"


def test_a_block_is_scored_by_its_best_window() -> None:
    once = HtmlPruner(scorer="embedding", lexical_weight=0.0)
    windows = HtmlPruner(scorer="embedding", lexical_weight=0.0, window_words=40)
    block = next(b for b in once.prune(PAGE, QUERY, 2000).blocks if "Halley" in b.text)
    fine = next(b for b in windows.prune(PAGE, QUERY, 2000).blocks if "Halley" in b.text)
    # Read once, the block is its filler; in windows, the comet sentence decides.
    assert fine.stage1_score > block.stage1_score + 0.1
    assert "every 76 years" in windows.prune(PAGE, QUERY, 260).html


def test_window_words_is_checked() -> None:
    with pytest.raises(ConfigError, match="window_words"):
        HtmlPrunerOptions(window_words=4)
