"""UMAP's numba compilation, paid once per machine rather than once per process.

umap-learn compiles its layout optimiser, its k-NN smoothing and its distances with numba the
first time a process fits a UMAP, and none of them is cached on disk: the first RAPTOR build in
every fresh process paid about 20 CPU seconds of compilation for a tenth of a second of work.
:func:`load_umap` imports umap and turns numba's on-disk cache on for every jitted function of
umap that lacks it, so the next process loads the compiled code instead (pynndescent, which umap
uses, caches its own functions already and is left alone).

Where the cache lives: ``numba`` under hrefine's cache (``$HREFINE_CACHE``, else
``~/.cache/hrefine``), or ``$NUMBA_CACHE_DIR`` when the user set it (numba's own rule); a folder
that cannot be written falls back to numba's other places. Importing hrefine imports no numba;
the first UMAP of a process sets numba's instruction set (:mod:`hrefine._numba_target`).
``HREFINE_NUMBA_CACHE=0`` leaves umap as it ships.

Numba keys each cached function by its source file's size and modification time, so upgrading
umap-learn compiles afresh rather than loading stale code; a function numba cannot cache (a
closure over dynamic globals) is simply compiled, as before.
"""

from __future__ import annotations

import os
import sys
import threading
import warnings
from pathlib import Path
from types import ModuleType
from typing import Any

from hrefine._numba_target import hold_to_avx2
from hrefine._optional import require

__all__ = ["ENV_SWITCH", "cache_dir", "enabled", "load_umap"]

#: Set to 0 / off / false / no to leave numba's caching as umap ships it.
ENV_SWITCH = "HREFINE_NUMBA_CACHE"
#: Packages whose jitted functions get an on-disk cache.
PACKAGES = ("umap",)

_lock = threading.Lock()
_done: set[str] = set()


def enabled() -> bool:
    """Whether hrefine turns numba's cache on (``HREFINE_NUMBA_CACHE`` is not 0/off/false/no)."""
    return os.environ.get(ENV_SWITCH, "").strip().lower() not in {"0", "off", "false", "no"}


def cache_dir() -> Path:
    """Where UMAP's compiled code is kept: ``$NUMBA_CACHE_DIR`` if set, else
    ``<hrefine cache>/numba``."""
    user = os.environ.get("NUMBA_CACHE_DIR")
    if user:
        return Path(user)
    from hrefine.models._model_cache import cache_root

    return cache_root() / "numba"


def load_umap() -> ModuleType:
    """``umap``, imported with numba's on-disk cache on for its jitted functions (once), and
    compiled for AVX2 where the CPU has it (:func:`~hrefine._numba_target.hold_to_avx2`)."""
    hold_to_avx2()
    umap = require("umap", "raptor")
    if enabled():
        with _lock:
            for package in PACKAGES:
                if package not in _done:
                    _enable_caching(package, cache_dir())
                    _done.add(package)
    return umap


def _cache_class(folder: Path) -> Any:
    """numba's FunctionCache, looking first in ``folder`` (then numba's usual places)."""
    from numba.core.caching import (
        CompileResultCacheImpl,
        FunctionCache,
        UserProvidedCacheLocator,
    )

    class Locator(UserProvidedCacheLocator):  # type: ignore[misc]
        def __init__(self, py_func: Any, py_file: str) -> None:
            super().__init__(py_func, py_file)
            self._cache_path = os.path.join(folder, self.get_suitable_cache_subpath(py_file))

        @classmethod
        def from_function(cls, py_func: Any, py_file: str) -> Any:
            if not os.path.exists(py_file):
                return None
            locator = cls(py_func, py_file)
            try:
                locator.ensure_cache_path()
            except OSError:  # not writable: numba's own places
                return None
            return locator

    class Impl(CompileResultCacheImpl):  # type: ignore[misc]
        _locator_classes = [Locator, *CompileResultCacheImpl._locator_classes]  # noqa: RUF012

    class Cache(FunctionCache):  # type: ignore[misc]
        _impl_class = Impl

    return Cache


def _enable_caching(package: str, folder: Path) -> int:
    """Turn the on-disk cache (in ``folder``) on for ``package``'s uncached jitted functions;
    returns how many."""
    try:
        from numba.core.caching import NullCache
        from numba.core.registry import CPUDispatcher
    except ImportError:  # pragma: no cover - numba comes with umap
        return 0
    cache = _cache_class(folder)
    turned = 0
    prefix = package + "."
    for name, module in list(sys.modules.items()):
        if module is None or not (name == package or name.startswith(prefix)):
            continue
        for value in list(vars(module).values()):
            if isinstance(value, CPUDispatcher) and isinstance(
                getattr(value, "_cache", None), NullCache
            ):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    try:
                        value._cache = cache(value.py_func)  # type: ignore[attr-defined]
                    except RuntimeError:  # no place to cache it: compiled as before
                        continue
                turned += 1
    return turned
