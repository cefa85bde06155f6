"""LoRA fine-tuning for HtmlRAG's generative pruner and LongRefiner's three steps.

Build supervised examples from pages and documents whose answers are known
(:func:`build_examples`), train an adapter on them (:func:`train`), and load it into a
:class:`~hrefine.models.LocalLM` (``lm.load_adapter(out, name)``) for the pruner, or name it in
:class:`~hrefine.longrefiner.LongRefinerOptions` (``query_analysis_adapter=out`` ...). torch,
transformers and peft load only when a builder or the trainer runs.
"""

from __future__ import annotations

from hrefine.train.builders import DEFAULT_SOURCES, BuildReport, build_examples
from hrefine.train.examples import TASKS, Example, ReadReport, read_examples, write_examples
from hrefine.train.options import TrainOptions
from hrefine.train.trainer import TrainResult, train

__all__ = [
    "DEFAULT_SOURCES",
    "TASKS",
    "BuildReport",
    "Example",
    "ReadReport",
    "TrainOptions",
    "TrainResult",
    "build_examples",
    "read_examples",
    "train",
    "write_examples",
]
