"""Paragraph splitting (hrefine.html.paragraphs, HtmlPruner(split_paragraphs=...))."""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from typing import Any

import lxml.etree
import lxml.html
import numpy as np
import pytest
from hrefine.budget import get_counter
from hrefine.eval.metrics import answer_containment
from hrefine.html import HtmlPruner
from hrefine.html._text import normalize_space
from hrefine.html.blocks import serialize_element
from hrefine.html.clean import clean_document
from hrefine.html.paragraphs import split_long_paragraphs
from hrefine.testing import KeywordEmbedder


def _sentences(n: int, start: int = 0) -> str:
    return " ".join(
        f"Sentence {i} says that <b>item {i}</b> weighs {i} kilograms." for i in range(start, n)
    )


def _split(root: Any, limit: int) -> dict[Any, Any]:
    return split_long_paragraphs(
        [root],
        limit,
        count_many=get_counter(None).count_many,
        serialize=serialize_element,
    )


def _text(el: Any) -> str:
    return normalize_space("".join(el.itertext()))


def test_a_long_paragraph_becomes_pieces_of_whole_sentences() -> None:
    root = lxml.html.document_fromstring(  # not cleaned: the attributes stay
        f"<html><body><p>Before.</p><div><p id='a' class='x'>{_sentences(40)}</p>after"
        "</div></body></html>"
    )
    before = _text(root.find(".//div/p"))
    origin = _split(root, 100)
    pieces = root.findall(".//div/p")
    assert len(pieces) == len(origin) >= 3
    # Every word and inline child is still there, in order, and the text after the paragraph.
    assert " ".join(_text(p) for p in pieces) == before
    assert sum(len(p.findall("b")) for p in pieces) == 40
    counter = get_counter(None)
    for piece in pieces:
        text = _text(piece)
        assert text.startswith("Sentence") and text.endswith("kilograms.")
        assert counter.count(serialize_element(piece)) <= 130  # about equal shares of the limit
    assert [p.get("id") for p in pieces].count("a") == 1  # an id stays unique
    assert all(p.get("class") == "x" for p in pieces)
    assert root.find(".//div").xpath("string(p[last()]/following-sibling::text())") == "after"
    assert len({id(v) for v in origin.values()}) == 1


def test_cjk_text_is_cut_at_its_own_sentence_ends() -> None:
    # Chinese sentences end with 。 and no space; each character counts as a word.
    sentences = ["东京是日本的首都，人口众多，交通发达。"] * 40
    sentences[30] = "富士山的高度是三千七百七十六米。"
    text = "".join(sentences)
    root = clean_document(f"<html><body><h1>日本</h1><p>{text}</p></body></html>")
    origin = _split(root, 64)
    pieces = root.findall(".//p")
    assert len(pieces) == len(origin) >= 5
    assert "".join(p.text for p in pieces) == text  # nothing lost, no space added
    assert all(p.text.endswith("。") for p in pieces)
    # Whole, the 600-token paragraph does not fit 200 tokens and the output is its heading.
    page = f"<html><body><h1>日本</h1><p>{text}</p><p>其他内容。</p></body></html>"
    whole = HtmlPruner(scorer="bm25", split_paragraphs=False).prune(page, "富士山 高度", 200)
    split = HtmlPruner(scorer="bm25").prune(page, "富士山 高度", 200)
    assert "三千七百" not in whole.html and whole.tokens < 20
    assert "三千七百" in split.html and 100 < split.tokens <= 200


def test_text_of_a_container_is_cut_into_paragraphs_inside_it() -> None:
    # Text laid out with <br> in a <div>: the div stays and holds the pieces as <p>.
    root = clean_document(
        f"<html><body><h1>T</h1><div>{_sentences(40)}<br>{_sentences(60, 40)}</div>"
        "<p>Other.</p></body></html>"
    )
    div = root.find(".//div")
    before = _text(div)
    origin = _split(root, 100)
    pieces = div.findall("p")
    assert len(pieces) == len(origin) >= 3 and div.text is None and len(div) == len(pieces)
    assert " ".join(_text(p) for p in pieces) == before
    assert sum(len(p.findall("b")) for p in pieces) == 60 and len(div.findall(".//br")) == 1
    assert set(origin.values()) == {div}
    # Cells, list items and headings keep their text whole.
    long = _sentences(40)
    root = clean_document(
        f"<html><body><table><tr><td>{long}</td><td>x</td></tr></table>"
        f"<ul><li>{long}</li><li>y</li></ul><h2>{long}</h2></body></html>"
    )
    assert _split(root, 100) == {}


