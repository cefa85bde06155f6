"""Regressions of the cleaner: content swallowed by void tags libxml2 does not know, words glued
where a browser shows them apart, output that does not parse back, rows lost under a rowspan
and legacy pages decoded with the wrong code page.
"""

from __future__ import annotations

import html as html_lib
import re
from pathlib import Path

import pytest
from hrefine.html import clean_html
from hrefine.html._load import decode_bytes, parse_document
from hrefine.html._text import element_text
from hrefine.html.columns import table_grid
from lxml import etree


def _visible(out: str) -> str:
    """The cleaned page's visible text, words apart at block edges (as hrefine reads it)."""
    return element_text(parse_document(out))


def _reparsed(out: str) -> str:
    """``out`` parsed by libxml2 and written again: equal to ``out`` when it round-trips."""
    root = etree.fromstring(out, etree.HTMLParser())
    return str(etree.tostring(root, method="html", encoding="unicode"))


def _article(shared_data: Path, prefix: str) -> bytes:
    (path,) = (shared_data / "articles" / "pages").glob(f"{prefix}*.html")
    return path.read_bytes()


# --- void tags that libxml2 nests content in (<embed>text</embed>) --------------------------


@pytest.mark.parametrize(
    ("html", "kept"),
    [
        (
            "<picture><source srcset=a.webp><img src=a.jpg alt='Chart of GDP 2020'></picture>"
            "<p>Body</p>",
            'alt="Chart of GDP 2020"',
        ),
        (
            "<p>See the clip <embed src=x.swf> then read the rest of this sentence.</p>",
            "then read the rest of this sentence.",
        ),
        ("<ul><li>Item one <track src=a.vtt> with more words</li></ul>", "with more words"),
        ("<form><p>Key <keygen name=k> and the words after it</p></form>", "words after it"),
        ("<p>Tune <bgsound src=a.mid> and the words after it</p>", "words after it"),
        ("<p>Styled <embed src=x hidden> words after a hidden embed</p>", "after a hidden embed"),
    ],
)
def test_void_tags_unknown_to_libxml2_keep_what_follows(html: str, kept: str) -> None:
    out = clean_html(html)
    assert kept in out
    assert not re.search(r"</(embed|source|track|keygen|bgsound)>", out)


@pytest.mark.parametrize("tag", ["embed src=flash.swf", "source src=a.mp4"])
def test_page_opening_with_a_void_media_tag_keeps_its_article(tag: str) -> None:
    out = clean_html(f"<body><{tag}><h1>Title</h1><p>All the article text.</p></body>")
    assert "<h1>Title</h1><p>All the article text.</p>" in out


def test_media_fallback_inside_video_and_object_still_goes() -> None:
    out = clean_html(
        "<video><source src=a.mp4>Your browser cannot play this.</video>"
        "<object><param name=a><embed src=x>Plugin fallback</object><p>Text</p>"
    )
    assert out == "<html><body><p>Text</p></body></html>"


def test_wbr_is_unwrapped_not_written_as_a_container() -> None:
    out = clean_html("<p>The state of cali<wbr>fornia is large.</p><p>Next</p>")
    assert "wbr" not in out
    assert "The state of california is large." in out


def test_hundreds_of_wbr_in_one_paragraph_keep_the_rest_of_the_page() -> None:
    # Each <wbr> nests the rest of the paragraph one level deeper; past libxml2's 255 levels
    # the page was cut.
    out = clean_html("<p>" + "word<wbr>" * 300 + "end</p><p>The paragraph after.</p>")
    assert "wbr" not in out
    assert "word" * 300 + "end" in out
    assert "<p>The paragraph after.</p>" in out


def test_picture_alt_texts_survive_on_a_real_page(shared_data: Path) -> None:
    raw = _article(shared_data, "ba4dfe2d3e81")
    pictures = re.findall(r"<picture\b.*?</picture>", raw.decode("utf-8"), re.S | re.I)
    alts = {
        html_lib.unescape(a)
        for block in pictures
        for a in re.findall(r'<img[^>]*\balt="([^"]+)"', block, re.I)
        if a.strip()
    }
    assert len(alts) >= 10
    root = parse_document(clean_html(raw, boilerplate=False))
    kept = {img.get("alt") for img in root.iter("img")}
    assert alts <= kept


# --- words a browser shows apart ------------------------------------------------------------


def test_center_is_a_block() -> None:
    out = clean_html("<center>First line</center><center>Second line</center>")
    assert _visible(out) == "First line Second line"


@pytest.mark.parametrize(
    ("html", "text"),
    [
        (
            "<div><a href=/a><div><strong>Lions</strong></div></a>"
            "<a href=/b><div><strong>Tigers</strong></div></a></div>",
            "Lions Tigers",
        ),
        ("<div><div><b>Lions</b></div><div><b>Tigers</b></div></div>", "Lions Tigers"),
        ("<div><img alt=Map></div><div><img alt=Chart></div>", "Map Chart"),
        ("<p>x</p><em><div>Alpha</div></em>Beta", "x Alpha Beta"),
        ("<div><a href=/>Home</a><ul></ul><a href=/w>World</a></div>", "Home World"),
    ],
)
def test_merged_wrappers_keep_block_boundaries(html: str, text: str) -> None:
    assert _visible(clean_html(html)) == text


