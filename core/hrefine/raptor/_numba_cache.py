"""UMAP's numba compilation, paid once per machine rather than once per process.

umap-learn compiles its layout optimiser, its k-NN smoothing and its distances with numba the
first time a process fits a UMAP, and none of them is cached on disk: the first RAPTOR build in
every fresh process paid about 20 CPU seconds of compilation for a tenth of a second of work.
:func:`load_umap` imports umap with numba's on-disk cache turned on for every jitted function of
umap and pynndescent that lacks it, so the second process loads the compiled code instead.

Where the cache lives: ``$NUMBA_CACHE_DIR`` when the user set it, else ``numba`` under hrefine's
cache (``$HREFINE_CACHE``, else ``~/.cache/hrefine``). The variable is set only while numba is
not imported yet (numba reads it once) and never when the user set it; importing hrefine imports
no numba. ``HREFINE_NUMBA_CACHE=0`` leaves numba exactly as it is.

Numba keys each cached function by its source file's size and modification time, so upgrading
umap-learn or pynndescent compiles afresh rather than loading stale code; a function numba
cannot cache (a closure over dynamic globals) is simply compiled, as before.
"""

from __future__ import annotations

import os
import sys
import threading
import warnings
from pathlib import Path
from types import ModuleType

from hrefine._optional import require

__all__ = ["ENV_SWITCH", "cache_dir", "enabled", "load_umap", "prepare"]

#: Set to 0 / off / false / no to leave numba's caching as umap ships it.
ENV_SWITCH = "HREFINE_NUMBA_CACHE"
#: Packages whose jitted functions get an on-disk cache.
PACKAGES = ("umap", "pynndescent")

_lock = threading.Lock()
_cached_packages: set[str] = set()


def enabled() -> bool:
    """Whether hrefine turns numba's cache on (``HREFINE_NUMBA_CACHE`` is not 0/off/false/no)."""
    return os.environ.get(ENV_SWITCH, "").strip().lower() not in {"0", "off", "false", "no"}


def cache_dir() -> Path:
    """Where hrefine puts numba's cache when the user has not chosen: ``<cache root>/numba``."""
    from hrefine.models._model_cache import cache_root

    return cache_root() / "numba"


def prepare() -> str | None:
    """Point numba's cache at :func:`cache_dir` if nobody has chosen and numba is not imported.

    Returns the cache folder numba will use (``None``: numba's own default, next to the
    packages' sources or under ``~/.cache``).
    """
    if enabled() and "NUMBA_CACHE_DIR" not in os.environ and "numba" not in sys.modules:
        os.environ["NUMBA_CACHE_DIR"] = str(cache_dir())
    return os.environ.get("NUMBA_CACHE_DIR") or None


def load_umap() -> ModuleType:
    """``umap``, imported with numba's on-disk cache on for its jitted functions (once)."""
    prepare()
    umap = require("umap", "raptor")
    if enabled():
        with _lock:
            for package in PACKAGES:
                if package not in _cached_packages:
                    _enable_caching(package)
                    _cached_packages.add(package)
    return umap


def _enable_caching(package: str) -> int:
    """Turn the on-disk cache on for ``package``'s jitted functions; returns how many."""
    try:
        from numba.core.caching import NullCache
        from numba.core.registry import CPUDispatcher
    except ImportError:  # pragma: no cover - numba comes with umap
        return 0
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
                    value.enable_caching()
                turned += 1
    return turned
