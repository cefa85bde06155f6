"""Shared fixtures: the evaluation data folder and the embedded models, loaded once per session."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hrefine._numba_target import hold_to_avx2

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# What the first UMAP of a process does (numba compiled for AVX2 where the CPU has it), done
# before any test can import numba itself: the clusters are then those of every x86-64 CPU.
hold_to_avx2()

REPO = Path(__file__).resolve().parents[1]


def data_dir() -> Path:
    """The shared evaluation data (``../shared/data`` beside the repo, or ``$HREFINE_DATA``)."""
    return Path(os.environ.get("HREFINE_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    path = data_dir()
    if not path.is_dir():
        pytest.fail(f"evaluation data not found at {path}; put ../shared beside the repo")
    return path


@pytest.fixture(scope="session")
def embedder():  # type: ignore[no-untyped-def]
    from hrefine.models import default_embedder

    return default_embedder()
