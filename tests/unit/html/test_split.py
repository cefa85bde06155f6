"""split_page: a cleaned page cut at block boundaries into whole HTML pieces under a size."""

from __future__ import annotations

import collections

import pytest
from hrefine.budget import get_counter
from hrefine.errors import ConfigError, EmptyInputError
from hrefine.html._load import parse_document
from hrefine.html.formats import markup_fragment
from hrefine.html.split import clean_page, split_page

ROWS = "".join(f"<tr><td>Nation {i}</td><td>{i}</td></tr>" for i in range(30))
TABLE_PAGE = (
    "<html><body><h1>Games</h1><p>Intro text about the games.</p><h2>Medals</h2>"
    f"<table><caption>Medals by nation</caption><tr><th>Nation</th><th>Gold</th></tr>{ROWS}"
    "</table><h2>Venues</h2>"
    + "<p>The venues were by the sea, and the mountain venues up the valley.</p>" * 8
    + "</body></html>"
)


def _words(html: str) -> collections.Counter[str]:
    return collections.Counter(w for t in parse_document(html).itertext() for w in t.split())


def test_pieces_fit_and_hold_every_word() -> None:
    counter = get_counter("regex")
    pieces = split_page(TABLE_PAGE, 120, tokenizer="regex")
    assert len(pieces) > 5
    assert all(counter.count(p) <= 120 for p in pieces)
    assert all(markup_fragment(p) is None for p in pieces)
    root, fmt = clean_page(TABLE_PAGE)
    assert fmt == "html"
    page = collections.Counter(w for t in root.itertext() for w in t.split())
    held = sum((_words(p) for p in pieces), collections.Counter())
    assert page - held == collections.Counter()


def test_rows_carry_their_heading_and_header_once() -> None:
    pieces = split_page(TABLE_PAGE, 120, tokenizer="regex")
    header = "<tr><th>Nation</th><th>Gold</th></tr>"
    for piece in pieces:
        if "<td>" in piece:
            assert piece.startswith("<h1>Games</h1>") and "<h2>Medals</h2>" in piece, piece
            assert piece.count(header) == 1, piece
    assert sum(p.startswith("<h1>Games</h1><h2>Medals</h2><table>" + header) for p in pieces) > 5
    # The next section's heading replaces the one before it.
    venues = [p for p in pieces if p.startswith("<h1>Games</h1><h2>Venues</h2><p>")]
    assert venues and not any("Medals" in p for p in venues)


def test_a_long_paragraph_is_cut_between_words() -> None:
    words = [f"w{i}" for i in range(400)]
    pieces = split_page(f"<p>{' '.join(words)}</p>", 50, tokenizer="regex")
    assert len(pieces) > 5
    assert all(p.startswith("<p>") and p.endswith("</p>") for p in pieces)
    assert [w for p in pieces for w in p[3:-4].split()] == words


def test_markdown_is_split_as_html() -> None:
    text = "# Notes\n\n| a | b |\n|---|---|\n" + "".join(f"| x{i} | {i} |\n" for i in range(40))
    pieces = split_page(text, 120, tokenizer="regex")
    assert len(pieces) > 3
    assert all("<thead><tr><th>a</th><th>b</th></tr></thead>" in p for p in pieces)


def test_bad_size_and_empty_page() -> None:
    with pytest.raises(ConfigError, match="at least 16"):
        split_page(TABLE_PAGE, 8)
    with pytest.raises(EmptyInputError):
        split_page("<script>x()</script>", 100)
