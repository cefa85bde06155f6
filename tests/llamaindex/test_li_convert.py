"""LlamaIndex ↔ core conversions: embed models both ways, explicit LLMs, the missing extra."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hrefine.models import TextGenerator
from hrefine.testing import KeywordEmbedder
from llama_index.core import Settings
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import MockLLM

from llamaindex_hrefine._convert import HrefineEmbedding, to_embedder, to_text_generator


def test_hrefine_embedding_is_a_llamaindex_embed_model() -> None:
    core = KeywordEmbedder(dim=64)
    embed_model = HrefineEmbedding(core)
    assert HrefineEmbedding.class_name() == "HrefineEmbedding"
    assert embed_model.model_name == "hrefine:keyword"
    vecs = embed_model.get_text_embedding_batch(["gold medal", "rainfall"])
    np.testing.assert_allclose(vecs, core.embed(["gold medal", "rainfall"]), rtol=1e-6)
    np.testing.assert_allclose(
        embed_model.get_query_embedding("gold"), core.embed_query("gold"), rtol=1e-6
    )


async def test_hrefine_embedding_async() -> None:
    embed_model = HrefineEmbedding(KeywordEmbedder(dim=32))
    vec = await embed_model.aget_query_embedding("medal")
    assert len(vec) == 32
    batch = await embed_model.aget_text_embedding_batch(["a medal", "a river"])
    assert len(batch) == 2


def test_to_embedder_unwraps_hrefine_embedding_and_wraps_others() -> None:
    core = KeywordEmbedder()
    assert to_embedder(HrefineEmbedding(core)) is core
    assert to_embedder(core) is core
    assert to_embedder(None) is None
    wrapped = to_embedder(MockEmbedding(embed_dim=8))
    assert wrapped is not None
    assert wrapped.embed(["x", "y"]).shape == (2, 8)
    assert wrapped.embed_query("x").shape == (8,)
    with pytest.raises(TypeError, match="str"):
        to_embedder("not a model")  # type: ignore[arg-type]


def test_to_text_generator_needs_an_explicit_llm_and_never_reads_settings() -> None:
    with pytest.raises(ValueError, match=r"Settings\.llm"):
        to_text_generator(None)
    # Reading Settings.llm would resolve the OpenAI default; it must still be unset.
    assert Settings._llm is None


async def test_to_text_generator_mock_llm_sync_and_async() -> None:
    gen = to_text_generator(MockLLM(max_tokens=3), retries=0)
    assert isinstance(gen, TextGenerator)
    assert gen.name == "llamaindex:MockLLM"
    assert gen.generate("hello there") == "text text text"
    assert await gen.agenerate("hello") == "text text text"


def test_to_text_generator_callable_and_rejects_junk() -> None:
    assert to_text_generator(lambda p: p[::-1]).generate("abc") == "cba"
    with pytest.raises(TypeError, match="cannot use int"):
        to_text_generator(7)


def test_import_without_llama_index_names_the_extra() -> None:
    code = textwrap.dedent(
        """
        import sys

        class Block:
            def find_spec(self, name, path=None, target=None):
                if name == "llama_index" or name.startswith("llama_index."):
                    raise ModuleNotFoundError(name)
                return None

        sys.meta_path.insert(0, Block())
        try:
            import llamaindex_hrefine
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
    assert "pip install 'hrefine[llamaindex]'" in out
