"""The output folder of a training run: what a run may write to (:func:`check_output`, nothing
written), its emptying for a fresh run, and the fingerprint that ties a checkpoint to its
examples and settings."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Sequence
from pathlib import Path

import hrefine.train._checkpoint as _checkpoint
from hrefine._folders import folder_problem, make_folder
from hrefine.errors import ConfigError
from hrefine.train.examples import Example
from hrefine.train.options import TrainOptions

__all__ = ["REPORT", "SPELLINGS", "check_output", "fingerprint", "prepare_out"]

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
    "python": {"overwrite": "overwrite=True", "resume": "resume=True", "steps": "max_steps"},
    "cli": {"overwrite": "--overwrite", "resume": "--resume", "steps": "--steps"},
}


def check_output(
    out: str | Path,
    examples: Sequence[Example],
    options: TrainOptions,
    *,
    overwrite: bool = False,
    resume: bool = False,
    spelling: str = "python",
) -> Path | None:
    """Check the output folder of a run before anything loads; nothing is written.

    Parameters
    ----------
    out, examples, options, overwrite, resume:
        As given to :func:`train`.
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
        ``out`` cannot be a folder; it is not empty (without ``overwrite`` or ``resume``); its
        checkpoint was made with other examples or settings, or already holds ``max_steps``
        steps or more.
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
    if out.is_dir() and any(out.iterdir()) and not overwrite:
        msg = (
            f"the output folder {out} exists and is not empty; pass {names['overwrite']} to "
            f"replace it, or {names['resume']} to go on from its last checkpoint"
        )
        raise ConfigError(msg)
    return None


def prepare_out(out: Path, *, overwrite: bool, from_checkpoint: Path | None) -> None:
    """Empty the output folder for a fresh run (when allowed), and make it with its parents."""
    if from_checkpoint is None and overwrite and out.is_dir() and any(out.iterdir()):
        shutil.rmtree(out)
    make_folder(out, "adapter")
