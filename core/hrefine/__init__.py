"""hrefine: make long retrieved context small and relevant before it reaches an LLM.

The top level holds the light, shared names; each method lives in its own subpackage
(``hrefine.html``) and the scorer layer in ``hrefine.models``. Importing hrefine never imports
torch, transformers or a web framework.
"""

from __future__ import annotations

import logging

from hrefine.budget import Selection, TokenCounter, get_counter, select
from hrefine.errors import (
    BudgetTooSmallError,
    ConfigError,
    EmptyInputError,
    HrefineError,
    HtmlParseError,
    MissingDependencyError,
    ModelNotFoundError,
    ModelOutputError,
    PersistenceError,
)
from hrefine.tree import Node, NodeKind, Tree

__version__ = "0.1.0"

__all__ = [
    "BudgetTooSmallError",
    "ConfigError",
    "EmptyInputError",
    "HrefineError",
    "HtmlParseError",
    "MissingDependencyError",
    "ModelNotFoundError",
    "ModelOutputError",
    "Node",
    "NodeKind",
    "PersistenceError",
    "Selection",
    "TokenCounter",
    "Tree",
    "__version__",
    "get_counter",
    "select",
]

logging.getLogger(__name__).addHandler(logging.NullHandler())
