"""A bad setting of a LangChain component says on the first line of its error which field is
wrong and what it takes (pydantic's own first line named neither)."""

from __future__ import annotations

from typing import Any

import pytest
from hrefine.testing import KeywordEmbedder
from langchain_core.retrievers import BaseRetriever
from pydantic import ValidationError

from langchain_hrefine import (
    CompressionRetriever,
    GarlicRetriever,
    HtmlRagCompressor,
    LongRefinerCompressor,
    RaptorRetriever,
)


def _first_line(make: Any, **settings: Any) -> str:
    with pytest.raises(ValidationError) as caught:
        make(**settings)
    return str(caught.value).splitlines()[0]


@pytest.mark.parametrize(
    ("make", "settings", "expected"),
    [
        # pydantic's own rules: the field, the rule and the value
        (
            HtmlRagCompressor,
            {"max_tokens": 0},
            "for HtmlRagCompressor: max_tokens: input should be greater than or equal to 4, got 0",
        ),
        (
            HtmlRagCompressor,
            {"max_words": 1.5, "scorer": "bm25"},
            "max_words: input should be a valid integer, got 1.5",
        ),
        (
            LongRefinerCompressor,
            {"max_tokens": "300"},
            "for LongRefinerCompressor: max_tokens: input should be a valid integer, got '300'",
        ),
        (HtmlRagCompressor, {"scorer": "bm25", "bogus": 1}, "bogus is not a setting of"),
        # the core's checks, made when the component is built: the core's own message
        (
            HtmlRagCompressor,
            {"max_words": -1, "scorer": "bm25"},
            "for HtmlRagCompressor: max_words must be >= 1, got -1",
        ),
        (
            RaptorRetriever,
            {"embeddings": KeywordEmbedder(), "mode": "tree"},
            "for RaptorRetriever: mode must be one of",
        ),
        (GarlicRetriever, {"k": 0}, "for GarlicRetriever: k must be >= 1 or None, got 0"),
    ],
)
def test_first_line_names_the_field_and_the_rule(
    make: Any, settings: dict[str, Any], expected: str
) -> None:
    line = _first_line(make, **settings)
    assert line.startswith("1 validation error for ") and expected in line, line


def test_several_problems_name_the_first_and_count_the_rest() -> None:
    line = _first_line(HtmlRagCompressor, max_tokens=0, top_n="2")
    assert line.startswith("2 validation errors for HtmlRagCompressor: ")
    assert ("max_tokens: " in line) != ("top_n: " in line)  # the first one, in field order
    assert line.endswith("(and 1 more problem)")


def test_compression_retriever_names_its_field_too() -> None:
    class Nothing(BaseRetriever):
        def _get_relevant_documents(self, query: str, **kwargs: Any) -> list[Any]:
            return []

    line = _first_line(
        CompressionRetriever,
        base_retriever=Nothing(),
        base_compressor=HtmlRagCompressor(scorer="bm25"),
        k=0,
    )
    assert "for CompressionRetriever: k: input should be greater than or equal to 1" in line


@pytest.mark.parametrize("budget", ["100", 1.5, True])
def test_a_budget_set_after_construction_is_checked_at_the_call(budget: Any) -> None:
    # Was: int() of it, so "100" ran with 100 and 1.5 or True with a budget of 1 token.
    from hrefine.errors import InputTypeError
    from langchain_core.documents import Document

    docs = [Document(page_content="<p>Paris is the capital of France.</p>")]
    html = HtmlRagCompressor(max_tokens=100, scorer="bm25", tokenizer="regex")
    refiner = LongRefinerCompressor(max_tokens=100, tokenizer="regex", embeddings=KeywordEmbedder())
    for compressor in (html, refiner):
        compressor.max_tokens = budget
        with pytest.raises(InputTypeError, match="max_tokens must be an int"):
            compressor.compress_documents(docs, "capital of France")