def test_single_block_wrappers_still_merge() -> None:
    out = clean_html("<table><tr><td><div><b>x</b></div></td></tr></table><div><div><p>y</p></div>")
    assert "<td><b>x</b></td>" in out
    assert "</table><p>y</p>" in out


def test_real_page_navigation_words_stay_apart(shared_data: Path) -> None:
    text = _visible(clean_html(_article(shared_data, "c467d507551a836e"), boilerplate=False))
    assert "Lions Tigers Pistons Red Wings" in text
    assert "LionsTigers" not in text


# --- output that parses back as written -----------------------------------------------------


@pytest.mark.parametrize(
    "html",
    [
        "<p>Intro <span><div>Alpha</div></span> outro</p>",
        "<p><section><div>Alpha</div><div>Beta</div></section></p>",
        "<p>Lead <font><table><tr><td>cell</td></tr></table></font> tail</p>",
        "<b><span><p>Bold paragraph</p></span></b>",
        "<h2><span><p>Heading paragraph</p></span></h2>",
    ],
)
def test_cleaned_blocks_in_paragraphs_parse_back(html: str) -> None:
    out = clean_html(html)
    assert _reparsed(out) == out
    assert _visible(out) == element_text(parse_document(html))


def test_real_page_parses_back(shared_data: Path) -> None:
    out = clean_html(_article(shared_data, "11ea381ad92b5448"))
    assert _reparsed(out) == out


# --- rows under a rowspan -------------------------------------------------------------------


def test_empty_row_under_a_rowspan_keeps_the_next_rows_in_their_columns() -> None:
    out = clean_html(
        "<table><tr><th>Team</th><th>Year</th><th>Result</th></tr>"
        "<tr><td rowspan=3>Lions</td><td>2001</td><td>Won</td></tr>"
        "<tr><td>2002</td><td></td></tr>"
        "<tr><td></td><td></td></tr>"
        "<tr><td>Tigers</td><td>2004</td><td>Lost</td></tr></table>"
    )
    table = parse_document(out).find(".//table")
    grid = table_grid(table)
    assert grid is not None
    placed = {(cell.text or ""): first for row in grid.cells for cell, first, _ in row if cell.text}
    assert placed["Tigers"] == 0 and placed["2004"] == 1 and placed["Lost"] == 2


def test_empty_rows_outside_any_rowspan_still_go() -> None:
    out = clean_html(
        "<table><tr><td rowspan=2>a</td><td>b</td></tr><tr><td>c</td></tr>"
        "<tr><td></td><td></td></tr><tr><td>d</td><td>e</td></tr></table>"
    )
    assert out.count("<tr>") == 3


# --- legacy pages without a declared charset ------------------------------------------------

_FRENCH = (
    "<html><head><title>Actualités</title></head><body><h1>Élection à Paris</h1>"
    "<p>Le maire a présenté ses voeux aux électeurs réunis près de l'hôtel de ville. "
    "Selon lui, « la réforme des écoles » sera achevée d'ici à l'été. Les élèves, déjà "
    "nombreux, attendent des décisions rapides.</p><p>Ça n'a pas empêché les critiques : "
    "l'opposition évoque un budget trop élevé.</p></body></html>"
)


@pytest.mark.parametrize("encoding", ["latin-1", "cp1252"])
def test_undeclared_french_article_decodes_as_windows_1252(encoding: str) -> None:
    assert decode_bytes(_FRENCH.encode(encoding)) == _FRENCH


@pytest.mark.parametrize(
    "text", ["café", "résumé", "naïve façade", "Ça va? Très bien, merci.", "Müller straße"]
)
@pytest.mark.parametrize(
    "wrap", ["<p>%s</p>", "<html><head><title>x</title></head><body><p>%s</p></body></html>"]
)
def test_short_undeclared_western_text_decodes(text: str, wrap: str) -> None:
    assert text in decode_bytes((wrap % text).encode("cp1252"))


@pytest.mark.parametrize(
    ("text", "encoding"),
    [
        ("résumé", "cp1252"),
        ("Αθήνα", "iso-8859-7"),
        ("Η Αθήνα είναι η πρωτεύουσα της Ελλάδας.", "iso-8859-7"),
        ("Москва — столица России.", "cp1251"),
        ("東京都は日本の首都です。", "shift_jis"),
        ("北京是中国的首都。", "gb2312"),
        ("서울은 한국의 수도입니다.", "euc-kr"),
    ],
)
def test_decoding_never_swallows_markup(text: str, encoding: str) -> None:
    data = f"<p>{text}</p>".encode(encoding)
    decoded = decode_bytes(data)
    assert decoded.count("<") + decoded.count(">") == 4
    assert decoded.startswith("<p>") and decoded.endswith("</p>")


@pytest.mark.parametrize(
    ("text", "encoding"),
    [
        ("Москва — столица России. Съешь же ещё этих мягких французских булок.", "cp1251"),
        ("Zażółć gęślą jaźń. Příliš žluťoučký kůň úpěl ďábelské ódy.", "cp1250"),
        ("東京都は日本の首都です。日本語の文章はとても面白いです。", "shift_jis"),
    ],
)
def test_undeclared_non_western_text_is_not_forced_to_windows_1252(
    text: str, encoding: str
) -> None:
    assert text in decode_bytes(f"<p>{text}</p>".encode(encoding))
