"""The pruning report: what it shows, where each block sits, and that page content stays data."""

from __future__ import annotations

import base64
import hashlib
import html as html_lib
import json
import re
from html.parser import HTMLParser
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from hrefine.html import BlockReport, HtmlPruner, PruneResult, render_report
from hrefine.html._load import LIBXML_MAX_DEPTH, parse_document
from hrefine.html._text import element_text, own_text
from hrefine.html.report import _asset
from html_pages import raw_hostile_result

DATA = Path(__file__).resolve().parents[2] / "data" / "html"

# Tags the report may contain: its own frame and the whitelist pages are rebuilt with.
REPORT_TAGS = {
    *("html", "head", "meta", "title", "style", "script", "body", "header", "div", "span"),
    *("h1", "h2", "h3", "h4", "h5", "h6", "b", "label", "input", "main", "section", "details"),
    *("summary", "pre", "aside", "ol", "ul", "li", "dl", "dt", "dd", "button", "table", "thead"),
    *("tbody", "tfoot", "tr", "td", "th", "caption", "blockquote", "figure", "figcaption", "br"),
    *("hr", "i", "u", "s", "em", "strong", "small", "sub", "sup", "mark", "code", "kbd", "samp"),
    *("var", "abbr", "cite", "dfn", "q", "time", "del", "ins", "template"),
}
# Attributes the report writes; everything from the page is dropped but colspan/rowspan.
REPORT_ATTRS = {
    *("lang", "charset", "http-equiv", "content", "name", "class", "id", "data-b", "data-o"),
    *("data-doc", "role", "aria-label", "aria-hidden", "type", "hidden", "colspan", "rowspan"),
    *("title", "data-lines"),
}


class _Tags(HTMLParser):
    """Start tags with their attributes, as a browser's tokenizer sees them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.script_text: list[str] = []
        self.style_text: list[str] = []
        self._in: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in = tag if tag in {"script", "style"} else None

    def handle_endtag(self, tag: str) -> None:
        self._in = None

    def handle_data(self, data: str) -> None:
        if self._in == "script":
            self.script_text.append(data)
        elif self._in == "style":
            self.style_text.append(data)


def _tags(report: str) -> _Tags:
    parser = _Tags()
    parser.feed(report)
    parser.close()
    return parser


def _data(report: str) -> dict[str, Any]:
    match = re.search(r'<script type="application/json" id="hr-data">(.*?)</script>', report, re.S)
    assert match is not None
    return json.loads(match.group(1))


def _ranks(data: dict[str, Any]) -> list[int]:
    """The rank column, or what the script works out without it: each block's place in order."""
    if "rank" in data:
        return list(data["rank"])
    ranks = [0] * data["n"]
    for k, i in enumerate(data["order"]):
        ranks[i] = k
    return ranks


def _ids(data: dict[str, Any]) -> list[int]:
    return list(data["id"]) if "id" in data else [data["id0"] + i for i in range(data["n"])]


def _views(report: str) -> tuple[str, str]:
    """All documents' full views, and all their kept views."""
    full = re.findall(
        r'<div class="page full(?: lazy)?">(.*?)</div>\n<div class="page kept-view', report, re.S
    )
    kept = re.findall(r'<div class="page kept-view(?: lazy)?">(.*?)</div>\n', report, re.S)
    return "".join(full), "".join(kept)


def _marked(view: str) -> list[int]:
    return sorted(int(i) for i in re.findall(r' data-b="(\d+)"', view))


def _sha(text: str) -> str:
    return base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()


@pytest.fixture(scope="module")
def bm25() -> HtmlPruner:
    return HtmlPruner(scorer="bm25")


@pytest.fixture(scope="module")
def real(bm25: HtmlPruner, wtq: dict[str, Any]) -> tuple[PruneResult, str]:
    q = wtq["questions"][0]
    result = bm25.prune(wtq["page"](q["doc"]), q["question"], 256)
    return result, result.to_html(title=q["doc"])


