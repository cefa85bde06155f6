"""LoRA fine-tuning for HtmlRAG's generative pruner and LongRefiner's three steps.

Build supervised examples from pages and documents whose answers are known
(:func:`build_examples`), train an adapter on them (:func:`train`), name it in
:class:`~hrefine.html.HtmlPrunerOptions` (``generative_adapter=out``) or
:class:`~hrefine.longrefiner.LongRefinerOptions` (``query_analysis_adapter=out`` ...), and check
it with ``hrefine eval`` (:func:`eval_command` writes the command). torch, transformers and peft
load only when a builder or the trainer runs.
"""

from __future__ import annotations

from hrefine.train.builders import DEFAULT_SOURCES, BuildReport, build_examples
from hrefine.train.checking import eval_command
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
    "eval_command",
    "read_examples",
    "train",
    "write_examples",
]
