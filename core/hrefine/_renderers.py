"""Which function draws a result as an HTML page (issue #56: no import cycles).

A result type never imports the module that draws it; the renderer imports the result. Each
report module registers its drawing functions here when it is imported (:func:`register`), and
each method's package imports its report module, so whenever a result can exist its renderer is
registered. A result's ``to_html`` and ``_repr_html_`` call :func:`render`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hrefine.errors import RendererNotFoundError

__all__ = ["NOTEBOOK", "PAGE", "register", "render"]

#: The kinds of drawing: a self-contained page (``to_html``) and a notebook cell
#: (``_repr_html_``).
PAGE = "page"
NOTEBOOK = "notebook"

_RENDERERS: dict[tuple[type, str], Callable[..., str]] = {}


def register(result_type: type, renderer: Callable[..., str], *, kind: str = PAGE) -> None:
    """Draw ``result_type`` (and its subclasses) with ``renderer(result, *args, **options)``."""
    _RENDERERS[(result_type, kind)] = renderer


def render(result: object, *args: Any, kind: str = PAGE, **options: Any) -> str:
    """``result`` drawn by the renderer registered for its type (or the nearest base type).

    Raises
    ------
    RendererNotFoundError
        No renderer of this ``kind`` is registered for the result's type.
    """
    for cls in type(result).__mro__:
        renderer = _RENDERERS.get((cls, kind))
        if renderer is not None:
            return renderer(result, *args, **options)
    cls = type(result)
    package = cls.__module__.rpartition(".")[0] or cls.__module__
    msg = (
        f"no {kind} renderer is registered for {cls.__module__}.{cls.__qualname__}; "
        f"import {package} (its report module registers one when imported)"
    )
    raise RendererNotFoundError(msg)
