"""The section tree built from spans: extents, leaf sizing, coverage, and spans that lose text."""

from __future__ import annotations

import pytest
from hrefine.budget import RegexCounter
from hrefine.errors import TreeError
from hrefine.longrefiner import Span, StructuredDocument, build_document, coverage
from hrefine.longrefiner.spans import check_cover, fill_gaps, uncovered

TEXT = (
    "A short lead.\n\n"
    "1. TERM\n"
    "The term is five years from the Effective Date.\n"
    "1.1 Renewal\n"
    "It renews for one year unless a party objects.\n\n"
    "2. LAW\n"
    "This agreement is governed by the laws of Delaware.\n"
)


def _spans(text: str) -> list[Span]:
    """Hand-made spans of TEXT: a lead, two sections, one with a sub-section."""
    out: list[Span] = []
    path: tuple[str, ...] = ()
    for line in text.splitlines():
        if not line.strip():
            continue
        start = text.index(line)
        end = start + len(line)
        if line[0].isdigit():
            title = line
            path = (title,) if "." not in line.split()[0][:-1] else (path[0], title)
            out.append(Span(start, end, path, True))
        else:
            out.append(Span(start, end, path))
    return out


def _doc(
    text: str = TEXT, *, leaf_tokens: int = 160, min_leaf_tokens: int = 0
) -> StructuredDocument:
    return build_document(
        text,
        _spans(text),
        RegexCounter(),
        source="numbered",
        leaf_tokens=leaf_tokens,
        min_leaf_tokens=min_leaf_tokens,
    )


def test_sections_nest_and_extents_are_exact_text() -> None:
    doc = _doc()
    outline = doc.outline()
    assert [(t, d) for _, t, d in outline] == [("1. TERM", 1), ("1.1 Renewal", 2), ("2. LAW", 1)]
    term, renewal, _ = (i for i, _, _ in outline)
    assert doc.tree[renewal].parents == (term,)
    assert doc.node_text(term).startswith("1. TERM") and doc.node_text(term).endswith("objects.")
    assert doc.node_text(renewal) == "1.1 Renewal\nIt renews for one year unless a party objects."
    lead = doc.abstract_id()
    assert lead is not None and doc.node_text(lead) == "A short lead."
    # Every node's text is the document's text between its extent, and siblings follow in order.
    for node in doc.tree:
        start, end = doc.extent(node.id)
        assert doc.text[start:end] == doc.node_text(node.id) or node.id == 0
    assert coverage(doc) == 1.0


def test_long_paragraphs_are_cut_at_sentences_and_short_ones_joined() -> None:
    long_para = " ".join(f"Sentence number {i} says something." for i in range(60))
    text = f"1. ONE\n{long_para}\nTiny.\nAlso tiny.\n"
    doc = _doc(text, leaf_tokens=40, min_leaf_tokens=10)
    leaves = [n for n in doc.tree if n.kind == "paragraph"]
    counter = RegexCounter()
    assert len(leaves) > 5
    assert all(counter.count(doc.node_text(n.id)) <= 40 for n in leaves)
    assert all(doc.node_text(n.id).rstrip().endswith(".") for n in leaves)
    # The two tiny lines are one leaf (joined), and nothing is lost.
    assert any(doc.node_text(n.id).endswith("Tiny.\nAlso tiny.") for n in leaves)
    assert coverage(doc) == 1.0


def test_short_paragraphs_never_join_across_sections() -> None:
    text = "1. A\nOne.\n2. B\nTwo.\n"
    doc = _doc(text, min_leaf_tokens=50)
    for sid, _, _ in doc.outline():
        assert all(doc.tree[c].kind == "paragraph" for c in doc.tree[sid].children)
        assert len(doc.tree[sid].children) == 1


def test_two_sections_with_one_title_stay_apart() -> None:
    text = "Notes\nFirst notes.\nNotes\nSecond notes.\n"
    spans = [
        Span(0, 5, ("Notes",), True),
        Span(6, 18, ("Notes",)),
        Span(19, 24, ("Notes",), True),
        Span(25, 38, ("Notes",)),
    ]
    doc = build_document(
        text, spans, RegexCounter(), source="headings", leaf_tokens=100, min_leaf_tokens=0
    )
    assert [doc.node_text(i) for i, _, _ in doc.outline()] == [
        "Notes\nFirst notes.",
        "Notes\nSecond notes.",
    ]


def test_paragraphs_only_hang_under_the_root() -> None:
    text = "First paragraph here.\n\nSecond one."
    spans = [Span(0, 21), Span(23, 34)]
    doc = build_document(
        text, spans, RegexCounter(), source="paragraphs", leaf_tokens=100, min_leaf_tokens=0
    )
    assert doc.outline() == [] and doc.abstract_id() is None
    assert [doc.tree[c].kind for c in doc.tree[0].children] == ["paragraph", "paragraph"]


def test_spans_that_lose_or_overlap_text_are_refused() -> None:
    text = "one two three"
    with pytest.raises(TreeError, match="in no span"):
        check_cover(text, [Span(0, 3)])
    with pytest.raises(TreeError, match="overlaps"):
        check_cover(text, [Span(0, 7), Span(4, 13)])
    with pytest.raises(TreeError, match="whitespace"):
        check_cover(text, [Span(0, 4), Span(4, 13)])
    with pytest.raises(TreeError):
        build_document(
            text, [Span(0, 3)], RegexCounter(), source="x", leaf_tokens=9, min_leaf_tokens=0
        )


def test_fill_gaps_puts_skipped_text_in_the_nearest_section() -> None:
    text = "Intro\nTitle\nbody one\nskipped by the model\nbody two"
    spans = [
        Span(0, 5, ()),
        Span(6, 11, ("Title",), True),
        Span(12, 20, ("Title",)),
        Span(42, 50, ("Title",)),
    ]
    filled = fill_gaps(text, spans)
    assert uncovered(text, filled) == []
    gap = next(s for s in filled if text[s.start : s.end] == "skipped by the model")
    assert gap.path == ("Title",) and not gap.heading
    # A gap before everything takes the path of what follows.
    assert fill_gaps("lost text then Title", [Span(15, 20, ("Title",), True)])[0].path == ("Title",)


def test_page_numbers_fold_into_the_paragraph_before_them() -> None:
    lines = ["14", "The term is five years.", "15", "It renews yearly.", "--- 16 ---"]
    text = "\n".join(lines)
    spans, pos = [], 0
    for line in lines:
        spans.append(Span(pos, pos + len(line), ("A",)))
        pos += len(line) + 1
    doc = build_document(
        text, spans, RegexCounter(), source="x", leaf_tokens=100, min_leaf_tokens=0
    )
    leaves = [doc.node_text(n.id) for n in doc.tree if n.kind == "paragraph"]
    assert leaves == ["14\nThe term is five years.\n15", "It renews yearly.\n--- 16 ---"]
    assert coverage(doc) == 1.0
