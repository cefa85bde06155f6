"""Structure from a document's own markup, on every L-Eval document and on small texts:
full coverage, the source each kind of document gets, and the numbering rules for contracts."""

from __future__ import annotations

import re
from collections import Counter

import pytest
from hrefine.errors import ConfigError
from hrefine.longrefiner.markup import (
    heading_line_spans,
    html_spans,
    markdown_spans,
    markup_spans,
    numbered_spans,
    paragraph_spans,
)
from hrefine.longrefiner.spans import Span, check_cover

EXPECTED = {"cuad": "numbered", "nq": "html", "qasper": "headings", "quality": "paragraphs"}


def _titles(text: str, spans: list[Span]) -> list[tuple[str, ...]]:
    return [s.path for s in spans if s.heading]


def test_every_leval_document_is_covered_by_the_source_its_kind_calls_for(
    leval_docs: dict[str, dict[str, str]],
) -> None:
    sources: Counter[tuple[str, str]] = Counter()
    for task, docs in leval_docs.items():
        for doc in docs.values():
            plain, spans, source = markup_spans(doc)
            check_cover(plain, spans)
            sources[task, source] += 1
            if source != "paragraphs":
                assert any(s.heading for s in spans) and any(s.path for s in spans)
    for task, docs in leval_docs.items():
        assert sources[task, EXPECTED[task]] == len(docs), (task, sources)


def test_contract_sections_nest_and_follow_the_numbering(
    leval_docs: dict[str, dict[str, str]],
) -> None:
    doc = leval_docs["cuad"]["cuad_00"]
    spans = numbered_spans(doc)
    assert spans is not None
    check_cover(doc, spans)
    heading = next(s for s in spans if s.heading)
    assert doc[heading.start : heading.end] == "1.      DEFINITIONS."
    assert heading.path == ("1. DEFINITIONS",)
    # A definition is a paragraph of its own sub-section, titled by number and defined term.
    asp = next(s for s in spans if doc[s.start : s.end].startswith('1.2     "ASP"'))
    assert asp.path == ("1. DEFINITIONS", '1.2 "ASP"') and not asp.heading
    deeper = next(s for s in spans if doc[s.start : s.end].startswith("1.2.5"))
    assert deeper.path[:2] == ("1. DEFINITIONS", '1.2 "ASP"') and len(deeper.path) == 3
    # "3 2.  GRANT OF RIGHTS." has a page number before its number; "2.1 Hosting Software
    # License. Subject to …" is titled by its short title phrase.
    grant = next(s for s in spans if doc[s.start : s.end].startswith("2.1     Hosting"))
    assert grant.path == ("2. GRANT OF RIGHTS", "2.1 Hosting Software License")
    tops = [s.path[0] for s in spans if s.path]
    numbers = [int(re.findall(r"\d+", t)[0]) for t in dict.fromkeys(tops) if t[0].isdigit()]
    assert numbers == sorted(numbers) and set(numbers) == set(range(1, 15))
    assert "EXHIBIT A SOFTWARE" in {s.path[0] for s in spans if s.path}


def test_articles_tables_of_contents_and_clauses_run_together(
    leval_docs: dict[str, dict[str, str]],
) -> None:
    # Roman articles above lists numbered again in each article.
    doc = leval_docs["cuad"]["cuad_13"]
    spans = numbered_spans(doc)
    assert spans is not None
    tops = list(dict.fromkeys(s.path[0] for s in spans if s.path))
    assert tops[:3] == [
        "I. APPOINTMENT AND FRANCHISE FEE",
        "II. TERM AND RENEWAL",
        "III. RESTAURANT AND LOCATION",
    ]
    assert len(tops) >= 20
    # A table of contents ("1. DEFINITIONS AND INTERPRETATION1" …) opens no section; the
    # body's "1.DEFINITIONS AND INTERPRETATION" does.
    doc = leval_docs["cuad"]["cuad_19"]
    spans = numbered_spans(doc)
    assert spans is not None
    first = next(s for s in spans if s.heading)
    assert doc[first.start : first.end] == "1.DEFINITIONS AND INTERPRETATION"
    toc = doc.index("2. LICENSE GRANT10")
    assert next(s for s in spans if s.start == toc).path == ()
    # Clauses written on one line are cut at their numbers.
    doc = leval_docs["cuad"]["cuad_02"]
    spans = numbered_spans(doc)
    assert spans is not None
    cut = next(s for s in spans if doc[s.start : s.end].startswith("1.2. The term"))
    assert cut.path == ("1. Definitions", "1.2.")


