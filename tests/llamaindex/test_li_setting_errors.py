"""A bad setting of a LlamaIndex component says on the first line of its error which field is
wrong and what it takes: the core's one-line ConfigError, or a ValidationError whose first line
names the field and the rule (pydantic's own first line named neither)."""

from __future__ import annotations

import pytest
from hrefine.errors import ConfigError
from pydantic import ValidationError

from llamaindex_hrefine import HtmlPageNodeParser, HtmlRagNodePostprocessor


def test_pydantic_rules_are_named_on_the_first_line() -> None:
    with pytest.raises(ValidationError) as caught:
        HtmlRagNodePostprocessor(max_tokens=0, scorer="bm25")
    first = str(caught.value).splitlines()[0]
    assert first == (
        "1 validation error for HtmlRagNodePostprocessor: max_tokens: input should be greater "
        "than or equal to 4, got 0"
    )
    with pytest.raises(ValidationError) as caught:
        HtmlRagNodePostprocessor(max_words=True, scorer="bm25")
    assert "max_words: input should be a valid integer, got True" in str(caught.value)
    with pytest.raises(ValidationError) as caught:
        HtmlPageNodeParser(chunk_size="big")
    first = str(caught.value).splitlines()[0]
    assert "for HtmlPageNodeParser: chunk_size: input should be a valid integer" in first


def test_core_checks_stay_one_line_config_errors() -> None:
    with pytest.raises(ConfigError, match=r"^max_words must be >= 1, got -1$"):
        HtmlRagNodePostprocessor(max_words=-1, scorer="bm25")
