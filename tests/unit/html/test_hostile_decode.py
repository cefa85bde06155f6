"""Decoding odd bytes (#41, item 6): mostly valid UTF-8 stays UTF-8 (its bad bytes replaced and
reported), UTF-16 and UTF-32 without a byte-order mark are recognised, and binary files are
refused with HtmlParseError saying what they look like."""

from __future__ import annotations

import gzip
import logging
import random

import pytest
from hrefine._decode import decode_bytes, decode_page
from hrefine.errors import HtmlParseError
from hrefine.html import HtmlPruner, clean_html

_PAGE = "<html><body><h1>Zürich</h1><p>café – 日本語 – naïve façade, Genève.</p></body></html>"


# --- mostly valid UTF-8 ------------------------------------------------------------------


def test_one_invalid_byte_leaves_a_utf8_page_utf8(caplog: pytest.LogCaptureFixture) -> None:
    data = _PAGE.encode().replace(b"Gen", b"G\xffen")
    with caplog.at_level(logging.WARNING, logger="hrefine._decode"):
        page = decode_page(data)
    assert page.encoding == "utf-8" and page.replaced == 1
    assert page.text == _PAGE.replace("Gen", "G\ufffden")
    assert "1 invalid byte sequences replaced" in caplog.text


def test_the_issue_example_decodes_as_utf8() -> None:
    # Three valid non-ASCII characters and one bad byte: without the rule, windows-1252.
    data = "<p>café – 日</p>".encode() + b"\xff"
    assert decode_bytes(data) == "<p>café – 日</p>\ufffd"


def test_a_page_declaring_utf8_needs_fewer_valid_characters() -> None:
    # Two valid characters, one bad byte: UTF-8 when declared, windows-1252 when not.
    body = b"<p>caf\xc3\xa9 \xff and \xe6\x97\xa5</p>"
    assert decode_bytes(b'<meta charset="utf-8">' + body).endswith("<p>café \ufffd and 日</p>")
    assert decode_bytes(body) == body.decode("cp1252")


def test_a_written_replacement_character_is_not_counted_as_replaced() -> None:
    data = "<p>\ufffd café – 日</p>".encode() + b"\xff"
    page = decode_page(data)
    assert page.encoding == "utf-8" and page.replaced == 1


@pytest.mark.parametrize(
    ("text", "encoding"),
    [
        ("Le café de la gare sert des crêpes à la française.", "cp1252"),
        ("Москва — столица России. Съешь же ещё этих мягких булок.", "cp1251"),
        ("東京都は日本の首都です。日本語の文章はとても面白いです。", "shift_jis"),
        ("東京都は日本の首都です。日本語の文章はとても面白いです。", "euc-jp"),
        ("北京是中国的首都。中华人民共和国成立于一九四九年。", "gbk"),
        ("서울은 한국의 수도입니다. 대한민국은 동아시아에 있습니다.", "euc-kr"),
        ("臺北是中華民國的首都。台灣位於東亞。", "big5"),
    ],
)
def test_legacy_pages_are_not_read_as_broken_utf8(text: str, encoding: str) -> None:
    # Legacy multi-byte text read as UTF-8 has far more invalid sequences than valid ones.
    assert text in decode_bytes(f"<html><body><p>{text}</p></body></html>".encode(encoding))


@pytest.mark.parametrize(
    ("text", "encoding"),
    [
        # windows-1252's punctuation: a DOS code page reads it as letters with less chaos.
        ("He said \u201chello\u201d \u2013 it costs 5\u20ac. Caf\u00e9.", "cp1252"),
        # Text that really is in a DOS code page keeps it.
        ("Привет, как дела? Это короткий текст на русском языке.", "cp866"),
        ("Zażółć gęślą jaźń. Dzień dobry, jak się masz?", "cp852"),
        ("Καλημέρα, τι κάνεις; Είμαι καλά, ευχαριστώ.", "cp737"),
    ],
)
def test_short_legacy_text_is_read_in_its_code_page(text: str, encoding: str) -> None:
    assert decode_bytes(text.encode(encoding)) == text


def test_a_legacy_page_that_wrongly_declares_utf8_is_still_detected() -> None:
    text = "東京都は日本の首都です。日本語の文章はとても面白いです。"
    data = f'<meta charset="utf-8"><p>{text}</p>'.encode("shift_jis")
    assert text in decode_bytes(data)


# --- UTF-16 and UTF-32 without a byte-order mark ------------------------------------------


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be"])
def test_wide_encodings_without_a_bom_are_recognised(encoding: str) -> None:
    page = decode_page(_PAGE.encode(encoding))
    assert page.encoding == encoding and page.text == _PAGE
    assert "café – 日本語" in clean_html(_PAGE.encode(encoding))


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be", "utf-32-be"])
def test_the_pruner_reads_bomless_utf16_as_html(encoding: str) -> None:
    result = HtmlPruner(scorer="bm25", tokenizer="regex").prune(_PAGE.encode(encoding), "café", 64)
    assert result.stats["input_formats"] == ["html"]
    assert "<h1>Zürich</h1>" in result.html and "café – 日本語" in result.html


def test_mostly_cjk_utf16_is_recognised_by_its_markup() -> None:
    page = "<html><body>" + "<p>東京都は日本の首都です。</p>" * 30 + "</body></html>"
    assert decode_bytes(page.encode("utf-16-le")) == page


# --- binary input ------------------------------------------------------------------------

_BINARY = {
    "PDF": b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Type /Catalog >>\nendobj\n",
    "PNG": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10",
    "ZIP": b"PK\x03\x04\x14\x00\x00\x00\x08\x00word/document.xml",
    "GIF": b"GIF89a\x01\x00\x01\x00\x80\x00\x00",
    "JPEG": b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01",
    "gzip": gzip.compress(b"<p>hello</p>" * 100),
    "WebP": b"RIFF\x24\x00\x00\x00WEBPVP8 ",
    "MP4": b"\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00",
}


@pytest.mark.parametrize("kind", sorted(_BINARY))
def test_binary_files_are_refused_by_their_signature(kind: str) -> None:
    with pytest.raises(HtmlParseError, match=f"looks like (an? )?{kind}"):
        clean_html(_BINARY[kind])
    with pytest.raises(HtmlParseError, match=f"looks like (an? )?{kind}"):
        HtmlPruner(scorer="bm25", tokenizer="regex").prune(_BINARY[kind], "what?", 64)


def test_a_pdf_read_into_a_str_is_refused() -> None:
    with pytest.raises(HtmlParseError, match="PDF"):
        clean_html(_BINARY["PDF"].decode("latin-1"))


def test_random_bytes_are_refused_as_binary_data() -> None:
    data = random.Random(3).randbytes(5000)
    with pytest.raises(
        HtmlParseError, match=r"binary data, not HTML or text: \d+ of its first 5,000 bytes"
    ):
        decode_bytes(data)
    with pytest.raises(HtmlParseError, match="binary data"):
        clean_html(data.decode("latin-1"))


def test_a_short_string_with_stray_controls_is_text() -> None:
    # Under 256 characters nothing is called binary for its control characters.
    assert "Alpha" in clean_html("<p>Al\x00\x01\x02\x03pha</p>")


@pytest.mark.parametrize(
    "text",
    ["RIFF is a container format.", "The ftyp box opens an MP4 file.", "OggS and fLaC are tags."],
)
def test_text_that_starts_like_a_signature_is_text(text: str) -> None:
    assert clean_html(text.encode()) == f"<html><body>{text}</body></html>"
