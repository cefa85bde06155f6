"""#55 item 13 in LlamaIndex: GarlicIndex and GarlicRetriever.from_documents take the model as
``llm=``; ``lm=`` (a GarlicOptions setting, GARLIC's earlier name) means the same, and both at
once is a ConfigError."""

from __future__ import annotations

import pytest
from garlic_fakes import SMALL, garlic_llm
from hrefine.errors import ConfigError
from hrefine.testing import KeywordEmbedder
from llama_index.core import Document

from llamaindex_hrefine import GarlicIndex, GarlicRetriever

DOCS = [Document(text="The cat sat on the mat near the door. Michael Grant wrote about it. " * 8)]


def other_llm(prompt: str) -> str:
    return garlic_llm(prompt)


def test_lm_is_the_index_s_llm_and_both_are_refused() -> None:
    index = GarlicIndex.from_documents(
        DOCS, lm=garlic_llm, embed_model=KeywordEmbedder(), tokenizer="regex", **SMALL
    )
    assert index.as_retriever().retrieve("Who wrote about the cat?")
    with pytest.raises(ConfigError, match="not both"):
        GarlicIndex.from_documents(DOCS, lm=garlic_llm, llm=other_llm, **SMALL)
    with pytest.raises(ConfigError, match="not both"):
        GarlicRetriever.from_documents(DOCS, lm=garlic_llm, llm=other_llm, **SMALL)
