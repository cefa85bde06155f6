"""Bad input: empty, plain text, broken markup, odd encodings, huge pages, extreme nesting, CJK."""

from __future__ import annotations

from pathlib import Path

import lxml.html
import pytest
from hrefine.errors import EmptyInputError
from hrefine.html import HtmlPruner, build_block_tree, clean_html
from hrefine.html._load import parse_document


def _text(html: str) -> str:
    return lxml.html.document_fromstring(html).text_content()


@pytest.mark.parametrize("empty", ["", "   \n\t ", b"", b"  "])
def test_empty_input_raises_empty_input_error(empty: str | bytes) -> None:
    with pytest.raises(EmptyInputError):
        clean_html(empty)
    with pytest.raises(EmptyInputError):
        build_block_tree(empty)


def test_page_without_visible_text_raises_empty_input_error(pages: Path) -> None:
    with pytest.raises(EmptyInputError, match="no visible text"):
        clean_html((pages / "empty_body.html").read_bytes())


def test_non_html_type_raises_type_error() -> None:
    with pytest.raises(TypeError, match="str or bytes"):
        clean_html(123)  # type: ignore[arg-type]


def test_plain_text_is_wrapped_and_kept() -> None:
    out = clean_html("just some plain text, no tags at all")
    assert _text(out) == "just some plain text, no tags at all"
    tree = build_block_tree("just some plain text, no tags at all")
    assert [n.text for n in tree if n.kind == "block"] == ["just some plain text, no tags at all"]


def test_broken_unclosed_tags_parse_leniently(pages: Path) -> None:
    text = _text(clean_html((pages / "unclosed.html").read_bytes()))
    for piece in ("First paragraph", "bold never closed", "cell two", "cell three", "item two"):
        assert piece in text


def test_self_closed_html_and_xml_declaration(pages: Path) -> None:
    out = clean_html((pages / "self_closed.html").read_bytes())
    assert "Text after a self-closed html tag survives." in out


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("latin1.html", "Le café de la gare sert des crêpes à la française."),
        ("utf16_bom.html", "Grüße aus Köln, sagte die Möwe."),
        ("utf8_wrong_meta.html", "Naïve café owners in Zürich"),
        ("shiftjis.html", "東京タワーは日本の東京都港区にある電波塔です。"),
        ("control_chars.html", "Alpha beta gamma delta"),
    ],
)
def test_encodings_and_control_characters(pages: Path, name: str, expected: str) -> None:
    assert expected in _text(clean_html((pages / name).read_bytes()))


@pytest.mark.parametrize("as_bytes", [False, True])
def test_characters_xml_refuses_are_dropped_and_the_rest_kept(as_bytes: bool) -> None:
    bad = "\x00\x01\x08\x0b\x0c\x0e\x1f\x7f\ufffe\uffff"
    page = f"<p>Al{bad}pha ünïcødé {bad}Ωmega</p><p>tab\tnew\nline</p>"
    out = _text(clean_html(page.encode("utf-8") if as_bytes else page))
    assert "Alpha ünïcødé Ωmega" in out
    assert "tab new line" in out
    assert not any(ch in out for ch in bad)


def test_lone_surrogates_are_dropped() -> None:
    out = _text(clean_html("<p>Left\ud800 and\udfff right.</p><p>ok</p>"))
    assert "Left and right." in out


def test_undeclared_non_utf8_bytes_are_detected() -> None:
    raw = "<p>Ça coûte très cher à Genève, dit-elle à l'élève.</p>".encode("cp1252")
    assert "Ça coûte très cher à Genève" in _text(clean_html(raw))


def test_ten_thousand_levels_of_nesting_keep_all_text() -> None:
    deep = "<p>before</p>" + "<div>q" * 10_000 + "deep text" + "</div>" * 10_000 + "<p>after</p>"
    out = clean_html(deep)
    tree = build_block_tree(deep)
    text = _text(out)
    assert "before" in text and "deep text" in text and "after" in text
    assert text.count("q") == 10_000
    assert sum(n.text.count("q") for n in tree if n.kind == "block") == 10_000
    result = HtmlPruner(scorer="bm25", tokenizer="regex").prune(deep, "deep text", 64)
    assert 0 < result.tokens <= 64


def test_ten_thousand_nested_wrappers_keep_the_text() -> None:
    # Tags nested deeper than max_depth are flattened (libxml2 would drop everything past 255).
    deep = "<div>" * 10_000 + "<p>only text</p>" + "</div>" * 10_000 + "<p>tail</p>"
    out = clean_html(deep)
    assert _text(out).split() == ["only", "text", "tail"]
    assert len(out) < 200


