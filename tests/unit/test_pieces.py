"""Counting a byte-level BPE's tokens through remembered pieces gives the tokenizer's counts."""

from __future__ import annotations

from pathlib import Path

import pytest
from hrefine import _pieces
from hrefine._pieces import SAFE_RANGES, PieceCounts
from hrefine.budget import EncodeCounter, default_counter


@pytest.fixture(scope="module")
def llama() -> EncodeCounter:
    counter = default_counter()
    assert isinstance(counter, EncodeCounter)
    return counter


def _rust(counter: EncodeCounter, texts: list[str]) -> list[int]:
    return [len(e.ids) for e in counter._tok.encode_batch(texts, add_special_tokens=False)]


def test_the_default_tokenizer_is_counted_by_pieces(llama: EncodeCounter) -> None:
    assert llama._pieces is not None
    assert llama._pieces.count("<p>Hello, world!</p>") == 7


def test_every_safe_character_splits_as_the_tokenizer_splits_it(llama: EncodeCounter) -> None:
    # Each character beside letters, digits, spaces, an apostrophe and a tag: a character the
    # two regex engines class differently changes where a piece ends, and so the count.
    pieces = llama._pieces
    assert pieces is not None
    chars: list[str] = []
    for lo, hi in SAFE_RANGES:
        step = 17 if hi - lo > 4000 else 1  # ideographs and syllables are one class each
        chars += [chr(c) for c in range(lo, hi + 1, step) if not 0xD800 <= c <= 0xDFFF]
    templates = ("a{c}b", "1{c}2", " {c}{c} ", "{c}'s", "\n{c}\n", "<td>{c} x</td>")
    for template in templates:
        texts = [template.format(c=c) for c in chars]
        ours = [pieces.count(t) for t in texts]
        theirs = _rust(llama, texts)
        wrong = [(hex(ord(c)), o, t) for c, o, t in zip(chars, ours, theirs, strict=True) if o != t]
        assert not wrong, (template, wrong[:10])


def test_real_pages_count_as_the_tokenizer_counts(llama: EncodeCounter, shared_data: Path) -> None:
    pages = sorted((shared_data / "wtq").rglob("*.html"))[:8]
    pages += sorted((shared_data / "articles").rglob("*.html"))[:4]
    assert len(pages) == 12
    texts = [p.read_text(encoding="utf-8", errors="replace") for p in pages]
    lines = [line for t in texts for line in t.splitlines() if line.strip()]
    assert llama.count_many(texts) == _rust(llama, texts)
    assert llama.count_many(lines) == _rust(llama, lines)
    assert [llama.count(t) for t in texts[:5]] == _rust(llama, texts[:5])


def test_texts_it_cannot_take_go_to_the_tokenizer(llama: EncodeCounter) -> None:
    pieces = llama._pieces
    assert pieces is not None
    special = "answer <|eot_id|> here"  # an added token is one token, matched before splitting
    emoji = "rain 🌧️ and ✨ sparkles"  # outside the ranges both engines agree on
    arabic = "مرحبا بالعالم"
    for text in (special, emoji, arabic):
        assert pieces.count(text) is None
        assert llama.count(text) == _rust(llama, [text])[0]
    assert llama.count_many([special, "plain", emoji]) == _rust(llama, [special, "plain", emoji])
    assert llama.count("") == 0
    assert llama.count_many([]) == []


def test_the_remembered_pieces_are_bounded(
    llama: EncodeCounter, monkeypatch: pytest.MonkeyPatch
) -> None:
    pieces = PieceCounts.for_tokenizer(llama._tok)
    assert pieces is not None
    monkeypatch.setattr(_pieces, "_MAX_PIECES", 50)
    texts = [f"row {k}: value {k * 7919} of table {k % 13}" for k in range(400)]
    assert [pieces.count(t) for t in texts] == _rust(llama, texts)
    assert len(pieces._counts) <= 50 + 12  # emptied when full, then one text's pieces


def test_other_tokenizers_are_not_counted_by_pieces(embedder) -> None:  # type: ignore[no-untyped-def]
    from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers

    wordpiece = embedder.model.tokenizer.backend_tokenizer  # MiniLM: a normalizer, WordPiece
    assert PieceCounts.for_tokenizer(wordpiece) is None
    assert PieceCounts.for_tokenizer(object()) is None
    bpe = Tokenizer(models.BPE({"a": 0, "b": 1, "ab": 2}, [("a", "b")]))
    bpe.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(r"\p{L}+|\s+|[^\s\p{L}]+"), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    assert PieceCounts.for_tokenizer(bpe) is not None
    bpe.normalizer = normalizers.NFC()  # a normalizer changes the text before it is split
    assert PieceCounts.for_tokenizer(bpe) is None
    bpe.normalizer = None
    bpe.enable_truncation(8)  # a truncating tokenizer's counts stop at its limit
    assert PieceCounts.for_tokenizer(bpe) is None
    bpe.no_truncation()
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel()  # GPT-2's built-in pattern: not read here
    assert PieceCounts.for_tokenizer(bpe) is None
