"""A generative LM given by name or folder, made into a :class:`~hrefine.models.LocalLM`.

Looked for on disk when asked for (a missing model fails then, with a hint); the weights load on
first use or warm-up. Pruners given the same name share one LocalLM, so its weights load once.
"""

from __future__ import annotations

import functools
import os
from typing import Any

from hrefine.models._local_files import require_local_model

__all__ = ["local_lm_from", "model_or_name"]


def local_lm_from(name_or_path: str | os.PathLike[str]) -> Any:
    """The :class:`~hrefine.models.LocalLM` of a model folder or a Hugging Face cached name.

    The embedded model's own names (``"HuggingFaceTB/SmolLM2-135M-Instruct"``,
    ``"smollm2-135m-instruct"``) give :func:`~hrefine.models.default_lm`, which needs no
    Hugging Face cache; a packaged model's name (``"qwen2.5-coder-1.5b"``, see
    :mod:`hrefine.models.packaged`) gives its converted copy.

    Raises
    ------
    ModelNotFoundError
        Neither a folder nor in the Hugging Face cache, or a packaged model that is not
        installed (the message names the install command).
    """
    if isinstance(name_or_path, str) and not os.path.exists(name_or_path):
        from hrefine.models.packaged import find_packaged, packaged_lm
        from hrefine.models.smollm2 import SMOLLM2_NAME, default_lm

        if name_or_path.strip().lower() in {SMOLLM2_NAME, f"huggingfacetb/{SMOLLM2_NAME}"}:
            return default_lm()
        packaged = find_packaged(name_or_path, "lm")
        if packaged is not None:
            return packaged_lm(packaged.name)
    where = require_local_model(name_or_path, "generative LM")
    return _shared(where)


def model_or_name(value: Any) -> Any:
    """``value`` itself, or the LocalLM it names when it is a str or a path: every method takes
    ``lm="qwen2.5-coder-1.5b"`` (or a folder) wherever it takes a model object."""
    if isinstance(value, (str, os.PathLike)):
        return local_lm_from(value)
    return value


@functools.lru_cache(maxsize=4)
def _shared(where: str) -> Any:
    from hrefine.models.local_lm import LocalLM

    return LocalLM(where)