def _check_locations(result: PruneResult) -> None:
    """Every block's ``element`` is the element in ``cleaned[doc]`` that holds its text."""
    elements: dict[int, list[Any]] = {}
    for b in result.blocks:
        if b.reason == "empty":
            assert b.element is None
            continue
        assert b.element is not None, b
        if b.doc not in elements:
            root = parse_document(result.cleaned[b.doc], max_depth=LIBXML_MAX_DEPTH)
            elements[b.doc] = [e for e in root.iter() if isinstance(e.tag, str)]
        el = elements[b.doc][b.element]
        assert el.tag == b.tag_path.split(">")[-1]
        if b.own_text:
            assert own_text(el) == b.text
        elif b.stage2_score is None:
            assert b.text in element_text(el)
        else:  # stage 2 reads stage 1's output, where a table may have kept only some rows
            assert _in_order(b.text.split(), element_text(el).split()), b


def _in_order(words: list[str], within: list[str]) -> bool:
    """Whether ``words`` occur in ``within`` in this order (not necessarily side by side)."""
    it = iter(within)
    return all(any(w == x for x in it) for w in words)


def test_every_block_knows_its_element_in_the_cleaned_page(real: tuple[PruneResult, str]) -> None:
    result, _ = real
    _check_locations(result)


def test_stage2_blocks_are_traced_back_to_the_cleaned_page(
    fake_lm: Any, wtq: dict[str, Any]
) -> None:
    q = wtq["questions"][0]
    pruner = HtmlPruner(scorer="bm25", generative=True, lm=fake_lm, fine_max_words=40)
    result = pruner.prune(wtq["page"](q["doc"]), q["question"], 200)
    assert "prompt_tokens" in result.stats
    assert any(b.stage2_score is not None for b in result.blocks)
    _check_locations(result)
    full, kept = _views(result.to_html())
    assert _marked(full) == list(range(len(result.blocks)))
    _check_kept_view(result, kept)


def _check_kept_view(result: PruneResult, kept_view: str) -> None:
    """The kept view marks every kept block; a dropped one only as the frame of kept ones."""
    marked = _marked(kept_view)
    assert [i for i in marked if result.blocks[i].kept] == [
        i for i, b in enumerate(result.blocks) if b.kept
    ]
    assert all(result.blocks[i].own_text for i in marked if not result.blocks[i].kept)
    assert ' class="ot drop' not in kept_view  # dropped own text is not in it


def test_report_outlines_every_block_and_marks_the_kept_ones(
    real: tuple[PruneResult, str],
) -> None:
    result, report = real
    assert report.startswith("<!DOCTYPE html>")
    full, kept_view = _views(report)
    assert _marked(full) == list(range(len(result.blocks)))
    kept = re.findall(r'<[a-z0-9]+ class="[^"]*\bhb kept\b[^"]*" data-b="(\d+)"', full)
    assert sorted(int(i) for i in kept) == [i for i, b in enumerate(result.blocks) if b.kept]
    _check_kept_view(result, kept_view)
    assert f"<b>{result.tokens:,}</b> tokens kept" in report
    assert f"budget <b>{result.budget:,}</b>" in report
    assert f"<b>{result.original_tokens:,}</b>" in report
    assert "Show only what the LLM receives" in report
    data = _data(report)
    assert data["kept"] == [i for i, b in enumerate(result.blocks) if b.kept]
    assert data["n"] == len(result.blocks)
    assert "s2" not in data and "doc" not in data  # one-valued columns are left out
    assert "rank" not in data  # implied by order
    assert _ranks(data) == [b.rank for b in result.blocks]
    assert _ids(data) == [b.block_id for b in result.blocks]
    assert [data["paths"][p] for p in data["path"]] == [b.tag_path for b in result.blocks]
    assert [_ranks(data)[i] for i in data["order"]] == sorted(b.rank for b in result.blocks)
    assert data["unplaced"] == []
    # What the LLM receives is there verbatim (as text).
    assert html_lib.escape(result.documents[0], quote=False)[:200] in report


