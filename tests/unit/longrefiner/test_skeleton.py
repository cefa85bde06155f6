"""The structuring model's format: round trips over every L-Eval document, and the official
parser's defects (quoted-only titles, anchors across line breaks, truncated output, garbage)."""

from __future__ import annotations

import itertools
from typing import Any

from hrefine.longrefiner.markup import markup_spans
from hrefine.longrefiner.skeleton import (
    Skeleton,
    abbreviate,
    match_skeleton,
    parse_skeleton,
    skeleton_from_spans,
    windows,
)
from hrefine.longrefiner.spans import check_cover

TEXT = (
    "A short lead paragraph about the whole report.\n\n"
    "Methods\n\n"
    "We measured the river flow at six stations along the valley\n"
    "every morning for three years and kept every reading in a log.\n\n"
    "Stations\n\n"
    "The stations sit at bridges so that the gauges are easy to reach in winter storms.\n\n"
    "Results\n\n"
    "The flow doubled in spring and fell to a trickle in late summer every single year."
)


def _paths(text: str, spans: Any) -> dict[str, tuple[str, ...]]:
    return {text[s.start : s.end][:12]: s.path for s in spans}


def test_round_trip_recovers_the_paragraphs_of_every_leval_document(
    leval_docs: dict[str, dict[str, str]], words: Any
) -> None:
    given = same = headings = headings_found = 0
    for docs in leval_docs.values():
        for doc in docs.values():
            plain, spans, _ = markup_spans(doc)
            skeleton = parse_skeleton(skeleton_from_spans(plain, spans, words.encode, words.decode))
            assert not skeleton.problems and not skeleton.truncated
            got, report = match_skeleton(plain, skeleton)
            check_cover(plain, got)
            want = {(s.start, s.end, s.path) for s in spans if not s.heading}
            have = {(s.start, s.end, s.path) for s in got if not s.heading}
            assert report.unmatched == 0 and report.matched == len(want)
            given += len(want)
            same += len(want & have)
            heads = {s for s in spans if s.heading}
            headings += len(heads)
            headings_found += len(heads & {s for s in got if s.heading})
    # Measured: 11,569 of 11,572 paragraphs come back with their bounds and sections (a
    # repeated 8-word anchor can move a boundary), and 798 of 849 heading lines (a title
    # split over two lines, or an empty section, is left to gap filling).
    assert given > 10_000 and same / given >= 0.999
    assert headings_found / headings >= 0.9


def test_titles_with_and_without_quotes_and_every_abbreviation_mark() -> None:
    out = (
        "<abstract>A short lead paragraph...the whole report.</abstract>"
        '<section: "Methods">We measured the river flow<skip>kept every reading in a log.'
        "<subsection: Stations>The stations sit at bridges<...>in winter storms."
        "</subsection: Stations></section: Methods>"
        "<section: Results>The flow doubled in spring \u2026 every single year.</section: Results>"
    )
    sk = parse_skeleton(out)
    assert [p.path for p in sk.parts] == [(), ("Methods",), ("Methods", "Stations"), ("Results",)]
    assert sk.parts[1].paragraphs == [
        ("We measured the river flow", "kept every reading in a log.")
    ]
    spans, report = match_skeleton(TEXT, sk)
    check_cover(TEXT, spans)
    assert report.matched == 4 and report.unmatched == 0 and report.recovered_chars == 0
    paths = _paths(TEXT, spans)
    # The anchors of "We measured …" cross its line break; the titles above the first
    # paragraphs are headings of their sections.
    assert paths["We measured "] == ("Methods",)
    assert paths["Methods"] == ("Methods",) and paths["Stations"] == ("Methods", "Stations")
    assert {TEXT[s.start : s.end] for s in spans if s.heading} == {"Methods", "Stations", "Results"}
    assert paths["The flow dou"] == ("Results",)


def test_anchors_that_cross_a_line_break_match() -> None:
    # The official matcher searched for the anchor as written, so a hard-wrapped paragraph
    # whose first 8 tokens run over a line end was lost.
    out = (
        "<section: Methods>We measured the river flow at six stations along the valley every"
        " morning...three years and kept every reading in a log.</section: Methods>"
    )
    spans, report = match_skeleton(TEXT, parse_skeleton(out))
    check_cover(TEXT, spans)
    assert report.matched == 1 and report.tails_missed == 0
    para = next(s for s in spans if TEXT[s.start : s.end].startswith("We measured"))
    assert TEXT[para.start : para.end].endswith("in a log.") and "\n" in TEXT[para.start : para.end]
    assert para.path == ("Methods",)


