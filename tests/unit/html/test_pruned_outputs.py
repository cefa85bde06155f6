"""The pruners keep what they kept before the core refactor, on every dev page.

``tests/data/pruned_outputs.json`` holds a SHA-256 of each output recorded before the change
(``python -m benchmarks.pruned_outputs --record``). The BM25 pruner is checked in every run (no
model: its output is the same on any machine); the embedding pruners (bfloat16 where the CPU
has it, and float32) and the generative stage in the slow tier, on the machine the record was
made on.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from benchmarks.pruned_outputs import RECORD, run


def _moved(kinds: tuple[str, ...]) -> list[str]:
    record = json.loads(RECORD.read_text(encoding="utf-8"))
    found = run(kinds)
    assert found, "no case was pruned"
    return [f"{c}: {record.get(c)} -> {v}" for c, v in found.items() if record.get(c) != v]


# The data is required: CI runs with ../shared beside the repo (see tests/conftest.py).
pytestmark = pytest.mark.usefixtures("shared_data")


def test_bm25_pruner_output_is_unchanged_on_every_dev_page() -> None:
    assert _moved(("bm25",)) == []


@pytest.mark.slow
def test_embedding_pruner_output_is_unchanged_on_every_dev_page() -> None:
    assert _moved(("embedding", "embedding-f32")) == []


@pytest.mark.slow
@pytest.mark.lm
def test_generative_stage_output_is_unchanged() -> None:
    assert _moved(("generative",)) == []
