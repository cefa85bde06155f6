"""Settings and fixes from the quality work on pages no one tuned on (issue #35, item 8), on
real pages: NQ's glued cell spans, record tables (infoboxes), a table's last row."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hrefine.eval.loaders import load_dataset
from hrefine.html import HtmlPruner, clean_html
from hrefine.html._text import element_text
from hrefine.html.clean import clean_document
from hrefine.html.columns import is_record_table


@pytest.fixture(scope="module")
def nq(shared_data: Path) -> dict[str, Any]:
    """L-Eval NQ items by id, and the raw (unrepaired) pages by doc id."""
    folder = shared_data / "leval" / "nq"
    items = {it.id: it for it in load_dataset("leval-nq", data_dir=shared_data)}
    rows = [json.loads(line) for line in (folder / "questions.jsonl").open()]
    raw = {Path(r["doc"]).stem: (folder / r["doc"]).read_text(encoding="utf-8") for r in rows}
    return {"items": items, "raw": raw}


def test_glued_cell_spans_become_cells_with_their_span(nq: dict[str, Any]) -> None:
    raw = nq["raw"]["nq_01"]
    assert '<Th_colspan="2">' in raw or '<Td_colspan="2">' in raw
    cleaned = clean_html(raw)
    assert "_colspan" not in cleaned and "_rowspan" not in cleaned
    assert 'colspan="2"' in cleaned
    # The same page as the loader's repaired copy gives: every cell is an ordinary cell.
    repaired = clean_html(nq["items"]["nq_01_q00"].document)
    assert cleaned == repaired


def test_an_infobox_is_a_record_table_and_a_data_table_is_not(nq: dict[str, Any]) -> None:
    root = clean_document(nq["items"]["nq_01_q00"].document)
    tables = list(root.iter("table"))
    infobox = tables[0]
    assert "Author" in element_text(infobox)
    assert is_record_table(infobox)
    # nq_10's ratings table (a season per row, an episode per column) is data.
    root = clean_document(nq["items"]["nq_10_q01"].document)
    ratings = next(t for t in root.iter("table") if "Ep. 1" in element_text(t))
    assert not is_record_table(ratings)


def test_record_tables_score_an_infoboxs_rows_on_their_own(nq: dict[str, Any]) -> None:
    # "When did the first Harry Potter movie come out": the infobox describes the book series;
    # its rows took its score as a table about the page's subject, now each has its own.
    it = nq["items"]["nq_01_q00"]
    whole = HtmlPruner(scorer="bm25").prune(it.document, it.question, 1024)
    rows = HtmlPruner(scorer="bm25", record_tables=True).prune(it.document, it.question, 1024)
    assert "Media type" in whole.html
    assert "Media type" not in rows.html

    # Its rows took the table's score and were kept nearly all; now a few at most are.
    def infobox_rows(result: Any) -> int:
        return sum(b.kept and b.tag_path == "html>body>table>tr" for b in result.blocks)

    assert infobox_rows(whole) >= 8
    assert infobox_rows(rows) <= 2


def test_a_table_kept_in_part_keeps_its_last_row(shared_data: Path, embedder: Any) -> None:
    # WTQ nu-4027, "who was not deported before 2006?": the table of detainees is bigger than
    # 512 tokens and the answer is its last row.
    it = next(
        i for i in load_dataset("wtq", data_dir=shared_data, strict_only=True) if i.id == "nu-4027"
    )
    # (The question says "before", so the rows around its best match are left out here too.)
    off = HtmlPruner(embedder=embedder, keep_last_rows=False, neighbour_rows=False)
    on = HtmlPruner(embedder=embedder, keep_last_rows=True, neighbour_rows=False)
    first = off.prune(it.document, it.question, 512)
    last = on.prune(it.document, it.question, 512)
    assert "Ravil Mingazov" not in first.html
    assert "Ravil Mingazov" in last.html
    assert last.tokens <= 512


def test_the_rows_around_the_named_row_are_kept_with_it(shared_data: Path, embedder: Any) -> None:
    # WTQ nu-801, "who was the us ambassador to grenada prior to jeanette w. hyde?": the
    # answer is the row before the one the question names, in a table bigger than 512 tokens.
    it = next(
        i for i in load_dataset("wtq", data_dir=shared_data, strict_only=True) if i.id == "nu-801"
    )
    off = HtmlPruner(embedder=embedder, neighbour_rows=False, keep_last_rows=False)
    on = HtmlPruner(embedder=embedder, neighbour_rows=True, keep_last_rows=False)
    alone = off.prune(it.document, it.question, 512)
    around = on.prune(it.document, it.question, 512)
    assert "Jeanette W. Hyde" in alone.html
    assert "Dennis F. Carter" not in alone.html
    assert "Dennis F. Carter" in around.html
    assert around.tokens <= 512
