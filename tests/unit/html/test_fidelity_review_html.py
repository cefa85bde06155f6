"""Fidelity review of HtmlRAG: a paragraph is never cut into its inline children, and plain-text
numbered items do not show their numbers twice."""

from __future__ import annotations

import pytest

pytest.importorskip("lxml")

from hrefine.html import HtmlPruner, build_block_tree
from hrefine.html.formats import to_html

PARAGRAPH = (
    "<p>The <b>French Connection</b> is a 1971 film directed by <a href=x>William Friedkin</a>"
    " in New York.</p>"
)
SENTENCE = "The French Connection is a 1971 film directed by William Friedkin in New York."


@pytest.mark.parametrize("budget", [12, 20, 40])
def test_paragraph_never_loses_its_inline_words(budget: int) -> None:
    result = HtmlPruner(scorer="bm25").prune(PARAGRAPH, "who directed it", budget)
    # Whole, or cut at its end; never with holes where the bold text and the link were.
    words = " ".join(result.html.replace("<b>", "").replace("</b>", "").split())
    words = words.removeprefix("<p>").removesuffix("</p>")
    assert SENTENCE.startswith(words), result.html
    assert len(result.blocks) == 1
    assert result.blocks[0].text == SENTENCE


def test_inline_only_paragraph_is_one_block_whatever_its_size() -> None:
    tree = build_block_tree(PARAGRAPH, max_words=3)
    blocks = [n for n in tree.nodes if n.kind == "block"]
    assert [b.text for b in blocks] == [SENTENCE]


def test_block_children_are_still_opened() -> None:
    page = "<div><p>one two three four</p><p>five six seven</p></div>"
    tree = build_block_tree(page, max_words=3)
    assert sorted(n.text for n in tree.nodes if n.kind == "block") == [
        "five six seven",
        "one two three four",
    ]


def test_long_paragraph_split_at_sentence_ends_not_at_inline_children() -> None:
    para = (
        "<p><b>Kodachrome</b> is a brand of <a href=x>color reversal film</a> introduced by "
        "<a href=y>Eastman Kodak</a> in 1935. It was one of the first successful color materials "
        "and was used for both <i>cinematography</i> and still photography. For many years "
        "Kodachrome was widely used for professional color photography, especially for images "
        "intended for publication in print media. Kodachrome was discontinued in 2009 by "
        "<b>Kodak</b> because of declining sales.</p>"
    )
    result = HtmlPruner(scorer="bm25").prune(para, "when was Kodachrome discontinued", 40)
    # Pieces of the paragraph cut at sentence ends, never its bold text or links on their own.
    assert result.stats["split_paragraphs"] == 1
    assert {b.tag_path for b in result.blocks} == {"html>body>p"}
    assert not any(b.own_text for b in result.blocks)
    assert all(b.text.endswith(".") for b in result.blocks)


def test_numbered_text_lines_show_their_number_once() -> None:
    html = to_html("1. first\n2. second", "text")
    assert "<ol" not in html
    assert "<li>1. first</li><li>2. second</li>" in html


def test_numbered_and_bullet_runs_stay_separate_lists() -> None:
    html = to_html("- a\n- b\n1. first\n2. second", "text")
    assert html.count("<ul>") == 2


def test_markdown_numbered_list_has_no_number_in_its_text() -> None:
    html = to_html("1. first\n2. second\n", "markdown")
    assert "<ol>" in html and "<li>first</li>" in html