def test_stray_numbers_are_text() -> None:
    text = (
        "This agreement was signed on 12. 5. 2019 by both parties.\n\n"
        "Payment is due within 30 days. 5. Late fees apply as stated in Section 9.2 below."
    )
    assert numbered_spans(text) is None
    text = (
        "1. Scope\n\nThe services.\n\n2. Fees\n\nThe fees. 7. Not a clause.\n\n3. Term\n\nOne year."
    )
    spans = numbered_spans(text)
    assert spans is not None
    check_cover(text, spans)
    assert [s.path for s in spans if s.heading] == [("1. Scope",), ("2. Fees",), ("3. Term",)]
    body = next(s for s in spans if text[s.start : s.end].startswith("The fees."))
    assert text[body.start : body.end] == "The fees. 7. Not a clause." and body.path == ("2. Fees",)


def test_paper_titles_open_flat_sections(leval_docs: dict[str, dict[str, str]]) -> None:
    doc = leval_docs["qasper"]["qasper_01"]
    spans = heading_line_spans(doc)
    assert spans is not None
    check_cover(doc, spans)
    titles = [s.path[0] for s in spans if s.heading]
    assert titles[:2] == ["Introduction", "Related Work"]
    assert "Data Collection" in titles
    assert all(len(s.path) == 1 for s in spans)
    # Qasper writes an equation as a "DISPLAYFORM0" line: a placeholder, not a title.
    doc = leval_docs["qasper"]["qasper_05"]
    spans = heading_line_spans(doc)
    assert spans is not None
    titles = [s.path[0] for s in spans if s.heading]
    assert "Evaluation" in titles and not any("FORM" in t for t in titles)
    # A story's title, byline and illustrator are bunched at its top: not its sections.
    assert heading_line_spans(leval_docs["quality"]["quality_00"]) is None


def test_paragraphs_are_blocks_or_lines(leval_docs: dict[str, dict[str, str]]) -> None:
    story = leval_docs["quality"]["quality_00"]
    spans = paragraph_spans(story)
    check_cover(story, spans)
    # Hard-wrapped: a paragraph keeps its line breaks.
    assert any("\n" in story[s.start : s.end] for s in spans)
    assert all(s.path == () and not s.heading for s in spans)
    paper = leval_docs["qasper"]["qasper_01"]
    lines = [ln for ln in paper.split("\n") if ln.strip()]
    assert len(paragraph_spans(paper)) == len(lines)


def test_markdown_headings_nest_and_fenced_code_is_not_a_heading() -> None:
    text = (
        "Lead paragraph.\n\n# Title\n\nIntro text.\n\n## Part A\n\nText A.\n\n"
        "```\n# not a heading\n```\n\n## Part B ##\n\nText B.\n\nSetext\n------\n\nUnder setext.\n"
    )
    spans = markdown_spans(text)
    assert spans is not None
    check_cover(text, spans)
    assert _titles(text, spans) == [
        ("Title",),
        ("Title", "Part A"),
        ("Title", "Part B"),
        ("Title", "Setext"),
    ]
    lead = spans[0]
    assert text[lead.start : lead.end] == "Lead paragraph." and lead.path == ()
    code = next(s for s in spans if "# not a heading" in text[s.start : s.end])
    assert code.path == ("Title", "Part A") and not code.heading
    assert markdown_spans("No headings here.\n\nJust text.") is None
    plain, md, source = markup_spans(text)
    assert source == "markdown" and plain == text and md == spans


