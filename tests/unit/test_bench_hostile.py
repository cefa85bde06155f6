"""The pathological-pages benchmark (benchmarks/hostile_pages.py): its generated pages, the
ordinary pages' spread and floor, and the table it renders; no models are loaded."""

from __future__ import annotations

import lxml.html
import pytest

from benchmarks.hostile_pages import _one_pass, _spread, make_page, render


def test_spread_of_ratios_and_share_within_3x() -> None:
    s = _spread([5.0, 1.5, 2.0, 4.0, 3.0])
    assert s == {"pages": 5, "p10": 1.5, "median": 3.0, "p90": 5.0, "under_3x": 0.6}


def test_one_pass_reads_every_node_of_the_page(monkeypatch: pytest.MonkeyPatch) -> None:
    page = make_page("table-500")
    seen: list[int] = []
    real = lxml.html.document_fromstring

    def counted(data: bytes) -> object:
        root = real(data)
        seen.append(sum(1 for _ in root.iter()))
        return root

    monkeypatch.setattr(lxml.html, "document_fromstring", counted)
    _one_pass(page)
    assert seen and seen[0] > 500 * 20  # every cell of the 500 x 20 table


def test_render_shows_ordinary_pages_with_the_one_pass_floor() -> None:
    row = {"pages": 93, "p10": 4.2, "median": 4.9, "p90": 6.4, "under_3x": 0.0}
    floor = {"pages": 93, "p10": 1.5, "median": 1.6, "p90": 1.7, "under_3x": 1.0}
    result = {
        "created": "now",
        "mode": "quick",
        "sizes_mb": {"spans-1": 1.0},
        "after": {"spans-1": {"parse": {"s": 0.01, "mib": 13}, "clean": {"s": 0.2, "mib": 6}}},
        "ordinary": {"before": {"wtq": row}, "after": {"wtq": {**row, "one_pass": floor}}},
    }
    page = render(result)
    assert "| spans-1 | 1.0 | after | 0.01 s, 13 MiB | 0.20 s (20x), 6 MiB |" in page
    assert "| wtq (93) | before | 4.2x | 4.9x | 6.4x | 0% |" in page
    assert "| wtq (93) | parse + one Python pass | 1.5x | 1.6x | 1.7x | 100% |" in page
    # The floor is drawn once, under the rows of the code it was measured with.
    assert page.count("parse + one Python pass |") == 1
