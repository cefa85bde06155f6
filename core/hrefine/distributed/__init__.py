"""Corpus scale: hrefine's core functions as Ray Data stages (extra ``distributed``).

Each stage reads JSONL or Parquet (local or any filesystem Ray reads), runs one core function
per row in an actor pool (one model load per actor, one GPU per actor when the cluster has
GPUs) and writes Parquet with provenance columns. A record the core cannot process goes to the
error output with its reason; a rerun skips every id the output already holds.

>>> from hrefine.distributed import run_stage
>>> report = run_stage("html", "pages.jsonl", "out/pages")  # doctest: +SKIP
>>> report.ok, report.errors  # doctest: +SKIP

Importing this package does not import Ray; the first run does.
"""

from __future__ import annotations

from hrefine.distributed.cluster import (
    OFFLINE_ENV,
    ActorPlan,
    connect,
    offline_runtime_env,
    plan_actors,
)
from hrefine.distributed.groups import (
    GarlicStage,
    GroupStage,
    RaptorStage,
    garlic_graph_from_row,
    raptor_tree_from_row,
)
from hrefine.distributed.io import ERROR, OK, OutputState, output_state, read_corpus, read_output
from hrefine.distributed.pipeline import DEFAULT_TEXT_COLUMNS, RunReport, run_stage
from hrefine.distributed.stages import STAGES, HtmlStage, RefineStage, Stage, StructureStage

__all__ = [
    "DEFAULT_TEXT_COLUMNS",
    "ERROR",
    "OFFLINE_ENV",
    "OK",
    "STAGES",
    "ActorPlan",
    "GarlicStage",
    "GroupStage",
    "HtmlStage",
    "OutputState",
    "RaptorStage",
    "RefineStage",
    "RunReport",
    "Stage",
    "StructureStage",
    "connect",
    "garlic_graph_from_row",
    "offline_runtime_env",
    "output_state",
    "plan_actors",
    "raptor_tree_from_row",
    "read_corpus",
    "read_output",
    "run_stage",
]