def test_report_is_self_contained_and_pins_its_own_code_by_hash(
    real: tuple[PruneResult, str],
) -> None:
    _, report = real
    parsed = _tags(report)
    scripts = [a for t, a in parsed.tags if t == "script"]
    assert scripts == [{"type": "application/json", "id": "hr-data"}, {}]
    csp = next(a["content"] for t, a in parsed.tags if t == "meta" and a.get("http-equiv"))
    assert csp is not None
    assert "default-src 'none'" in csp and "img-src 'none'" in csp
    assert f"'sha256-{_sha(parsed.script_text[-1])}'" in csp
    assert f"'sha256-{_sha(parsed.style_text[0])}'" in csp
    assert "unsafe-inline" not in csp
    for _, attrs in parsed.tags:  # nothing loads from anywhere
        assert not {"src", "href", "srcdoc", "action", "style"} & set(attrs)
    assert "http://" not in report.split("<body>")[0]


def test_report_inlines_its_package_data_assets_and_pins_exactly_those(
    real: tuple[PruneResult, str],
) -> None:
    result, report = real
    folder = resources.files("hrefine.html") / "report_assets"
    for name in ("report.css", "report.js"):
        shipped = (folder / name).read_text(encoding="utf-8")
        assert _asset(name) == shipped and shipped.strip()
        assert _asset(name) is _asset(name)  # read once, then cached
    css, js = _asset("report.css"), _asset("report.js")
    # Inlined, an asset must not be able to end its own element.
    assert "</style" not in css.lower() and "</script" not in js.lower()
    parsed = _tags(report)
    share = 100.0 * result.tokens / result.budget
    assert parsed.style_text == ["\n" + css.replace("__FILL__", f"{share:.2f}")]
    assert parsed.script_text[-1] == "\n" + js
    csp = next(a["content"] for t, a in parsed.tags if t == "meta" and a.get("http-equiv"))
    assert csp is not None
    directives = dict(d.strip().split(" ", 1) for d in csp.split(";"))
    assert directives["script-src"] == f"'sha256-{_sha(parsed.script_text[-1])}'"
    assert directives["style-src"] == f"'sha256-{_sha(parsed.style_text[0])}'"


def _hostile_result(bm25: HtmlPruner, budget: int = 4000) -> PruneResult:
    page = (DATA / "hostile.html").read_bytes()
    return bm25.prune(
        page, "what is the answer? </script><script>window.__pwned=1</script>", budget
    )