def test_sub_section_spellings_and_newlines_instead_of_br() -> None:
    for tag in ('sub-section: "Stations"', "sub-section: Stations", "subsection: 'Stations'"):
        sk = parse_skeleton(f"<section: Methods>x y z<{tag}>The stations sit</{tag}></section>")
        assert sk.parts[-1].path == ("Methods", "Stations"), tag
    sk = parse_skeleton("<section: A>first paragraph\nsecond paragraph...its end</section: A>")
    assert sk.parts[0].paragraphs == [("first paragraph", None), ("second paragraph", "its end")]


def test_truncated_output_loses_no_text() -> None:
    out = (
        "<abstract>A short lead paragraph...the whole report.</abstract>"
        "<section: Methods>We measured the river flow...kept every reading in a log."
        "<sub-section: Stations>The stations sit at bridges so<br>The flow dou"
    )
    for cut in (out, out + "<sub-sec", out[: out.index("<sub-section")] + "<sub-section: Sta"):
        sk = parse_skeleton(cut)
        assert sk.truncated and sk.problems
        spans, report = match_skeleton(TEXT, sk)
        check_cover(TEXT, spans)
        assert report.recovered_chars > 0
        # The text after the cut sits in the last section the output opened.
        last = spans[-1]
        assert TEXT[last.start : last.end].endswith("every single year.")
        assert last.path == sk.parts[-1].path and last.path[0] == "Methods"


def test_garbage_gives_an_empty_skeleton_and_all_text_in_the_lead() -> None:
    for junk in ("", "I cannot help with that.", "<<<>>>", "<section:", None):
        sk = parse_skeleton(junk)  # type: ignore[arg-type]
        assert isinstance(sk, Skeleton) and sk.problems
        spans, report = match_skeleton(TEXT, sk)
        check_cover(TEXT, spans)
        assert report.matched == 0 and all(s.path == () for s in spans)


def test_text_without_spaces_matches() -> None:
    text = (
        "第一章的内容很长，讲述了河流的历史和变化。\n第二章描述了观测站的位置以及冬季的维护方法。"
    )
    out = (
        "<section: 历史>第一章的内容很长...历史和变化。</section: 历史>"
        "<section: 观测>第二章描述了观测站<skip>的维护方法。</section: 观测>"
    )
    spans, report = match_skeleton(text, parse_skeleton(out))
    check_cover(text, spans)
    assert report.matched == 2 and [s.path for s in spans] == [("历史",), ("观测",)]
    assert text[spans[1].start : spans[1].end].startswith("第二章")


def test_a_window_is_matched_alone() -> None:
    start = TEXT.index("Stations")
    sk = parse_skeleton("<section: S>The stations sit at bridges...in winter storms.</section: S>")
    spans, _ = match_skeleton(TEXT, sk, start=start, end=TEXT.index("Results"))
    assert spans[0].start == start and spans[-1].end <= TEXT.index("Results")
    check_cover(
        TEXT[start : TEXT.index("Results")],
        [s._replace(start=s.start - start, end=s.end - start) for s in spans],
    )


def test_abbreviate_keeps_short_paragraphs_whole(words: Any) -> None:
    short = "one two three\nfour"
    assert abbreviate(short, words.encode, words.decode) == "one two three four"
    long = " ".join(f"w{i}" for i in range(40))
    assert abbreviate(long, words.encode, words.decode, k=3) == "w0 w1 w2...w37 w38 w39"


def test_windows_cut_at_paragraphs_and_cover_the_text(
    leval_docs: dict[str, dict[str, str]],
) -> None:
    doc = leval_docs["quality"]["quality_00"]

    def count(s: str) -> int:
        return len(s.split())

    cuts = windows(doc, count, 500)
    assert cuts[0][0] == 0 and cuts[-1][1] == len(doc)
    assert all(a[1] == b[0] for a, b in itertools.pairwise(cuts))
    assert all(count(doc[a:b]) <= 500 for a, b in cuts)
    assert all(doc[:b].rstrip(" \t").endswith("\n") for _, b in cuts[:-1])
    # Hard cut when nothing else fits.
    assert windows("x" * 50, len, 20) == [(0, 20), (20, 40), (40, 50)]
