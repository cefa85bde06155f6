"""The never-behind benchmark runs HtmlRAG's registered variants where it runs HtmlRAG."""

from __future__ import annotations

from benchmarks.never_behind import html_only


def test_htmlrag_variants_are_html_methods() -> None:
    assert html_only("htmlrag")
    assert html_only("htmlrag-generative") and html_only("htmlrag-bm25")
    assert not html_only("raptor") and not html_only("chunks-embedding")
    assert not html_only("htmlragged")  # a prefix is not a variant without its dash
