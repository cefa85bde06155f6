"""A text of the wrong type given to a token counter is an InputTypeError naming it.

Was: ``count(b"...")``, ``count(None)`` or ``count(["..."])`` raised a raw TypeError or
AttributeError from inside the tokenizer (or the regex), or counted nothing (``None`` -> 0),
or counted the wrong thing (``len`` of bytes or of a list).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hrefine.budget import (
    CallableCounter,
    MemoCounter,
    RegexCounter,
    TokenCounter,
    default_counter,
    get_counter,
)
from hrefine.errors import InputTypeError

# Real counters: the embedded Llama-3.2 tokenizer (an EncodeCounter), the regex one, a plain
# function, the remembering wrapper the pruner uses and a tiktoken encoding.
COUNTERS: dict[str, Callable[[], TokenCounter]] = {
    "llama-3.2": default_counter,
    "regex": RegexCounter,
    "callable": lambda: CallableCounter(len),
    "memo": lambda: MemoCounter(default_counter()),
    # tiktoken's o200k_base (the copy llama-index-core ships; read offline).
    "tiktoken": lambda: get_counter("gpt-4o"),
}


@pytest.fixture(params=sorted(COUNTERS))
def counter(request: pytest.FixtureRequest) -> TokenCounter:
    return COUNTERS[request.param]()


def test_the_default_counter_is_a_real_tokenizer() -> None:
    # The cases below are about the tokenizer's own errors: make sure one is in use.
    assert default_counter().name == "llama-3.2"


def test_bytes_say_to_decode_them_first(counter: TokenCounter) -> None:
    with pytest.raises(InputTypeError, match=r"got bytes; decode it.*\.decode\(") as info:
        counter.count(b"The Danube flows through ten countries.")  # type: ignore[arg-type]
    assert counter.name in str(info.value)
    assert isinstance(info.value, TypeError)  # code catching the built-in still works


@pytest.mark.parametrize(
    ("value", "named"),
    [(None, "NoneType"), (["a text"], "list"), (42, "int"), (bytearray(b"x"), "bytearray")],
)
def test_a_non_text_is_named(counter: TokenCounter, value: object, named: str) -> None:
    with pytest.raises(InputTypeError, match=rf"counts text \(str\), got {named}"):
        counter.count(value)  # type: ignore[arg-type]


def test_a_list_given_to_count_points_at_count_many(counter: TokenCounter) -> None:
    with pytest.raises(InputTypeError, match=r"count_many\(\)"):
        counter.count(["one", "two"])  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [b"bytes", None, ["nested"], 3])
def test_count_many_names_a_bad_item(counter: TokenCounter, bad: object) -> None:
    with pytest.raises(InputTypeError, match=rf"got {type(bad).__name__}"):
        counter.count_many(["a fine text", bad])  # type: ignore[list-item]


@pytest.mark.parametrize("texts", ["one text", b"one text", None, 7])
def test_count_many_refuses_one_text_or_no_collection(counter: TokenCounter, texts: object) -> None:
    # A str would be counted character by character, as a list of one-letter texts.
    with pytest.raises(InputTypeError, match=r"count_many\(\) takes a list of texts"):
        counter.count_many(texts)  # type: ignore[arg-type]


def test_texts_still_count_as_before(counter: TokenCounter) -> None:
    texts = ["The Danube flows through ten countries.", "", "東京は日本の首都です。"]
    counts = counter.count_many(texts)
    assert counts == [counter.count(t) for t in texts]
    assert counts[0] > 0 and counts[1] == 0 and counts[2] > 0
    # An iterator is still read (once), as a list would be.
    assert counter.count_many(t for t in texts) == counts


def test_a_memo_counter_works_on_after_a_refused_text() -> None:
    memo = MemoCounter(default_counter())
    assert memo.count("Vienna lies on the Danube.") > 0
    with pytest.raises(InputTypeError):
        memo.count_many(["Vienna lies on the Danube.", ["unhashable"]])  # type: ignore[list-item]
    # The lock was released and what was remembered still is.
    assert memo.count_many(["Vienna lies on the Danube.", "Budapest too."]) == [
        default_counter().count("Vienna lies on the Danube."),
        default_counter().count("Budapest too."),
    ]


def test_get_counter_refuses_bytes_as_a_tokenizer() -> None:
    with pytest.raises(InputTypeError, match="bytes"):
        get_counter(b"tokenizer.json")
