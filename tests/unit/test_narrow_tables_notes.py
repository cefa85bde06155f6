"""Columns dropped when HtmlRAG narrows a wide table are logged, naming the table.

Was: they were recorded only in ``stats["narrowed_tables"]``. Their cells are removed before
the page is cut into blocks, so no block report lists them either, and nothing logged that
text had been left out, where a page that could not be read, an empty one or a truncated
block each say so in the log.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import lxml.html
import pytest
from hrefine.html import HtmlPruner

LOGGER = "hrefine.html.columns"


@pytest.fixture(scope="module")
def nba_page(shared_data: Path) -> tuple[bytes, str]:
    """WTQ nu-717: a real page with several tables bigger than 512 tokens."""
    folder = shared_data / "wtq"
    with (folder / "questions.jsonl").open(encoding="utf-8") as lines:
        question = next(q for q in map(json.loads, lines) if q["id"] == "nu-717")
    return (folder / question["doc"]).read_bytes(), question["question"]


def _narrowing_lines(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == LOGGER and "narrowed to" in r.getMessage()]


def _headers(table: Any) -> str:
    return " ".join(th.text_content() for th in table.iter("th"))


def test_each_narrowed_table_is_logged_with_what_it_lost(
    nba_page: tuple[bytes, str], caplog: pytest.LogCaptureFixture
) -> None:
    page, question = nba_page
    with caplog.at_level(logging.INFO, logger=LOGGER):
        result = HtmlPruner(scorer="bm25").prune(page, question, 512)
    tables = result.stats["narrowed_tables"]
    lines = _narrowing_lines(caplog)
    assert len(tables) >= 3 and len(lines) == len(tables)
    cleaned = list(lxml.html.fromstring(result.cleaned[0]).iter("table"))
    for table, line in zip(tables, lines, strict=True):
        assert line.levelno == logging.INFO
        message = line.getMessage()
        n_cols = len(table["kept"]) + len(table["dropped"])
        assert message.startswith(f"input 0, table {table['table']}: narrowed to ")
        assert f"{len(table['kept'])} of its {n_cols} columns" in message
        assert f"dropped {len(table['dropped'])} columns: " in message
        first_dropped = table["headers"][table["dropped"][0]]
        assert repr(first_dropped[:40]) in message
        # The table named is that table of the cleaned page: its headers are the columns'.
        assert table["document"] == 0
        assert first_dropped in _headers(cleaned[table["table"]])


def test_the_table_is_named_by_its_input_among_several(
    nba_page: tuple[bytes, str], caplog: pytest.LogCaptureFixture
) -> None:
    page, question = nba_page
    # Input 0 is empty and skipped: the page is the pruner's first parsed root, but input 1.
    with caplog.at_level(logging.INFO, logger=LOGGER):
        result = HtmlPruner(scorer="bm25").prune(["", page], question, 512)
    lines = _narrowing_lines(caplog)
    assert lines and all(r.getMessage().startswith("input 1, table ") for r in lines)
    assert {t["document"] for t in result.stats["narrowed_tables"]} == {1}


def test_the_output_is_the_same_whether_or_not_anyone_listens(
    nba_page: tuple[bytes, str], caplog: pytest.LogCaptureFixture
) -> None:
    page, question = nba_page
    pruner = HtmlPruner(scorer="bm25")
    quiet = pruner.prune(page, question, 512)
    with caplog.at_level(logging.INFO, logger=LOGGER):
        heard = pruner.prune(page, question, 512)
    assert heard.html == quiet.html and heard.stats == quiet.stats


def test_nothing_is_logged_when_no_table_is_narrowed(
    nba_page: tuple[bytes, str], caplog: pytest.LogCaptureFixture
) -> None:
    page, question = nba_page
    with caplog.at_level(logging.INFO, logger=LOGGER):
        result = HtmlPruner(scorer="bm25", narrow_tables=False).prune(page, question, 512)
    assert result.stats["narrowed_tables"] == []
    assert _narrowing_lines(caplog) == []