@pytest.mark.parametrize("kind", ["pruned", "raw", "raw in parts"])
def test_hostile_page_content_never_becomes_markup_or_code(
    bm25: HtmlPruner, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import hrefine.html._report_page as report_page

    if kind == "raw in parts":  # big pages: each part inert in a <template> until drawn
        monkeypatch.setattr(report_page, "CHUNK", 3)
    result = _hostile_result(bm25) if kind == "pruned" else raw_hostile_result()
    report = render_report(result, title="<b onmouseover=alert(1)>t</b>")
    assert ("<template" in report) == (kind == "raw in parts")
    parsed = _tags(report)
    for tag, attrs in parsed.tags:
        assert tag in REPORT_TAGS, tag
        assert set(attrs) <= REPORT_ATTRS, (tag, attrs)
        assert not any(name.startswith("on") for name in attrs)
        for value in attrs.values():
            assert "javascript:" not in (value or "").lower()
    assert [a.get("type") for t, a in parsed.tags if t == "script"] == ["application/json", None]
    assert len(parsed.script_text) == 2  # no text closed the data block early
    assert "__pwned" not in parsed.script_text[-1]
    assert [t for t, _ in parsed.tags].count("style") == 1
    metas = [a for t, a in parsed.tags if t == "meta" and "http-equiv" in a]
    assert [a["http-equiv"] for a in metas] == ["Content-Security-Policy"]
    # Text is escaped, not dropped: the visible words of the page are in the report.
    assert "Hover over me: the answer is 42." in report
    assert "&lt;/script&gt;&lt;script&gt;" in report
    # The JSON block holds no character that could end it or confuse a JavaScript parser.
    json_text = report.split('id="hr-data">', 1)[1].split("</script>", 1)[0]
    assert not set("<>&\u2028\u2029") & set(json_text)
    data = json.loads(json_text)
    assert data["n"] == len(result.blocks)
    if kind != "pruned":
        assert "\\u003c/script\\u003e" in json_text
        assert any("</script>" in p and "\u2028" in p for p in data["paths"])
        # http(s) links are shown as their address, other schemes not at all.
        assert 'title="https://example.com/safe?a=1&amp;b=&quot;2&quot;"' in report
        assert "[image: a picture\" onerror=\"window.__pwned='alt']" in report  # alt is text
        assert 'colspan="2">cell' not in report  # "2 onclick=x" is not a number


def test_tables_keep_their_spans_and_odd_nesting_cannot_lose_blocks(bm25: HtmlPruner) -> None:
    page = (
        "<html><body><h2>Results</h2><table><tr><th colspan='2'>Team</th><th>Pts</th></tr>"
        "<tr><td rowspan='2'>North</td><td>Alpha</td><td>10</td></tr>"
        "<tr><td>Beta</td><td>7</td></tr></table>"
        "<p>Alpha won the league with ten points.</p>"
        "<ul><li>first</li><li>second item</li></ul></body></html>"
    )
    result = bm25.prune(page, "who won the league?", 40)
    report = result.to_html()
    assert '<th colspan="2"' in report and '<td rowspan="2"' in report
    assert '<div class="p-p' in report  # paragraphs become divs: no implicit </p> surprises
    assert _marked(_views(report)[0]) == list(range(len(result.blocks)))
    # A cell outside any table is written as a div, which a browser will not discard.
    odd = PruneResult(
        html="",
        documents=[""],
        blocks=[BlockReport(5, 0, "html>body>td", "loose cell", 2, 1.0, None, 0, True, None, 2)],
        query="q",
        budget=10,
        tokens=2,
        original_tokens=2,
        cleaned=["<html><body><td>loose cell</td></body></html>"],
        tokenizer="fake",
    )
    assert parse_document(odd.cleaned[0]).find("body/td") is not None
    assert '<div class="p-td hb kept k5" data-b="0">loose cell</div>' in odd.to_html()


def test_several_documents_get_a_section_each(bm25: HtmlPruner) -> None:
    pages = [
        "<p>Paris is the capital of France.</p><p>It has many museums.</p>",
        "<p>   </p>",
        "<h1>Rome</h1><p>Rome is the capital of Italy.</p>",
    ]
    result = bm25.prune(pages, "capital of Italy", 30)
    report = result.to_html()
    assert len(re.findall(r'<section class="doc" id="doc-\d"', report)) == 3
    assert "Document 2 of 3" in report
    assert "This document is empty" in report
    assert "3 documents" in report
    data = _data(report)
    assert data["docs"] == 3
    assert data["unplaced"] == [i for i, b in enumerate(result.blocks) if b.element is None]
    assert data["doc"] == [b.doc for b in result.blocks]


def test_notebook_repr_is_a_sandboxed_frame(real: tuple[PruneResult, str]) -> None:
    result, report = real
    frame = result._repr_html_()
    assert frame.startswith("<iframe srcdoc=")
    assert 'sandbox="allow-scripts"' in frame
    assert "<script" not in frame and "&lt;script" in frame
    assert "allow-same-origin" not in frame
    assert result.to_html(title="x") == render_report(result, title="x")
    assert report == render_report(result, title="pages/200-11.html")


def test_old_style_block_reports_still_work() -> None:
    b = BlockReport(1, 0, "html>body>p", "t", 3, 0.5, None, 0, True, None)
    assert b.element is None and b.own_text is False
    result = PruneResult("<p>t</p>", ["<p>t</p>"], [b], "q", 10, 3, 3, ["<p>t</p>"], "fake")
    report = result.to_html()
    assert _data(report)["unplaced"] == [0]  # listed, not outlined
    assert "data-b=" not in report


def _text(markup: str) -> str:
    return re.sub(r"<[^>]*>", "", markup)


def _balanced(markup: str) -> bool:
    """Whether every element opened in ``markup`` is closed in it, in order."""
    stack: list[str] = []
    for end, name in re.findall(r"<(/?)([a-z0-9]+)[^>]*>", markup):
        if name in ("br", "hr"):
            continue
        if not end:
            stack.append(name)
        elif not stack or stack.pop() != name:
            return False
    return not stack


def test_a_big_page_is_written_in_parts_that_hold_each_block_once(
    real: tuple[PruneResult, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import hrefine.html._report_page as report_page

    result, whole = real
    monkeypatch.setattr(report_page, "CHUNK", 10)
    report = render_report(result, title="pages/200-11.html")
    full, kept_view = _views(report)
    parts = re.findall(
        r'<div class="part">(.*?)</div>(?=<template)|<template[^>]*>(.*?)</template>', full, re.S
    )
    parts_text = ["".join(p) for p in parts]
    assert len(parts_text) > 10 and full.count("<template") == len(parts_text) - 1
    assert f"drawn in {len(parts_text)} parts as you scroll" in report
    # Each part is well-formed on its own; every block is marked once, in one part; the text
    # is the text of the page drawn whole, in the same order.
    assert all(_balanced(p) for p in parts_text)
    assert _marked(full) == list(range(len(result.blocks)))
    _check_kept_view(result, kept_view)
    whole_full, whole_kept = _views(whole)
    assert "<template" not in whole_full
    assert _text(full) == _text(whole_full)
    assert _text(kept_view) == _text(whole_kept)
    assert all(
        int(n) > 0 for n in re.findall(r'<template data-lines="(\d+)">', full)
    )  # a guess at each part's height


def test_parts_are_cut_between_blocks_only(monkeypatch: pytest.MonkeyPatch) -> None:
    import hrefine.html._report_page as report_page

    monkeypatch.setattr(report_page, "CHUNK", 1)
    rows = "".join(f"<tr><td>row {i}</td><td>{i * 7} wins</td></tr>" for i in range(8))
    paras = "".join(
        f"<p>Paragraph {i} says something long about the season {' and more' * 12}.</p>"
        for i in range(12)
    )
    page = (
        f"<html><body><div>Intro text of the box.<table>{rows}</table>{paras}More text.</div>"
        "<p>Last one.</p></body></html>"
    )
    result = HtmlPruner(scorer="bm25").prune(page, "how many wins in row 3", 200)
    assert any(b.own_text for b in result.blocks)  # the box: a block of its own text
    report = result.to_html()
    full, _ = _views(report)
    assert _marked(full) == list(range(len(result.blocks)))
    parts = re.findall(r"<template[^>]*>(.*?)</template>", full, re.S)
    assert len(parts) > 5
    for part in parts:
        assert _balanced(part)
        # A block lies whole in one part; the box's own text may run over several.
        for i in re.findall(r' data-b="(\d+)"', part):
            b = result.blocks[int(i)]
            if not b.own_text:
                assert b.text.replace(" ", "") in html_lib.unescape(_text(part)).replace(" ", "")


def test_ids_and_ranks_are_written_when_they_cannot_be_worked_out() -> None:
    def block(block_id: int, rank: int) -> BlockReport:
        return BlockReport(block_id, 0, "html>body>p", "t", 1, 0.5, None, rank, False, None, 2)

    page = "<html><body><p>t</p></body></html>"
    result = PruneResult("", [""], [block(5, 1), block(9, -1), block(7, 0)], "q", 10, 0, 3,
                         [page], "fake")  # fmt: skip
    data = _data(result.to_html())
    assert data["id"] == [5, 9, 7] and "id0" not in data
    assert data["rank"] == [1, -1, 0]  # a block never ranked: not its place in the order
    assert data["order"] == [2, 0, 1]
    result.blocks[:] = [block(5, 1), block(6, 2), block(7, 0)]
    data = _data(result.to_html())
    assert data["id0"] == 5 and "id" not in data and "rank" not in data
    assert _ranks(data) == [1, 2, 0] and _ids(data) == [5, 6, 7]
