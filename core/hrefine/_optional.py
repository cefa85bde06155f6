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
    if loaded is not None:  # hot paths (serialising each block) call this per element
        return loaded
    if not available(module):
        raise MissingDependencyError(module, extra)
    return importlib.import_module(module)
