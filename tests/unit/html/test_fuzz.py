"""Property-based fuzzing of cleaning, pruning and both adapters on hostile pages (issue #41).

Random HTML-ish text (odd attribute names, entities and references to control characters and
surrogates, comments, CDATA, ``</html>`` in the middle), random bytes, and real pages of the
evaluation data cut, mutated and re-encoded; random queries (blank ones included) and budgets
(below ``MIN_BUDGET`` included). The properties (see :mod:`benchmarks._fuzzcases`): only
``HrefineError`` subclasses are raised, and the one the arguments call for; the output never
exceeds the budget; every block is kept or given a drop reason, kept blocks are in the output
and the cleaned page's words are all in some block. ``benchmarks/fuzz.py`` runs the same
properties over many more cases.
"""

from __future__ import annotations

import functools
import os
import random
from collections import Counter
from pathlib import Path
from typing import Any, cast

import pytest
from hrefine.errors import BudgetTooSmallError, EmptyInputError
from hrefine.html import MIN_BUDGET, BlockReport, HtmlPruner, PruneResult
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks._fuzzcases import (
    ATTR_NAMES,
    NOT_QUERIES,
    PIECES,
    QUERY_WORDS,
    Finding,
    check_adapter_pages,
    check_clean,
    check_prune,
    load_pages,
    mutate,
    random_nesting,
    reencode,
)

