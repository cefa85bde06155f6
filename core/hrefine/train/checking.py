"""The ``hrefine eval`` command that checks a trained adapter in the method that loads it.

An adapter of each task runs in one evaluated method, named by one of its options:
``htmlrag-generative`` with ``generative_adapter`` (the pruner's stage 2), ``longrefiner-lm``
with ``query_analysis_adapter``, ``structuring_adapter`` or ``selection_adapter``. The trainer
records the command in ``train-report.json`` and ``hrefine train`` prints it; the same command
without the adapter's ``--option`` gives the base model's numbers to compare with.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from hrefine.errors import ConfigError
from hrefine.train.examples import TASKS

__all__ = ["EVAL_TARGETS", "EvalTarget", "eval_command"]


@dataclass(frozen=True)
class EvalTarget:
    """Where a task's adapter is evaluated."""

    method: str
    """The ``hrefine eval`` method that runs the adapter."""
    option: str
    """The method's option that names the adapter's folder."""
    datasets: tuple[str, ...]
    """The evaluation datasets the check runs on by default."""
    extra: tuple[tuple[str, str], ...] = ()
    """Further options the check needs (``structure=model``: a structuring adapter only runs
    on documents the model structures).
    """


#: Each task's method, option and default datasets in ``hrefine eval``.
EVAL_TARGETS: dict[str, EvalTarget] = {
    "html-pruner": EvalTarget("htmlrag-generative", "generative_adapter", ("wtq",)),
    "query-analysis": EvalTarget(
        "longrefiner-lm", "query_analysis_adapter", ("hotpotqa", "leval-nq")
    ),
    "structuring": EvalTarget(
        "longrefiner-lm",
        "structuring_adapter",
        ("leval-qasper",),
        (("structure", "model"),),
    ),
    "global-selection": EvalTarget(
        "longrefiner-lm", "selection_adapter", ("hotpotqa", "leval-qasper")
    ),
}


def eval_command(
    task: str,
    adapter: str | os.PathLike[str],
    *,
    lm: str | os.PathLike[str] | None = None,
    datasets: Sequence[str] | None = None,
    limit: int | None = 50,
    half: str | None = "check",
) -> str:
    """The shell command that evaluates the adapter in ``adapter`` with ``hrefine eval``.

    Parameters
    ----------
    task:
        One of :data:`~hrefine.train.examples.TASKS`.
    adapter:
        The adapter's folder (the trainer's output folder).
    lm:
        The base model the adapter was trained on (a folder or cached name); None: the
        embedded SmolLM2, which both methods use by default.
    datasets:
        Datasets or question JSONL files to evaluate on (default: the task's
        :data:`EVAL_TARGETS` datasets).
    limit:
        Questions per dataset (``--limit``); None: all.
    half:
        ``--half`` of the evaluation datasets (``"check"``: the documents the default
        training data leaves out); None leaves it out.

    Returns
    -------
    str
        One line, quoted for a POSIX shell.

    Raises
    ------
    ConfigError
        An unknown task.
    """
    target = EVAL_TARGETS.get(task)
    if target is None:
        msg = f"unknown task {task!r}; use one of {', '.join(TASKS)}"
        raise ConfigError(msg)
    words = ["hrefine", "eval", "--method", target.method]
    words += ["--dataset", ",".join(datasets or target.datasets)]
    if half is not None:
        words += ["--half", half]
    if limit is not None:
        words += ["--limit", str(limit)]
    words += ["--option", f"{target.option}={os.fspath(adapter)}"]
    if lm is not None:
        words += ["--option", f"lm={os.fspath(lm)}"]
    for key, value in target.extra:
        words += ["--option", f"{key}={value}"]
    words += ["--name", f"{task}-adapter"]
    return shlex.join(words)
