"""The RAPTOR and GARLIC indexes behind LlamaIndex's chat engines: the caller's memory and
prompts reach the engine and the retriever's own arguments reach the retriever, in every chat
mode that retrieves context (LlamaIndex's ``as_chat_engine`` hands every argument to both, and
GARLIC's retriever refuses what it does not know). GARLIC's graph is built on a real HotpotQA
question's paragraphs with the scripted LM; RAPTOR's tree on the small texts of
``test_raptor_index``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from garlic_fakes import SMALL, garlic_llm, hotpot, hotpot_paragraphs
from hrefine.errors import NotSupportedError
from hrefine.testing import ScriptedLM
from llama_index.core import Document
from llama_index.core.llms import MockLLM
from llama_index.core.memory import ChatMemoryBuffer
from test_raptor_index import QUESTION, build

from llamaindex_hrefine import GarlicIndex

CONTEXT_MODES = ("context", "condense_plus_context", "best")


def chat_twice(index: Any, mode: str, question: str, **kwargs: Any) -> tuple[Any, int]:
    """The first answer of a two-turn chat and how many messages the caller's memory holds."""
    memory = ChatMemoryBuffer.from_defaults(token_limit=8000)
    engine = index.as_chat_engine(
        chat_mode=mode, llm=MockLLM(), memory=memory, system_prompt="SYSTEM-NOTE", **kwargs
    )
    first = engine.chat(question)
    engine.chat("And what came after that?")
    return first, len(memory.get_all())


@pytest.mark.parametrize("mode", CONTEXT_MODES)
def test_garlic_chat_engine_takes_memory_prompt_and_search_limits(
    shared_data: Path, mode: str
) -> None:
    docs = [Document(text=t, id_=title) for title, t in hotpot_paragraphs(shared_data)]
    index = GarlicIndex.from_documents(docs, llm=ScriptedLM(garlic_llm), **SMALL)
    question = str(hotpot(shared_data).question)
    first, kept = chat_twice(index, mode, question, max_steps=1)
    assert kept == 4  # both turns, in the memory the caller gave
    assert "SYSTEM-NOTE" in first.response  # MockLLM echoes its prompt: the system prompt
    steps = {n.node.metadata["hrefine_step"] for n in first.source_nodes}
    assert steps and max(steps) <= 1  # max_steps reached the search
    with pytest.raises(NotSupportedError, match="doc_ids"):
        index.as_chat_engine(chat_mode=mode, llm=MockLLM(), doc_ids=["x"])


@pytest.mark.parametrize("mode", CONTEXT_MODES)
def test_raptor_chat_engine_takes_memory_prompt_and_retriever_settings(mode: str) -> None:
    index = build()
    first, kept = chat_twice(index, mode, QUESTION, similarity_top_k=2)
    assert kept == 4 and "SYSTEM-NOTE" in first.response
    assert 1 <= len(first.source_nodes) <= 2  # similarity_top_k reached the retriever
    assert "Pompeii" in " ".join(n.node.get_content() for n in first.source_nodes)
