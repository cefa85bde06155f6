"""Load a Hugging Face causal LM and its tokenizer from local files only (never downloads).

Shared by :class:`~hrefine.models.local_lm.LocalLM` and the SmolLM2 set-up in
:mod:`hrefine.models.smollm2`, which de-quantises a GGUF file through the same path.
"""

from __future__ import annotations

import inspect
import logging
from typing import TYPE_CHECKING, Any

from hrefine._optional import require
from hrefine.errors import ModelNotFoundError
from hrefine.models.device import native_bf16, pick_dtype

if TYPE_CHECKING:
    from hrefine.models.local_lm import LocalLM

__all__ = ["DTYPES", "load_once", "load_pretrained", "pass_options"]

logger = logging.getLogger(__name__)

#: Accepted ``dtype`` spellings → torch dtype names.
DTYPES = {
    "float32": "float32",
    "fp32": "float32",
    "bfloat16": "bfloat16",
    "bf16": "bfloat16",
    "float16": "float16",
    "fp16": "float16",
    "half": "float16",
}


def _torch_dtype(dtype: str | None, device: str) -> Any:
    import torch

    if dtype == "auto":
        return "auto"
    if dtype is None:
        return pick_dtype(device)
    if dtype == "native":  # bfloat16 only where the hardware multiplies it, else float32
        chosen = pick_dtype(device)
        return torch.bfloat16 if native_bf16(device) else chosen
    return getattr(torch, DTYPES[dtype])


def load_pretrained(
    path: str,
    *,
    gguf_file: str | None,
    device: str,
    dtype: str | None,
    attn_implementation: str,
) -> tuple[Any, Any]:
    """Load tokenizer and model from local files only, on ``device``, in eval mode.

    Parameters
    ----------
    path:
        A model folder, a name in the local Hugging Face cache, or the folder of ``gguf_file``.
    gguf_file:
        A GGUF checkpoint inside ``path``; its weights are de-quantised into a dense model.
    device:
        Torch device string.
    dtype:
        A key of :data:`DTYPES`, ``"auto"``, or ``None`` for the device's default.
    attn_implementation:
        The attention kernel (``"sdpa"``, ``"eager"``...).

    Returns
    -------
    tuple
        ``(tokenizer, model)``.

    Raises
    ------
    ModelNotFoundError
        When the files are not on disk.
    """
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    common: dict[str, Any] = {"local_files_only": True}
    if gguf_file:
        common["gguf_file"] = gguf_file
    model_kwargs: dict[str, Any] = dict(common, attn_implementation=attn_implementation)
    major, minor = (int(p) for p in transformers.__version__.split(".")[:2])
    dtype_key = "dtype" if (major, minor) >= (4, 56) else "torch_dtype"
    model_kwargs[dtype_key] = _torch_dtype(dtype, device)
    if gguf_file and hasattr(transformers, "GgufConfig"):
        # A dense model: LoRA and attention hooks need plain Linear layers, and it can be saved.
        model_kwargs["quantization_config"] = transformers.GgufConfig(dequantize=True)
    logger.info("Loading %s%s on %s", path, f" ({gguf_file})" if gguf_file else "", device)
    try:
        tokenizer: Any = AutoTokenizer.from_pretrained(path, **common)
        model: Any = AutoModelForCausalLM.from_pretrained(path, **model_kwargs)
    except (OSError, ValueError) as exc:  # ValueError: a folder with no model or tokenizer
        msg = (
            f"could not load the model {path!r}{f' / {gguf_file!r}' if gguf_file else ''} "
            f"from local files (hrefine never downloads; give a local folder or a name already "
            f"in the Hugging Face cache): {exc}"
        )
        raise ModelNotFoundError(msg) from exc
    model.to(device)
    model.eval()
    return tokenizer, model


def pass_options(model: Any) -> tuple[str, dict[str, int]]:
    """How to call ``model`` for one cached pass: its KV-cache keyword, and logits for one position.

    Returns
    -------
    tuple
        ``("cache" or "past_key_values", {"logits_to_keep": 1} or the older name, or {})``.
    """
    params = inspect.signature(type(model).forward).parameters
    # transformers 5 renames ``past_key_values`` to ``cache`` (the old name warns).
    cache_key = "cache" if "cache" in params else "past_key_values"
    for key in ("logits_to_keep", "num_logits_to_keep"):
        if key in params:
            return cache_key, {key: 1}
    return cache_key, {}


def load_once(lm: LocalLM) -> None:
    """Load ``lm``'s tokenizer and weights, once, under its lock (threads that ask together
    wait for the one load), after its ``prepare`` hook."""
    if lm._model is not None:
        return
    with lm._lock:
        if lm._model is not None:
            return
        require("torch", "models")
        require("transformers", "models")
        if lm._prepare is not None:
            lm._prepare(lm)
        tokenizer, model = load_pretrained(
            lm.model_name_or_path,
            gguf_file=lm.gguf_file,
            device=lm.device,
            dtype=lm._dtype,
            attn_implementation=lm.attn_implementation,
        )
        lm._cache_key, lm._logits_kwargs = pass_options(model)
        lm._tokenizer = tokenizer
        lm._model = model
