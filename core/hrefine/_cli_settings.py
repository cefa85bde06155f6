"""Command-line options made from a method's settings: a flag's help and default are the
setting's own; and the checks of the values the verbs share (model names, ``--embedder``,
``--limit``), made before anything loads.

A flag written out by hand kept its own copy of the default and the description, and the
copies drifted (``garlic build --chunk-tokens`` stayed at 300 after the library's default
became 128). A flag made here reads both from the options dataclass, so the CLI builds what the
library builds when no flag is given.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from hrefine.errors import ConfigError
from hrefine.models.embedder_folder import EMBEDDED_EMBEDDER
from hrefine.options import Options, check_model_name

__all__ = [
    "EmbedderOpt",
    "ScorerEmbedderOpt",
    "announce_loading_with",
    "check_limit",
    "check_model_name",
    "embedder_option",
    "flag",
    "local_embedder",
    "named_embedder",
    "query_embedder_option",
    "saved_embedder_option",
]

# The embedded embedder's name, as the "loading ..." lines show it.
_DEFAULT_EMBEDDER = EMBEDDED_EMBEDDER


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


def embedder_option(more: str = "") -> Any:
    """``--embedder``: a sentence-transformers model by folder or cached name; ``more`` says
    what else the verb does with it."""
    return typer.Option(
        help="Embedder: a local sentence-transformers folder or cached name (default: the "
        f"embedded {_DEFAULT_EMBEDDER}).{f' {more}' if more else ''}",
    )


def saved_embedder_option(noun: str) -> Any:
    """``--embedder`` of a verb that builds and saves a ``noun`` ("tree", "graph")."""
    return embedder_option(f"Saved with the {noun}; queries use it too.")


def query_embedder_option(noun: str) -> Any:
    """``--embedder`` of a verb that queries a saved ``noun``."""
    return typer.Option(
        help=f"Embedder of the question: the model the {noun} was built with, needed when "
        f"the {noun} names it by a folder outside its own.",
    )


#: ``--embedder`` as most verbs take it (None: the embedded model).
EmbedderOpt = Annotated[str | None, embedder_option()]
#: ``--embedder`` of a verb that scores with it only with ``--scorer embedding``.
ScorerEmbedderOpt = Annotated[str | None, embedder_option("For the embedding scorer only.")]


def local_embedder(name: str | None) -> str | None:
    """``name`` once the embedder it names is found on this machine (None: the embedded one),
    so that a missing model fails before any work, with the library's message.

    Raises
    ------
    ConfigError
        ``name`` is empty.
    ModelNotFoundError
        Neither a folder nor a cached model, or a packaged model not installed.
    """
    if name is None:
        return None
    from hrefine.models import get_embedder
    from hrefine.models._local_files import require_local_model

    where = getattr(get_embedder(name), "model_name_or_path", None)  # loads no weights
    if isinstance(where, str):
        require_local_model(where, "embedding model")
    return name


def named_embedder(line: str | None, embedder: str | None) -> str | None:
    """A "loading ..." line with ``embedder`` named in place of the embedded one."""
    if line is None or embedder is None:
        return line
    return line.replace(_DEFAULT_EMBEDDER, f"the embedder {embedder!r}", 1)


def announce_loading_with(line: str | None, embedder: str | None) -> None:
    """Print the "loading ..." ``line`` (when something loads), naming ``embedder``."""
    shown = named_embedder(line, embedder)
    if shown:
        from hrefine._cli_support import say
        from hrefine._encodable import encodable

        say(encodable(shown))


def build_settings(
    options: type[Options], settings: dict[str, Any], *, model: tuple[str, str | None], **named: Any
) -> Any:
    """``options`` built from a build verb's ``settings`` and the models it names (``named``:
    the embedder, the tokenizer; those given go into the options, so that the saved tree or
    graph remembers them and a query embeds and counts with the same models), checked before
    any model loads: a bad setting, an empty ``model`` name (``(flag name, value)``) or an
    embedder folder that is not there.
    """
    given = {name: value for name, value in named.items() if value is not None}
    built = options.build(**settings, **given)
    check_model_name(*model)
    local_embedder(given.get("embedder"))
    return built


def check_limit(limit: int | None, flag: str, unit: str) -> None:
    """Refuse ``--limit`` below 1 (nothing would be done, and it would say it succeeded).

    Raises
    ------
    ConfigError
        ``limit`` is given and below 1; ``flag`` and ``unit`` (``"item per dataset"``) word it.
    """
    if limit is not None and limit < 1:
        msg = f"{flag} must be at least 1 {unit}, got {limit}"
        raise ConfigError(msg)
