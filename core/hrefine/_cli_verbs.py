"""Declaring a CLI verb as shared parameters around its own: one signature that typer reads.

Several verbs take the same leading and trailing options (every ``hrefine distributed`` stage
its corpus, cluster and pool options; every ``build`` its documents, output folder and
``--quiet``). Writing them into each verb's signature repeated a dozen lines a verb. Here a
verb is written with only its own parameters, and :func:`verb` gives typer a function whose
signature is ``before + own + after``: typer builds the help from that signature, so the order
of the options, and so the help text, is the one the written-out signatures had.
"""

from __future__ import annotations

import functools
import inspect
import types
import typing
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["Shared", "option", "verb"]

_EMPTY = inspect.Parameter.empty


def option(name: str, annotation: Any, default: Any = _EMPTY) -> inspect.Parameter:
    """A shared parameter ``name`` (an ``Annotated[type, typer.Option(...)]`` or ``Argument``),
    with ``default`` (none: required)."""
    return inspect.Parameter(
        name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation, default=default
    )


#: The shared values of one call, by parameter name.
Shared = dict[str, Any]


def verb(
    own: Callable[..., Any],
    run: Callable[[Shared, Callable[..., Any], dict[str, Any]], Any],
    *,
    before: Sequence[inspect.Parameter] = (),
    after: Sequence[inspect.Parameter] = (),
    passed: int = 0,
) -> Callable[..., Any]:
    """The command function typer registers for ``own``.

    Parameters
    ----------
    own:
        The verb's own part: its parameters are the verb's own options, its docstring the
        verb's help.
    run:
        Called with the shared values, ``own`` and ``own``'s values; it checks the shared
        values, calls ``own`` where the verb's flow wants it and acts on what it returns.
    before, after:
        The shared parameters placed before and after ``own``'s (see :func:`option`).
    passed:
        How many leading parameters of ``own`` ``run`` passes itself (what it made of the
        shared values): they are no options.

    Returns
    -------
    Callable[..., Any]
        A function of keyword arguments whose ``__signature__`` (and annotations) typer reads.
    """
    written = list(inspect.signature(own).parameters.values())[passed:]
    # Only the options' annotations are resolved: the return type and the passed parameters
    # may name types imported for type checking only.
    holder = types.SimpleNamespace(__annotations__={p.name: p.annotation for p in written})
    hints = typing.get_type_hints(holder, globalns=own.__globals__, include_extras=True)
    own_params = [
        p.replace(kind=inspect.Parameter.KEYWORD_ONLY, annotation=hints[p.name]) for p in written
    ]
    shared_names = [p.name for p in (*before, *after)]

    @functools.wraps(own)
    def command(**values: Any) -> Any:
        shared = {name: values.pop(name) for name in shared_names}
        return run(shared, own, values)

    params = [*before, *own_params, *after]
    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in params}
    del command.__wrapped__  # typer must read the composed signature, not own's
    return command