def test_plain_text_is_pruned_by_its_sentences_not_cut_from_the_start() -> None:
    # A text with no tags stays in <body> after cleaning; whole, it was one block cut to the
    # budget from its start, and the answer near its middle was lost.
    filler = [f"Note {i} is about cooking pasta and gardening on weekends." for i in range(80)]
    filler[50] = "The 1972 Nobel Prize in Physics went to John Bardeen and others."
    text = "\n\n".join(" ".join(filler[k : k + 10]) for k in range(0, 80, 10))
    result = HtmlPruner(scorer="bm25").prune(text, "who won the 1972 physics prize", 96)
    assert "Bardeen" in result.html and result.tokens <= 96
    # Read as plain text: each blank-line paragraph is a <p>, each split at sentence ends.
    assert result.stats["input_formats"] == ["text"]
    assert result.stats["split_paragraphs"] == 8 and len(result.blocks) > 8
    assert "Note 0 " not in result.html  # not the start of the text
    report = result.to_html()  # the pieces are drawn where the text was
    assert report.count(' data-b="') >= len(result.blocks)


def test_paragraphs_that_fit_or_cannot_be_cut_are_left_alone() -> None:
    no_end = " ".join(f"word{i}" for i in range(300))
    root = clean_document(f"<html><body><p>{_sentences(3)}</p><p>{no_end}</p></body></html>")
    before = lxml.html.tostring(root)
    assert _split(root, 100) == {}
    assert lxml.html.tostring(root) == before
    # A paragraph holding a block element (built directly: a parser would close the <p>).
    body = lxml.html.fromstring("<html><body></body></html>").find("body")
    para = lxml.html.Element("p")
    para.text = lxml.html.fromstring(f"<p>{_sentences(20)}</p>").text_content()
    lxml.etree.SubElement(lxml.etree.SubElement(para, "ul"), "li").text = "x"
    body.append(para)
    assert _split(body.getparent(), 100) == {}
    assert len(body.findall("p")) == 1


def test_a_limit_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="limit"):
        _split(clean_document("<p>x</p>"), 0)


def test_pruner_keeps_the_piece_that_answers(shared_data: Any, embedder: Any) -> None:
    # L-Eval NQ: "who got the most super bowls in nfl". The answer opens a 469-token paragraph
    # ranked second; whole, it did not fit 512 tokens next to the first block (since "who" no
    # longer counts for BM25, the paragraph ranks first and fits whole too).
    from hrefine.eval.loaders import load_dataset

    it = next(i for i in load_dataset("leval-nq") if i.id == "nq_04_q05")
    split = HtmlPruner(embedder=embedder).prune(it.document, it.question, 512)
    whole = HtmlPruner(embedder=embedder, split_paragraphs=False).prune(
        it.document, it.question, 512
    )
    assert split.stats["split_paragraphs"] > 0 and whole.stats["split_paragraphs"] == 0
    assert split.tokens <= 512 and whole.tokens <= 512
    plain = normalize_space(lxml.html.fromstring(split.html).text_content())
    assert answer_containment(plain, it.answers) == 1.0
    # Reports of the pieces point to their paragraph in the unsplit cleaned page.
    elements = [e for e in lxml.html.fromstring(split.cleaned[0]).iter() if isinstance(e.tag, str)]
    kept = [
        r for r in split.blocks if r.kept and r.element is not None and r.tag_path.endswith("p")
    ]
    assert kept
    for report in kept:
        assert normalize_space(report.text)[:40] in normalize_space(
            elements[report.element].text_content()
        )


def _linked_sentences() -> str:
    sentences = [f"Sentence number {i} talks about thing{i} and more." for i in range(60)]
    sentences[45] = "Sentence 45 names <b>thing45</b> <em>here</em>."
    return f"<html><body><h1>T</h1><p>{' '.join(sentences)}</p></body></html>"


