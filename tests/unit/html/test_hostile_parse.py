"""Hostile and odd markup (#41, items 1, 4, 5 and the input bound of 7): characters XML refuses,
attribute names lxml cannot address, values over libxml2's size limit, content after
``</html>``, and pages over ``max_input_bytes``. Nothing crashes, nothing is lost silently."""

from __future__ import annotations

import re

import pytest
from hrefine.errors import ConfigError, HrefineError, HtmlParseError, InputTypeError
from hrefine.html import HtmlPruner, HtmlPrunerOptions, build_block_tree, clean_html
from hrefine.html._load import (
    DEFAULT_MAX_INPUT_BYTES,
    LIBXML_MAX_DEPTH,
    check_input_size,
    parse_document,
    reaches_depth,
)
from hypothesis import given, settings
from hypothesis import strategies as st

# What XML refuses, hence what must never reach an output: C0 controls but tab, LF and CR,
# DEL, U+FFFE, U+FFFF and lone surrogates.
_REFUSED = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffe\uffff\ud800-\udfff]")
# Over libxml2's 10,000,000-byte limit on one text node, attribute value or name.
_BIG = 12_000_000


def _text(html: str, part: str = "html") -> str:
    """The text of ``html`` (of its ``<body>`` with part="body"), a space between text nodes.

    Read with hrefine's parser: lxml's own stops at the 10 MB values some outputs hold."""
    root = parse_document(html)
    el = root if part == "html" else root.find(part)
    return " ".join(" ".join(el.itertext()).split())


# --- item 1: crashes ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("page", "expected"),
    [
        ("<p>a&#1;b</p>", "ab"),
        ("<p>a&#xFFFE;b</p>", "ab"),
        ("<p>a&#65535;b&#x7f;c</p>", "abc"),
        ("<p>a&#0000001;b&#x00001F;c&#31d</p>", "abcd"),  # leading zeros, no ";"
        ("<title>a&#1;b</title><p>body</p>", "ab body"),
        ("<p><b>x</b>tail&#x1;text</p>", "x tailtext"),
        ("<pre>a&#1;b</pre>", "ab"),
        ("<table><tr><th>a&#8;b</th><td>c&#X1e;d</td></tr></table>", "ab cd"),
    ],
)
def test_references_to_characters_xml_refuses_are_dropped(page: str, expected: str) -> None:
    out = clean_html(page)
    assert _text(out) == expected
    assert not _REFUSED.search(out)


def test_references_to_allowed_characters_are_kept() -> None:
    # Tab, LF, CR, &#0; and surrogates (read as U+FFFD), C1 references (windows-1252's).
    out = clean_html("<p>a&#9;b&#10;c&#13;d&#0;e&#xD800;f&#x80;g&#150;h&#12345;i</p>")
    assert _text(out) == "a b c d\ufffde\ufffdf€g–h\u3039i"


def test_control_characters_in_attribute_values_do_not_reach_the_output() -> None:
    out = clean_html('<p>Chart <img alt="x&#1;y&#x0B;z" src="c.png"></p>')
    assert 'alt="xyz"' in out
    assert not _REFUSED.search(out)


@pytest.mark.parametrize(
    "page",
    [
        '<p {a="1">x</p>',
        '<p {x}="1">x</p>',
        '<p {x}alt="s" {}="2" {="3">x</p>',
        '<p @click="go" :href="u" (tap)="t" [prop]="p" #ref a"b="1">x</p>',
    ],
)
def test_attribute_names_lxml_cannot_address_are_dropped(page: str) -> None:
    out = clean_html(page)
    assert out == "<html><body><p>x</p></body></html>"
    tree = build_block_tree(page)
    assert [n.text for n in tree if n.kind == "block"] == ["x"]


def test_kept_attributes_survive_beside_a_braced_name() -> None:
    out = clean_html('<p>Map <img {x}alt="s" alt="Harbour" src="m.png" title="t"></p>')
    assert '<img alt="Harbour">' in out


def test_an_image_whose_only_alt_is_braced_has_none() -> None:
    # "{x}alt" is not alt: the image has no alt text, so it goes, and with it the only text.
    with pytest.raises(HrefineError, match="no visible text"):
        clean_html('<img {x}alt="s">')


@settings(max_examples=150, deadline=None)
@given(
    name=st.text(min_size=1, max_size=12).filter(lambda s: not re.search(r"[\s/>=]", s)),
    value=st.text(max_size=12),
    code=st.integers(min_value=0, max_value=0x11_0010),
    hexa=st.booleans(),
)
def test_random_attribute_names_values_and_references(
    name: str, value: str, code: int, hexa: bool
) -> None:
    ref = f"&#x{code:X};" if hexa else f"&#{code};"
    quoted = value.replace('"', "&quot;")
    page = f'<p {name}="{quoted}{ref}" alt="k{ref}">one {ref} two</p><img {name}="1" alt="a">'
    try:
        out = clean_html(page, keep_attrs=("alt", name))
    except HrefineError:
        return
    assert not _REFUSED.search(out)
    assert "one" in out and "two" in out


# --- item 4: values over libxml2's 10 MB limit ----------------------------------------------


