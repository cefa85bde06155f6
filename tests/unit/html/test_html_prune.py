"""Stage-1 pruning: exact budgets, best blocks kept, valid HTML, several documents at once."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import lxml.html
import numpy as np
import pytest
from hrefine.budget import get_counter
from hrefine.errors import BudgetTooSmallError, EmptyInputError, InputTypeError
from hrefine.html import BlockReport, HtmlPruner, PruneResult, clean_html
from hrefine.html._locate import document_order
from hrefine.html.blocks import build_forest
from hrefine.html.clean import clean_document
from hrefine.html.render import Renderer
from hrefine.models.lexical import BM25Scorer

RENAMED = re.compile(r"</?[a-z]+\d+[\s>]")  # div0, p3, tr12 … (h1-h6 are real tags)


def _is_renamed(html: str) -> bool:
    return any(not re.fullmatch(r"</?h[1-6][\s>]", m.group(0)) for m in RENAMED.finditer(html))


def _filler(topic: str, n: int) -> str:
    return " ".join(f"{topic} sentence number {i} says nothing of note." for i in range(n))


def _story_page() -> str:
    """Ten paragraphs; the answer is in the last one."""
    paras = [f"<p>{_filler(f'Filler{k}', 6)}</p>" for k in range(9)]
    paras.append("<p>Lord Beaverbrook bought the Daily Express in 1916 and ran it for decades.</p>")
    return "<html><body><h1>Newspapers</h1>" + "".join(paras) + "</body></html>"


@pytest.fixture(scope="module")
def bm25_pruner() -> HtmlPruner:
    return HtmlPruner(scorer="bm25")


@pytest.fixture(scope="module")
def embed_pruner(embedder: Any) -> HtmlPruner:
    return HtmlPruner(embedder=embedder)


def test_bm25_ranking_is_case_and_punctuation_insensitive() -> None:
    scores = BM25Scorer().score("beaverbrook?", ["Lord Beaverbrook bought it.", "Nothing here."])
    assert scores[0] > 0 and scores[1] == 0


def test_bm25_pruner_keeps_the_case_insensitive_match(bm25_pruner: HtmlPruner) -> None:
    result = bm25_pruner.prune(_story_page(), "who was BEAVERBROOK?", 60)
    assert "Lord Beaverbrook bought the Daily Express" in result.html
    assert result.tokens <= 60


def test_output_fills_the_budget_with_best_blocks_not_the_head() -> None:
    page = _story_page()
    # Paragraphs whole: split, the fill would top up with the head's first sentences.
    pruner = HtmlPruner(scorer="bm25", split_paragraphs=False)
    result = pruner.prune(page, "Beaverbrook Daily Express", 80)
    assert "Beaverbrook" in result.html
    assert "Filler0 sentence number 0" not in result.html  # the head of the page is not kept
    best = min(result.blocks, key=lambda b: b.rank)
    assert best.kept and "Beaverbrook" in best.text
    assert best in result.kept_blocks


def test_top_ranked_block_that_fits_is_always_kept(bm25_pruner: HtmlPruner) -> None:
    big = f"<p>{_filler('Express', 60)}</p>"  # very relevant but too big for the budget
    page = f"<html><body>{big}<p>The Express was sold in 1977.</p><p>Weather was fine.</p>"
    result = bm25_pruner.prune(page, "Express", 40)
    ranked = sorted(result.blocks, key=lambda b: b.rank)
    fitting = next(b for b in ranked if b.tokens <= 40)
    assert fitting.kept
    assert result.tokens <= 40


def test_no_room_left_that_the_next_best_block_would_fit(wtq: dict) -> None:
    q = next(q for q in wtq["questions"] if q["strict"])
    counter = get_counter()
    root = clean_document(wtq["page"](q["doc"]))
    forest = build_forest([root], max_words=256)
    renderer = Renderer(forest)
    pruner = HtmlPruner(scorer="bm25")
    for budget in (150, 600):
        result = pruner.prune(wtq["page"](q["doc"]), q["question"], budget)
        kept = {b.block_id for b in result.kept_blocks}
        assert result.tokens <= budget
        # Rebuild the same forest the pruner used, and try adding every dropped block.
        root2 = clean_document(wtq["page"](q["doc"]))
        pruner._split([root2], budget, document_order(root2), lambda: None)
        forest2, _, _ = pruner.block_forest([root2], [0], 256, budget)
        r2 = Renderer(forest2)
        for b in result.blocks:
            if b.kept:
                continue
            trial = "\n".join(d for d in r2.render(kept | {b.block_id}) if d)
            assert counter.count(trial) > budget, f"block {b.block_id} would still fit"
    assert renderer.render([]) == [""]


@pytest.mark.parametrize("budget", [64, 256, 1024, 3000])
def test_budget_never_exceeded_on_real_pages(
    embed_pruner: HtmlPruner, wtq: dict, budget: int
) -> None:
    docs = sorted({q["doc"] for q in wtq["questions"]})[:3]
    counter = get_counter()
    for doc in docs:
        q = next(q for q in wtq["questions"] if q["doc"] == doc)
        result = embed_pruner.prune(wtq["page"](doc), q["question"], budget)
        assert result.tokens == counter.count(result.html) <= budget
        assert result.html.strip()
        assert result.tokenizer == counter.name
        assert result.original_tokens > result.tokens or result.original_tokens <= budget


def test_output_is_valid_html_with_original_tags_and_text(
    embed_pruner: HtmlPruner, wtq: dict
) -> None:
    q = next(q for q in wtq["questions"] if q["strict"])
    page = wtq["page"](q["doc"])
    result = embed_pruner.prune(page, q["question"], 700)
    assert not _is_renamed(result.html)
    fragments = lxml.html.fragments_fromstring(result.html)
    words = set()
    for f in fragments:
        words |= set(
            re.findall(r"\w[\w,.']*\w", f if isinstance(f, str) else " ".join(f.itertext()))
        )
    cleaned = lxml.html.document_fromstring(clean_html(page))
    page_words = set(re.findall(r"\w[\w,.']*\w", " ".join(cleaned.itertext())))
    # Every word of the output comes from the page, unchanged (no lower-casing, no re-spacing).
    assert words and words <= page_words
    assert any(b.kept and b.stage1_score is not None for b in result.blocks)


def test_short_page_is_never_pruned_to_nothing(embed_pruner: HtmlPruner) -> None:
    result = embed_pruner.prune("<p>Tiny page about cats.</p>", "what about dogs?", 512)
    assert result.html == "<p>Tiny page about cats.</p>"
    assert result.documents == ["<p>Tiny page about cats.</p>"]


def test_whole_page_kept_when_it_fits(bm25_pruner: HtmlPruner, pages: Path) -> None:
    page = (pages / "boilerplate.html").read_bytes()
    result = bm25_pruner.prune(page, "keepers", 2000)
    assert all(b.kept for b in result.blocks)
    assert "Edwin Marlow" in result.html and "<caption>" in result.html


def test_several_documents_pruned_against_one_budget(bm25_pruner: HtmlPruner) -> None:
    doc_a = "<html><body>" + "".join(f"<p>{_filler('Alpha', 12)}</p>" for _ in range(5))
    doc_b = _story_page()
    doc_c = "<p>Beaverbrook was born in Canada in 1879.</p>"
    result = bm25_pruner.prune([doc_a, doc_b, doc_c], "Beaverbrook", 90)
    assert len(result.documents) == 3
    assert result.documents[0] == ""  # every block of doc a was outranked
    assert "Daily Express" in result.documents[1]
    assert "born in Canada" in result.documents[2]
    assert result.html == "\n".join(d for d in result.documents if d)
    assert result.tokens <= 90
    assert {b.doc for b in result.blocks} == {0, 1, 2}
    assert len(result.cleaned) == 3


_AIRPORT = """<html><head><title>Glasgow Airport</title></head><body><h1>Glasgow Airport</h1>
<h2>History</h2><p>The first terminal opened in 1966 and replaced the old field at Renfrew.</p>
<h2>Services</h2><p>Glasgow Airport is served by Loganair, easyJet and Jet2 all year round.</p>
<h2>Facilities</h2><p>The airlines lounge is on the first floor, next to the shops.</p>
<h2>Transport</h2><p>A bus leaves the forecourt for the city centre every ten minutes.</p>
</body></html>"""


def test_bm25_weighs_the_words_of_a_single_pages_title() -> None:
    # The title opens every block's context: scored with it, "Glasgow" and "Airport" would be
    # in every block, weigh nothing, and "airlines" alone would pick the lounge.
    pruner = HtmlPruner(scorer="bm25", tokenizer="regex")
    result = pruner.prune(_AIRPORT, "which airlines fly from Glasgow Airport", 50)
    rank = {b.text.split()[-1]: b.rank for b in result.blocks}
    assert rank["round."] < rank["shops."]
    assert "Loganair" in result.html
    assert result.tokens <= 50


def test_empty_document_among_several_is_reported(bm25_pruner: HtmlPruner) -> None:
    result = bm25_pruner.prune(["<p>  </p>", "<p>Real text.</p>"], "text", 50)
    assert result.documents == ["", "<p>Real text.</p>"]
    empty = [b for b in result.blocks if b.reason == "empty"]
    assert [b.doc for b in empty] == [0]


def test_bad_arguments_raise_clear_errors(bm25_pruner: HtmlPruner) -> None:
    with pytest.raises(EmptyInputError):
        bm25_pruner.prune([], "q", 100)
    with pytest.raises(EmptyInputError):
        bm25_pruner.prune(["", " "], "q", 100)
    with pytest.raises(EmptyInputError, match="query"):
        bm25_pruner.prune("<p>x</p>", "  ", 100)
    with pytest.raises(BudgetTooSmallError) as err:
        bm25_pruner.prune("<p>x</p>", "x", 2)
    assert err.value.budget == 2


@pytest.mark.parametrize("bad", [float("inf"), float("nan"), 100.0, "100", None, True])
def test_a_budget_that_is_not_an_integer_is_refused(bm25_pruner: HtmlPruner, bad: object) -> None:
    with pytest.raises(TypeError, match="max_tokens must be an int"):
        bm25_pruner.prune("<p>x y z</p>", "x", bad)  # type: ignore[arg-type]


def test_a_numpy_integer_budget_is_taken(bm25_pruner: HtmlPruner) -> None:
    import numpy as np

    result = bm25_pruner.prune("<p>x y z</p>", "x", np.int64(50))
    assert result.budget == 50 and type(result.budget) is int


def test_best_block_truncated_when_nothing_fits(bm25_pruner: HtmlPruner) -> None:
    page = f"<p>{_filler('Gamma', 30)}</p>"
    result = bm25_pruner.prune(page, "Gamma", 12)
    assert 0 < result.tokens <= 12
    assert result.stats["truncated"] is True
    assert result.html.startswith("Gamma sentence number 0")
    assert [b.reason for b in result.kept_blocks] == ["truncated"]


def test_reports_cover_every_block(bm25_pruner: HtmlPruner) -> None:
    result = bm25_pruner.prune(_story_page(), "Beaverbrook", 60)
    assert isinstance(result, PruneResult)
    assert all(isinstance(b, BlockReport) for b in result.blocks)
    assert sorted(b.rank for b in result.blocks) == list(range(len(result.blocks)))
    for b in result.blocks:
        assert b.kept == (b.reason is None)
        assert b.tag_path.startswith("html>body")
        assert b.stage2_score is None
    data = result.to_dict()
    assert data["budget"] == 60 and len(data["blocks"]) == len(result.blocks)
    assert 0 < result.compression < 1


def test_aprune_matches_prune(bm25_pruner: HtmlPruner) -> None:
    sync = bm25_pruner.prune(_story_page(), "Beaverbrook", 60)
    result = asyncio.run(bm25_pruner.aprune(_story_page(), "Beaverbrook", 60))
    assert result.html == sync.html


def test_custom_scorer_object_and_tokenizer() -> None:
    class LastWins:
        name = "last-wins"

        def score(self, query: str, texts: list[str]) -> np.ndarray:
            return np.arange(len(texts), dtype=np.float32)

    pruner = HtmlPruner(scorer=LastWins(), tokenizer="regex")
    result = pruner.prune(_story_page(), "anything", 40)
    assert "Beaverbrook" in result.html
    assert result.tokenizer == "regex" and result.stats["scorer"] == "last-wins"


@pytest.mark.parametrize("omit", [True, False])
def test_a_page_that_fits_is_kept_whole_and_counted_as_written(omit: bool) -> None:
    # Input and output tokens are counted in the same writing, so keeping everything is
    # reported as no compression, with or without optional end tags.
    rows = "".join(f"<tr><td>{i}</td><td>Name{i}</td></tr>" for i in range(12))
    page = f"<html><body><h1>Votes</h1><p>Intro.</p><table>{rows}</table></body></html>"
    result = HtmlPruner(scorer="bm25", omit_end_tags=omit).prune(page, "Name7", 4000)
    assert all(b.kept for b in result.blocks if b.block_id >= 0)
    # The input is a whole document: only its <html><body> wrappers are not in the output.
    assert result.tokens <= result.original_tokens <= result.tokens + 10
    assert ("</td>" in result.html) is not omit


def test_a_page_of_bare_text_under_tags_without_words_is_one_block() -> None:
    # <body> holds the text itself; its only child element has no words.
    tree_html = "<html><body>Plain words here and more<br><img src='x.png'></body></html>"
    result = HtmlPruner(scorer="bm25").prune(tree_html, "plain words", 100)
    assert "Plain words here and more" in result.html
    assert [b.kept for b in result.blocks if b.block_id >= 0] == [True]


def test_citations_no_longer_crowd_out_the_article(embedder: Any) -> None:
    # A real NQ page: the reference list's items ("Jump up ^ ... Game of Thrones season 7 ...")
    # repeat the question's words, and with the embedder they outrank the article's text.
    from hrefine.eval.loaders import load_dataset

    item = next(it for it in load_dataset("leval-nq") if it.id == "nq_10_q03")
    # The answer is the last row of the season's episode table, which keep_last_rows keeps
    # whatever outranks the table: left to the ranking here.
    demoted = HtmlPruner(embedder=embedder, keep_last_rows=False).prune(
        item.document, item.question, 512
    )
    as_text = HtmlPruner(embedder=embedder, demote_back_matter=False, keep_last_rows=False).prune(
        item.document, item.question, 512
    )

    def top_citations(result: PruneResult) -> int:
        top = sorted((b for b in result.blocks if b.rank >= 0), key=lambda b: b.rank)[:10]
        return sum("Jump up" in b.text for b in top)

    assert demoted.stats["back_matter_blocks"] > 100
    assert top_citations(as_text) >= 3
    assert top_citations(demoted) == 0
    assert "August 27 , 2017" in demoted.html  # the season's last episode, the answer
    assert "August 27 , 2017" not in as_text.html


def test_a_page_pruned_again_is_cleaned_once_and_prunes_as_fresh(
    wtq: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    import hrefine.html.prune_inputs as prune_inputs

    calls: list[int] = []
    real = prune_inputs.clean_document

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(prune_inputs, "clean_document", counting)
    q = next(q for q in wtq["questions"] if q["question"] == "who played ricky ryan?")
    page = wtq["page"](q["doc"])
    pruner = HtmlPruner(scorer="bm25")
    first = pruner.prune(page, q["question"], 512)
    # The call narrowed a table in place: the cached tree must not have been narrowed with it.
    assert first.stats["narrowed_tables"]
    other = pruner.prune(page, "what is the total of the last column", 512)
    again = pruner.prune(page, q["question"], 512)
    assert len(calls) == 1
    assert again.html == first.html and again.cleaned == first.cleaned
    fresh = HtmlPruner(scorer="bm25").prune(page, "what is the total of the last column", 512)
    assert other.html == fresh.html
    # Text and bytes of the same page are cleaned apart (bytes go through encoding detection).
    pruner.prune(page.decode("utf-8"), q["question"], 512)
    assert len(calls) == 3  # the fresh pruner's, and the text's


def test_cleaned_cache_is_bounded_by_pages_and_size() -> None:
    from hrefine.html._cleancache import CleanedCache

    cache = CleanedCache(max_pages=2, max_chars=100)
    docs = [f"<p>page {k}</p>" for k in range(3)]
    keys = [CleanedCache.key(d, True) for d in docs]
    assert CleanedCache.key(docs[0], False) != keys[0]
    assert CleanedCache.key(docs[0].encode(), True) != keys[0]
    for d, k in zip(docs, keys, strict=True):
        cache.put(k, d, clean_document(d), clean_html(d))
    assert cache.get(keys[0]) is None  # the oldest went first
    hit = cache.get(keys[2])
    assert hit is not None and hit[1] == clean_html(docs[2])
    hit[0].find(".//p").text = "changed"  # a copy: the kept tree is untouched
    again = cache.get(keys[2])
    assert again is not None and again[0].find(".//p").text == "page 2"
    big = "<p>" + "x" * 200 + "</p>"
    cache.put(CleanedCache.key(big), big, clean_document(big), clean_html(big))
    assert cache.get(CleanedCache.key(big)) is None  # longer than max_chars alone
    cache.put(keys[0], "y" * 90, clean_document(docs[0]), clean_html(docs[0]))
    assert cache.get(keys[0]) is not None and cache.get(keys[1]) is None  # size bound
    cache.clear()
    assert cache.get(keys[0]) is None
    off = CleanedCache(max_pages=0)
    off.put(keys[0], docs[0], clean_document(docs[0]), clean_html(docs[0]))
    assert off.get(keys[0]) is None


def test_the_cleaned_cache_can_be_turned_off(wtq: dict) -> None:
    q = wtq["questions"][0]
    page = wtq["page"](q["doc"])
    off = HtmlPruner(scorer="bm25", cleaned_cache=0)
    assert off.prune(page, q["question"], 512).html == off.prune(page, q["question"], 512).html
    assert not off._cleaned._data
    with pytest.raises(ValueError, match="cleaned_cache"):
        HtmlPruner(cleaned_cache=-1)


def test_a_used_pruner_pickles_and_copies_as_its_settings(bm25_pruner: HtmlPruner) -> None:
    import copy
    import pickle

    page = _story_page()
    expected = bm25_pruner.prune(page, "Beaverbrook", 60).html  # resolves the counter, caches
    for twin in (pickle.loads(pickle.dumps(bm25_pruner)), copy.deepcopy(bm25_pruner)):
        assert twin.options.scorer == "bm25" and twin._counter is None and not twin._cleaned._data
        assert twin.prune(page, "Beaverbrook", 60).html == expected


@pytest.mark.parametrize("budget", [60, 100, 400])
def test_a_larger_first_stage_without_the_generative_one_stays_in_the_budget(
    shared_data: Path, budget: int
) -> None:
    # Was: stage1_max_tokens=2000 without generative=True returned stage 1's 1,995 tokens.
    page = (shared_data / "wtq" / "pages" / "200-11.html").read_bytes()
    pruner = HtmlPruner(scorer="bm25", stage1_max_tokens=2000)
    result = pruner.prune(page, "who won best director?", budget)
    assert 0 < result.tokens <= budget
    assert pruner.counter.count(result.html) == result.tokens
    assert result.stats["stage1_tokens"] > budget  # stage 1 did read more
    # The reports are the final fill's: a block stage 1 kept and the budget did not is dropped.
    assert any(b.kept for b in result.blocks)
    assert all(b.reason is not None for b in result.blocks if not b.kept)


def test_a_block_cut_to_fit_the_first_stage_is_cut_again_to_the_budget() -> None:
    # Was: generative=True with one 200-word paragraph over 4x the budget returned the cut
    # paragraph at 4x the budget (the generative stage skips a cut block).
    page = "<html><body><p>" + " ".join(f"word{i}" for i in range(200)) + "</p></body></html>"
    result = HtmlPruner(scorer="bm25", generative=True).prune(page, "word5 word6", 5)
    assert result.stats["truncated"] and result.stats.get("lm_calls") is None
    assert 0 < result.tokens <= 5 and get_counter().count(result.html) == result.tokens


@pytest.mark.parametrize("pages", [{"page-1": "<p>The Volga is long.</p>"}, {"<p>x</p>"}])
def test_pages_in_a_dict_or_a_set_are_refused(bm25_pruner: HtmlPruner, pages: Any) -> None:
    # Was: a dict's keys pruned as the pages ('<p>page-1</p>'), with no error.
    with pytest.raises(InputTypeError, match="pass them in a list"):
        bm25_pruner.prune(pages, "How long is the Volga?", 50)