FUZZ = settings(
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
GOOD_PAGE = (
    "<html><body><h1>Rivers</h1><p>The Volga is the longest river of Europe.</p></body></html>"
)


# The evaluation data, as tests/conftest.py finds it (read lazily, by the strategies).
DATA = Path(
    os.environ.get("HREFINE_DATA", Path(__file__).resolve().parents[3].parent / "shared" / "data")
)


@functools.cache
def bm25() -> HtmlPruner:
    return HtmlPruner(scorer="bm25")


@functools.cache
def real_pages() -> list[bytes]:
    pages = load_pages(DATA, per_set=4)
    assert pages, f"no evaluation pages under {DATA}"
    return pages


# -- strategies --------------------------------------------------------------------------
# Any code point below U+3000: controls, lone surrogates, non-characters, combining marks.
chars = st.integers(0, 0x2FFF).map(chr)
attr_name = st.sampled_from(ATTR_NAMES) | st.text(
    alphabet="{}\"='ab:@[]()#/<", min_size=1, max_size=6
)
attr_value = st.sampled_from(["", "1", "a&#1;b", "&#xFFFE;", "\ud800", '"', "{v}"]) | st.text(
    chars, max_size=6
)


@st.composite
def tags(draw: Any) -> str:
    """An opened tag with random attributes, quoted or not, closed or not."""
    name = draw(st.sampled_from(["p", "div", "img", "td", "a", "title", "pre", "x{y}", "Th_x"]))
    attrs = draw(
        st.lists(st.tuples(attr_name, attr_value, st.sampled_from(["", "'", '"'])), max_size=3)
    )
    inside = "".join(f" {n}={q}{v}{q}" if v else f" {n}" for n, v, q in attrs)
    return f"<{name}{inside}{draw(st.sampled_from(['>', '/>', '']))}"


html_text = st.lists(
    st.sampled_from(PIECES) | tags() | st.text(chars, min_size=1, max_size=8), max_size=60
).map("".join)
word_queries = st.lists(st.sampled_from(QUERY_WORDS), min_size=1, max_size=6).map(" ".join)
queries = (
    word_queries
    | st.sampled_from(["", " ", "\n\t", "\u3000", "\x85"])
    | st.text(chars, max_size=12)
    | st.sampled_from(NOT_QUERIES)
)
budgets = st.integers(-3, MIN_BUDGET + 4) | st.integers(MIN_BUDGET, 2048)


@st.composite
def mutated_pages(draw: Any) -> bytes:
    """A window of a real page (WTQ, L-Eval NQ, articles), mutated and maybe re-encoded."""
    pages = real_pages()
    page = pages[draw(st.integers(0, len(pages) - 1))]
    start = draw(st.integers(0, len(page) - 1))
    window = page[start : start + draw(st.integers(100, 12_000))]
    return mutate(draw(st.randoms(use_true_random=False)), window)


@st.composite
def encoded_html(draw: Any) -> bytes:
    """Random HTML-ish text in a random encoding (UTF-16 with or without BOM, broken UTF-8…)."""
    return reencode(draw(st.randoms(use_true_random=False)), draw(html_text))


@st.composite
def nested_html(draw: Any) -> bytes:
    """Deep nesting (up to 1,000 elements) with random HTML at the bottom, as UTF-8."""
    return random_nesting(draw(st.randoms(use_true_random=False))).encode("utf-8", "surrogatepass")


def _assert_clean(found: list[Finding]) -> None:
    assert found == [], found


# -- the pruner and the cleaner ----------------------------------------------------------
@settings(FUZZ, max_examples=300)
@given(html=html_text, query=queries, budget=budgets)
def test_random_html_keeps_every_property(html: str, query: object, budget: int) -> None:
    _assert_clean(check_clean(html))
    _assert_clean(check_prune(bm25(), html, query, budget))


@settings(FUZZ, max_examples=120)
@given(
    data=st.binary(max_size=2000) | encoded_html() | nested_html(), query=queries, budget=budgets
)
def test_random_and_reencoded_bytes_keep_every_property(
    data: bytes, query: object, budget: int
) -> None:
    _assert_clean(check_clean(data))
    _assert_clean(check_prune(bm25(), data, query, budget))


@settings(FUZZ, max_examples=60)
@given(page=mutated_pages(), query=queries, budget=st.integers(MIN_BUDGET, 2048))
def test_mutated_real_pages_keep_every_property(page: bytes, query: object, budget: int) -> None:
    _assert_clean(check_clean(page))
    _assert_clean(check_prune(bm25(), page, query, budget))


@settings(FUZZ, max_examples=60)
@given(
    bad=st.lists(html_text | st.binary(max_size=500) | mutated_pages(), min_size=1, max_size=3),
    where=st.integers(0, 3),
    query=st.lists(st.sampled_from(QUERY_WORDS[:12]), min_size=1, max_size=4).map(" ".join),
    budget=st.integers(64, 1024),
)
def test_a_bad_page_never_sinks_a_batch(
    bad: list[str | bytes], where: int, query: str, budget: int
) -> None:
    batch = [*bad]
    batch.insert(where % (len(bad) + 1), GOOD_PAGE)
    _assert_clean(check_prune(bm25(), batch, query, budget, batch=True))


@settings(FUZZ, max_examples=8)
@given(
    html=html_text.filter(lambda h: len(h) > 40) | mutated_pages(),
    query=word_queries | st.text(chars, min_size=1, max_size=12),
    budget=st.integers(16, 1024),
)
def test_embedding_scorer_keeps_every_property(html: str | bytes, query: str, budget: int) -> None:
    # Words and surrogates in the query, and budgets that let most calls reach the embedder.
    _assert_clean(check_prune(_embedding(), html, query, budget))


@functools.cache
def _embedding() -> HtmlPruner:
    return HtmlPruner(scorer="embedding")


# -- the adapters ------------------------------------------------------------------------
@functools.cache
def _langchain(budget: int, together: bool) -> Any:
    from langchain_hrefine import HtmlRagCompressor

    return HtmlRagCompressor(  # type: ignore[call-arg]
        max_tokens=budget, scorer="bm25", prune_together=together, keep_input_order=True
    )


@functools.cache
def _llamaindex(budget: int, together: bool) -> Any:
    from llamaindex_hrefine import HtmlRagNodePostprocessor

    return HtmlRagNodePostprocessor(
        max_tokens=budget, scorer="bm25", prune_together=together, keep_input_order=True
    )


adapter_pages = st.lists(
    html_text | mutated_pages().map(lambda b: b.decode("utf-8", "replace")), min_size=1, max_size=3
)
adapter_budgets = st.sampled_from([MIN_BUDGET, 16, 128, 1024])


@settings(FUZZ, max_examples=20)
@given(pages=adapter_pages, query=queries, budget=adapter_budgets, together=st.booleans())
def test_langchain_compressor_keeps_every_property(
    pages: list[str], query: object, budget: int, together: bool
) -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.documents import Document

    compressor = _langchain(budget, together)

    def call(texts: list[str], q: Any) -> list[tuple[str, dict[str, Any]]]:
        docs = compressor.compress_documents([Document(page_content=t) for t in texts], q)
        return [(d.page_content, d.metadata) for d in docs]

    count = bm25().counter.count
    _assert_clean(check_adapter_pages(call, "langchain", pages, query, budget, count, together))


@settings(FUZZ, max_examples=20)
@given(pages=adapter_pages, query=queries, budget=adapter_budgets, together=st.booleans())
def test_llamaindex_postprocessor_keeps_every_property(
    pages: list[str], query: object, budget: int, together: bool
) -> None:
    pytest.importorskip("llama_index.core")
    from llama_index.core.schema import NodeWithScore, TextNode

    post = _llamaindex(budget, together)

    def call(texts: list[str], q: Any) -> list[tuple[str, dict[str, Any]]]:
        nodes = [NodeWithScore(node=TextNode(text=t), score=1.0) for t in texts]
        return [
            (n.node.get_content(), n.node.metadata)
            for n in post.postprocess_nodes(nodes, query_str=q)
        ]

    count = bm25().counter.count
    _assert_clean(
        check_adapter_pages(
            call, "llamaindex", pages, query, budget, count, together, none_is_missing=True
        )
    )


# -- the checker catches what it is for --------------------------------------------------
class _Raising:
    """A pruner whose prune raises ``exc`` (the checker's plumbing, no pruning)."""

    def __init__(self, exc: Exception) -> None:
        self.exc = exc

    def prune(self, html: Any, query: str, max_tokens: int) -> PruneResult:
        raise self.exc


class _Returning:
    """A pruner that returns ``result`` whatever it is asked, counting words as tokens."""

    def __init__(self, result: PruneResult) -> None:
        self.result = result
        self.counter = bm25().counter

    def prune(self, html: Any, query: str, max_tokens: int) -> PruneResult:
        return self.result


def _pruner(fake: _Raising | _Returning) -> HtmlPruner:
    return cast(HtmlPruner, fake)


def _result(html: str, blocks: list[BlockReport], cleaned: str, tokens: int = 1) -> PruneResult:
    return PruneResult(html, [html], blocks, "q", 64, tokens, tokens, [cleaned], "t")


def _block(text: str, kept: bool, reason: str | None) -> BlockReport:
    return BlockReport(1, 0, "html>body>p", text, 1, 0.0, None, 0, kept, reason)


def test_checker_flags_raw_exceptions_and_wrong_errors() -> None:
    raw = check_prune(_pruner(_Raising(KeyError("{x}alt"))), "<p>a</p>", "q", 64)
    assert raw == [Finding("crash", "prune", "KeyError")]
    wrong = check_prune(_pruner(_Raising(EmptyInputError("x"))), "<p>a</p>", "q", 2)
    assert wrong[0].kind == "crash" and "BudgetTooSmallError" in wrong[0].detail
    ok = check_prune(
        _pruner(_Raising(BudgetTooSmallError("x", budget=2, smallest=4))), "<p>a</p>", "q", 2
    )
    assert ok == []
    sunk = check_prune(_pruner(_Raising(EmptyInputError("x"))), ["<p>a</p>"], "q", 64, batch=True)
    assert [f.kind for f in sunk] == ["sunk_batch"]


def test_checker_flags_output_over_budget_and_unaccounted_text() -> None:
    page = "<html><body><p>alpha beta</p><p>gamma</p></body></html>"
    over = _result("<p>alpha beta</p>", [_block("alpha beta", True, None)], page, tokens=999)
    found = check_prune(_pruner(_Returning(over)), page, "q", 64)
    assert "over_budget" in {f.kind for f in found}
    # "gamma" is in no block; the kept block is not in the output; a block has no reason.
    lost = _result(
        "<p>delta</p>", [_block("alpha beta", True, None), _block("x", False, None)], page
    )
    kinds = Counter(
        f.detail.split(" ", 2)[0] for f in check_prune(_pruner(_Returning(lost)), page, "q", 64)
    )
    assert kinds == Counter({"doc": 1, "kept": 1, "block": 1})


def test_mutation_changes_pages_and_is_seeded() -> None:
    page = real_pages()[0]
    a, b = mutate(random.Random(1), page), mutate(random.Random(1), page)
    assert a == b and a != page
