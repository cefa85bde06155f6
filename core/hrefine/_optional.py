"""Checks for optional dependencies, done without importing them."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from types import ModuleType

from hrefine.errors import MissingDependencyError

__all__ = ["available", "require"]


def available(module: str) -> bool:
    """Return True when ``module`` can be imported, without importing it."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def require(module: str, extra: str) -> ModuleType:
    """Import ``module`` or raise :class:`MissingDependencyError` naming ``extra``."""
    loaded = sys.modules.get(module)
    spec = getattr(loaded, "__spec__", None)
    # Hot paths (serialising each block) call this per element; a module another thread is
    # still importing goes through import_module, which waits for it.
    if loaded is not None and not getattr(spec, "_initializing", False):
        return loaded
    if not available(module):
        raise MissingDependencyError(module, extra)
    return importlib.import_module(module)
