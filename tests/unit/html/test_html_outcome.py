"""Pruning several retrieved pages: one shared budget or one each, one outcome per page."""

from __future__ import annotations

import pytest
from hrefine.errors import EmptyInputError
from hrefine.html import HtmlPruner
from hrefine.html.outcome import PruneJob, check_query

PAGES = [
    "<html><body><p>Springfield is a town of 42,000 people on the river.</p>"
    + "".join(f"<p>Weather note {i} about clouds and rain.</p>" for i in range(30))
    + "</body></html>",
    "<html><body><p>Shelbyville rivals Springfield.</p>"
    + "".join(f"<p>Traffic note {i} about roads and cars.</p>" for i in range(30))
    + "</body></html>",
]


@pytest.fixture(scope="module")
def pruner() -> HtmlPruner:
    return HtmlPruner(scorer="bm25")


def test_shared_budget_covers_all_pages(pruner: HtmlPruner) -> None:
    outcomes = PruneJob(pruner, PAGES, "Springfield population", 60, together=True).run()
    assert [o.index for o in outcomes] == [0, 1]
    assert all(o.shared_budget and o.budget == 60 for o in outcomes)
    total = pruner.counter.count_many([o.html for o in outcomes])
    assert sum(total) <= 60
    assert "42,000" in outcomes[0].html
    assert outcomes[0].blocks_total > outcomes[0].blocks_kept > 0
    assert outcomes[0].score is not None


def test_budget_per_page_gives_each_page_the_budget(pruner: HtmlPruner) -> None:
    outcomes = PruneJob(pruner, PAGES, "Springfield", 40, together=False).run()
    counts = pruner.counter.count_many([o.html for o in outcomes])
    assert all(c <= 40 for c in counts)
    assert all(o.kept and not o.shared_budget for o in outcomes)


def test_empty_page_is_reported_not_lost(pruner: HtmlPruner) -> None:
    pages = [PAGES[0], "<html></html>"]
    outcomes = PruneJob(pruner, pages, "Springfield", 40, together=False).run()
    assert outcomes[1].index == 1 and not outcomes[1].kept and outcomes[1].blocks_total == 0
    with pytest.raises(EmptyInputError):
        PruneJob(pruner, ["", "<p> </p>"], "Springfield", 40, together=False).run()


async def test_async_matches_sync(pruner: HtmlPruner) -> None:
    sync = PruneJob(pruner, PAGES, "Shelbyville", 50, together=False).run()
    asyn = await PruneJob(pruner, PAGES, "Shelbyville", 50, together=False).arun()
    assert [o.html for o in sync] == [o.html for o in asyn]


def test_query_must_be_text() -> None:
    with pytest.raises(TypeError):
        check_query(42)
    with pytest.raises(EmptyInputError):
        check_query("   ")
