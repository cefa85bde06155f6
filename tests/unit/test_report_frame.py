"""The report frame every method's page is written in: policy, head, escaping, small pieces."""

from __future__ import annotations

import base64
import hashlib
import re

from hrefine._report_frame import (
    PAGE_CSS,
    content_policy,
    esc,
    esc_text,
    folded,
    header,
    meter,
    more,
    opening,
    page,
    ref,
    table,
)


def _sha(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def test_the_policy_allows_only_the_pages_own_style_and_script() -> None:
    inert = content_policy("a{}")
    assert "script-src 'none'" in inert and f"style-src {_sha('a{}')}" in inert
    assert "default-src 'none'" in inert and "media-src" not in inert
    scripted = content_policy("a{}", "go()")
    assert f"script-src {_sha('go()')}" in scripted and "media-src 'none'" in scripted


def test_a_page_escapes_its_title_and_holds_its_body_and_script() -> None:
    doc = page("Some report", '<b "x">', PAGE_CSS, ["<main>\n", "</main>\n"])
    assert "<title>Some report: &lt;b &quot;x&quot;&gt;</title>" in doc
    assert doc.startswith("<!DOCTYPE html>\n") and doc.endswith("</main>\n</body></html>\n")
    assert "<script" not in doc
    policy = re.search(r'Content-Security-Policy" content="([^"]+)"', doc)
    assert policy is not None and _sha(PAGE_CSS) in policy.group(1)
    plain = page("R", None, "", ["x"], script="run()", escape=esc_text)
    assert "<title>R</title>" in plain and plain.endswith(
        "x<script>run()</script>\n</body></html>\n"
    )
    assert esc_text('"&') == '"&amp;' and esc('"&') == "&quot;&amp;"


def test_the_small_pieces() -> None:
    assert '<div class="meta">a · b&amp;</div>' in header("X report", None, "q?", ["a", "b&"], "")
    assert "hrefine · X report · f&lt;" in header("X report", "f<", "q", [], "")
    assert meter(12, 10, "used") == (
        '<meter class="bar" min="0" max="10" value="10" title="used"></meter>\n'
    )
    assert table(["a", "b"], ["<tr></tr>\n"]) == (
        "<table>\n<tr><th>a</th><th>b</th></tr>\n<tr></tr>\n</table>\n"
    )
    assert ref(3) == '<a class="ref" href="#n3">#3</a>'
    assert ref(3, "ref x", "d0-n") == '<a class="ref x" href="#d0-n3">#3</a>'
    assert opening("one two three", 2) == "one two …" and opening("one", 2) == "one"
    assert folded("a <b>", 5) == '<div class="text">a &lt;b&gt;</div>'
    assert folded("a b c", 1).startswith("<details><summary>a …</summary>")
    assert more(0, "notes") == "" and more(1_200, "notes") == (
        '<p class="note">and 1,200 more notes.</p>\n'
    )
    assert more(2) == '<p class="note">and 2 more.</p>\n'
