"""Real pages made hostile (#41): a bad byte inserted, a 12 MB ``data:`` URL near the top, a
second page appended after ``</html>``. Each is cleaned and pruned without an error, and the
visible text of the page is kept."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hrefine.html import HtmlPruner, clean_html
from hrefine.html._load import parse_document

# Pages of different sizes and sources (Wikipedia, news, docs) from the shared article set.
_PAGES = 3
_BODY = re.compile(rb"<body[^>]*>", re.I)
_PARAGRAPH = re.compile(rb"<p[ >][^>]*>")


def _text(html: str, part: str = "body") -> str:
    root = parse_document(html)
    el = root.find(part)
    return " ".join(" ".join(el.itertext()).split()) if el is not None else ""


@pytest.fixture(scope="module")
def pages(shared_data: Path) -> list[bytes]:
    files = sorted((shared_data / "articles" / "pages").glob("*.html"))
    sized = sorted(files, key=lambda f: f.stat().st_size)
    # The smallest, the median and the largest page.
    chosen = [sized[0], sized[len(sized) // 2], sized[-1]][:_PAGES]
    return [f.read_bytes() for f in chosen]


def _prunes(page: bytes) -> None:
    result = HtmlPruner(scorer="bm25", tokenizer="regex").prune(page, "what is it about?", 256)
    assert 0 < result.tokens <= 256


@pytest.mark.parametrize("i", range(_PAGES))
def test_a_bad_byte_in_a_utf8_page_costs_one_character(pages: list[bytes], i: int) -> None:
    page = pages[i]
    match = _PARAGRAPH.search(page)
    assert match is not None
    bad = page[: match.end()] + b"\xff" + page[match.end() :]
    before, after = _text(clean_html(page)), _text(clean_html(bad))
    assert after.count("\ufffd") == before.count("\ufffd") + 1
    assert after.replace("\ufffd", "").split() == before.replace("\ufffd", "").split()
    _prunes(bad)


@pytest.mark.parametrize("i", range(_PAGES))
def test_a_twelve_megabyte_data_url_near_the_top_loses_nothing(pages: list[bytes], i: int) -> None:
    page = pages[i]
    body = _BODY.search(page)
    assert body is not None
    image = b'<img src="data:image/png;base64,' + b"iVBORw0K" * 1_500_000 + b'">'
    big = page[: body.end()] + image + page[body.end() :]
    assert len(image) > 12_000_000
    cleaned = clean_html(big)
    assert _text(cleaned) == _text(clean_html(page))
    assert "data:" not in cleaned
    _prunes(big)


@pytest.mark.parametrize("i", range(_PAGES))
def test_a_second_page_after_the_first_ones_end_is_kept(pages: list[bytes], i: int) -> None:
    first, second = pages[i], pages[(i + 1) % _PAGES]
    both = _text(clean_html(first + b"\n" + second, boilerplate=False))
    one = _text(clean_html(first, boilerplate=False))
    two = _text(clean_html(second, boilerplate=False))
    assert both.startswith(one)
    assert both.endswith(two)
    _prunes(first + second)