@pytest.mark.parametrize(
    "big",
    [
        f"<p>{'A' * _BIG}</p>",
        f'<img alt="chart" src="data:image/png;base64,{"A" * _BIG}">',
        f"<script>var a = '{'A' * _BIG}';</script>",
        f"<style>.a{{background:url(data:image/png;base64,{'A' * _BIG})}}</style>",
    ],
    ids=["text", "attribute", "script", "style"],
)
def test_a_value_over_ten_megabytes_keeps_the_rest_of_the_page(big: str) -> None:
    out = clean_html(f"<html><body><p>Before it.</p>{big}<p>After it.</p></body></html>")
    text = _text(out)
    assert text.startswith("Before it.") and text.endswith("After it.")


def test_a_page_that_opens_with_an_inline_image_keeps_its_text() -> None:
    page = f'<img src="data:image/png;base64,{"A" * _BIG}"><h1>Title</h1><p>Body text.</p>'
    assert _text(clean_html(page)) == "Title Body text."


def test_a_huge_value_after_many_errors_and_deep_nesting_keeps_the_rest() -> None:
    # libxml2 stops at its nesting limit first; the flattened page then meets the size limit.
    junk = '<x =a ="b">' * 300
    page = f'<p>{junk}start</p><img src="data:{"A" * _BIG}"><p>after</p>'
    text = _text(clean_html(page))
    assert "start" in text and text.endswith("after")


def test_a_huge_value_does_not_lift_the_nesting_limit() -> None:
    # Lifting the size limit lifts libxml2's depth limit to 2048; the page is flattened to the
    # usual 245 levels, so the cleaned page parses back whole.
    page = f"<p>{'A' * _BIG}</p>" + "<div>" * 400 + "deep" + "</div>" * 400 + "<p>after</p>"
    root = parse_document(page)
    assert not reaches_depth(root, LIBXML_MAX_DEPTH)
    text = _text(clean_html(page))
    assert "deep" in text and text.endswith("after")


# --- item 5: content after </html> -------------------------------------------------------


@pytest.mark.parametrize(
    ("page", "expected"),
    [
        ("<p>x</p></html><p>after</p>", "x after"),
        ("<p>x</p></HTML ><p>after</p>", "x after"),
        ("<html><body><p>x</p></body></html>trailing text", "x trailing text"),
        (
            "<html><head><title>One</title></head><body><p>First page.</p></body></html>\n"
            "<html><head><title>Two</title></head><body><p>Second page.</p></body></html>",
            "First page. Two Second page.",
        ),
    ],
)
def test_content_after_the_end_of_html_is_kept(page: str, expected: str) -> None:
    assert _text(clean_html(page, boilerplate=False), "body") == expected


def test_white_space_after_the_end_of_html_changes_nothing() -> None:
    page = "<html><body><p>x</p></body></html>\n\n"
    assert clean_html(page) == "<html><body><p>x</p></body></html>"


# --- item 7 (part): a bound on the input --------------------------------------------------


def test_the_default_bound_is_64_mib() -> None:
    assert DEFAULT_MAX_INPUT_BYTES == 64 * 1024 * 1024
    assert HtmlPrunerOptions().max_input_bytes == DEFAULT_MAX_INPUT_BYTES


@pytest.mark.parametrize(
    "page",
    [b"<p>" + b"x" * 200 + b"</p>", "<p>" + "x" * 200 + "</p>", "<p>" + "日" * 40 + "</p>"],
    ids=["bytes", "str", "str-in-utf8"],  # 47 characters, 127 bytes in UTF-8
)
def test_an_input_over_the_bound_is_refused_before_it_is_read(page: str | bytes) -> None:
    with pytest.raises(HtmlParseError, match="max_input_bytes=100"):
        clean_html(page, max_input_bytes=100)
    with pytest.raises(HtmlParseError, match="max_input_bytes=100"):
        HtmlPruner(scorer="bm25", tokenizer="regex", max_input_bytes=100).prune(page, "x", 64)
    assert "xxx" in clean_html(page, max_input_bytes=None) or "日" in clean_html(page)


def test_the_bound_counts_markdown_and_text_before_conversion() -> None:
    pruner = HtmlPruner(scorer="bm25", tokenizer="regex", max_input_bytes=300)
    with pytest.raises(HtmlParseError, match="max_input_bytes"):
        pruner.prune("# Title\n\n" + "word " * 100, "word", 64)
    # Converted, the text grows past the bound; the input itself is under it.
    assert pruner.prune("- a b\n- c d\n- e f\n" * 10, "c", 64).tokens <= 64


def test_check_input_size_passes_what_is_not_text() -> None:
    check_input_size(12345, 1)
    check_input_size("x" * 10, None)
    check_input_size(memoryview(b"x" * 10), 10)
    with pytest.raises(HtmlParseError):
        check_input_size(memoryview(b"x" * 11), 10)


@pytest.mark.parametrize(
    ("value", "error"), [(0, ConfigError), (-5, ConfigError), ("64MB", InputTypeError)]
)
def test_a_bad_bound_is_a_setting_error(value: object, error: type[Exception]) -> None:
    with pytest.raises(error, match="max_input_bytes"):
        HtmlPrunerOptions(max_input_bytes=value)
