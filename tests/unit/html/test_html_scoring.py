"""Stage-1 scoring: tables scored as a whole, rows inheriting their table's score, BM25 fusion."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from hrefine.errors import ConfigError
from hrefine.html import HtmlPruner, HtmlPrunerOptions, clean_html
from hrefine.html.render import omit_end_tags
from hrefine.html.scoring import BlockScorer, ScoredItem
from hrefine.testing import KeywordEmbedder


def _item(text: str, *, back: bool = False) -> ScoredItem:
    return ScoredItem("text", -1, "", text, back=back)


def _items(texts: Sequence[str], back: Sequence[bool]) -> list[ScoredItem]:
    return [_item(t, back=b) for t, b in zip(texts, back, strict=True)]


class KeywordScorer:
    """A deterministic stand-in for a dense scorer: a score per keyword a text contains."""

    name = "keywords"

    def __init__(self, weights: dict[tuple[str, ...], float], default: float = 0.0) -> None:
        self.weights = weights
        self.default = default
        self.seen: list[str] = []

    def score(self, query: str, texts: Sequence[str]) -> np.ndarray:
        self.seen.extend(texts)
        out = []
        for text in texts:
            hits = [w for keys, w in self.weights.items() if all(k in text for k in keys)]
            out.append(max(hits, default=self.default))
        return np.asarray(out, dtype=np.float64)


def _rows(n: int, first: str = "", last: str = "") -> str:
    rows = []
    for i in range(n):
        name = first if i == 0 and first else last if i == n - 1 and last else f"Name{i}"
        rows.append(f"<tr><td>{i + 1}</td><td>{name}</td><td>{1000 + 37 * i}</td></tr>")
    return "".join(rows)


def _page(table_rows: int) -> str:
    distractor = " ".join(f"Beta sentence {i} about other things." for i in range(12))
    return (
        "<html><body><h1>Report</h1>"
        f"<p>{distractor}</p>"
        "<table><tr><th>Rank</th><th>Name</th><th>Votes</th></tr>"
        f"{_rows(table_rows, first='Alpha', last='Omega')}</table>"
        "</body></html>"
    )


def test_a_table_that_fits_is_scored_as_a_whole() -> None:
    # Only the whole table holds both Alpha and Omega; no row, and not the distractor, does.
    scorer = KeywordScorer({("Alpha", "Omega"): 0.9, ("Beta",): 0.5})
    pruner = HtmlPruner(scorer=scorer, lexical_weight=0)
    page = _page(8)
    cleaned = clean_html(page)
    table = cleaned[cleaned.index("<table") : cleaned.index("</table>") + len("</table>")]
    table_tokens = pruner.counter.count(omit_end_tags(table))  # as the pruner writes it
    result = pruner.prune(page, "which name got the most votes?", table_tokens + 30)
    assert "Alpha" in result.html and "Omega" in result.html
    assert "Beta sentence" not in result.html
    assert any("Alpha" in t and "Omega" in t for t in scorer.seen)  # the table's own text


def test_rows_of_a_table_too_big_to_keep_inherit_its_score() -> None:
    scorer = KeywordScorer({("Alpha", "Omega"): 0.9, ("Beta",): 0.5})
    # Reading whole texts: only the whole table holds both its first and last names.
    pruner = HtmlPruner(scorer=scorer, lexical_weight=0, read_words=None)
    result = pruner.prune(_page(60), "which name got the most votes?", 200)
    assert "Beta sentence" not in result.html
    assert "<tr><td>1<td>Alpha<td>1000<tr><td>2<td>Name1" in result.html  # rows, in order
    assert result.tokens <= 200


def test_bm25_match_breaks_ties_of_a_dense_scorer() -> None:
    page = (
        "<html><body><table><tr><th>Week</th><th>Date</th><th>Attendance</th></tr>"
        + "".join(
            f"<tr><td>{w}</td><td>November {d}, 1986</td><td>{60000 + 917 * w}</td></tr>"
            for w, d in enumerate((2, 9, 16, 23, 30), start=1)
        )
        + "</table>"
        + "".join(f"<p>Filler paragraph {i} on other topics entirely.</p>" for i in range(30))
        + "</body></html>"
    )
    flat = KeywordScorer({}, default=0.5)  # cannot tell the rows apart
    question = "attendance at the game of november 23, 1986?"
    result = HtmlPruner(scorer=flat).prune(page, question, 40)
    assert "November 23, 1986" in result.html
    assert result.tokens <= 40


def _ranked_page() -> str:
    # The first rows have the longest names: BM25's length norm favours the short ones.
    names = [
        "London Heathrow International Terminal Five",
        "London Gatwick North And South Terminals",
        "Manchester Airport Terminal Two",
        *(f"Town{i}" for i in range(4, 41)),
    ]
    rows = "".join(
        f"<tr><td>{i}</td><td>{name}</td><td>{900_000 - 20_000 * i}</td></tr>"
        for i, name in enumerate(names, start=1)
    )
    return (
        "<html><body><h2>Busiest routes</h2>"
        f"<table><tr><th>Rank</th><th>Airport</th><th>Passengers</th></tr>{rows}</table>"
        "</body></html>"
    )


@pytest.mark.parametrize("scorer", ["bm25", "keywords"])
def test_rows_matching_only_through_their_header_are_kept_from_the_top(scorer: str) -> None:
    # Every row matches "airport" through the table header alone: they tie, and the first
    # rows of the ranked table are kept, not its shortest.
    flat = KeywordScorer({}, default=0.5)
    # (keep_last_rows off: the last row would be kept first.)
    pruner = HtmlPruner(scorer="bm25" if scorer == "bm25" else flat, keep_last_rows=False)
    result = pruner.prune(_ranked_page(), "which airport is the busiest?", 120)
    assert "London Heathrow" in result.html
    assert "Town40" not in result.html
    assert result.tokens <= 120


def test_a_row_matching_in_its_own_cells_still_outranks_the_top_rows() -> None:
    result = HtmlPruner(scorer="bm25").prune(_ranked_page(), "passengers at the Town37 airport", 60)
    assert "Town37" in result.html


def test_a_rows_two_added_matches_do_not_set_the_lexical_scale() -> None:
    flat = KeywordScorer({}, default=0.5)
    scoring = BlockScorer(HtmlPrunerOptions(scorer=flat))
    query = "busiest airport passengers"
    row = "Busiest Town3 airport 900 passengers"
    # The row is matched as its own cells plus its header (it borrows the table's dense score).
    items = [
        _item("The busiest airport by passengers."),
        ScoredItem("block", 1, "Busiest airport | Rank | Airport | Passengers", row, borrow=0),
    ]
    scores = scoring.score(query, items)
    # The paragraph is the best text matched whole: its lexical part is the full weight,
    # however high the row's own match plus its header's adds up.
    assert scores[0] == pytest.approx(0.5 + 0.3)
    assert scores[1] > scores[0]


def test_lexical_weight_must_not_be_negative() -> None:
    with pytest.raises(ConfigError, match="lexical_weight"):
        HtmlPruner(lexical_weight=-0.1)


def test_bm25_scorer_is_not_fused_with_itself() -> None:
    scoring = BlockScorer(HtmlPrunerOptions(scorer="bm25"))
    texts = ["alpha beta", "gamma"]
    fused = scoring.score("alpha", [_item(t) for t in texts])
    assert np.allclose(fused, scoring.scorer.score("alpha", texts))


def test_rows_are_not_embedded_when_bm25_tells_them_apart() -> None:
    page = _page(60)
    with_bm25 = KeywordEmbedder(dim=64)
    HtmlPruner(embedder=with_bm25).prune(page, "how many votes did Name7 get?", 200)
    alone = KeywordEmbedder(dim=64)
    HtmlPruner(embedder=alone, lexical_weight=0).prune(page, "how many votes did Name7 get?", 200)
    # 61 rows: embedded one by one only when the BM25 match is off.
    assert alone.texts_embedded - with_bm25.texts_embedded >= 60
    # The row that matches the question still wins among the table's rows.
    result = HtmlPruner(embedder=KeywordEmbedder(dim=64)).prune(page, "votes of Name7", 40)
    assert "Name7" in result.html


def _cited_page() -> str:
    cites = "".join(
        f"<li>Smith ({1990 + i}). Highest river flood recorded: the highest flood recorded on"
        f" the river, river flood records. Part {i}. Retrieved 2018.</li>"
        for i in range(12)
    )
    return (
        "<html><body><h1>River</h1>"
        "<p>The highest flood on the river was recorded in February 1795.</p>"
        + "".join(f"<p>Paragraph {i} about the town's markets and trade.</p>" for i in range(6))
        + f"<h2>References</h2><ol>{cites}</ol></body></html>"
    )


@pytest.mark.parametrize("scorer", ["bm25", "keywords"])
def test_back_matter_ranks_below_the_body_and_is_not_scored(scorer: str) -> None:
    query = "when was the highest flood on the river recorded?"
    dense = KeywordScorer({("flood",): 0.9, ("river",): 0.8}, default=0.1)
    spec: object = "bm25" if scorer == "bm25" else dense
    result = HtmlPruner(scorer=spec).prune(_cited_page(), query, 400)
    assert result.stats["back_matter_blocks"] >= 12
    ranked = sorted((b for b in result.blocks if b.rank >= 0), key=lambda b: b.rank)
    flags = ["Retrieved" in b.text or b.text == "References" for b in ranked]
    assert any(flags) and flags == sorted(flags), [b.text for b in ranked]  # body first
    assert "February 1795" in result.html
    if scorer == "keywords":  # the dense scorer never read a citation
        assert not any("Retrieved" in t for t in dense.seen)


def test_the_lexical_match_is_scaled_by_the_best_body_text_not_by_a_citation() -> None:
    # A citation that repeats the question's words must not shrink the lexical part of the
    # body's scores: the best body match gets the whole lexical weight.
    flat = KeywordScorer({}, default=0.5)
    scoring = BlockScorer(HtmlPrunerOptions(scorer=flat, lexical_weight=0.3))
    texts = [
        "The flood of 1795 was the highest.",
        "Markets and trade of the town.",
        "Bridges over the water.",
        "Smith. When was the highest flood on the river recorded? Highest flood river. 2018.",
    ]
    query = "when was the highest flood on the river recorded?"
    scores = scoring.score(query, _items(texts, back=[False, False, False, True]))
    assert scores[0] == pytest.approx(0.5 + 0.3)
    assert scores[1] == pytest.approx(0.5) and scores[2] == pytest.approx(0.5)
    assert scores[3] < min(scores[:3])  # the citation stays below the body
    # No body text matches: the citations are still ordered by their own match.
    cites = ["Smith. Highest flood of the river.", "Jones. Markets.", "Lee. Flood."]
    texts = ["Bridges over the water.", "Trade of the town.", *cites]
    scores = scoring.score(query, _items(texts, back=[False, False, True, True, True]))
    assert scores[0] == pytest.approx(0.5) and scores[1] == pytest.approx(0.5)
    assert scores[2] > scores[4] > scores[3] and scores[2] < 0.5


def test_back_matter_is_scored_like_the_rest_when_asked() -> None:
    query = "when was the highest flood on the river recorded?"
    dense = KeywordScorer({("flood",): 0.9, ("river",): 0.8}, default=0.1)
    result = HtmlPruner(scorer=dense, demote_back_matter=False).prune(_cited_page(), query, 400)
    assert any("Retrieved" in t for t in dense.seen)
    best = min((b for b in result.blocks if b.rank >= 0), key=lambda b: b.rank)
    assert "Retrieved" in best.text  # a citation that names the flood and the river wins


def test_prose_in_a_table_is_scored_on_its_own() -> None:
    summary = " ".join(f"Plot word{i} of the episode summary." for i in range(20))  # 100 words
    rows = "".join(
        f"<tr><td>{i}</td><td>Episode {i}</td><td>May {i}, 2018</td></tr>"
        f"<tr><td colspan='3'>{summary} Part {i}.</td></tr>"
        for i in range(1, 9)
    )
    page = (
        "<html><body><h1>Series</h1>"
        "<p>The second season premiered on April 25, 2018 on the network.</p>"
        f"<table><tr><th>No</th><th>Title</th><th>Release date</th></tr>{rows}</table>"
        "</body></html>"
    )
    # The table as a whole matches the question best, a summary on its own not at all.
    scorer = KeywordScorer({("Episode 1", "Episode 8"): 0.9, ("premiered",): 0.5}, default=0.1)
    pruner = HtmlPruner(scorer=scorer, lexical_weight=0, read_words=None)  # whole texts
    result = pruner.prune(page, "season premiere", 300)
    score = {b.text: b.stage1_score for b in result.blocks if b.stage1_score is not None}
    summaries = [s for t, s in score.items() if t.startswith("Plot word0")]
    data_rows = [s for t, s in score.items() if t.startswith("1 Episode 1")]
    assert len(summaries) == 8 and summaries == pytest.approx([0.1] * 8)
    assert data_rows == [pytest.approx(0.9)]  # a short row still inherits its table's score
    assert "premiered on April 25, 2018" in result.html
    # With the BM25 match on, short rows borrow their table's score; each summary is still
    # given to the scorer itself.
    seen: list[str] = []

    class Recording(KeywordEmbedder):
        def embed(self, texts: Sequence[str]) -> np.ndarray:
            seen.extend(texts)
            return super().embed(texts)

    HtmlPruner(embedder=Recording(dim=64)).prune(page, "season premiere 2018", 300)
    assert sum("Plot word0" in t and "Episode" not in t for t in seen) == 8
    assert not any("Episode 3 May 3" in t and "Episode 8" not in t for t in seen)


def test_a_wide_row_of_short_cells_is_data_not_prose() -> None:
    # 30 cells of three words: 90 words in the row, none of them prose. The row still takes
    # its table's score; only a cell of more than 64 words makes a row prose.
    head = "".join(f"<th>Round {c}</th>" for c in range(30))
    rows = "".join(
        "<tr>" + "".join(f"<td>Team{r} {c} pts</td>" for c in range(30)) + "</tr>"
        for r in range(12)
    )
    page = (
        "<html><body><h1>League</h1><p>The league was founded long ago by clubs.</p>"
        f"<table><tr>{head}</tr>{rows}</table></body></html>"
    )
    scorer = KeywordScorer({("Team0", "Team11"): 0.9}, default=0.1)
    pruner = HtmlPruner(scorer=scorer, lexical_weight=0, narrow_tables=False, read_words=None)
    result = pruner.prune(page, "league points", 400)
    rows_scored = [b.stage1_score for b in result.blocks if b.text.startswith("Team5 0 pts")]
    assert rows_scored == [pytest.approx(0.9)]


def test_back_matter_in_a_layout_table_stays_below_the_rest() -> None:
    cites = "".join(f"<p>Smith ({1990 + i}). Founded town history {i}.</p>" for i in range(30))
    page = (
        "<html><body><p>Visitors come for the markets of the town.</p>"
        "<table><tr><td><h1>Town</h1><p>The town was founded in 1795 by settlers.</p>"
        f"<h2>References</h2>{cites}</td></tr></table></body></html>"
    )
    scorer = KeywordScorer({("Town", "1795", "Smith"): 0.9, ("markets",): 0.3}, default=0.1)
    result = HtmlPruner(scorer=scorer).prune(page, "when was the town founded?", 120)
    scored = [b for b in result.blocks if b.stage1_score is not None]
    cited = [b.stage1_score for b in scored if b.text.startswith("Smith")]
    others = [b.stage1_score for b in scored if not b.text.startswith(("Smith", "References"))]
    assert len(cited) == 30 and max(cited) < min(others)
    assert "founded in 1795" in result.html


def test_a_dense_scorer_reads_a_window_of_a_long_block() -> None:
    filler = " ".join(f"Filler{i} says little." for i in range(40))  # 120 words
    page = (
        "<html><body><h1>Notes</h1>"
        f"<p>{filler} The harbour of Zanzibar opened in 1850.</p>"
        "<p>A short paragraph.</p></body></html>"
    )
    scorer = KeywordScorer({("Zanzibar",): 0.9}, default=0.1)
    # Paragraphs whole: the point is what is read of one long block.
    pruner = HtmlPruner(scorer=scorer, lexical_weight=0, read_words=45, split_paragraphs=False)
    result = pruner.prune(page, "Zanzibar harbour", 30)
    read = next(t for t in scorer.seen if "Filler" in t)
    assert read.startswith("Notes\n")  # headings first, then the window
    assert len(read.removeprefix("Notes\n").split()) == 45
    assert "Zanzibar opened in 1850" in read and "Filler0 " not in read
    score = {b.text[:7]: b.stage1_score for b in result.blocks if b.tag_path.endswith(">p")}
    assert score == {"Filler0": pytest.approx(0.9), "A short": pytest.approx(0.1)}

    # No query word in the block: it reads its start; by default it reads it whole.
    scorer = KeywordScorer({}, default=0.1)
    whole = {"lexical_weight": 0, "split_paragraphs": False}
    HtmlPruner(scorer=scorer, read_words=45, **whole).prune(page, "volcano", 30)
    assert next(t for t in scorer.seen if "Filler" in t).startswith("Notes\nFiller0 says")
    scorer = KeywordScorer({}, default=0.1)
    HtmlPruner(scorer=scorer, **whole).prune(page, "volcano", 30)  # reading whole texts
    assert any(filler in t and "1850" in t for t in scorer.seen)
    with pytest.raises(ValueError, match="read_words"):
        HtmlPruner(read_words=0)


def test_bm25_reads_whole_texts_whatever_the_dense_scorer_reads() -> None:
    filler = " ".join(f"Filler{i} says little." for i in range(40))
    page = (
        f"<html><body><p>{filler} Harbour news.</p><p>{filler} Quiet.</p>"
        "<p>Nothing here.</p></body></html>"
    )
    scores = []
    for read_words in (3, None):
        flat = KeywordScorer({}, default=0.0)  # the dense part adds nothing
        pruner = HtmlPruner(scorer=flat, read_words=read_words)
        result = pruner.prune(page, "harbour", 20)
        scores.append(sorted(b.stage1_score for b in result.blocks if b.block_id >= 0))
    assert scores[0] == scores[1] and max(scores[0]) > 0


def test_a_missing_bm25s_is_a_clear_error_not_a_silently_dropped_match(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import hrefine.models.lexical as lexical
    from hrefine.errors import MissingDependencyError

    real = lexical.require

    def without_bm25s(module: str, extra: str) -> object:
        if module.startswith("bm25s"):
            raise MissingDependencyError(module, extra)
        return real(module, extra)

    lexical._stopwords.cache_clear()
    lexical._stop_set.cache_clear()
    monkeypatch.setattr(lexical, "require", without_bm25s)
    page = _page(5)
    try:
        with pytest.raises(MissingDependencyError, match=r"hrefine\[models\]"):
            HtmlPruner(embedder=KeywordEmbedder(dim=64)).prune(page, "votes of Name3", 60)
        # With the match off, the embedding alone ranks the blocks.
        alone = HtmlPruner(embedder=KeywordEmbedder(dim=64), lexical_weight=0)
        assert alone.prune(page, "votes of Name3", 60).html
    finally:
        lexical._stopwords.cache_clear()
        lexical._stop_set.cache_clear()
