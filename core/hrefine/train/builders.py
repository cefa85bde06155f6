"""Build a task's examples from the evaluation data or a user's JSONL (:func:`build_examples`).

Builders only read the data they are pointed at. From the shared evaluation data they take the
tuning half of the documents by default (:func:`hrefine.eval.loaders.half_of`), so the checking
half stays unseen by any adapter trained on it; a user's JSONL (the shape
:func:`hrefine.eval.loaders.load_jsonl` reads: ``id``, ``question``, ``answers`` and ``document``
or ``doc``) is used whole.
"""

from __future__ import annotations

import dataclasses
import os
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from hrefine.errors import ConfigError
from hrefine.eval.loaders import EvalItem, half_of, load_dataset
from hrefine.train.examples import TASKS, Example

__all__ = ["DEFAULT_SOURCES", "BuildReport", "build_examples", "load_items"]

#: The evaluation datasets each task is built from when no source is named.
DEFAULT_SOURCES: dict[str, tuple[str, ...]] = {
    "html-pruner": ("wtq",),
    "query-analysis": (
        "wtq",
        "leval-nq",
        "leval-qasper",
        "leval-cuad",
        "leval-quality",
        "hotpotqa",
    ),
    "structuring": ("leval-qasper", "leval-nq", "leval-cuad", "wtq"),
    "global-selection": ("hotpotqa", "leval-qasper", "leval-nq", "leval-cuad"),
}

HalfChoice = Literal["tune", "check", "all"]


@dataclasses.dataclass
class BuildReport:
    """Built examples and what was left out."""

    examples: list[Example]
    """The examples, source by source."""
    items: int = 0
    """Questions read."""
    skipped: Counter[str] = dataclasses.field(default_factory=Counter)
    """Questions (or documents) that gave no example, by reason."""
    sources: list[str] = dataclasses.field(default_factory=list)
    """The datasets or files read, with the half used (``"wtq[tune]"``, ``"mine.jsonl"``)."""


def _is_file(source: str) -> bool:
    return source.endswith(".jsonl") or Path(source).suffix == ".jsonl"


def load_items(
    source: str,
    *,
    half: HalfChoice = "tune",
    data_dir: str | os.PathLike[str] | None = None,
    limit: int | None = None,
) -> tuple[list[EvalItem], str]:
    """The questions of one source and its label for reports.

    A dataset of the evaluation data keeps only the documents of ``half`` (``"all"``: both);
    a JSONL file is read whole. ``limit`` keeps a deterministic subset after that.
    """
    if half not in ("tune", "check", "all"):
        msg = f"half must be 'tune', 'check' or 'all', got {half!r}"
        raise ConfigError(msg)
    if _is_file(source):
        items = load_dataset(source)
        label = str(source)
    else:
        items = load_dataset(source, data_dir)
        if half != "all":
            items = [it for it in items if half_of(it.doc_id) == half]
        label = f"{items[0].dataset if items else source}[{half}]"
    if limit is not None:
        from hrefine.eval.loaders import subset

        items = subset(items, limit)
    return items, label


def build_examples(
    task: str,
    sources: Sequence[str] | None = None,
    *,
    half: HalfChoice = "tune",
    data_dir: str | os.PathLike[str] | None = None,
    limit: int | None = None,
    lm: Any = None,
    **builder_settings: Any,
) -> BuildReport:
    """Build the examples of ``task`` from datasets or JSONL files.

    Parameters
    ----------
    task:
        ``"html-pruner"``, ``"query-analysis"``, ``"structuring"`` or ``"global-selection"``.
    sources:
        Dataset names of the evaluation data or ``.jsonl`` paths; default
        :data:`DEFAULT_SOURCES` of the task.
    half:
        Which half of an evaluation dataset's documents to use (default the tuning half).
    data_dir:
        The evaluation data folder (default as :func:`hrefine.eval.loaders.default_data_dir`).
    limit:
        At most this many questions per source (a deterministic subset).
    lm:
        For ``"structuring"``: the model to be trained (a LocalLM, folder or name; default the
        embedded SmolLM2), whose tokenizer sizes windows and abbreviates paragraphs.
    builder_settings:
        Passed to the task's builder: ``max_tokens``/``fine_max_words``/``pruner`` for the
        pruner, ``options`` (LongRefinerOptions) for the LongRefiner tasks,
        ``max_sections`` for global selection.

    Returns
    -------
    BuildReport
        The examples and the counts of what was skipped.

    Raises
    ------
    ConfigError
        An unknown task or setting.
    """
    import hrefine.train.html_data as html_data
    import hrefine.train.refiner_data as refiner_data

    if task not in TASKS:
        msg = f"unknown task {task!r}; use one of {list(TASKS)}"
        raise ConfigError(msg)
    report = BuildReport(examples=[])
    for source in sources or DEFAULT_SOURCES[task]:
        items, label = load_items(source, half=half, data_dir=data_dir, limit=limit)
        report.items += len(items)
        report.sources.append(label)
        try:
            if task == "html-pruner":
                built = html_data.html_pruner_examples(
                    items, skipped=report.skipped, **builder_settings
                )
            elif task == "query-analysis":
                built = refiner_data.query_analysis_examples(
                    items, skipped=report.skipped, **builder_settings
                )
            elif task == "structuring":
                model = _lm(lm)

                def decode(ids: list[int], m: Any = model) -> str:
                    return str(m.tokenizer.decode(ids))

                built = refiner_data.structuring_examples(
                    items,
                    encode=model.encode,
                    decode=decode,
                    skipped=report.skipped,
                    **builder_settings,
                )
            else:
                built = refiner_data.global_selection_examples(
                    items, skipped=report.skipped, **builder_settings
                )
        except TypeError as exc:
            if "unexpected keyword argument" not in str(exc):
                raise
            msg = f"the {task} builder does not take that setting: {exc}"
            raise ConfigError(msg) from exc
        report.examples.extend(built)
    return report


def _lm(lm: Any) -> Any:
    if lm is None:
        from hrefine.models import default_lm

        return default_lm()
    if isinstance(lm, (str, os.PathLike)):
        from hrefine.models._lm_name import local_lm_from

        return local_lm_from(str(lm))
    return lm
