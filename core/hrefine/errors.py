"""Errors raised by hrefine.

Every error is an :class:`HrefineError`, so callers can catch one type. Messages state what was
received and what was expected.
"""

from __future__ import annotations

__all__ = [
    "BudgetTooSmallError",
    "ConfigError",
    "EmptyInputError",
    "HrefineError",
    "HtmlParseError",
    "MissingDependencyError",
    "ModelNotFoundError",
    "ModelOutputError",
    "PersistenceError",
]


class HrefineError(Exception):
    """Base class of every error hrefine raises on purpose."""


class EmptyInputError(HrefineError, ValueError):
    """The input holds no text to work on (empty, whitespace only, a page with no visible text)."""


class BudgetTooSmallError(HrefineError, ValueError):
    """The token budget is smaller than the smallest unit that could be returned.

    Attributes
    ----------
    budget:
        The budget that was asked for.
    smallest:
        Token count of the smallest unit available.
    """

    def __init__(self, message: str, *, budget: int, smallest: int) -> None:
        super().__init__(message)
        self.budget = budget
        self.smallest = smallest


class ConfigError(HrefineError, ValueError):
    """A setting names something hrefine does not have (an unknown scorer, for example)."""


class HtmlParseError(HrefineError, ValueError):
    """The input could not be parsed as HTML (or is not HTML at all)."""


class ModelOutputError(HrefineError, ValueError):
    """A model's output could not be parsed; the raw output is attached as ``raw_output``."""

    def __init__(self, message: str, *, raw_output: str) -> None:
        super().__init__(message)
        self.raw_output = raw_output


class ModelNotFoundError(HrefineError, FileNotFoundError):
    """A model name or path could not be resolved locally (hrefine never downloads at call time)."""


class PersistenceError(HrefineError, ValueError):
    """A saved tree or graph is corrupted, of a foreign format, or of an unsupported version."""


class MissingDependencyError(HrefineError, ImportError):
    """An optional dependency is missing; the message names the extra that provides it."""

    def __init__(self, module: str, extra: str) -> None:
        message = (
            f"hrefine needs the optional module {module!r} for this feature; "
            f"install it with: pip install 'hrefine[{extra}]'"
        )
        super().__init__(message, name=module)
        self.module = module
        self.extra = extra
