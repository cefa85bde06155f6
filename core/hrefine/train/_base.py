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


#: Files whose bytes are a model's weights (a folder may hold several shards).
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".gguf", ".pt", ".pth")
# Bytes read of each weight file: enough places that two trainings of one architecture, whose
# files share their size and header, differ in them; few enough that a checkpoint of a model
# of gigabytes is checked in milliseconds.
_SAMPLES = 16
_SAMPLE_BYTES = 64 * 1024


def _weights_sha256(folder: Path) -> str | None:
    """SHA-256 over each weight file's name, size and 16 slices of 64 KiB spread over it
    (the first and last among them); None when ``folder`` holds no weight file."""
    files = sorted(f for f in folder.iterdir() if f.is_file() and f.name.endswith(_WEIGHT_SUFFIXES))
    if not files:
        return None
    h = hashlib.sha256()
    for f in files:
        size = f.stat().st_size
        h.update(f"{f.name}\0{size}\0".encode())
        last = max(0, size - _SAMPLE_BYTES)
        with f.open("rb") as read:
            for k in range(_SAMPLES):
                read.seek(last * k // (_SAMPLES - 1))
                h.update(read.read(_SAMPLE_BYTES))
    return h.hexdigest()


def identity(lm: Any) -> dict[str, Any]:
    """What a checkpoint records of its base model ``lm`` (a LocalLM): its folder (absolute) or
    name, its GGUF file, the SHA-256 of its ``config.json`` and, for a folder, a SHA-256 of
    its weight files' names, sizes and slices (None where there is none yet, as the embedded
    model before its first conversion). The weights are sampled, not read whole: a model of
    gigabytes is checked in milliseconds."""
    name = str(lm.model_name_or_path)
    folder = Path(name).expanduser()
    config = _config_file(name)
    return {
        "model": str(folder.resolve()) if folder.exists() else name,
        "gguf_file": lm.gguf_file,
        "config_sha256": hashlib.sha256(config.read_bytes()).hexdigest() if config else None,
        "weights_sha256": _weights_sha256(folder) if folder.is_dir() else None,
    }


def _moved(saved: dict[str, Any], now: dict[str, Any]) -> bool:
    """Whether ``now`` is the checkpoint's model in another folder: the same GGUF file,
    ``config.json`` and weights, each known on both sides."""
    same = ("gguf_file", "config_sha256", "weights_sha256")
    return (
        now["config_sha256"] is not None
        and now["weights_sha256"] is not None
        and all(saved.get(key) == now[key] for key in same)
    )


def difference(saved: dict[str, Any], now: dict[str, Any]) -> str | None:
    """How the base model ``now`` differs from the checkpoint's ``saved`` one (None: it does
    not); a hash unknown on either side is not compared. A folder that was moved or
    copied (the same config and weights) is the same model."""
    if saved.get("model") != now["model"] and not _moved(saved, now):
        return f"the checkpoint's is {saved.get('model')}, this run's {now['model']}"
    if saved.get("gguf_file") != now["gguf_file"]:
        return (
            f"the checkpoint's GGUF file is {saved.get('gguf_file')}, this run's {now['gguf_file']}"
        )
    old, new = saved.get("config_sha256"), now["config_sha256"]
    if old and new and old != new:
        return f"the config.json of {now['model']} changed since the checkpoint was made"
    old, new = saved.get("weights_sha256"), now["weights_sha256"]
    if old and new and old != new:
        return f"the weights in {now['model']} changed since the checkpoint was made"
    return None
