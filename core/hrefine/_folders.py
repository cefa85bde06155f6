"""Output folders that are made with their missing parents, checked before any work starts.

Every writer of hrefine (``train``, the CLI's ``-o``/``--out``, ``distributed``, ``save``) makes
the parents of its output as ``mkdir -p`` does. What cannot work (a file where a folder must
go, a folder that cannot be written to) is found first, so the models never load for nothing.
"""

from __future__ import annotations

import os
from pathlib import Path

from hrefine.errors import ConfigError

__all__ = ["folder_problem", "make_folder"]


def folder_problem(path: Path) -> str:
    """Why ``path`` could not be (or become) a folder, with its missing parents; "" when it can.

    Nothing is made: the nearest part of ``path`` that exists must be a folder that can be
    written to (or ``path`` itself, a folder).
    """
    if path.exists():
        return "" if path.is_dir() else "it is a file; give a folder"
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                return f"{parent} is a file, not a folder"
            if not os.access(parent, os.W_OK | os.X_OK):
                return f"permission denied in {parent}"
            return ""
    return ""


def make_folder(path: Path, what: str) -> None:
    """Make folder ``path`` and its missing parents.

    Raises
    ------
    ConfigError
        ``path`` cannot be a folder (see :func:`folder_problem`), or making it failed.
    """
    problem = folder_problem(path)
    if not problem:
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            problem = exc.strerror or str(exc)
    if problem:
        msg = f"could not make the {what} folder {path}: {problem}"
        raise ConfigError(msg)
