"""End-to-end fixtures: the embedded models, loaded once per session."""

from __future__ import annotations

import pytest
from hrefine.models.local_lm import LocalLM
from lm_fixture import load_default_lm


@pytest.fixture(scope="session")
def lm() -> LocalLM:
    """The embedded SmolLM2 (shared; do not load adapters into it, build your own LocalLM)."""
    return load_default_lm()
