"""RaptorRetriever and GarlicRetriever made configurable: LangChain's ``configurable_fields``
rebuilds a retriever from its declared fields, so the built tree or graph must be one of them.

Was: the store was a private attribute, the rebuilt retriever had none, and a call with a
configured setting returned no documents and logged "has no documents yet"/"has no graph".
Each store is built with no LLM over short texts, with ``hrefine.testing.KeywordEmbedder`` and
the regex tokenizer (instant, offline).
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from hrefine.errors import InputTypeError
from hrefine.testing import KeywordEmbedder
from langchain_core.documents import Document
from langchain_core.runnables import ConfigurableField
from raptor_fakes import TOPICS

from langchain_hrefine import GarlicRetriever, RaptorRetriever
from langchain_hrefine._store_retriever import StoreRetriever

QUERY = "How often does Halley's Comet return to the Sun?"
RETRIEVERS = [RaptorRetriever, GarlicRetriever]
#: Fields set per request besides ``k``, with a value that changes what a call returns.
OTHER_FIELDS: list[tuple[type[StoreRetriever], str, Any]] = [
    (RaptorRetriever, "max_tokens", 30),
    (RaptorRetriever, "mode", "traversal"),
    (RaptorRetriever, "summary_rank", "free"),
    (GarlicRetriever, "max_tokens", 40),
    (GarlicRetriever, "max_steps", 1),
]


def make_documents() -> list[Document]:
    return [
        Document(page_content=f"{text} Note {i} on {topic}.", metadata={"topic": topic}, id=topic)
        for i in range(3)
        for topic, text in TOPICS.items()
    ]


@pytest.fixture(scope="module", params=RETRIEVERS, ids=lambda c: c.__name__)
def built(request: pytest.FixtureRequest) -> StoreRetriever:
    cls: type[StoreRetriever] = request.param
    return cls.from_documents(
        make_documents(), embeddings=KeywordEmbedder(), tokenizer="regex", k=4
    )


def _texts(docs: list[Document]) -> list[str]:
    return [d.page_content for d in docs]


async def test_a_configurable_k_keeps_the_store(
    built: StoreRetriever, caplog: pytest.LogCaptureFixture
) -> None:
    configurable = built.configurable_fields(k=ConfigurableField(id="k"))
    config: Any = {"configurable": {"k": 2}}
    with caplog.at_level(logging.WARNING):
        plain = configurable.invoke(QUERY)
        two = configurable.invoke(QUERY, config=config)
        atwo = await configurable.ainvoke(QUERY, config=config)
        bound = configurable.with_config(configurable={"k": 1}).invoke(QUERY)
    assert caplog.records == []
    assert len(plain) == 4 and _texts(plain) == _texts(built.invoke(QUERY))
    assert len(two) == 2 and _texts(two) == _texts(built.invoke(QUERY, k=2))
    assert _texts(atwo) == _texts(two)
    assert len(bound) == 1
    assert built.k == 4  # the configured copy is a copy


@pytest.mark.parametrize(
    ("cls", "name", "value"), OTHER_FIELDS, ids=[f"{c.__name__}-{n}" for c, n, _ in OTHER_FIELDS]
)
def test_every_configurable_field_reaches_the_search(cls: type, name: str, value: Any) -> None:
    retriever = cls.from_documents(
        make_documents(), embeddings=KeywordEmbedder(), tokenizer="regex", k=4
    )
    configurable = retriever.configurable_fields(**{name: ConfigurableField(id=name)})
    got = configurable.invoke(QUERY, config={"configurable": {name: value}})
    expected = retriever.model_copy(update={name: value}).invoke(QUERY)
    assert got and _texts(got) == _texts(expected) != _texts(retriever.invoke(QUERY))


def test_the_store_is_a_field_left_out_of_dumps_and_repr(built: StoreRetriever) -> None:
    assert built.store is not None
    assert "store" not in built.model_dump()
    assert "store" not in repr(built)
    # a retriever made from another's fields searches its store
    fields = {n: getattr(built, n) for n in type(built).model_fields}
    twin = type(built)(**fields)
    assert twin.store is built.store
    assert _texts(twin.invoke(QUERY)) == _texts(built.invoke(QUERY))
    with pytest.raises(InputTypeError, match="store must be"):
        type(built)(store="a tree")
