"""The benchmark's memory reading (benchmarks/_rss.py) and its pairing of both sides' calls."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
rss = pytest.importorskip("benchmarks._rss")
htmlrag_bench = pytest.importorskip("benchmarks.htmlrag")


@pytest.mark.skipif(rss.start() is None, reason="no /proc/self/clear_refs on this system")
def test_a_calls_peak_is_read_after_the_memory_is_freed() -> None:
    before = rss.start()
    block = bytearray(64 * 1024 * 1024)
    block[::4096] = b"x" * len(block[::4096])  # touch every page, so it is resident
    del block
    grown = rss.peak_since(before)
    assert grown is not None and grown >= 60 * 1024  # KiB, though it was freed
    after = rss.start()  # a new reset forgets it
    assert rss.peak_since(after) < 16 * 1024
    assert rss.peak_since(None) is None


def test_memory_pairs_match_calls_and_floor_the_ratio() -> None:
    ours = {"q1@512": 2048.0, "q2@512": 0.0, "only-ours": 1.0}
    theirs = {"q1@512": 102400.0, "q2@512": 204800.0, "only-theirs": 5.0}
    pair = htmlrag_bench._memory_pair(ours, theirs)
    assert pair["n"] == 2 and pair["per_item"] == {"q1@512": [2.0, 100.0], "q2@512": [0.0, 200.0]}
    assert pair["ours_mib"]["median"] == 1.0 and pair["theirs_mib"]["median"] == 150.0
    assert pair["less_of_medians"] == 150.0  # ours floored at 1 MiB
    assert htmlrag_bench._memory_pair({}, theirs)["less_of_medians"] is None
