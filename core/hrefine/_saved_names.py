"""Model settings read from a saved folder: names, or files inside that folder, never paths
elsewhere (see :meth:`hrefine.options.Options.from_saved`).

A saved tree, graph or index records its plain settings, and a model setting saved as a string
(``tokenizer``, ``embedder``) is opened when the save is loaded. A forged folder could so make a
load read any file on disk (``tokenizer='/etc/passwd'``) or load a model folder from elsewhere,
silently. On load a saved model setting may therefore only be

- a name the loaders resolve without a path of the caller's disk: ``"regex"``, a tiktoken
  encoding, a model name in the Hugging Face cache (``"BAAI/bge-small-en-v1.5"``), provided no
  file or folder of that name lies in the working directory (it would be opened instead), or
- a file or folder inside the saved folder itself (after links are followed).

Anything else is a :class:`~hrefine.errors.PersistenceError` telling the caller to pass the
model to the load, whose value then wins and the saved one is not looked at.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from hrefine.errors import PersistenceError

__all__ = ["saved_model"]

# A model name as the Hugging Face hub spells one ("name" or "owner/name"); tiktoken names and
# hrefine's own ("regex", "llama-3.2") are of this shape too. No part starts with a dot, so no
# "..", and there is no "~", "\\" or ":" (a home folder, a Windows path, a drive).
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*(?:/[A-Za-z0-9][A-Za-z0-9_.-]*)?")


def saved_model(name: str, value: object, *, where: str, folder: Path | None, load: str) -> object:
    """The saved model setting ``name`` as it may be used, or a PersistenceError.

    Parameters
    ----------
    name:
        The setting (``"tokenizer"``, ``"embedder"``, ``"llm"``).
    value:
        Its saved value.
    where:
        The save, in messages.
    folder:
        The saved folder: a file inside it may be named (its absolute path is returned). None:
        names only (a framework's store).
    load:
        How the caller passes the model to the load instead, with ``{name}`` for the setting
        (``"RaptorTree.load(path, {name}=...)"``).

    Raises
    ------
    PersistenceError
        ``value`` is not a string, or names a path outside ``folder``, or is no model name.
    """
    if value is None:
        return None
    hint = load.format(name=name)
    if not isinstance(value, str):
        msg = (
            f"{where}: its saved {name} is a {type(value).__name__}, not a model name; pass "
            f"the {name} to the load instead: {hint}"
        )
        raise PersistenceError(msg)
    inside = _inside(value, folder)
    if inside is not None:
        return inside
    if _NAME.fullmatch(value) and not os.path.lexists(value) and not _in_folder(value, folder):
        return value
    msg = (
        f"{where}: its saved {name} {value!r:.120} is a path outside the saved folder (or no "
        f"model name), so it was not opened; a save may name only model names and files "
        f"inside itself: pass the {name} to the load instead: {hint}"
    )
    raise PersistenceError(msg)


def _in_folder(value: str, folder: Path | None) -> bool:
    """Whether ``value`` is a relative path (no "..") to something in ``folder``."""
    if folder is None or not value or os.path.isabs(value) or value.startswith("~"):
        return False
    return ".." not in Path(value).parts and os.path.lexists(folder / value)


def _inside(value: str, folder: Path | None) -> str | None:
    """``value`` as the absolute path of a file or folder inside ``folder``, or None (a link
    in the folder that leads out of it is None too: it names a path elsewhere)."""
    if folder is None or not _in_folder(value, folder):
        return None
    resolved = (folder / value).resolve()
    return str(resolved) if resolved.is_relative_to(folder.resolve()) else None
