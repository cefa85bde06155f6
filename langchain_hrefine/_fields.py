"""Field declarations that several LangChain components share, written once.

A component's method settings are its fields through :func:`hrefine.options.adapter_model`; what
is left are its models (LLM, embeddings, tokenizer) and its token budget, declared here so that
two components taking the same model say the same of it.
"""

from __future__ import annotations

from typing import Any, TypeVar

from hrefine.options import Options
from pydantic import Field

__all__ = [
    "EMBEDDINGS_FOR_SCORER",
    "budget_field",
    "field_settings",
    "model_field",
    "options_of",
]

_O = TypeVar("_O", bound=Options)

#: The description of a compressor's ``embeddings`` field (HtmlRAG, LongRefiner).
EMBEDDINGS_FOR_SCORER = "Embeddings for the 'embedding' scorer; None: the embedded default model."


def model_field(description: str) -> Any:
    """A model field (an LLM, embeddings or a tokenizer): None by default, any object accepted
    (the conversion to the core type checks it when the model is used)."""
    return Field(default=None, description=description)


def budget_field(default: int, description: str, *, minimum: int = 1) -> Any:
    """A token budget field: a strict int, at least ``minimum``."""
    return Field(default=default, ge=minimum, strict=True, description=description)


def field_settings(options: type[Options]) -> tuple[str, ...]:
    """The settings of ``options`` that are fields of a component (its models are fields of
    their own, of the framework's types)."""
    return tuple(n for n in options.names() if n not in options.adapter_excluded)


def options_of(component: Any, options: type[_O], **changes: Any) -> _O:
    """A component's fields as ``options`` (checked), with ``changes``; the tokenizer is kept
    too, so that a named one (``"cl100k_base"``) is saved with the tree or graph."""
    values = {n: getattr(component, n) for n in field_settings(options)}
    return options.build(**{**values, **changes}, tokenizer=component.tokenizer)
