"""The base model of a training run: the LM given to :func:`~hrefine.train.train`, and the
identity a checkpoint records of it, so that a resume on another base model is refused (an
adapter trained some steps on one model and the rest on another is neither's)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

__all__ = ["difference", "identity", "lm_of"]


def lm_of(lm: Any) -> Any:
    """The :class:`~hrefine.models.LocalLM` of ``lm``: itself, the one a folder or name gives,
    or the embedded default for None. Nothing loads yet."""
    if lm is None:
        from hrefine.models import default_lm

        return default_lm()
    if isinstance(lm, (str, Path)):
        from hrefine.models._lm_name import local_lm_from

        return local_lm_from(str(lm))
    return lm


def _config_file(name_or_path: str) -> Path | None:
    """The model's ``config.json``: in its folder, or in the Hugging Face cache for a name."""
    folder = Path(name_or_path).expanduser()
    if folder.is_dir():
        config = folder / "config.json"
        return config if config.is_file() else None
    try:
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(name_or_path, "config.json")
    except (ImportError, ValueError, OSError):  # no hub, or not a repository's name
        return None
    return Path(found) if isinstance(found, str) else None


def identity(lm: Any) -> dict[str, Any]:
    """What a checkpoint records of its base model ``lm`` (a LocalLM): its folder (absolute) or
    name, its GGUF file, and the SHA-256 of its ``config.json`` (None when it has none yet,
    as the embedded model before its first conversion). The weights are not hashed: too slow
    for a model of gigabytes, and a folder or name with the same config is taken as the same."""
    name = str(lm.model_name_or_path)
    folder = Path(name).expanduser()
    config = _config_file(name)
    return {
        "model": str(folder.resolve()) if folder.exists() else name,
        "gguf_file": lm.gguf_file,
        "config_sha256": hashlib.sha256(config.read_bytes()).hexdigest() if config else None,
    }


def difference(saved: dict[str, Any], now: dict[str, Any]) -> str | None:
    """How the base model ``now`` differs from the checkpoint's ``saved`` one (None: it does
    not); a config hash unknown on either side is not compared."""
    if saved.get("model") != now["model"]:
        return f"the checkpoint's is {saved.get('model')}, this run's {now['model']}"
    if saved.get("gguf_file") != now["gguf_file"]:
        return (
            f"the checkpoint's GGUF file is {saved.get('gguf_file')}, this run's {now['gguf_file']}"
        )
    old, new = saved.get("config_sha256"), now["config_sha256"]
    if old and new and old != new:
        return f"the config.json of {now['model']} changed since the checkpoint was made"
    return None
