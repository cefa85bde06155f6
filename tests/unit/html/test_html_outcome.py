"""Pruning several retrieved pages: one shared budget or one each, one outcome per page."""

from __future__ import annotations

import pytest
from hrefine.errors import EmptyInputError, HtmlParseError
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
    assert all(o.scope == "shared" and o.budget == 60 for o in outcomes)
    total = pruner.counter.count_many([o.html for o in outcomes])
    assert sum(total) <= 60
    assert "42,000" in outcomes[0].html
    assert outcomes[0].blocks_total > outcomes[0].blocks_kept > 0
    assert outcomes[0].score is not None


def test_budget_per_page_gives_each_page_the_budget(pruner: HtmlPruner) -> None:
    outcomes = PruneJob(pruner, PAGES, "Springfield", 40, together=False).run()
    counts = pruner.counter.count_many([o.html for o in outcomes])
    assert all(c <= 40 for c in counts)
    assert all(o.kept and o.scope == "document" for o in outcomes)


def test_empty_page_is_reported_not_lost(pruner: HtmlPruner) -> None:
    pages = [PAGES[0], "<html></html>"]
    outcomes = PruneJob(pruner, pages, "Springfield", 40, together=False).run()
    assert outcomes[1].index == 1 and not outcomes[1].kept and outcomes[1].blocks_total == 0


@pytest.mark.parametrize("together", [True, False])
def test_all_pages_empty_returns_empty_outcomes_or_raises_when_strict(
    pruner: HtmlPruner, together: bool, caplog: pytest.LogCaptureFixture
) -> None:
    pages = ["", "<p> </p>"]
    with caplog.at_level("WARNING", logger="hrefine.html.outcome"):
        outcomes = PruneJob(pruner, pages, "Springfield", 40, together=together).run()
    assert [o.reason for o in outcomes] == ["no visible text"] * 2
    assert "all 2 pages are empty" in caplog.text
    with pytest.raises(EmptyInputError, match="all 2 pages are empty"):
        PruneJob(pruner, pages, "Springfield", 40, together=together, strict=True).run()


def test_top_n_under_a_shared_budget_returns_n_pages_each_with_text(pruner: HtmlPruner) -> None:
    # Pruned together, the Springfield page's blocks win the whole budget: the other page
    # keeps nothing. Asked for two pages, each gets half the budget instead.
    query = "Springfield population 42,000 river town"
    alone = PruneJob(pruner, PAGES, query, 20).run()
    assert [o.kept for o in alone] == [True, False]
    two = PruneJob(pruner, PAGES, query, 20, top_n=2).run()
    assert all(o.kept and o.scope == "split" and o.budget == 10 for o in two)
    counts = pruner.counter.count_many([o.html for o in two])
    assert sum(counts) <= 20
    one = PruneJob(pruner, PAGES, query, 20, top_n=1).run()
    assert [o.kept for o in one] == [True, False] and one[0].scope == "shared"
    assert one[1].reason == "below top_n" or one[1].blocks_kept == 0


async def test_top_n_async_matches_sync(pruner: HtmlPruner) -> None:
    job = PruneJob(pruner, PAGES, "Springfield population 42,000 river town", 20, top_n=2)
    sync, asyn = job.run(), await job.arun()
    assert [(o.html, o.scope) for o in sync] == [(o.html, o.scope) for o in asyn]


def test_top_n_picks_the_most_relevant_pages(pruner: HtmlPruner) -> None:
    pages = [PAGES[1], PAGES[0]]  # the Springfield page second
    outcomes = PruneJob(pruner, pages, "Springfield population river", 400, top_n=1).run()
    assert [o.index for o in outcomes if o.kept] == [1]
    assert outcomes[0].reason == "below top_n"


def test_relevance_is_in_unit_range_and_orders_like_the_raw_score(pruner: HtmlPruner) -> None:
    outcomes = PruneJob(pruner, PAGES, "Springfield", 400, together=False).run()
    assert all(o.relevance is not None and 0.0 <= o.relevance <= 1.0 for o in outcomes)
    raw = [o.score for o in outcomes]
    rel = [o.relevance for o in outcomes]
    assert sorted(range(2), key=lambda i: raw[i]) == sorted(range(2), key=lambda i: rel[i])
    assert max(rel) == 1.0  # BM25 scores are relative to the call's best


async def test_async_matches_sync(pruner: HtmlPruner) -> None:
    sync = PruneJob(pruner, PAGES, "Shelbyville", 50, together=False).run()
    asyn = await PruneJob(pruner, PAGES, "Shelbyville", 50, together=False).arun()
    assert [o.html for o in sync] == [o.html for o in asyn]


