"""Whether a Hugging Face model is on this machine, answered without loading it.

Models named by the user (a cross-encoder, a generative LM) are looked for when the object that
uses them is made, so a missing one fails there with a hint instead of at the first call, after
the page has been cleaned and scored. Only the folder and the Hugging Face cache are read;
nothing is imported from transformers and nothing is downloaded.
"""

from __future__ import annotations

import os
from pathlib import Path

from hrefine.errors import ConfigError, ModelNotFoundError

__all__ = ["cached_file", "require_local_model"]


def cached_file(repo_id: str, filename: str) -> Path | None:
    """``filename`` of the model ``repo_id`` in the local Hugging Face cache, or None.

    The cache is the one ``huggingface_hub`` uses (``HF_HUB_CACHE``, ``HF_HOME``); a name
    that is not a valid repository id is not there.
    """
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # no hub client: nothing can be in its cache
        return None
    try:
        found = try_to_load_from_cache(repo_id, filename)
    except ValueError:  # HFValidationError: not a repository id ("a b", "../x"...)
        return None
    return Path(found) if isinstance(found, str) else None


def _hub_cache() -> str:
    """The Hugging Face cache folder, for messages."""
    try:
        from huggingface_hub.constants import HF_HUB_CACHE
    except ImportError:
        return "~/.cache/huggingface/hub"
    return str(HF_HUB_CACHE)


def require_local_model(
    name_or_path: str | os.PathLike[str], what: str, *, marker: str = "config.json"
) -> str:
    """Check that a model is a local folder or in the Hugging Face cache.

    Parameters
    ----------
    name_or_path:
        A folder, or a model name such as ``"cross-encoder/ms-marco-MiniLM-L-6-v2"``.
    what:
        What the model is for, in the message (``"cross-encoder"``, ``"generative LM"``).
    marker:
        A file every such model has, looked for in the cache.

    Returns
    -------
    str
        ``name_or_path`` as a string (a folder with ``~`` expanded).

    Raises
    ------
    ConfigError
        ``name_or_path`` is empty or blank.
    ModelNotFoundError
        Neither a folder nor in the cache; the message says where it looked and what to do.
    """
    text = os.fspath(name_or_path)
    if not text.strip():  # Path("") is the working folder: it would load whatever is there
        msg = f"the {what}'s name is empty; give a model folder or name"
        raise ConfigError(msg)
    folder = Path(text).expanduser()
    if folder.is_dir():
        return str(folder)
    if cached_file(text, marker) is not None:
        return text
    if _looks_like_path(text):  # a folder that is not there: no hub command fetches a path
        msg = (
            f"{what} {text!r} is not a folder on this machine; hrefine never downloads models: "
            "give the folder that holds the model's files, or a model name already in the "
            f"Hugging Face cache ({_hub_cache()})"
        )
        raise ModelNotFoundError(msg)
    msg = (
        f"{what} {text!r} is neither a local folder nor a model in the Hugging Face cache "
        f"({_hub_cache()}); hrefine never downloads models: pass a folder, or fetch it once "
        f"with `huggingface-cli download {text}` (or set HF_HOME to the cache that has it)"
    )
    raise ModelNotFoundError(msg)


def _looks_like_path(text: str) -> bool:
    """Whether ``text`` is written as a path (``/models/x``, ``./x``, ``~/x``, ``C:\\x``) rather
    than a hub name (``owner/name``)."""
    stripped = text.strip()
    return (
        stripped.startswith(("/", "./", "../", "~", "\\"))
        or (len(stripped) > 1 and stripped[1] == ":")
        or stripped.count("/") > 1
        or "\\" in stripped
    )
