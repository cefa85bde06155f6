"""Command-line options made from a method's settings: a flag's help and default are the
setting's own.

A flag written out by hand kept its own copy of the default and the description, and the
copies drifted (``garlic build --chunk-tokens`` stayed at 300 after the library's default
became 128). A flag made here reads both from the options dataclass, so the CLI builds what the
library builds when no flag is given.
"""

from __future__ import annotations

from typing import Any

import typer

from hrefine.options import Options

__all__ = ["flag"]


def flag(options: type[Options], name: str, *, help: str | None = None) -> Any:
    """The ``typer.Option`` of setting ``name`` of ``options`` (the flag ``--name`` with
    dashes).

    Parameters
    ----------
    options:
        The method's options dataclass.
    name:
        The setting.
    help:
        Help for the command line when it has more to say than the setting's description.

    The parameter's default is ``options.default(name)`` (the signature holds it, as typer
    wants with ``Annotated``).
    """
    return typer.Option(help=options.describe(name) if help is None else help)
