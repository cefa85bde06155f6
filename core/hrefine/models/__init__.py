"""The scorer layer shared by every method: embedders, BM25, cross-encoders, LLMs and a local LM.

Names resolve lazily (PEP 562), so ``import hrefine.models`` is cheap: torch, transformers and
sentence-transformers load only when a model is first used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hrefine.models.device import batch_size_for, pick_device, pick_dtype
    from hrefine.models.embed import (
        CallableEmbedder,
        Embedder,
        SentenceTransformerEmbedder,
        default_embedder,
        get_embedder,
    )
    from hrefine.models.lexical import BM25Scorer, lexical_tokens
    from hrefine.models.lm_session import AppendResult, LMSession
    from hrefine.models.local_lm import LocalLM
    from hrefine.models.rerank import CrossEncoderScorer, PairScorer
    from hrefine.models.scorers import EmbeddingScorer, Scorer, WindowedScorer, get_scorer
    from hrefine.models.smollm2 import default_lm
    from hrefine.models.text_generator import LLMCallable, TextGenerator, as_text_generator

_WHERE = {
    "batch_size_for": "device",
    "pick_device": "device",
    "pick_dtype": "device",
    "CallableEmbedder": "embed",
    "Embedder": "embed",
    "SentenceTransformerEmbedder": "embed",
    "default_embedder": "embed",
    "get_embedder": "embed",
    "BM25Scorer": "lexical",
    "lexical_tokens": "lexical",
    "AppendResult": "lm_session",
    "LMSession": "lm_session",
    "LocalLM": "local_lm",
    "default_lm": "smollm2",
    "LLMCallable": "text_generator",
    "TextGenerator": "text_generator",
    "as_text_generator": "text_generator",
    "CrossEncoderScorer": "rerank",
    "PairScorer": "rerank",
    "EmbeddingScorer": "scorers",
    "Scorer": "scorers",
    "WindowedScorer": "scorers",
    "get_scorer": "scorers",
}

__all__ = [
    "AppendResult",
    "BM25Scorer",
    "CallableEmbedder",
    "CrossEncoderScorer",
    "Embedder",
    "EmbeddingScorer",
    "LLMCallable",
    "LMSession",
    "LocalLM",
    "PairScorer",
    "Scorer",
    "SentenceTransformerEmbedder",
    "TextGenerator",
    "WindowedScorer",
    "as_text_generator",
    "batch_size_for",
    "default_embedder",
    "default_lm",
    "get_embedder",
    "get_scorer",
    "lexical_tokens",
    "pick_device",
    "pick_dtype",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        msg = f"module 'hrefine.models' has no attribute {name!r}"
        raise AttributeError(msg)
    value = getattr(importlib.import_module(f"hrefine.models.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
