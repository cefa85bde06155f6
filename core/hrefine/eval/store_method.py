"""The base of the evaluated methods that build a store per document and answer from it.

RAPTOR (a summary tree) and GARLIC (a summary graph) build, the first time they see a
document, a store that every question and budget on it is then answered from. What they share
is here: the summariser named by ``llm`` (the embedded SmolLM2, a no-model stand-in, a local
model, or an object), the embedder, the few stores kept in memory by the document's hash, the
disk cache under ``cache_dir`` (keyed by the document, the build settings and the models'
names, so a rerun with a slow LLM costs nothing), and the counts of builds, loads, seconds and
LLM calls. A subclass says what its stand-in is (:meth:`StoreCompressor.extractive_llm`),
which settings build a store (:meth:`StoreCompressor.build_settings`), how it builds, loads and
answers (``compress``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from hrefine.budget import TokenCounter
from hrefine.errors import PersistenceError
from hrefine.eval.baselines import _LRU
from hrefine.models.embedder_folder import EMBEDDED_EMBEDDER

logger = logging.getLogger(__name__)

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
        ``"extractive"`` (:meth:`extractive_llm`, no model; also for None, as the libraries'
        RAPTOR and GARLIC default to no model), ``"default"`` (the embedded
        SmolLM2-135M-Instruct), a local model folder or cached Hugging Face name,
        or an LLM object the store takes as it is.
    embedder:
        Anything :func:`hrefine.models.get_embedder` takes (None: the embedded
        all-MiniLM-L6-v2).
    name:
        Report name.
    cache_dir:
        Folder where built stores are saved and looked up, keyed by the document's hash, the
        build settings and the models' names (None: kept in memory only). Stores are cached on
        disk only when their models have names: ``llm`` given by name or path (or
        ``llm_name``), ``embedder`` None, a string or a SentenceTransformerEmbedder.
    llm_name:
        The name an ``llm`` object is cached under (its stores are not cached on disk without
        one; two different LLMs must not share a name).

    Attributes
    ----------
    builds:
        Stores built so far (one per distinct document, unless loaded from ``cache_dir``).
    loads:
        Stores loaded from ``cache_dir``.
    build_seconds:
        Seconds spent building stores.
    llm_calls:
        Summaries asked of the LLM by the builds.
    """

    #: Bump when what a cached store depends on changes in a way its key does not show.
    cache_format: ClassVar[int] = 1
    #: Added to the cache key, so two methods' stores never share one (None: not added).
    cache_kind: ClassVar[str | None] = None
    #: The key of the build statistics' LLM call count.
    calls_stat: ClassVar[str] = "llm_calls"
    #: The budgets' token counter (set by the subclass; its name is part of the cache key).
    counter: TokenCounter

    def __init__(
        self,
        *,
        llm: Any,
        embedder: Any,
        name: str,
        cache_dir: str | os.PathLike[str] | None = None,
        llm_name: str | None = None,
    ) -> None:
        self._llm_spec = "extractive" if llm is None else llm
        self._llm: Any = None
        self._embedder_spec = embedder
        self._embedder: Any = None
        self.name: str = name
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self.llm_name = llm_name
        self._stores = _LRU(_KEPT_STORES)
        self.builds = 0
        self.loads = 0
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

    # -- the disk cache -------------------------------------------------------------------------
    def build_settings(self) -> dict[str, Any]:
        """The settings a built store depends on (the disk cache key holds them)."""
        raise NotImplementedError

    def _model_names(self) -> tuple[str, str] | None:
        """Names of the LLM and embedder for the cache key; None when one is an object."""
        llm = self._llm_spec
        if llm == "default":
            from hrefine.models.smollm2 import SMOLLM2_NAME

            llm_name = SMOLLM2_NAME
        elif isinstance(llm, (str, os.PathLike)):
            path = Path(llm)
            llm_name = str(path.resolve()) if path.exists() else str(llm)
        elif self.llm_name is not None:
            llm_name = f"named:{self.llm_name}"
        else:
            return None
        emb = self._embedder_spec
        if emb is None:
            emb_name = EMBEDDED_EMBEDDER
        elif isinstance(emb, str):
            emb_name = emb
        elif type(emb).__name__ == "SentenceTransformerEmbedder":  # named by its model
            emb_name = str(emb.name)
        else:
            return None
        return llm_name, emb_name

    def cache_key(self, document: str) -> str | None:
        """The disk cache key of ``document``'s store (None when it cannot be cached)."""
        names = self._model_names()
        if names is None:
            return None
        described: dict[str, Any] = {
            "format": self.cache_format,
            "document": hashlib.sha256(document.encode("utf-8", "replace")).hexdigest(),
            "settings": dict(sorted(self.build_settings().items())),
            "llm": names[0],
            "embedder": names[1],
            "tokenizer": self.counter.name,
        }
        if self.cache_kind is not None:
            described["kind"] = self.cache_kind
        blob = json.dumps(described, sort_keys=True).encode("utf-8")
        return hashlib.sha256(blob).hexdigest()[:32]

    def stored(
        self, document: str, build: Callable[[], Any], load: Callable[[Path], Any]
    ) -> tuple[Any, float]:
        """``document``'s store: from memory, from ``cache_dir`` (``load(folder)``), or made
        by ``build()`` (and saved there); with the seconds a build took (0 otherwise)."""
        memo = document_digest(document)
        store = self._stores.get(memo)
        if store is not None:
            return store, 0.0
        key = self.cache_key(document) if self.cache_dir is not None else None
        folder = self.cache_dir / key if self.cache_dir is not None and key else None
        spent = 0.0
        if folder is not None and folder.is_dir():
            try:
                store = load(folder)
                store.stats = {**_saved_stats(folder), **store.stats}
                self.loads += 1
            except PersistenceError as exc:
                logger.warning("rebuilding the cached %s store in %s: %s", self.name, folder, exc)
        if store is None:
            started = time.perf_counter()
            store = build()
            spent = time.perf_counter() - started
            self.build_seconds += spent
            self.builds += 1
            self.llm_calls += int(store.stats.get(self.calls_stat, 0))
            if folder is not None:
                _save(store, folder)
        self._stores.put(memo, store)
        return store, spent


def _stats_file(folder: Path) -> Path:
    return folder.with_name(f"{folder.name}.stats.json")


def _saved_stats(folder: Path) -> dict[str, Any]:
    """The build statistics saved beside a cached store (a saved store does not keep them)."""
    try:
        data = json.loads(_stats_file(folder).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _save(store: Any, folder: Path) -> None:
    """Save ``store`` into ``folder`` whole or not at all (written aside, then renamed), and its
    build statistics beside it."""
    aside = folder.with_name(f"{folder.name}.{os.getpid()}.tmp")
    try:
        store.save(aside)
        if folder.exists():  # a store that failed to load: replaced
            shutil.rmtree(folder)
        aside.replace(folder)
        stats = json.dumps(store.stats, default=str)
        _stats_file(folder).write_text(stats + "\n", encoding="utf-8")
    except (
        OSError,
        PersistenceError,
    ) as exc:  # a full disk or a race with another run: the cache is optional
        logger.warning("could not cache the store in %s: %s", folder, exc)
        shutil.rmtree(aside, ignore_errors=True)