def test_html_text_and_sections(leval_docs: dict[str, dict[str, str]]) -> None:
    page = (
        "<html><body><p>Lead <b>bold</b> text.</p><h2>History</h2><p>Old.</p>"
        "<h3>Early</h3><ul><li>One</li><li>Two</li></ul>"
        "<table><tr><th>Year</th><th>Event</th></tr><tr><td>1900</td><td>Founded</td></tr>"
        "</table><h2>Today</h2><p>New.<br>Line two.</p></body></html>"
    )
    plain, spans = html_spans(page)
    check_cover(plain, spans)
    lines = plain.split("\n")
    assert lines[0] == "Lead bold text."
    assert "Year | Event" in lines and "1900 | Founded" in lines
    row = next(s for s in spans if plain[s.start : s.end] == "1900 | Founded")
    assert row.path == ("History", "Early")
    assert [s.path for s in spans if s.heading] == [("History",), ("History", "Early"), ("Today",)]
    # A Natural Questions page: Wikipedia's headings, glued cell spans repaired.
    doc = leval_docs["nq"]["nq_05"]
    plain, spans, source = markup_spans(doc)
    assert source == "html"
    assert "<" not in plain.split("\n")[1] and "Th_colspan" not in plain
    assert sum(s.heading for s in spans) >= 10
    # Wikipedia's "[edit]" links stay in the text but not in the titles.
    plain, spans, _ = markup_spans(leval_docs["nq"]["nq_08"])
    heads = [s for s in spans if s.heading]
    assert any(plain[s.start : s.end].endswith("( edit )") for s in heads)
    assert ("United States Presidential line of succession", "Eligibility") in {
        s.path for s in heads
    }


def test_input_format_is_checked_and_forced() -> None:
    with pytest.raises(ConfigError):
        markup_spans("text", input_format="pdf")
    plain, spans, source = markup_spans("<p>a</p><p>b</p>", input_format="text")
    assert source == "paragraphs" and plain == "<p>a</p><p>b</p>"
    check_cover(plain, spans)


CODE_DOC = (
    "# Install\n\nRun the installer first.\n\n# Usage\n\nCall the client like this:\n\n"
    "```python\nclient = connect(host)\n\n\nresult = client.query(retries=3)\n```\n\n"
    "Then read the result.\n\n~~~\nan unclosed fence\n\nruns to the end\n"
)


def test_a_fenced_code_block_is_one_paragraph_whatever_blank_lines_it_holds() -> None:
    # Was: cut at its blank lines, the second piece was code read with no fence and the first
    # left a fence open over everything after it in the output.
    spans = markdown_spans(CODE_DOC)
    assert spans is not None
    check_cover(CODE_DOC, spans)
    texts = [CODE_DOC[s.start : s.end] for s in spans]
    code = "```python\nclient = connect(host)\n\n\nresult = client.query(retries=3)\n```"
    assert code in texts and "Then read the result." in texts
    assert "~~~\nan unclosed fence\n\nruns to the end" in texts
    plain = "Intro.\n\n```\nx = 1\n\ny = 2\n```\n\nOutro."
    assert [plain[s.start : s.end] for s in paragraph_spans(plain)] == [
        "Intro.",
        "```\nx = 1\n\ny = 2\n```",
        "Outro.",
    ]


def test_a_markdown_table_is_one_paragraph_when_paragraphs_are_lines() -> None:
    doc = (
        "Prices in 2024\nThe table lists each plan.\n| plan | price |\n|---|--:|\n"
        "| basic | 5 |\n| pro | 20 |\nPrices exclude tax.\n```\nfirst\nsecond\n```\nEnd."
    )
    texts = [doc[s.start : s.end] for s in paragraph_spans(doc)]
    assert texts == [
        "Prices in 2024",
        "The table lists each plan.",
        "| plan | price |\n|---|--:|\n| basic | 5 |\n| pro | 20 |",  # the header stays
        "Prices exclude tax.",
        "```\nfirst\nsecond\n```",
        "End.",
    ]
    # a line with a bar but no delimiter row under it is a line of its own
    assert len(paragraph_spans("a | b\nc | d\ne")) == 3


def test_a_refined_markdown_document_keeps_its_code_block_whole() -> None:
    from hrefine.longrefiner import LongRefiner

    result = LongRefiner(scorer="bm25").refine("client query retries", [CODE_DOC], 60)
    assert "```python\nclient = connect(host)\n\n\nresult = client.query(retries=3)\n```" in (
        result.text
    )