def test_the_report_draws_each_piece_of_a_split_paragraph() -> None:
    result = HtmlPruner(scorer="bm25", split_paragraphs=True).prune(
        _linked_sentences(), "what of thing45", 96
    )
    pieces = [i for i, b in enumerate(result.blocks) if b.tag_path.endswith(">p")]
    kept = [i for i in pieces if result.blocks[i].kept]
    assert len(pieces) > 2 and len(kept) == 1 and kept[0] != pieces[0]
    assert "thing45" in result.html and "thing0 " not in result.html
    assert {result.blocks[i].element for i in pieces} == {result.blocks[pieces[0]].element}
    report = result.to_html()
    full = report[: report.index('<div class="page kept-view">')]
    kept_view = report[report.index('<div class="page kept-view">') :]
    # The full view draws every piece once, as its own paragraph with its own mark and text,
    # its inline tags inside it.
    drawn = re.findall(r'<div class="p-p hb ([^"]*)" data-b="(\d+)">(.*?)</div>', full)
    assert [int(b) for _, b, _ in drawn] == pieces
    texts = [normalize_space(lxml.html.fromstring(f"<p>{t}</p>").text_content()) for *_, t in drawn]
    assert texts == [normalize_space(result.blocks[i].text) for i in pieces]
    assert [c.startswith("kept") for c, b, _ in drawn] == [i in kept for i in pieces]
    inner = dict((int(b), t) for _, b, t in drawn)[kept[0]]
    assert "<b>thing45</b> <em>here</em>" in inner
    # The kept view draws the kept piece alone (beside the heading), its inline tags too.
    assert re.findall(r' data-b="(\d+)"', kept_view) == ["0", str(kept[0])]
    assert "<em>here</em>" in kept_view


def test_pieces_whose_cut_cannot_be_redone_are_drawn_as_text(monkeypatch: Any) -> None:
    import hrefine.html._report_page as report_page

    result = HtmlPruner(scorer="bm25", split_paragraphs=True).prune(
        _linked_sentences(), "what of thing45", 96
    )
    monkeypatch.setattr(report_page, "split_element", lambda el, count: None)
    full = result.to_html().split('<div class="page kept-view">')[0]
    pieces = [i for i, b in enumerate(result.blocks) if b.tag_path.endswith(">p")]
    drawn = re.findall(r'<span class="hb ([^"]*)" data-b="(\d+)">([^<]*)</span>', full)
    assert [int(b) for _, b, _ in drawn] == pieces
    assert [t for *_, t in drawn] == [
        html.escape(result.blocks[i].text, quote=False) for i in pieces
    ]


def _zanzibar_page() -> str:
    sentences = [f"Filler{i} tells of nothing in particular today." for i in range(30)]
    sentences[25] = "The Zanzibar harbour opened in 1850."
    return (
        "<html><body><h1>Ports</h1>"
        f"<p>{' '.join(sentences)}</p><p>Ships came and went.</p></body></html>"
    )


def test_pieces_take_their_paragraphs_dense_score() -> None:
    seen: list[str] = []

    class Recording(KeywordEmbedder):
        def embed(self, texts: Sequence[str]) -> np.ndarray:
            seen.extend(texts)
            return super().embed(texts)

    result = HtmlPruner(embedder=Recording(dim=64)).prune(_zanzibar_page(), "Zanzibar harbour", 100)
    assert result.stats["split_paragraphs"] == 1
    # The paragraph is embedded once, whole, and none of its pieces on its own.
    read = [t for t in seen if "Filler" in t]
    assert len(read) == 1 and "Filler0 " in read[0] and "Filler29 " in read[0]
    pieces = [b for b in result.blocks if "Filler" in b.text or "Zanzibar" in b.text]
    assert len(pieces) > 2
    # Equal dense parts; only the piece with the question's words has a BM25 part on top.
    best = max(pieces, key=lambda b: b.stage1_score or 0.0)
    assert "Zanzibar harbour opened" in best.text and best.kept
    rest = {round(b.stage1_score or 0.0, 9) for b in pieces if b is not best}
    assert len(rest) == 1 and rest.pop() < (best.stage1_score or 0.0)
    assert "Filler0 " not in result.html


def test_another_scorer_scores_each_piece_itself() -> None:
    class Keyword:
        name = "keyword"

        def __init__(self) -> None:
            self.seen: list[str] = []

        def score(self, query: str, texts: Sequence[str]) -> np.ndarray:
            self.seen.extend(texts)
            return np.asarray([0.9 if "Zanzibar" in t else 0.1 for t in texts])

    scorer = Keyword()
    result = HtmlPruner(scorer=scorer).prune(_zanzibar_page(), "Zanzibar harbour", 100)
    read = [t for t in scorer.seen if "Filler" in t or "Zanzibar" in t]
    assert result.stats["split_paragraphs"] == 1 and len(read) > 2
    assert not any("Filler0 " in t and "Filler29 " in t for t in read)  # never whole
    assert "Zanzibar harbour opened" in result.html