def test_query_must_be_text() -> None:
    with pytest.raises(TypeError):
        check_query(42)
    with pytest.raises(EmptyInputError):
        check_query("   ")


def test_pages_cut_mid_tag_are_warned_about(
    pruner: HtmlPruner, caplog: pytest.LogCaptureFixture
) -> None:
    pieces = ['ass="infobox"><p>Springfield has 42,000 people.</p>', PAGES[1]]
    with caplog.at_level("WARNING", logger="hrefine.html.outcome"):
        PruneJob(pruner, pieces, "Springfield population", 60).run()
    assert "1 of 2 inputs look like HTML cut mid-tag" in caplog.text
    assert "HtmlPageNodeParser" in caplog.text
    caplog.clear()
    with caplog.at_level("WARNING", logger="hrefine.html.outcome"):
        PruneJob(pruner, PAGES, "Springfield population", 60).run()
    assert "cut mid-tag" not in caplog.text


def test_outcomes_say_how_each_page_was_read(pruner: HtmlPruner) -> None:
    pages = [PAGES[0], "| Town | People |\n|---|---|\n| Springfield | 42,000 |\n", "Plain words."]
    outcomes = PruneJob(pruner, pages, "Springfield people", 200, together=False).run()
    assert [o.input_format for o in outcomes] == ["html", "markdown", "text"]


PDF = b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj << /Type /Catalog >> endobj\n" * 20


@pytest.mark.parametrize("together", [True, False])
def test_one_unreadable_page_is_skipped_and_named_the_others_pruned(
    pruner: HtmlPruner, together: bool
) -> None:
    pages: list = [PAGES[0], PDF, 42, PAGES[1]]  # a PDF and a wrong type among real pages
    outcomes = PruneJob(pruner, pages, "Springfield population", 200, together=together).run()
    assert outcomes[0].kept and outcomes[3].kept
    assert outcomes[1].reason == outcomes[2].reason == "could not be read"
    assert "HtmlParseError" in (outcomes[1].error or "") and "PDF" in (outcomes[1].error or "")
    assert "InputTypeError" in (outcomes[2].error or "")
    with pytest.raises(HtmlParseError, match="2 of 4 pages could not be read: page 1"):
        PruneJob(pruner, pages, "Springfield", 200, together=together, strict=True).run()


async def test_unreadable_pages_alone_give_nothing_async_or_raise_when_strict(
    pruner: HtmlPruner,
) -> None:
    outcomes = await PruneJob(pruner, [PDF, PDF], "Springfield", 200).arun()
    assert [o.reason for o in outcomes] == ["could not be read"] * 2
    with pytest.raises(HtmlParseError):
        await PruneJob(pruner, [PDF], "Springfield", 200, strict=True).arun()


def test_the_core_pruner_skips_an_unreadable_page_and_reports_it(pruner: HtmlPruner) -> None:
    result = pruner.prune([PAGES[0], PDF], "Springfield population", 200)
    assert "42,000" in result.html
    assert [f["document"] for f in result.stats["failed_documents"]] == [1]
    assert [b.reason for b in result.blocks if b.doc == 1] == ["failed"]
    with pytest.raises(HtmlParseError, match="PDF"):
        pruner.prune(PDF, "Springfield", 200)


def test_a_page_given_twice_is_pruned_once_and_its_repeat_named(pruner: HtmlPruner) -> None:
    # Was: both copies' blocks competed for one budget, and the output held the same
    # paragraphs twice while the other page's were left out.
    # The copy differs only in what cleaning removes (a script), so it repeats once cleaned.
    copy = PAGES[0].replace("<body>", "<body><script>track()</script>")
    pages = [PAGES[0], copy, PAGES[1]]
    result = pruner.prune(pages, "Springfield population Shelbyville", 60)
    once = pruner.prune([PAGES[0], PAGES[1]], "Springfield population Shelbyville", 60)
    assert result.stats["repeated_documents"] == [{"document": 1, "same_as": 0}]
    assert result.documents == [once.documents[0], "", once.documents[1]]
    assert result.html.count("42,000") == 1 and "Shelbyville" in result.html
    (report,) = [b for b in result.blocks if b.doc == 1]
    assert report.reason == "repeat" and not report.kept
    outcomes = PruneJob(pruner, [PAGES[1], PAGES[0], copy], "Springfield", 200).run()
    assert outcomes[2].repeat_of == 1 and outcomes[2].reason == "the same page as input 1"
    assert outcomes[0].kept and outcomes[1].kept and not outcomes[2].kept
