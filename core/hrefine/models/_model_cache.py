"""Folders of models that hrefine converts once and keeps under its cache.

A folder is built in a temporary sibling and renamed into place, with a marker file written
last, so a crash or a second process never leaves a half-written folder that looks complete.
Used by the embedded SmolLM2 (:mod:`hrefine.models.smollm2`) and the optional packaged models
(:mod:`hrefine.models.packaged`).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hrefine.models._hf_load import load_pretrained

__all__ = ["COMPLETE_MARKER", "build_folder", "cache_root", "convert_gguf", "is_complete"]

logger = logging.getLogger(__name__)

#: Written last into a finished folder; a folder without it is never used.
COMPLETE_MARKER = "hrefine-model.json"


def cache_root() -> Path:
    """The hrefine cache: ``$HREFINE_CACHE``, else ``~/.cache/hrefine``."""
    root = os.environ.get("HREFINE_CACHE")
    return Path(root).expanduser() if root else Path.home() / ".cache" / "hrefine"


def is_complete(folder: Path) -> bool:
    """Whether ``folder`` is a finished model folder (its marker is there)."""
    return (folder / COMPLETE_MARKER).is_file()


def build_folder(target: Path, fill: Callable[[Path], dict[str, Any]]) -> None:
    """Build ``target`` once: ``fill`` writes the files into a temporary folder and returns the
    facts to record in the marker, then the folder is renamed into place.

    Nothing happens when ``target`` is already complete. A folder at ``target`` without the
    marker (a foreign or damaged one) is replaced. When another process finishes first, its
    folder is kept.

    Raises
    ------
    OSError
        The cache folder cannot be written.
    """
    if is_complete(target):
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    try:
        facts = fill(tmp)
        marker = {"format": 1, **facts}
        (tmp / COMPLETE_MARKER).write_text(json.dumps(marker, indent=1), encoding="utf-8")
        if target.exists() and not is_complete(target):
            shutil.rmtree(target)  # a foreign or damaged folder, never a finished one
        try:
            os.rename(tmp, target)
        except OSError:
            if not is_complete(target):  # another process did not win the race either
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def convert_gguf(gguf: Path, out: Path) -> None:
    """De-quantise the GGUF checkpoint ``gguf`` into a plain Hugging Face folder ``out``
    (float32 safetensors, the tokenizer with its chat template), loadable in seconds."""
    tokenizer, model = load_pretrained(
        str(gguf.parent),
        gguf_file=gguf.name,
        device="cpu",
        dtype="float32",
        attn_implementation="eager",
    )
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    logger.info("Converted %s into %s", gguf.name, out)
