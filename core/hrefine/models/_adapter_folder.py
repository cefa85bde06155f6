"""LoRA adapter folders named by a setting, loaded once into the LocalLM that runs them.

LongRefiner's ``*_adapter`` settings and HtmlPruner's ``generative_adapter`` name a folder; the
LM they load into is often shared by the whole process (:func:`~hrefine.models.default_lm`, or
one LocalLM per model folder). So an adapter is loaded under its setting's name (``"structuring"``)
when that name is free, under a numbered one (``"structuring_2"``) when another folder took it,
and a folder already loaded into an LM is not loaded twice: two refiners given two different
adapters never run each other's. Loading leaves the LM's default adapter as it was.
"""

from __future__ import annotations

import os
import threading
import weakref
from pathlib import Path
from typing import Any

from hrefine.errors import ModelNotFoundError

__all__ = ["check_adapter_folder", "load_adapter_once"]

# What PEFT writes: the config always, the weights in one of two formats.
_CONFIG = "adapter_config.json"
_FILES = (_CONFIG, "adapter_model.safetensors", "adapter_model.bin")

# Per LM: the folder (and its files' modification times) -> the name it was loaded under.
_LOADED: weakref.WeakKeyDictionary[Any, dict[tuple[str, tuple[int, ...]], str]] = (
    weakref.WeakKeyDictionary()
)
_LOCK = threading.Lock()


def check_adapter_folder(path: str | os.PathLike[str], setting: str) -> str:
    """``path`` as a str when it is a folder holding a PEFT adapter (``adapter_config.json``).

    Raises
    ------
    ModelNotFoundError
        When it is not (the message names ``setting``).
    """
    folder = Path(path)
    if not (folder / _CONFIG).is_file():
        what = "does not exist" if not folder.exists() else f"has no {_CONFIG}"
        msg = (
            f"{setting}={str(path)!r} {what}; give the folder of a LoRA adapter (one that "
            "`hrefine train` or PeftModel.save_pretrained wrote)"
        )
        raise ModelNotFoundError(msg)
    return str(path)


def _version(folder: Path) -> tuple[str, tuple[int, ...]]:
    # A folder trained again in place is another adapter: its files' times tell them apart.
    times = tuple((folder / f).stat().st_mtime_ns if (folder / f).exists() else 0 for f in _FILES)
    return os.path.realpath(folder), times


def load_adapter_once(lm: Any, path: str | os.PathLike[str], name: str, setting: str) -> str:
    """Load the adapter folder ``path`` into ``lm`` unless it is there already; its name.

    Parameters
    ----------
    lm:
        A :class:`~hrefine.models.LocalLM`.
    path:
        The adapter's folder.
    name:
        The name to load it under when free (else ``name_2``, ``name_3``...).
    setting:
        The setting that named the folder, for the error message.

    Returns
    -------
    str
        The name the adapter runs under (``adapter=`` or ``lm.using(...)``).

    Raises
    ------
    ModelNotFoundError
        ``path`` is not an adapter folder.
    """
    check_adapter_folder(path, setting)
    key = _version(Path(path))
    with _LOCK:
        try:
            known = _LOADED.setdefault(lm, {})
        except TypeError:  # an LM that cannot be weakly referenced: nothing remembered
            known = {}
        found = known.get(key)
        if found is not None and found in lm.adapters:
            return found
        taken = set(lm.adapters)
        chosen, n = name, 2
        while chosen in taken:
            chosen, n = f"{name}_{n}", n + 1
        before = lm.active_adapter
        lm.load_adapter(str(path), chosen)
        lm.set_adapter(before)  # loading makes it the default; calls name their adapter
        known[key] = chosen
        return chosen
