"""A browser's HTML parser rebuilds the same DOM from pruned HTML without optional end tags."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hrefine.html import HtmlPruner
from hrefine.html.render import omit_end_tags
from html_pages import END_TAG_CASES

pytestmark = pytest.mark.browser

BODY = "() => document.body.innerHTML"


def _dom(tab: Any, html: str, doctype: str) -> str:
    # Without a doctype the browser is in quirks mode, as for a pruned fragment on its own.
    tab.page.set_content(f"{doctype}<html><body>{html}</body></html>")
    return str(tab.page.evaluate(BODY))


@pytest.mark.parametrize("doctype", ["<!DOCTYPE html>", ""])
def test_chromium_builds_the_same_dom(tab: Any, shared_data: Path, doctype: str) -> None:
    for html in END_TAG_CASES:
        assert _dom(tab, omit_end_tags(html), doctype) == _dom(tab, html, doctype), html
    page = (shared_data / "wtq" / "pages" / "200-11.html").read_bytes()
    for question in (
        "how many golden globe awards did the film win?",
        "who was nominated for best actor?",
    ):
        pruned = HtmlPruner(scorer="bm25", omit_end_tags=False).prune(page, question, 1500).html
        assert "</td>" in pruned
        assert _dom(tab, omit_end_tags(pruned), doctype) == _dom(tab, pruned, doctype)
