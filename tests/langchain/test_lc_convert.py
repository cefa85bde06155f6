"""LangChain ↔ core conversions: embeddings, LLMs, the missing-extra error."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hrefine.models import TextGenerator
from hrefine.testing import KeywordEmbedder, ScriptedLM
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import FakeListChatModel, FakeListLLM
from langchain_core.runnables import RunnableLambda
from lc_helpers import KeywordEmbeddings

from langchain_hrefine._convert import HrefineEmbeddings, to_embedder, to_text_generator


def test_to_embedder_wraps_langchain_embeddings_with_unit_rows() -> None:
    lc = KeywordEmbeddings()
    emb = to_embedder(lc)
    assert emb is not None
    docs = emb.embed(["gold medal Norway", "rainfall in Lisbon"])
    assert docs.shape == (2, 512)
    np.testing.assert_allclose(np.linalg.norm(docs, axis=1), 1.0, rtol=1e-5)
    query = emb.embed_query("Norway gold")
    assert float(docs[0] @ query) > float(docs[1] @ query)
    assert (lc.document_calls, lc.query_calls) == (1, 1)
    assert emb.name == "langchain:KeywordEmbeddings"


def test_to_embedder_passes_core_embedders_and_none_through() -> None:
    core = KeywordEmbedder()
    assert to_embedder(core) is core
    assert to_embedder(None) is None


def test_hrefine_embeddings_round_trip() -> None:
    core = KeywordEmbedder(dim=32)
    lc = HrefineEmbeddings(core)
    assert isinstance(lc, Embeddings)
    assert to_embedder(lc) is core
    np.testing.assert_allclose(lc.embed_documents(["gold medal"]), core.embed(["gold medal"]))
    np.testing.assert_allclose(lc.embed_query("gold"), core.embed_query("gold"))


def test_to_embedder_rejects_other_objects_naming_the_type() -> None:
    with pytest.raises(TypeError, match="int"):
        to_embedder(3)  # type: ignore[arg-type]


def test_to_text_generator_chat_model_sync_and_async() -> None:
    gen = to_text_generator(FakeListChatModel(responses=["first", "second"]), retries=0)
    assert isinstance(gen, TextGenerator)
    assert gen.generate("hello") == "first"
    assert gen.name == "langchain:FakeListChatModel"


async def test_to_text_generator_chat_model_async_path() -> None:
    gen = to_text_generator(FakeListChatModel(responses=["a", "b", "c"]), retries=0)
    assert await gen.abatch(["p1", "p2", "p3"]) == ["a", "b", "c"]


def test_to_text_generator_llm_and_runnable() -> None:
    assert to_text_generator(FakeListLLM(responses=["done"])).generate("x") == "done"
    upper = to_text_generator(RunnableLambda(lambda s: s.upper()))
    assert upper.generate("abc") == "ABC"


def test_to_text_generator_plain_callable_and_generator() -> None:
    lm = ScriptedLM(["scripted"])
    gen = to_text_generator(lm)
    assert gen.generate("prompt") == "scripted"
    assert lm.prompts == ["prompt"]
    assert to_text_generator(gen) is gen


def test_to_text_generator_rejects_non_callables() -> None:
    with pytest.raises(TypeError, match="cannot use int"):
        to_text_generator(42)


def test_import_without_langchain_names_the_extra() -> None:
    code = textwrap.dedent(
        """
        import sys

        class Block:
            def find_spec(self, name, path=None, target=None):
                if name == "langchain_core" or name.startswith("langchain_core."):
                    raise ModuleNotFoundError(name)
                return None

        sys.meta_path.insert(0, Block())
        try:
            import langchain_hrefine
        except ImportError as exc:
            print(type(exc).__name__, exc)
        else:
            print("imported")
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    ).stdout
    assert "MissingDependencyError" in out
    assert "pip install 'hrefine[langchain]'" in out
