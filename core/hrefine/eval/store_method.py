"""The base of the evaluated methods that build a store per document and answer from it.

RAPTOR (a summary tree) and GARLIC (a summary graph) build, the first time they see a
document, a store that every question and budget on it is then answered from. What they share
is here: the summariser named by ``llm`` (the embedded SmolLM2, a no-model stand-in, a local
model, or an object), the embedder, the few stores kept in memory by the document's hash, and
the counts of builds, seconds and LLM calls. A subclass says what its stand-in is
(:meth:`StoreCompressor.extractive_llm`), how it builds and how it answers
(``compress``).
"""

from __future__ import annotations

import hashlib
import os
from typing import Any

from hrefine.eval.baselines import _LRU

__all__ = ["LLM_CHOICES", "StoreCompressor", "document_digest"]

#: The ``llm`` option's named choices (anything else is a local model folder, a cached name or
#: an LLM object).
LLM_CHOICES = ("default", "extractive")
# Stores kept in memory: the harness asks every question of one document before the next.
_KEPT_STORES = 4


def document_digest(document: str) -> bytes:
    """The key a document's store is kept under in memory (a hash of its text)."""
    return hashlib.blake2b(document.encode("utf-8", "replace"), digest_size=16).digest()


class StoreCompressor:
    """What RAPTOR's and GARLIC's evaluated methods share (see the module).

    Parameters
    ----------
    llm:
        ``"default"`` (the embedded SmolLM2-135M-Instruct; also for None), ``"extractive"``
        (:meth:`extractive_llm`, no model), a local model folder or cached Hugging Face name,
        or an LLM object the store takes as it is.
    embedder:
        Anything :func:`hrefine.models.get_embedder` takes (None: the embedded
        all-MiniLM-L6-v2).
    name:
        Report name.

    Attributes
    ----------
    builds:
        Stores built so far.
    build_seconds:
        Seconds spent building stores.
    llm_calls:
        Summaries asked of the LLM by the builds.
    """

    def __init__(self, *, llm: Any, embedder: Any, name: str) -> None:
        self._llm_spec = "default" if llm is None else llm
        self._llm: Any = None
        self._embedder_spec = embedder
        self._embedder: Any = None
        self.name: str = name
        self._stores = _LRU(_KEPT_STORES)
        self.builds = 0
        self.build_seconds = 0.0
        self.llm_calls = 0

    def extractive_llm(self) -> Any:
        """The no-model stand-in ``llm="extractive"`` names (each method has its own)."""
        raise NotImplementedError

    @property
    def llm(self) -> Any:
        """The LLM handed to the stores (loaded on first use)."""
        if self._llm is None:
            spec = self._llm_spec
            if spec == "default":  # a store's own default may be no model: load SmolLM2 here
                from hrefine.models import default_lm

                self._llm = default_lm()
            elif spec == "extractive":
                self._llm = self.extractive_llm()
            elif isinstance(spec, (str, os.PathLike)):
                from hrefine.models._lm_name import local_lm_from

                self._llm = local_lm_from(spec)
            else:
                self._llm = spec
        return self._llm

    @property
    def embedder(self) -> Any:
        """The embedder (loaded on first use, shared by every store)."""
        if self._embedder is None:
            from hrefine.models import get_embedder

            self._embedder = get_embedder(self._embedder_spec)
        return self._embedder
