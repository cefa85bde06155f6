"""Column projection of tables too big for the budget (hrefine.html.columns, narrow_tables)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import lxml.html
import numpy as np
from hrefine.budget import get_counter
from hrefine.eval.baselines import as_plain_text
from hrefine.eval.metrics import answer_containment
from hrefine.html import HtmlPruner
from hrefine.html.blocks import serialize_element
from hrefine.html.clean import clean_document
from hrefine.html.columns import project_columns, table_grid
from hrefine.html.render import omit_end_tags
from hrefine.html.scoring import ScoredItem
from hrefine.models.lexical import BM25Scorer

TEAMS = [f"Team{chr(65 + i // 26)}{chr(65 + i % 26)}" for i in range(60)]


def _notes(i: int) -> str:
    return f"Founded in the town of Place{i} by a group of workers; colours green and white."


def _league(rows: int = 60, title: bool = False) -> str:
    body = "".join(
        f"<tr><td>{i + 1}</td><td>{TEAMS[i]}</td><td>{_notes(i)}</td><td>{900 - 7 * i}</td></tr>"
        for i in range(rows)
    )
    head = "<tr><th>Rank</th><th>Team</th><th>Notes</th><th>Points</th></tr>"
    top = "<tr><th colspan='4'>Season table</th></tr>" if title else ""
    return f"<html><body><h1>League</h1><table>{top}{head}{body}</table></body></html>"


def _keyword_score(weights: dict[str, float]) -> Any:
    def score(query: str, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(
            [max([w for k, w in weights.items() if k in t], default=0.0) for t in texts]
        )

    return score


def _no_match(query: str, texts: Sequence[str]) -> np.ndarray:
    return np.zeros(len(texts))


def _project(root: Any, query: str, budget: int, score: Any, match: Any = _no_match) -> list:
    counter = get_counter(None)
    return project_columns(
        [root],
        query,
        budget=budget,
        share=0.5,
        score_groups=lambda q, groups: [score(q, g) for g in groups],
        match=match,
        count_many=counter.count_many,
        serialize=lambda el: omit_end_tags(serialize_element(el)),
    )


def _text(el: Any) -> str:
    return "".join(el.itertext())


def _cells(table: Any) -> list[list[str]]:
    return [[_text(c) for c in tr if c.tag in ("td", "th")] for tr in table.iter("tr")]


def test_grid_places_cells_under_spans() -> None:
    root = clean_document(
        "<table><tr><th>A</th><th colspan='2'>B</th></tr>"
        "<tr><td rowspan='2'>one</td><td>two</td><td>three</td></tr>"
        "<tr><td>four</td><td>five</td></tr></table>"
    )
    grid = table_grid(root.find(".//table"))
    assert grid is not None and grid.n_cols == 3
    placed = [[(_text(c), a, b) for c, a, b in row] for row in grid.cells]
    assert placed == [
        [("A", 0, 0), ("B", 1, 2)],
        [("one", 0, 0), ("two", 1, 1), ("three", 2, 2)],
        [("four", 1, 1), ("five", 2, 2)],  # column 0 is taken by "one" from above
    ]


def test_a_table_holding_a_table_has_no_grid() -> None:
    root = clean_document(
        "<table><tr><td><table><tr><td>in</td><td>ner</td></tr></table></td><td>x</td></tr></table>"
    )
    assert table_grid(root.find(".//table")) is None


def test_a_big_table_keeps_every_row_of_its_key_and_best_columns() -> None:
    root = clean_document(_league(title=True))
    query = "which team has the most points?"
    choices = _project(root, query, 1500, _keyword_score({"Points": 1}))
    assert len(choices) == 1
    choice = choices[0]
    # Team names the rows, Points scores best; Rank would go over half the budget.
    assert choice.kept == [1, 3] and choice.dropped == [0, 2]
    assert choice.headers[1] == "Team" and choice.tokens_after <= 750 < 1500 < choice.tokens_before
    rows = _cells(root.find(".//table"))
    assert rows[0] == ["Season table"]  # a title spanning all columns stays, its span narrowed
    assert root.find(".//table//th[@colspan]").get("colspan") == "2"
    assert rows[1] == ["Team", "Points"]
    assert [r[0] for r in rows[2:]] == TEAMS
    assert all("Founded" not in " ".join(r) for r in rows)


def test_rows_the_query_names_are_also_kept_whole() -> None:
    root = clean_document(_league())
    bm25 = BM25Scorer()
    query = f"when was {TEAMS[41]} founded?"
    choices = _project(root, query, 1500, _keyword_score({"Points": 1}), bm25.score)
    assert choices and choices[0].whole_rows == [42]  # row 0 is the header
    first, second = root.findall(".//table")
    assert _cells(first) == [
        ["Rank", "Team", "Notes", "Points"],
        ["42", TEAMS[41], _notes(41), "613"],
    ]
    assert _cells(second)[0] == ["Team", "Points"] and len(_cells(second)) == 61


def test_tables_that_fit_or_cannot_narrow_enough_are_left_alone() -> None:
    score = _keyword_score({"Points": 1})
    small = clean_document(_league(rows=5))
    assert _project(small, "most points?", 1024, score) == []
    big = clean_document(_league())
    before = lxml.html.tostring(big)
    # Team and Points over 60 rows need far more than half of 256 tokens.
    assert _project(big, "most points?", 256, score) == []
    assert lxml.html.tostring(big) == before


def test_spanning_rows_with_a_named_row_leave_the_table_whole() -> None:
    rows = "".join(
        f"<tr><td rowspan='2'>{TEAMS[i]}</td><td>{_notes(i)}</td><td>{i}</td></tr>"
        f"<tr><td>{_notes(i + 100)}</td><td>{i + 100}</td></tr>"
        for i in range(30)
    )
    html = f"<table><tr><th>Team</th><th>Notes</th><th>Points</th></tr>{rows}</table>"
    root = clean_document(html)
    before = lxml.html.tostring(root)
    query = f"{TEAMS[3]} points"
    assert _project(root, query, 1024, _keyword_score({"Points": 1}), BM25Scorer().score) == []
    assert lxml.html.tostring(root) == before


def test_pruner_answers_a_question_over_a_whole_table() -> None:
    page = _league()
    query = "which team has the fewest points?"
    narrow = HtmlPruner(scorer="bm25").prune(page, query, 1400)
    assert narrow.tokens <= 1400
    assert narrow.stats["narrowed_tables"][0]["dropped"] == [0, 2]
    assert all(team in narrow.html for team in TEAMS)  # the last row (fewest points) included
    # (Its last row is left to the row order here: keep_last_rows would keep it.)
    whole_rows = HtmlPruner(scorer="bm25", narrow_tables=False, keep_last_rows=False)
    wide = whole_rows.prune(page, query, 1400)
    assert wide.stats["narrowed_tables"] == []
    assert TEAMS[-1] not in wide.html  # whole rows: the table is cut short


def test_reports_still_point_into_the_cleaned_page() -> None:
    page = _league()
    query = f"how many points did {TEAMS[41]} get?"
    result = HtmlPruner(scorer="bm25").prune(page, query, 1400)
    assert result.stats["narrowed_tables"][0]["whole_rows"]
    elements = [e for e in lxml.html.fromstring(result.cleaned[0]).iter() if isinstance(e.tag, str)]
    located = [r for r in result.blocks if r.element is not None]
    assert located
    for report in located:
        el = elements[report.element]
        assert el.tag == report.tag_path.split(">")[-1]
        assert report.text.split()[0] in el.text_content()


def test_the_columns_of_every_big_table_are_scored_in_one_call() -> None:
    # One model call for all tables (one batch), each table's scores still its own.
    league = _league().split("<body>")[1].split("</body>")[0]
    root = clean_document(f"<html><body>{league}<p>Between.</p>{league}</body></html>")
    calls: list[list[list[str]]] = []
    score = _keyword_score({"Points": 1})

    def groups(query: str, texts: list[list[str]]) -> list[np.ndarray]:
        calls.append(texts)
        return [score(query, g) for g in texts]

    counter = get_counter(None)
    choices = project_columns(
        [root],
        "which team has the most points?",
        budget=1500,
        share=0.5,
        score_groups=groups,
        match=_no_match,
        count_many=counter.count_many,
        serialize=lambda el: omit_end_tags(serialize_element(el)),
    )
    assert len(calls) == 1 and len(calls[0]) == 2 and len(calls[0][0]) == 4
    assert [c.kept for c in choices] == [[1, 3], [1, 3]]
    assert all(_cells(t)[0] == ["Team", "Points"] for t in root.findall(".//table"))


def test_pruner_scores_a_pages_big_tables_in_one_model_call(
    wtq: dict[str, Any], embedder: Any
) -> None:
    # WTQ nu-717's page has several tables narrowed at 512 tokens. Scoring their columns in
    # one call gives what scoring them table by table gives (the BM25 part scaled per table).
    q = next(q for q in wtq["questions"] if q["id"] == "nu-717")
    page = wtq["page"](q["doc"])
    pruner = HtmlPruner(embedder=embedder)
    texts_per_call: list[int] = []
    inner = pruner.scorer.score

    def counted(query: str, texts: Sequence[str]) -> np.ndarray:
        texts_per_call.append(len(texts))
        return inner(query, texts)

    pruner.scorer.score = counted  # type: ignore[method-assign]
    together = pruner.prune(page, q["question"], 512)
    tables = together.stats["narrowed_tables"]
    assert len(tables) >= 3
    # One call for the columns of every big table, one for the blocks.
    assert len(texts_per_call) == 2
    assert texts_per_call[0] >= sum(len(t["headers"]) for t in tables)

    scoring = pruner._scoring

    def one_by_one(query: str, groups: list[list[str]]) -> list[np.ndarray]:
        return [scoring.score(query, [ScoredItem("text", -1, "", t) for t in g]) for g in groups]

    scoring.score_groups = one_by_one  # type: ignore[method-assign]
    apart = pruner.prune(page, q["question"], 512)
    assert apart.html == together.html
    assert [t["kept"] for t in apart.stats["narrowed_tables"]] == [t["kept"] for t in tables]
    assert len(texts_per_call) > 2 + len(tables)  # a call per big table, then the blocks


def test_a_superlative_over_a_real_table(wtq: dict[str, Any], embedder: Any) -> None:
    # WTQ nu-1371: the least time is in the last rows of two record tables on the page.
    q = next(q for q in wtq["questions"] if q["id"] == "nu-1371")
    page = wtq["page"](q["doc"])
    pruner = HtmlPruner(embedder=embedder)
    result = pruner.prune(page, q["question"], 1024)
    assert result.stats["narrowed_tables"]
    assert answer_containment(as_plain_text(result.html), q["answers"]) == 1.0


def test_narrowing_never_exceeds_the_budget_on_real_pages(wtq: dict[str, Any]) -> None:
    pruner = HtmlPruner(scorer="bm25")
    seen = 0
    for q in wtq["questions"][:60:6]:
        result = pruner.prune(wtq["page"](q["doc"]), q["question"], 512)
        assert result.tokens <= 512
        seen += bool(result.stats["narrowed_tables"])
    assert seen  # some of these pages have tables bigger than the budget


def test_a_column_is_scored_by_its_header_and_first_values() -> None:
    # Its header and first values say what a column holds; the other 54 values would only
    # lengthen the text to embed.
    seen: list[str] = []

    def score(query: str, texts: Sequence[str]) -> np.ndarray:
        seen.extend(texts)
        return np.arange(len(texts), dtype=np.float64)

    _project(clean_document(_league()), "points of the league", 300, score)
    team = next(t for t in seen if t.startswith("Team:"))
    assert team.startswith("Team: TeamAA | TeamAB")
    assert "TeamAF" in team and "TeamAG" not in team  # the 6th value, not the 7th
