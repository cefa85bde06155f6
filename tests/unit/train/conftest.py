"""Fixtures shared by the training tests."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest


@pytest.fixture(scope="module")
def one_torch_thread() -> Iterator[None]:
    """torch on one thread for a module on a 2-core machine, then as it was."""
    import torch

    # Two busy-waiting OpenMP threads on a shared 2-core machine run ten times slower.
    threads = torch.get_num_threads()
    if (os.cpu_count() or 1) <= 2:
        torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
