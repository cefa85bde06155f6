"""The embedded LM, loaded once per test process and shared by every tier that needs it."""

from __future__ import annotations

import functools
import os

from hrefine.models.lm import LocalLM, default_lm


@functools.lru_cache(maxsize=1)
def load_default_lm() -> LocalLM:
    """Return the embedded SmolLM2 with its weights loaded (offline; the first run converts it)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    lm = default_lm()
    lm.model  # noqa: B018 - load now, so that test timings do not include it
    return lm
