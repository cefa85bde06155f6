"""LongRefiner keeps what a reader sees: words in table cells stay apart, an image's alt text
and a ``<pre>`` block's layout survive, and a paragraph cut to fit the budget is reported as
kept and cut, never as dropped too."""

from __future__ import annotations

from pathlib import Path

import pytest
from hrefine.budget import default_counter
from hrefine.longrefiner import LongRefiner
from hrefine.longrefiner.markup import html_spans, markup_spans
from hrefine.longrefiner.outcome import outcomes_of
from hrefine.longrefiner.report import render_report
from hrefine.longrefiner.spans import check_cover


def _text(html: str) -> str:
    text, spans = html_spans(html)
    check_cover(text, spans)
    return text


_ROW = "<table><tr>{}</tr></table>"
CELLS = [
    ("<td><ul><li>English</li><li>French</li></ul></td>", "English; French"),
    ("<td>line1<br>line2</td><td>x</td>", "line1; line2 | x"),
    ("<td><p>a</p><p>b</p></td>", "a; b"),
    ("<td><div>div one</div><div>div two</div></td>", "div one; div two"),
    ("<th>Born</th><td>1 May<br>Paris, France</td>", "Born | 1 May; Paris, France"),
    ("<td>Cost:<br>5 USD</td>", "Cost: 5 USD"),  # no "; " after a colon
    ("<td><b>bold</b>tail and <i>it</i></td>", "boldtail and it"),  # inline stays inline
]


@pytest.mark.parametrize(("cells", "expected"), CELLS)
def test_blocks_inside_a_table_cell_do_not_glue_their_words(cells: str, expected: str) -> None:
    assert _text(_ROW.format(cells)) == expected


def test_the_wtq_film_page_reads_its_infobox_lists_as_separate_names(shared_data: Path) -> None:
    raw = (shared_data / "wtq" / "pages" / "200-11.html").read_text(encoding="utf-8")
    text = LongRefiner(scorer="bm25").structure(raw).text
    for glued in ("HackmanFernando", "EnglishFrench", "DoyleFernando", "SoderbergChristopher"):
        assert glued not in text
    assert "Starring | Gene Hackman; Fernando Rey; Roy Scheider; Tony Lo Bianco" in text
    assert "Language | English; French" in text
    assert "Best Sound | Theodore Soderberg; Christopher Newman | Nominated" in text


def test_an_image_reads_as_its_alt_text() -> None:
    assert _text('<p>Look <img src="a.png" alt="a red fox"> here.</p>') == "Look a red fox here."
    figure = "<figure><img src=x alt='diagram of a cell'><figcaption>Figure 2</figcaption></figure>"
    assert _text(figure) == "diagram of a cell\nFigure 2"
    assert _text("<p>no <img src=x> alt</p>") == "no alt"


def test_pre_keeps_its_line_breaks_and_indentation() -> None:
    html = "<p>Code:</p><pre>\ndef f(x):\n    return   x\n\n</pre><p>after   it</p>"
    assert _text(html) == "Code:\ndef f(x):\n    return   x\nafter it"
    text, _, source = markup_spans("<pre>code   line\n    indented</pre>", input_format="html")
    assert source == "html" and text == "code   line\n    indented"


_LONG = " ".join(f"word{i}" for i in range(3000))


def test_a_cut_paragraph_is_kept_and_truncated_not_dropped() -> None:
    result = LongRefiner(scorer="bm25").refine("word2999", [_LONG], 50)
    (doc,) = result.documents
    assert result.trimmed and len(doc.kept) == 1
    (node,) = doc.kept
    assert node not in doc.dropped
    assert set(doc.truncated) == {node}
    cut = doc.truncated[node]
    whole = doc.structure.node_text(node)
    assert whole.startswith(doc.text) and cut.chars_kept == len(doc.text) < cut.chars_total
    assert cut.chars_total == len(whole) and cut.chars_cut == len(whole) - len(doc.text)
    counter = default_counter()
    assert cut.tokens_kept == counter.count(doc.text) <= 50 < cut.tokens_total
    assert cut.tokens_total == counter.count(whole)
    # Every paragraph is kept, cut, or dropped: the tail is reported, not silently lost.
    paragraphs = {n.id for n in doc.structure.tree if n.kind == "paragraph"}
    assert paragraphs == set(doc.dropped) | set(doc.truncated)
    (note,) = [n for n in result.notes if "cut to fit" in n]
    assert f"node {node}" in note and f"last {cut.chars_cut:,} of {cut.chars_total:,}" in note


def test_the_adapters_and_report_tell_the_cut_once() -> None:
    other = " ".join(f"lake{i}" for i in range(2000))  # no paragraph of it fits either
    result = LongRefiner(scorer="bm25").refine("word2999", [_LONG, other], 30)
    assert result.trimmed and not result.documents[1].kept
    cut_doc, plain = outcomes_of(result)
    assert [n for n in cut_doc.notes if "cut to fit" in n] == [
        n for n in result.notes if "cut to fit" in n
    ]
    assert not [n for n in plain.notes if "cut to fit" in n]  # the cut is not its own
    page = render_report(result)
    assert "kept, cut to fit the budget" in page and "was cut to fit, keeping" in page
    assert "dropped: over_budget</span>" in page  # the other paragraphs still say why


def test_a_budget_that_fits_records_no_truncation() -> None:
    md = "# Title\n\nShort lead.\n\n## B\n\nZeta eta theta."
    result = LongRefiner(scorer="bm25").refine("zeta", [md], 200)
    assert not result.trimmed and result.documents[0].truncated == {}
    assert not [n for n in result.notes if "cut to fit" in n]
