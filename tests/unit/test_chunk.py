"""Token-aware chunking: sentence boundaries, sizes, spans, CJK; nothing lost."""

from __future__ import annotations

import re

import pytest
from hrefine.budget import RegexCounter, get_counter
from hrefine.chunk import Chunk, chunk_text, chunks
from hrefine.errors import ConfigError, InputTypeError
from hypothesis import given, settings
from hypothesis import strategies as st

_CJK = re.compile("[\u3040-\u30ff\u4e00-\u9fff]")


def _squash(text: str) -> str:
    return "".join(text.split())


def test_chunk_text_loses_no_text_and_respects_size() -> None:
    counter = RegexCounter()
    para = " ".join(f"word{i}." for i in range(300))
    text = "Heading\n\n" + "short line\n" * 5 + "\n" + para + "\n\nTail paragraph."
    parts = chunk_text(text, counter, chunk_tokens=40)
    assert " ".join(" ".join(parts).split()) == " ".join(text.split())
    assert max(counter.count(c) for c in parts) <= 40
    assert chunk_text("  \n\n ", counter) == []
    assert chunks("", counter) == []


def test_chunk_text_closes_chunks_at_paragraph_breaks() -> None:
    counter = RegexCounter()
    p1 = " ".join(["alpha"] * 30)
    p2 = " ".join(["beta"] * 10)
    assert chunk_text(f"{p1}\n\n{p2}", counter, chunk_tokens=60) == [p1, p2]
    # Short paragraphs are packed together until half the chunk size is reached.
    assert chunk_text("a b\n\nc d\n\ne f", counter, chunk_tokens=60) == ["a b\nc d\ne f"]


def test_a_sentence_that_would_cross_the_limit_moves_whole_to_the_next_chunk() -> None:
    counter = get_counter()
    sentences = [
        f"Sentence {i} says {' '.join(['something'] * (3 + i % 9))} here." for i in range(60)
    ]
    text = " ".join(sentences)
    parts = chunk_text(text, counter, chunk_tokens=100)
    assert len(parts) > 5
    rebuilt: list[str] = []
    for part in parts:
        assert counter.count(part) <= 100
        got = re.split(r"(?<=\.) ", part)
        assert all(s in sentences for s in got)  # whole sentences only
        rebuilt += got
    assert rebuilt == sentences


def test_a_sentence_longer_than_the_limit_is_cut_at_spaces() -> None:
    counter = RegexCounter()
    long = " ".join(f"w{i}" for i in range(50)) + "."
    parts = chunk_text(f"Short one. {long} Short two.", counter, chunk_tokens=20)
    assert parts[0] == "Short one."
    assert parts[-1] == "Short two."
    assert all(counter.count(p) <= 20 for p in parts)
    assert " ".join(parts[1:-1]) == long


def test_cjk_text_is_cut_at_full_stops_then_between_characters() -> None:
    counter = get_counter()
    sentence = "北京是中华人民共和国的首都。"
    text = sentence * 30
    parts = chunks(text, counter, chunk_tokens=40)
    assert len(parts) > 1
    assert "".join(c.text for c in parts) == text  # no spaces are invented between CJK
    assert all(c.tokens <= 40 for c in parts)
    assert all(c.text.endswith("。") for c in parts)  # whole sentences
    # one run with no full stop is cut between characters
    run = "東京都は日本の首都です" * 20
    cut = chunks(run, counter, chunk_tokens=30)
    assert len(cut) > 1 and "".join(c.text for c in cut) == run
    assert all(c.tokens <= 30 for c in cut)


def test_chunks_carry_their_spans_and_real_token_counts() -> None:
    counter = get_counter()
    text = "  Title line\n\n\tFirst para has words.  Second sentence here.\nNext line\n\n" * 8
    parts = chunks(text, counter, chunk_tokens=25)
    assert [c.text for c in parts] == chunk_text(text, counter, chunk_tokens=25)
    prev_end = 0
    for c in parts:
        assert isinstance(c, Chunk)
        assert c.start >= prev_end and c.end > c.start
        assert " ".join(text[c.start : c.end].split()) == " ".join(c.text.split())
        assert c.tokens == counter.count(c.text)
        prev_end = c.end


def test_bad_arguments_are_rejected_with_their_own_errors() -> None:
    with pytest.raises(ConfigError, match="chunk_tokens"):
        chunk_text("x", RegexCounter(), chunk_tokens=0)
    with pytest.raises(ValueError, match="chunk_tokens"):
        chunks("x", RegexCounter(), chunk_tokens=-3)
    with pytest.raises(InputTypeError, match="string"):
        chunks(["x"], RegexCounter())  # type: ignore[arg-type]


_pieces = st.sampled_from(
    ["alpha", "beta.", "gamma!", "x;", "3.14", "naïve", "東京", "首都。", "です", "longword" * 6]
)
_gaps = st.sampled_from([" ", "  ", "\t", "\n", "\n\n", " \n ", ""])


@settings(max_examples=200, deadline=None)
@given(
    words=st.lists(st.tuples(_pieces, _gaps), max_size=120),
    size=st.integers(min_value=1, max_value=40),
)
def test_chunking_loses_nothing_keeps_order_and_size(
    words: list[tuple[str, str]], size: int
) -> None:
    counter = RegexCounter()
    text = "".join(w + g for w, g in words)
    parts = chunks(text, counter, chunk_tokens=size)
    assert _squash("".join(c.text for c in parts)) == _squash(text)
    prev_end = 0
    for c in parts:
        assert prev_end <= c.start < c.end <= len(text)
        assert _squash(text[c.start : c.end]) == _squash(c.text)
        # over the limit only where one word that cannot be cut is alone
        unsplittable = len(c.text.split()) == 1 and not _CJK.search(c.text)
        assert c.tokens <= size or unsplittable
        prev_end = c.end


def test_join_short_puts_a_lone_title_with_the_text_it_heads() -> None:
    counter = get_counter("regex")
    body = " ".join(["The forest of the planet is wide and the trees are tall."] * 30)
    text = f"The Hork-Bajir Chronicles\n\n{body}\n\nThe End"
    plain = chunks(text, counter, 60)
    assert plain[0].text == "The Hork-Bajir Chronicles"  # alone before a paragraph too long
    joined = chunks(text, counter, 60, join_short=True)
    assert joined[0].text.startswith("The Hork-Bajir Chronicles\nThe forest")
    assert joined[-1].text.endswith("tall.\nThe End")  # a short tail joins the one before
    assert all(c.tokens >= 15 for c in joined)
    # Nothing lost, spans still cover the text.
    assert _squash("".join(c.text for c in joined)) == _squash(text)
    assert joined[0].start == 0 and joined[-1].end == len(text)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.text(alphabet="ab .\n", min_size=0, max_size=40), min_size=1, max_size=12))
def test_join_short_loses_no_text(parts: list[str]) -> None:
    text = "\n\n".join(parts)
    counter = RegexCounter()
    got = chunks(text, counter, 12, join_short=True)
    assert _squash("".join(c.text for c in got)) == _squash(text)
    assert len(got) <= max(1, len(chunks(text, counter, 12)))