def test_five_megabyte_page_is_cleaned_without_loss() -> None:
    row = "<tr><td>{i}</td><td>Player number {i}</td><td>Team {t}</td></tr>"
    rows = "".join(row.format(i=i, t=i % 17) for i in range(80_000))
    page = f"<html><body><h1>Big</h1><table>{rows}</table><p>The end.</p></body></html>"
    assert len(page) > 5_000_000
    out = clean_html(page)
    assert "Player number 59999" in out and "The end." in out
    assert out.count("<tr>") == 80_000


def test_cjk_characters_count_as_words(pages: Path) -> None:
    tree = build_block_tree((pages / "cjk.html").read_bytes(), max_words=10)
    blocks = [n for n in tree if n.kind == "block"]
    words = {n.text: n.metadata["words"] for n in blocks}
    assert words["北京烤鸭"] == 4
    assert all(n.metadata["words"] < 40 for n in blocks)
    para = next(n for n in blocks if n.text.startswith("北京烤鸭是"))
    assert para.metadata["words"] >= 20  # characters, not one whitespace-free "word"


def test_cjk_page_prunes_to_budget(pages: Path) -> None:
    pruner = HtmlPruner(scorer="bm25")
    result = pruner.prune((pages / "cjk.html").read_bytes(), "東京タワー", 40)
    assert 0 < result.tokens <= 40
    assert "東京タワー" in result.html


def test_cjk_block_bigger_than_the_budget_is_cut_by_characters() -> None:
    # No space and no sentence end to cut at: the fallback cuts the best block's text by
    # characters (it raised "cannot hold even the first word" before).
    text = "東京都は日本の首都であり最大の都市で" * 12
    result = HtmlPruner(scorer="bm25").prune(f"<p>{text}</p>", "東京", 20)
    assert result.stats["truncated"] is True
    assert 10 < result.tokens <= 20
    assert text.startswith(result.html) and len(result.html) > 10
    mixed = "Tokyo 東京都は日本の首都であり最大の都市で" * 12
    cut = HtmlPruner(scorer="bm25").prune(f"<p>{mixed}</p>", "Tokyo", 20).html
    assert mixed.startswith(cut) and cut.startswith("Tokyo 東京都は")


@pytest.mark.parametrize("bad", [123, None, 4.5])
def test_pruner_names_the_types_it_takes(bad: object) -> None:
    from hrefine.html import HtmlPruner

    with pytest.raises(TypeError, match="str, bytes or bytearray, or an iterable of them, got"):
        HtmlPruner(scorer="bm25").prune(bad, "q", 100)  # type: ignore[arg-type]
    # Inside a list, with other pages: skipped and named, the other pages pruned.
    result = HtmlPruner(scorer="bm25").prune(["<p>a page</p>", bad], "q", 100)  # type: ignore[list-item]
    assert result.html == "<p>a page</p>"
    [failed] = result.stats["failed_documents"]
    assert failed["document"] == 1 and "InputTypeError" in failed["error"]
    assert "str or bytes" in failed["error"]


def test_pruner_takes_pages_from_any_iterable_and_a_memoryview_as_one_page() -> None:
    from hrefine.html import HtmlPruner

    pruner = HtmlPruner(scorer="bm25")
    pages = ["<p>cats purr</p>", "<p>dogs bark</p>"]
    listed = pruner.prune(pages, "dogs", 100).html
    assert pruner.prune(iter(pages), "dogs", 100).html == listed
    assert pruner.prune((p for p in pages), "dogs", 100).html == listed
    one = pruner.prune(memoryview(b"<p>cats purr</p>"), "cats", 100)
    assert "cats purr" in one.html and len(one.documents) == 1


def test_nesting_libxml2_accepts_is_kept_unless_max_depth_says_otherwise() -> None:
    page = "<div>" * 230 + "<p>deep text</p>" + "</div>" * 230 + "<p>after</p>"
    root = parse_document(page)
    assert root.xpath("count(//p[text()='deep text']/ancestor::*)") > 230  # not flattened
    shallow = parse_document(page, max_depth=50)
    assert shallow.xpath("count(//p[text()='deep text']/ancestor::*)") <= 50
    assert _text(clean_html(page, max_depth=50)).split() == ["deep", "text", "after"]


def test_too_deep_nesting_is_caught_after_many_parse_errors() -> None:
    # libxml2 reports at most 100 errors; its nesting limit is reported past that cap.
    junk = "<p>x</q><bogus a=>" * 300
    deep = junk + "<div>" * 400 + "<p>deep text</p>" + "</div>" * 400 + "<p>after</p>"
    assert _text(clean_html(deep)).split()[-3:] == ["deep", "text", "after"]
