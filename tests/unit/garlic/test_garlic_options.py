"""GarlicOptions: the paper's defaults, and bad settings refused with a message."""

from __future__ import annotations

import pytest
from hrefine.errors import ConfigError, InputTypeError
from hrefine.garlic.options import SEARCH_PROMPT, SUMMARY_PROMPT, GarlicOptions


def test_defaults_are_the_papers_but_the_measured_ones() -> None:
    opts = GarlicOptions()
    assert (opts.batch_tokens, opts.patience) == (8192, 1)
    # Measured, not the paper's: leaves the size of chunk retrieval's (paper: 300), the
    # embedding term weighed 10 times (paper: 1).
    assert opts.chunk_tokens == 128 and opts.embedding_weight == 10.0 and opts.edges == "auto"
    assert "{points}" in SUMMARY_PROMPT and "summary point" in SUMMARY_PROMPT
    assert SEARCH_PROMPT.startswith("Can this question be answered by the following information?")


@pytest.mark.parametrize(
    ("settings", "error", "match"),
    [
        ({"chunk_tokens": 8}, ConfigError, "chunk_tokens"),
        ({"batch_tokens": 500}, ConfigError, "must exceed"),
        ({"patience": 0}, ConfigError, "patience"),
        ({"edges": "cosine"}, ConfigError, "edges must be one of"),
        ({"summary_prompt": "no slot"}, ConfigError, "points"),
        ({"search_prompt": 3}, InputTypeError, "search_prompt"),
        ({"embedding_weight": -1.0}, ConfigError, "embedding_weight"),
        ({"max_tokens": 0}, ConfigError, "max_tokens"),
        ({"llm_timeout": 0}, ConfigError, "llm_timeout"),
        ({"llm_timeout": "soon"}, InputTypeError, "llm_timeout"),
    ],
)
def test_bad_settings_are_refused(settings: dict[str, object], error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        GarlicOptions.build(**settings)
