"""Input formats: HTML, Markdown and plain text told apart, written as HTML, and pruned as such;
pieces of HTML cut mid-tag recognised."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from hrefine.errors import ConfigError, EmptyInputError
from hrefine.html import HtmlPruner, HtmlPrunerOptions
from hrefine.html._load import parse_document
from hrefine.html.formats import detect_format, markup_fragment, to_html
from hrefine.html.split import split_page

STATIONS = [
    ("KKYA", "93.1 FM", "Country", "KK93"),
    ("KDAM", "94.3 FM", "Classic rock", "The Dam"),
    ("WNAX-FM", "104.1 FM", "Country", "The Wolf"),
    ("KYNT", "1450 AM", "Talk", "Yankton Talk"),
    ("KVHT", "106.3 FM", "Oldies", "Hot 106"),
]
MARKDOWN = (
    "# Radio in Yankton, South Dakota\n\n"
    "Yankton is a city on the Missouri River. Its economy rests on manufacturing, health care "
    "and the federal prison camp, and its history goes back to the Dakota Territory.\n\n"
    "## History\n\n"
    "The first settlers came in 1858; the city was the territorial capital until 1883. "
    "Steamboats on the Missouri carried most of its trade for decades. " * 4 + "\n\n"
    "## Radio stations\n\n"
    "| Call sign | Frequency | Format | Nickname |\n"
    "|-----------|-----------|--------|----------|\n"
    + "".join(f"| {a} | {b} | {c} | {d} |\n" for a, b, c, d in STATIONS)
    + "\n## Schools\n\n"
    "- Yankton High School\n- Mount Marty University\n\n"
    "See [the city's site](https://www.cityofyankton.org) for more.\n"
)
LETTER = (
    "Dear Ms Olsen,\n"
    "thank you for your letter of 3 May.\n"
    "The parcel left our depot today.\n\n"
    "What it holds:\n"
    "- two lamps\n"
    "- one chair\n\n"
    "1. Payment is due in 30 days.\n"
    "3. Returns are accepted for 14 days.\n\n"
    "Yours sincerely,\n"
    "Per Hansen <per@example.org>\n"
)


def _pages(folder: Path, pattern: str) -> list[Path]:
    found = sorted(folder.glob(pattern))
    assert found, f"no files matching {pattern} in {folder}"
    return found


# -- detection ------------------------------------------------------------------------------
def test_every_real_page_is_html(shared_data: Path) -> None:
    pages = _pages(shared_data / "wtq" / "pages", "*.html")
    pages += _pages(shared_data / "leval" / "nq" / "docs", "*.html")
    found = {p.name: detect_format(p.read_bytes()) for p in pages}
    assert {k: v for k, v in found.items() if v != "html"} == {}
    # NQ's pages have no doctype and tags like <Th_colspan="2">: also HTML as str.
    assert detect_format(pages[-1].read_text(encoding="utf-8")) == "html"


@pytest.mark.parametrize("task", ["qasper", "quality", "cuad"])
def test_l_eval_documents_are_plain_text(shared_data: Path, task: str) -> None:
    # Papers, stories and contracts: numbered sections and clauses are no sign of Markdown.
    docs = _pages(shared_data / "leval" / task / "docs", "*.txt")
    assert {d.name: detect_format(d.read_text(encoding="utf-8")) for d in docs} == {
        d.name: "text" for d in docs
    }


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (MARKDOWN, "markdown"),
        ("| a | b |\n|:---|---:|\n| 1 | 2 |", "markdown"),
        ("Intro\n\n```python\nprint(1)\n```\n", "markdown"),
        ("## Setup\nRun the script.", "markdown"),
        ("Read [the guide](docs/guide.md) first.", "markdown"),
        # Raw HTML in a Markdown table's cells keeps it Markdown.
        ("| a | b |\n|---|---|\n| x<br>y | 1 |\n| z<br>w | 2 |", "markdown"),
        (LETTER, "text"),
        ("Order: 1. flour 2. eggs", "text"),
        ("a < b and c > d", "text"),
        ("<p>One</p><p>Two</p>", "html"),
        ("<!DOCTYPE html><title>x</title>", "html"),
        (b"<html><body>caf\xe9</body></html>", "html"),
        (MARKDOWN.encode("utf-8"), "markdown"),
        ("   \n  ", "text"),
    ],
)
def test_detect_format_small_inputs(text: str | bytes, expected: str) -> None:
    assert detect_format(text) == expected


# -- conversion -----------------------------------------------------------------------------
def test_markdown_table_rows_become_table_rows() -> None:
    root = parse_document(to_html(MARKDOWN, "markdown"))
    rows = root.findall(".//table//tr")
    assert [[c.text for c in row] for row in rows] == [
        ["Call sign", "Frequency", "Format", "Nickname"],
        *[list(s) for s in STATIONS],
    ]
    assert [c.tag for c in rows[0]] == ["th"] * 4
    assert [h.text for h in root.iter("h1", "h2")][:2] == [
        "Radio in Yankton, South Dakota",
        "History",
    ]
    assert [li.text for li in root.iter("li")] == ["Yankton High School", "Mount Marty University"]


def test_raw_html_in_markdown_is_shown_not_run() -> None:
    html = to_html("Hello <script>alert(1)</script> <b onclick='x()'>bold</b>", "markdown")
    root = parse_document(html)
    assert root.find(".//script") is None and root.find(".//b") is None
    assert "<script>alert(1)</script>" in "".join(root.itertext())


def test_plain_text_keeps_lines_paragraphs_and_lists() -> None:
    root = parse_document(to_html(LETTER, "text"))
    paragraphs = root.findall(".//p")
    assert paragraphs[0].text == "Dear Ms Olsen,"
    assert [br.tail for br in paragraphs[0].iter("br")] == [
        "thank you for your letter of 3 May.",
        "The parcel left our depot today.",
    ]
    assert [li.text for li in root.find(".//ul")] == ["two lamps", "one chair"]
    # A numbered item keeps its own number (clauses are cited by it), in a list that does not
    # number it again.
    assert root.find(".//ol") is None
    assert [li.text for li in root.findall(".//ul")[1]] == [
        "1. Payment is due in 30 days.",
        "3. Returns are accepted for 14 days.",
    ]
    assert "Per Hansen <per@example.org>" in "".join(root.itertext())


def test_long_lines_are_paragraphs_of_their_own() -> None:
    long_a, long_b = "Alpha " * 40, "Beta " * 40
    root = parse_document(to_html(f"Introduction\n{long_a}\n{long_b}", "text"))
    assert [" ".join("".join(p.itertext()).split()) for p in root.iter("p")] == [
        "Introduction",
        long_a.strip(),
        long_b.strip(),
    ]


def test_to_html_rejects_an_unknown_format() -> None:
    with pytest.raises(ConfigError, match="'html', 'markdown' or 'text'"):
        to_html("x", "rst")


# -- the pruner's setting -------------------------------------------------------------------
def test_input_format_setting_is_checked() -> None:
    assert HtmlPrunerOptions().input_format == "auto"
    with pytest.raises(ConfigError, match="input_format must be one of 'auto', 'html'"):
        HtmlPrunerOptions(input_format="pdf")


def test_markdown_table_pruned_keeps_header_and_answer_row(embedder: Any) -> None:
    pruner = HtmlPruner(embedder=embedder)
    result = pruner.prune(MARKDOWN, "What is the nickname of the station on 94.3 FM?", 110)
    assert result.stats["input_formats"] == ["markdown"]
    assert result.tokens <= 110 < result.original_tokens
    root = parse_document(result.html)
    rows = [["".join(c.itertext()).strip() for c in row] for row in root.iter("tr")]
    assert ["Call sign", "Frequency", "Format", "Nickname"] in rows
    assert ["KDAM", "94.3 FM", "Classic rock", "The Dam"] in rows


def test_text_keeps_its_line_breaks_when_pruned() -> None:
    pruner = HtmlPruner(scorer="bm25", tokenizer="regex", lexical_weight=0)
    result = pruner.prune(LETTER, "when is payment due", 200)
    assert result.stats["input_formats"] == ["text"]
    assert "Dear Ms Olsen,<br>thank you" in result.html
    assert "<li>1. Payment is due in 30 days." in result.html


def test_formats_are_recorded_per_document_and_forced_by_the_setting() -> None:
    html = "<html><body><p>Norway won 11 gold medals.</p></body></html>"
    pruner = HtmlPruner(scorer="bm25", tokenizer="regex")
    result = pruner.prune([html, MARKDOWN, "  ", LETTER], "gold medals Norway", 300)
    assert result.stats["input_formats"] == ["html", "markdown", "text", "text"]
    # Read as text, HTML shows its tags; read as HTML, a Markdown table is one line of pipes.
    as_text = HtmlPruner(scorer="bm25", tokenizer="regex", input_format="text")
    assert "&lt;p&gt;Norway" in as_text.prune(html, "Norway", 100).html
    as_html = HtmlPruner(scorer="bm25", tokenizer="regex", input_format="html")
    forced = as_html.prune(MARKDOWN, "nickname of KDAM", 1000)
    assert forced.stats["input_formats"] == ["html"]
    assert "<table" not in forced.html and "| KDAM |" in forced.html


def test_an_empty_text_input_says_it_is_empty() -> None:
    with pytest.raises(EmptyInputError, match="empty"):
        HtmlPruner(scorer="bm25", input_format="markdown").prune("  \n ", "q", 100)


# -- fragments ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("fragment", "reason"),
    [
        ('ass="infobox vcard">Born</th><td>1950</td></tr>', "starts inside a tag"),
        ('"2">The Handmaid\'s Tale</th></tr><tr><td>Drama</td>', "starts inside a tag"),
        ("td><b>Gold</b> 11</td></tr>", "starts inside a tag"),
        ("<p>Norway won 11 gold medals.</p><table class=", "ends inside a tag"),
        ("<p>Norway won 11 gold medals.</p></td></tr><tr><td>Canada", "end tags whose start"),
        ("<p>Norway won 11 gold medals.</p><!-- a comm", "ends inside a tag"),
    ],
)
def test_markup_fragments_are_recognised(fragment: str, reason: str) -> None:
    found = markup_fragment(fragment)
    assert found is not None and reason in found


@pytest.mark.parametrize(
    "text",
    [LETTER, MARKDOWN, "a < b > c", "x > 3 and <p>y</p>", "<p>One</p><p>Two</p>", "1 > 0"],
)
def test_whole_texts_are_not_fragments(text: str) -> None:
    assert markup_fragment(text) is None


def test_real_pages_and_their_cuts(shared_data: Path) -> None:
    pages = _pages(shared_data / "wtq" / "pages", "*.html")[:12]
    pages += _pages(shared_data / "leval" / "nq" / "docs", "*.html")[:3]
    cut = 0
    for path in pages:
        page = path.read_text(encoding="utf-8")
        assert markup_fragment(page) is None, path.name
        # A cut inside an attribute value, as a character splitter makes it.
        at = [m.end() for m in re.finditer(r'class="', page)][len(page) // 5000 % 3 :][:1]
        if at:
            assert markup_fragment(page[at[0] : at[0] + 2000]) is not None, path.name
            cut += 1
        # Pieces made at block boundaries are whole.
        for piece in split_page(page, 200, tokenizer="regex"):
            assert markup_fragment(piece) is None, (path.name, piece[:80])
    assert cut >= 10
