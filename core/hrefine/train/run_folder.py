"""The output folder of a training run: what a run may write to (:func:`check_output`, nothing
written), its emptying for a fresh run, and the fingerprint that ties a checkpoint to its
examples and settings (its base model is recorded beside it, see :mod:`._base`)."""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import hrefine.train._base as _base
import hrefine.train._checkpoint as _checkpoint
from hrefine._folders import folder_problem, make_folder
from hrefine.errors import ConfigError
from hrefine.train.examples import Example
from hrefine.train.options import TrainOptions

__all__ = ["REPORT", "SPELLINGS", "check_output", "fingerprint", "prepare_out"]

logger = logging.getLogger(__name__)

#: The run's report, written last in the output folder.
REPORT = "train-report.json"


def fingerprint(examples: Sequence[Example], options: TrainOptions) -> str:
    """SHA-256 of the examples and the settings a resume must keep."""
    h = hashlib.sha256()
    for e in examples:
        h.update(json.dumps(e.to_dict(), sort_keys=True, ensure_ascii=False).encode("utf-8"))
        h.update(b"\n")
    plain = options.plain()
    # These may change between a run and its resume (max_steps: a resume goes on to more).
    for name in ("progress", "eval_every", "save_every", "keep_checkpoints", "device", "max_steps"):
        plain.pop(name, None)
    plain["target_modules"] = list(options.target_modules)
    h.update(json.dumps(plain, sort_keys=True).encode("utf-8"))
    return h.hexdigest()


#: How messages name the settings of the output folder: :func:`train`'s keywords, or the flags
#: of ``hrefine train`` (a command line must not be told to pass ``overwrite=True``).
SPELLINGS: dict[str, dict[str, str]] = {
    "python": {
        "overwrite": "overwrite=True",
        "resume": "resume=True",
        "steps": "max_steps",
        "lm": "lm",
    },
    "cli": {"overwrite": "--overwrite", "resume": "--resume", "steps": "--steps", "lm": "--lm"},
}


def _check_base(found: Path, state: dict[str, Any], lm: Any, names: dict[str, str]) -> None:
    """Refuse a resume of the checkpoint ``found`` on another base model than its own."""
    saved = state.get("base_model")
    if not isinstance(saved, dict):
        # Written before checkpoints recorded their base model: resumed, unchecked.
        logger.warning("the checkpoint %s does not say its base model; it is not checked", found)
        return
    differs = _base.difference(saved, _base.identity(_base.lm_of(lm)))
    if differs:
        msg = (
            f"the checkpoint {found} was made on another base model ({differs}); resume with "
            f"the same {names['lm']}, or train anew with {names['overwrite']} (without "
            f"{names['resume']})"
        )
        raise ConfigError(msg)


def _holds_anything(out: Path) -> bool:
    """Whether ``out`` holds more than the temporary folders of a run killed while saving."""
    if not out.is_dir():
        return False
    stale = set(_checkpoint.stale(out))
    for entry in out.iterdir():
        if entry.name == _checkpoint.CHECKPOINTS and entry.is_dir():
            if any(p not in stale for p in entry.iterdir()):
                return True
        else:
            return True
    return False


def check_output(
    out: str | Path,
    examples: Sequence[Example],
    options: TrainOptions,
    *,
    overwrite: bool = False,
    resume: bool = False,
    spelling: str = "python",
    lm: Any = None,
) -> Path | None:
    """Check the output folder of a run before anything loads; nothing is written.

    Parameters
    ----------
    out, examples, options, overwrite, resume, lm:
        As given to :func:`train` (``lm`` is looked at only when a checkpoint is resumed).
    spelling:
        ``"python"`` or ``"cli"``: whether messages name :func:`train`'s keywords or the flags
        of ``hrefine train`` (:data:`SPELLINGS`).

    Returns
    -------
    Path | None
        The checkpoint a resume goes on from (None: a fresh run).

    Raises
    ------
    ConfigError
        ``out`` cannot be a folder; it is not empty (without ``overwrite``, or ``resume`` and a
        checkpoint); its checkpoint was made with other examples, settings or base model, or
        already holds ``max_steps`` steps or more. (The temporary folder of a run killed while
        saving a checkpoint does not count.)
    """
    names = SPELLINGS[spelling]
    out = Path(out).expanduser()
    problem = folder_problem(out)
    if problem:
        msg = f"cannot write the adapter to {out}: {problem}"
        raise ConfigError(msg)
    if resume:
        found = _checkpoint.latest(out)
        if found is not None:
            state = _checkpoint.read_state(found)
            step = int(state.get("step", 0))
            if state.get("fingerprint") != fingerprint(examples, options):
                msg = (
                    f"the checkpoint {found} was made with other examples or settings; resume "
                    f"with the same data and options, or train anew with {names['overwrite']} "
                    f"(without {names['resume']})"
                )
                raise ConfigError(msg)
            _check_base(found, state, lm, names)
            if step >= options.max_steps:
                msg = (
                    f"{out} holds a run of {step} steps already; give {names['steps']} above "
                    f"{step} to go on, or {names['overwrite']} to train anew"
                )
                raise ConfigError(msg)
            return found
        if (out / REPORT).is_file() and not overwrite:
            msg = (
                f"{out} holds a finished run with no checkpoint to go on from; pass "
                f"{names['overwrite']} to train anew"
            )
            raise ConfigError(msg)
    if not overwrite and _holds_anything(out):
        if resume:
            msg = (
                f"the output folder {out} is not empty and holds no checkpoint to go on from; "
                f"pass {names['overwrite']} to replace it"
            )
        else:
            msg = (
                f"the output folder {out} exists and is not empty; pass {names['overwrite']} "
                f"to replace it, or {names['resume']} to go on from its last checkpoint"
            )
        raise ConfigError(msg)
    return None


def prepare_out(out: Path, *, overwrite: bool, from_checkpoint: Path | None) -> None:
    """Empty the output folder for a fresh run (when allowed), and make it with its parents;
    the temporary folders of a run killed while saving a checkpoint are removed."""
    if from_checkpoint is None and overwrite and out.is_dir() and any(out.iterdir()):
        shutil.rmtree(out)
    make_folder(out, "adapter")
    _checkpoint.remove_stale(out)
