"""Every error hrefine raises on purpose.

Each one is an :class:`HrefineError`, so a caller can catch one type, and also the built-in
exception it refines (``ValueError``, ``TypeError``, ``FileNotFoundError``...), so code written
against the built-ins keeps working. Messages say what was received and what to change.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = [
    "BudgetTooSmallError",
    "ConfigError",
    "DatasetUnavailableError",
    "EmptyInputError",
    "GenerationError",
    "HrefineError",
    "HtmlParseError",
    "InputTypeError",
    "MissingDependencyError",
    "ModelIntegrityError",
    "ModelNotFoundError",
    "ModelOutputError",
    "NotSupportedError",
    "PersistenceError",
    "RendererNotFoundError",
    "TreeError",
    "UnknownSettingError",
]


class HrefineError(Exception):
    """Base class of every error hrefine raises on purpose."""


class ConfigError(HrefineError, ValueError):
    """A setting or argument has a value hrefine cannot use (an unknown scorer name, a negative
    weight, a budget below zero); the message names the valid values."""


class UnknownSettingError(ConfigError):
    """Settings or options that the thing being made has no field or parameter for.

    Attributes
    ----------
    unknown:
        Their names.
    """

    def __init__(self, message: str, unknown: Iterable[str]) -> None:
        super().__init__(message)
        self.unknown: tuple[str, ...] = tuple(unknown)


class InputTypeError(HrefineError, TypeError):
    """An argument is of a type hrefine does not take (a number where text is expected, a
    string where a list of texts is); the message names the types it takes."""


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


class HtmlParseError(HrefineError, ValueError):
    """The input could not be parsed as HTML (or is not HTML at all)."""


class TreeError(HrefineError, ValueError):
    """A :class:`~hrefine.tree.Tree` operation names a node that is not there, or would break
    the tree (a self-loop, a cycle, an edge that does not exist, vectors of the wrong shape)."""


class ModelOutputError(HrefineError, ValueError):
    """A model's output could not be parsed; the raw output is attached as ``raw_output``."""

    def __init__(self, message: str, *, raw_output: str) -> None:
        super().__init__(message)
        self.raw_output = raw_output


class GenerationError(HrefineError, RuntimeError):
    """An LLM call failed on every try or timed out; ``__cause__`` holds the last error."""


class ModelIntegrityError(HrefineError, ValueError):
    """A model's files are not the bytes that were checked (a packaged model's parts join to
    another length or SHA-256); they are refused, never loaded."""


class ModelNotFoundError(HrefineError, FileNotFoundError):
    """A model name or path could not be resolved locally (hrefine never downloads at call time)."""


class DatasetUnavailableError(HrefineError, FileNotFoundError):
    """An evaluation dataset's files are not where they were looked for."""


class NotSupportedError(HrefineError, NotImplementedError):
    """An operation a framework interface offers that this method cannot do (deleting a
    document from a RAPTOR index: its summaries would all have to be made again)."""


class PersistenceError(HrefineError, ValueError):
    """A saved tree or graph is corrupted, of a foreign format, or of an unsupported version."""


class RendererNotFoundError(HrefineError, LookupError):
    """No function is registered to draw a result as HTML (its method's report module, which
    registers one when imported, was not imported)."""


class MissingDependencyError(HrefineError, ImportError):
    """An optional dependency is missing; the message names the extra that provides it."""

    def __init__(self, module: str, extra: str) -> None:
        message = (
            f"hrefine needs the optional module {module!r} for this feature; install the "
            f"extra {extra!r}: pip install '.[{extra}]' in a clone of hrefine (or "
            f"pip install 'hrefine[{extra}]' from an index that serves hrefine)"
        )
        super().__init__(message, name=module)
        self.module = module
        self.extra = extra
