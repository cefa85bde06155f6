"""Optional end tags: left out only where HTML allows it, so a parser rebuilds the same tree."""

from __future__ import annotations

import pytest
from hrefine.budget import get_counter
from hrefine.eval.loaders import load_dataset
from hrefine.html import HtmlPruner, clean_html
from hrefine.html.render import omit_end_tags
from html_pages import END_TAG_CASES as CASES

etree = pytest.importorskip("lxml.etree")


def _tree(html: str) -> bytes:
    return bytes(etree.tostring(etree.fromstring(html, etree.HTMLParser())))


@pytest.mark.parametrize("html", CASES)
def test_the_parsed_tree_is_unchanged(html: str) -> None:
    assert _tree(omit_end_tags(html)) == _tree(html)


def test_which_end_tags_go() -> None:
    html = "<table><tr><td>a</td><td>b</td></tr><tr><td>c</td></tr></table>"
    assert omit_end_tags(html) == "<table><tr><td>a<td>b<tr><td>c</table>"
    assert omit_end_tags("<ul><li>a</li><li>b</li></ul>") == "<ul><li>a<li>b</ul>"
    # Kept where text or a non-closing element follows, or where the parent forbids it.
    assert omit_end_tags("<ul><li>a</li> text</ul>") == "<ul><li>a</li> text</ul>"
    assert omit_end_tags("<a><p>x</p></a>") == "<a><p>x</p></a>"
    assert omit_end_tags("<p>x</p><span>y</span>") == "<p>x</p><span>y</span>"
    assert omit_end_tags("<p>x</p><pre>y</pre>") == "<p>x<pre>y</pre>"


def test_an_attribute_holding_an_end_tag_leaves_the_html_alone() -> None:
    html = '<table><tr><td><img alt="a </td> in alt"></td></tr></table>'
    assert omit_end_tags(html) == html


def test_real_pages_parse_the_same_and_cost_fewer_tokens() -> None:
    counter = get_counter(None)
    pages = {it.doc_id: it.document for it in load_dataset("wtq")}
    pages.update((it.doc_id, it.document) for it in load_dataset("leval-nq"))
    before = after = 0
    for doc_id in sorted(pages):
        cleaned = clean_html(pages[doc_id])
        compact = omit_end_tags(cleaned)
        assert _tree(compact) == _tree(cleaned), doc_id
        before += counter.count(cleaned)
        after += counter.count(compact)
    assert after < 0.9 * before  # table-heavy pages: rows are mostly end tags


def test_the_pruner_writes_end_tags_only_when_asked() -> None:
    rows = "".join(f"<tr><td>{i}</td><td>Name{i}</td></tr>" for i in range(30))
    page = f"<html><body><h1>Votes</h1><table>{rows}</table></body></html>"
    compact = HtmlPruner(scorer="bm25").prune(page, "Name7", 120)
    full = HtmlPruner(scorer="bm25", omit_end_tags=False).prune(page, "Name7", 120)
    assert "</td>" not in compact.html and "</td>" in full.html
    assert "Name7" in compact.html and "Name7" in full.html
    # The same budget holds more rows when the end tags are left out.
    assert compact.html.count("<tr>") > full.html.count("<tr>")
    assert compact.tokens <= 120 and full.tokens <= 120
