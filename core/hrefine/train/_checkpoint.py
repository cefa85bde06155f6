"""Checkpoints of a training run: everything needed to go on exactly where it stopped.

A checkpoint is a folder ``checkpoints/step-NNNNNN`` holding the adapter (PEFT's safetensors),
the optimizer's tensors (``optimizer.safetensors``), the random generators' states
(``rng.safetensors``) and ``state.json`` (the step, the scheduler's and gradient scaler's
states, the log so far, and the fingerprint of the data and settings). Nothing is pickled. The
folder is written under a temporary name and renamed, and ``state.json`` is written last, so a
run killed while saving leaves no checkpoint that looks complete; such a leftover temporary
folder is removed by the next run in the same output folder (:func:`remove_stale`).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from hrefine._atomic import write_text
from hrefine._json_lines import json_object
from hrefine.errors import ConfigError, PersistenceError

__all__ = [
    "CHECKPOINTS",
    "latest",
    "load",
    "prune",
    "read_state",
    "remove_stale",
    "rng_state",
    "save",
    "stale",
]

CHECKPOINTS = "checkpoints"
_STATE = "state.json"
_PREFIX = "step-"


def _step_of(folder: Path) -> int | None:
    name = folder.name
    if not name.startswith(_PREFIX) or not (folder / _STATE).is_file():
        return None
    try:
        return int(name[len(_PREFIX) :])
    except ValueError:
        return None


def _all(out: Path) -> list[tuple[int, Path]]:
    root = out / CHECKPOINTS
    if not root.is_dir():
        return []
    found = [(s, p) for p in root.iterdir() if p.is_dir() and (s := _step_of(p)) is not None]
    return sorted(found)


def stale(out: Path) -> list[Path]:
    """Temporary folders under ``out/checkpoints`` left by a run killed while saving."""
    root = out / CHECKPOINTS
    if not root.is_dir():
        return []
    return sorted(p for p in root.glob(f".{_PREFIX}*.tmp") if p.is_dir())


def remove_stale(out: Path) -> None:
    """Remove :func:`stale` folders (no run writes to ``out`` besides the one calling this)."""
    for folder in stale(out):
        shutil.rmtree(folder, ignore_errors=True)


def latest(out: Path) -> Path | None:
    """The newest complete checkpoint under ``out``, or None."""
    found = _all(out)
    return found[-1][1] if found else None


def _optimizer_tensors(state: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """AdamW's state dict as flat tensors (``"<param>/<name>"``) and a JSON-able rest."""
    import torch

    tensors: dict[str, Any] = {}
    for idx, per_param in state["state"].items():
        for name, value in per_param.items():
            t = value if torch.is_tensor(value) else torch.tensor(value)
            tensors[f"{idx}/{name}"] = t.detach().cpu().contiguous()
    return tensors, {"param_groups": state["param_groups"]}


def rng_state() -> dict[str, Any]:
    """The random generators' states now: the CPU's and each CUDA device's (when present)."""
    import torch

    rng = {"cpu": torch.get_rng_state()}
    if torch.cuda.is_available():
        for i, s in enumerate(torch.cuda.get_rng_state_all()):
            rng[f"cuda{i}"] = s
    return rng


def save(
    out: Path,
    step: int,
    *,
    model: Any,
    optimizer: Any,
    state: dict[str, Any],
    rng: dict[str, Any] | None = None,
) -> Path:
    """Write the checkpoint of ``step``; returns its folder.

    ``rng`` is the generators' states to go on with (:func:`rng_state` taken when ``step``
    finished); None takes them now.
    """
    from safetensors.torch import save_file

    root = out / CHECKPOINTS
    root.mkdir(parents=True, exist_ok=True)
    final = root / f"{_PREFIX}{step:06d}"
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".tmp", dir=root))
    try:
        model.save_pretrained(str(tmp))
        tensors, rest = _optimizer_tensors(optimizer.state_dict())
        save_file(tensors, str(tmp / "optimizer.safetensors"))
        save_file(rng_state() if rng is None else rng, str(tmp / "rng.safetensors"))
        write_text(tmp / _STATE, json.dumps({**state, "step": step, "optimizer": rest}))
        if final.exists():
            shutil.rmtree(final)
        os.rename(tmp, final)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return final


def read_state(folder: Path) -> dict[str, Any]:
    """``state.json`` of the checkpoint in ``folder`` (its step, fingerprint and log).

    Raises
    ------
    PersistenceError
        The file is missing, unreadable or not a JSON object.
    """
    try:
        return json_object((folder / _STATE).read_text(encoding="utf-8"), _STATE)
    except (OSError, ConfigError) as exc:  # ConfigError: not JSON, or not an object
        msg = f"cannot read the checkpoint {folder}: {exc}; remove it to resume from an older one"
        raise PersistenceError(msg) from exc


def load(folder: Path, *, optimizer: Any) -> dict[str, Any]:
    """Restore the optimizer and the random generators from ``folder``; returns its state.

    The adapter's weights are loaded by the caller (into its PEFT model).

    Raises
    ------
    PersistenceError
        A file of the checkpoint is missing or unreadable.
    """
    import torch
    from safetensors.torch import load_file

    state = read_state(folder)
    try:
        tensors = load_file(str(folder / "optimizer.safetensors"))
        rng = load_file(str(folder / "rng.safetensors"))
    except (OSError, ValueError) as exc:
        msg = f"cannot read the checkpoint {folder}: {exc}; remove it to resume from an older one"
        raise PersistenceError(msg) from exc
    per_param: dict[int, dict[str, Any]] = {}
    for key, value in tensors.items():
        idx, name = key.split("/", 1)
        per_param.setdefault(int(idx), {})[name] = value
    optimizer.load_state_dict({"state": per_param, **state["optimizer"]})
    torch.set_rng_state(rng["cpu"])
    cuda = [rng[k] for k in sorted(rng) if k.startswith("cuda")]
    if cuda and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(cuda)
    return state


def prune(out: Path, keep: int) -> None:
    """Remove all but the newest ``keep`` checkpoints."""
    for _, folder in _all(out)[:-keep]:
        shutil.rmtree(folder, ignore_errors=True)
