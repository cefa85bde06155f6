"""Supervised examples: one prompt (system + user message, as at inference) and its target.

Examples are model-agnostic: the chat template of the model being trained is applied by the
trainer, exactly as :meth:`hrefine.models.LocalLM.chat_prompt` applies it at inference. They are
stored as JSON Lines; a reader skips rows it cannot use and counts them, so one bad line in a
large file never stops a run.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hrefine._atomic import write_text
from hrefine.errors import ConfigError, DatasetUnavailableError

__all__ = ["TASKS", "Example", "ReadReport", "example_from_dict", "read_examples", "write_examples"]

#: The trainable tasks: HtmlRAG's generative pruner and LongRefiner's three steps.
TASKS = ("html-pruner", "query-analysis", "structuring", "global-selection")


@dataclass(frozen=True, kw_only=True)
class Example:
    """One supervised example."""

    task: str
    """One of :data:`TASKS`."""
    user: str
    """The user message, exactly as the inference code writes it."""
    target: str
    """What the model should answer (the tokens the loss is taken on)."""
    system: str | None = None
    """The system message, or None (the pruner's prompt has none)."""
    group: str = ""
    """The source document's id: the held-out split never separates one document's examples."""
    meta: Mapping[str, Any] = field(default_factory=dict)
    """Where the example came from (dataset, question id, the rule that labelled it ...)."""

    def to_dict(self) -> dict[str, Any]:
        """The example as one JSON-able row."""
        return {
            "task": self.task,
            "system": self.system,
            "user": self.user,
            "target": self.target,
            "group": self.group,
            "meta": dict(self.meta),
        }


@dataclass
class ReadReport:
    """The outcome of reading an examples file."""

    examples: list[Example]
    """The usable rows, in file order."""
    lines: int = 0
    """Non-blank lines read."""
    malformed: list[tuple[int, str]] = field(default_factory=list)
    """Rows skipped, with the reason: ``(line number, reason)``."""


def example_from_dict(row: Any, *, task: str | None = None) -> Example:
    """An :class:`Example` from one parsed row.

    Parameters
    ----------
    row:
        A mapping with non-empty ``user`` and ``target`` strings; ``system``, ``task``,
        ``group`` and ``meta`` are optional.
    task:
        The task the caller trains; a row naming another task is refused.

    Raises
    ------
    ConfigError
        The row is not an object, a required field is missing, empty or not a string, or it
        belongs to another task.
    """
    if not isinstance(row, Mapping):
        msg = f"expected a JSON object, got {type(row).__name__}"
        raise ConfigError(msg)
    for key in ("user", "target"):
        value = row.get(key)
        if not isinstance(value, str) or not value.strip():
            msg = f"field {key!r} must be a non-empty string, got {value!r:.60}"
            raise ConfigError(msg)
    system = row.get("system")
    if system is not None and not isinstance(system, str):
        msg = f"field 'system' must be a string or null, got {type(system).__name__}"
        raise ConfigError(msg)
    row_task = row.get("task", task)
    if row_task not in TASKS:
        msg = f"field 'task' must be one of {list(TASKS)}, got {row_task!r}"
        raise ConfigError(msg)
    if task is not None and row_task != task:
        msg = f"the row is a {row_task!r} example; this run trains {task!r}"
        raise ConfigError(msg)
    meta = row.get("meta") or {}
    if not isinstance(meta, Mapping):
        msg = f"field 'meta' must be an object, got {type(meta).__name__}"
        raise ConfigError(msg)
    return Example(
        task=str(row_task),
        user=row["user"],
        target=row["target"],
        system=system,
        # null is no group (as a missing one), not a group named "None".
        group="" if row.get("group") is None else str(row["group"]),
        meta=dict(meta),
    )


def read_examples(path: str | os.PathLike[str], *, task: str | None = None) -> ReadReport:
    """Read examples from a JSONL file, skipping and counting the rows that cannot be used.

    Parameters
    ----------
    path:
        The file: one JSON object per line in UTF-8 (see :meth:`Example.to_dict`); blank
        lines are ignored, a row that is not valid UTF-8 is skipped as malformed.
    task:
        Keep only rows of this task: a row of another task counts as malformed.

    Returns
    -------
    ReadReport
        The examples and the skipped rows with their reasons.

    Raises
    ------
    DatasetUnavailableError
        The file does not exist.
    """
    file = Path(path).expanduser()
    if not file.is_file():
        msg = f"no examples file at {file}; build one with `hrefine train build-data`"
        raise DatasetUnavailableError(msg)
    report = ReadReport(examples=[])
    with file.open("rb") as fh:
        for lineno, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            report.lines += 1
            try:
                # Strict: a replaced byte would train the adapter on text the file never held.
                line = raw.decode("utf-8")
                report.examples.append(example_from_dict(json.loads(line), task=task))
            except UnicodeDecodeError as exc:
                report.malformed.append((lineno, f"not UTF-8 (byte {exc.start + 1} of the row)"))
            except json.JSONDecodeError as exc:
                report.malformed.append((lineno, f"not JSON: {exc.msg}"))
            except ConfigError as exc:
                report.malformed.append((lineno, str(exc)))
    return report


def write_examples(path: str | os.PathLike[str], examples: Iterable[Example]) -> int:
    """Write examples as JSONL, atomically; returns how many were written."""
    rows: Sequence[Example] = list(examples)
    text = "".join(json.dumps(e.to_dict(), ensure_ascii=False) + "\n" for e in rows)
    write_text(path, text)
    return len(rows)
