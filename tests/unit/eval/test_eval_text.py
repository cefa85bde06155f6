"""HTML to text, chunking, budget fill and truncation."""

from __future__ import annotations

import pytest
from hrefine.budget import RegexCounter, get_counter
from hrefine.errors import BudgetTooSmallError
from hrefine.eval._text import (
    chunk_text,
    fill_budget,
    html_to_text,
    looks_like_html,
    text_to_html,
    truncate_to_tokens,
)

PAGE = """<!DOCTYPE html><html><head><title>T</title><style>p{color:red}</style></head>
<body><script>var x = "hidden";</script><h1>Title &amp; more</h1>
<p>First   paragraph.</p><div hidden>secret</div><div style="display: none">gone</div>
<table><tr><th>Year</th><th>Winner</th></tr><tr><td>1971</td><td>Friedkin</td></tr></table>
<!-- a comment --><ul><li>one</li><li>two</li></ul></body></html>"""


def test_html_to_text_keeps_visible_text_one_line_per_block() -> None:
    text = html_to_text(PAGE)
    assert text.splitlines() == [
        "Title & more",
        "First paragraph.",
        "Year | Winner",
        "1971 | Friedkin",
        "one",
        "two",
    ]


def test_html_to_text_handles_nq_tokenised_tags_and_empty_input() -> None:
    nq = '<Table> <Tr> <Th_colspan="2"> Genre </Th> <Td> Drama </Td> </Tr> </Table>'
    assert html_to_text(nq) == "Genre | Drama"
    assert html_to_text("   ") == ""
    assert html_to_text('<?xml version="1.0" encoding="utf-8"?><p>x</p>') == "x"


def test_looks_like_html_and_text_to_html_round_trip() -> None:
    assert looks_like_html("<p>x</p>")
    assert not looks_like_html("a < b and c > d")
    page = text_to_html("one & two\n\nthree")
    assert looks_like_html(page)
    assert html_to_text(page).splitlines() == ["one & two", "three"]


def test_chunk_text_loses_no_text_and_respects_size() -> None:
    counter = RegexCounter()
    para = " ".join(f"word{i}." for i in range(300))
    text = "Heading\n\n" + "short line\n" * 5 + "\n" + para + "\n\nTail paragraph."
    chunks = chunk_text(text, counter, chunk_tokens=40)
    assert " ".join(" ".join(chunks).split()) == " ".join(text.split())
    assert max(counter.count(c) for c in chunks) <= 40 + 2
    assert chunk_text("  \n\n ", counter) == []


def test_chunk_text_closes_chunks_at_paragraph_breaks() -> None:
    counter = RegexCounter()
    p1 = " ".join(["alpha"] * 30)
    p2 = " ".join(["beta"] * 10)
    assert chunk_text(f"{p1}\n\n{p2}", counter, chunk_tokens=60) == [p1, p2]
    # Short paragraphs are packed together until half the chunk size is reached.
    assert chunk_text("a b\n\nc d\n\ne f", counter, chunk_tokens=60) == ["a b\nc d\ne f"]


def test_chunk_text_rejects_bad_size() -> None:
    with pytest.raises(ValueError, match="chunk_tokens"):
        chunk_text("x", RegexCounter(), chunk_tokens=0)


def test_fill_budget_never_over_and_in_document_order() -> None:
    counter = get_counter()
    texts = [f"chunk number {i} " + "filler " * (i % 7 + 3) for i in range(30)]
    scores = [float((i * 7) % 11) for i in range(30)]
    for budget in (20, 57, 200):
        out = fill_budget(texts, scores, counter, budget)
        assert counter.count(out) <= budget
        picked = [texts.index(p) for p in out.split("\n\n")]
        assert picked == sorted(picked)
    with pytest.raises(BudgetTooSmallError):
        fill_budget(texts, scores, counter, 2)


def test_fill_budget_respects_candidates() -> None:
    counter = RegexCounter()
    out = fill_budget(["a b", "c d", "e f"], [3.0, 2.0, 1.0], counter, 100, candidates=[2])
    assert out == "e f"


@pytest.mark.parametrize("budget", [1, 7, 64, 300])
def test_truncate_to_tokens_is_a_maximal_word_prefix(budget: int) -> None:
    counter = get_counter()
    text = " ".join(f"tok{i}, naïve-{i * 13} café" for i in range(400))
    out = truncate_to_tokens(text, counter, budget)
    assert text.startswith(out)
    assert counter.count(out) <= budget
    nxt = text[: len(out) + 1 + len(text[len(out) :].split()[0])]
    assert counter.count(nxt) > budget


def test_truncate_to_tokens_returns_short_text_whole() -> None:
    counter = get_counter()
    assert truncate_to_tokens("  just a few words ", counter, 100) == "just a few words"
    assert truncate_to_tokens("anything", counter, 0) == ""
