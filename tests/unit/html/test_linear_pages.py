"""Cleaning and pruning stay linear in the page (issue #41 item 7), checked without timing."""

from __future__ import annotations

import gc
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import lxml.etree
import lxml.html
import numpy as np
import pytest
from hrefine.budget import get_counter
from hrefine.html import HtmlPruner, _unwrap, blocks, boilerplate, columns
from hrefine.html import clean as clean_mod
from hrefine.html._text import element_text, normalize_space, shown_text
from hrefine.html.blocks import build_forest
from hrefine.html.clean import clean_document
from hrefine.html.render import Renderer
from hrefine.testing import KeywordEmbedder


def _wide_table(cols: int, rows: int = 20) -> str:
    head = "<tr>" + "".join(f"<th>Col {c}</th>" for c in range(cols)) + "</tr>"
    body = "".join(
        "<tr>" + "".join(f"<td>v{r}x{c}</td>" for c in range(cols)) + "</tr>" for r in range(rows)
    )
    return f"<html><body><h1>Wide</h1><table>{head}{body}</table></body></html>"


def _choose_by_rescanning(
    scores: np.ndarray, key: int, cells: list[tuple[Any, int, int]], tokens: list[float], room: int
) -> set[int] | None:
    """The column choice as it was before it was made linear: every cell rescanned per column."""
    order = sorted(range(len(scores)), key=lambda c: (-scores[c], c))
    kept = {key, order[0]}
    if columns._cost(cells, tokens, kept) > room:
        return None
    for c in order:
        if c not in kept and columns._cost(cells, tokens, kept | {c}) <= room:
            kept.add(c)
    return kept


def _random_table(rnd: random.Random) -> tuple[list[tuple[Any, int, int]], list[float], int]:
    """Rows of cells spanning 1-3 columns, with token shares of a scaled integer count."""
    n_cols = rnd.randint(2, 30)
    cells: list[tuple[Any, int, int]] = []
    for _ in range(rnd.randint(1, 12)):
        col = 0
        while col < n_cols:
            span = min(rnd.choice([1, 1, 1, 2, 3]), n_cols - col)
            cells.append((None, col, col + span - 1))
            col += span
    scale = rnd.choice([1.0, 0.37, 1.2345678])
    return cells, [rnd.randint(1, 40) * scale for _ in cells], n_cols


@pytest.mark.parametrize("seed", range(40))
def test_the_linear_column_choice_is_the_rescanning_one(seed: int) -> None:
    rnd = random.Random(seed)
    cells, tokens, n_cols = _random_table(rnd)
    scores = np.array([rnd.choice([0.0, 0.5, 1.0, rnd.random()]) for _ in range(n_cols)])
    total = sum(tokens)
    for room in {1, int(total / 4), int(total / 2), int(total), round(total)}:
        key = rnd.randrange(n_cols)
        assert columns._choose(scores, key, cells, tokens, room) == _choose_by_rescanning(
            scores, key, cells, tokens, room
        )


def test_a_cost_exactly_at_the_room_is_decided_as_the_full_sum_decides() -> None:
    # 0.1 summed in another order lands on either side of 0.3: the tie is summed again.
    cells = [(None, 0, 0), (None, 1, 1), (None, 2, 2)]
    tokens = [0.1, 0.1, 0.1]
    for room_scale in (1, 10):
        room = room_scale
        scaled = [t * room_scale / 0.3 for t in tokens]
        got = columns._choose(np.array([3.0, 2.0, 1.0]), 0, cells, scaled, room)
        assert got == _choose_by_rescanning(np.array([3.0, 2.0, 1.0]), 0, cells, scaled, room)


def test_the_column_choice_sums_each_table_a_fixed_number_of_times(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = []
    cost = columns._cost

    def counting(*args: Any) -> float:
        calls.append(1)
        return cost(*args)

    monkeypatch.setattr(columns, "_cost", counting)
    for n_cols in (50, 200):
        calls.clear()
        cells = [(None, c, c) for _ in range(20) for c in range(n_cols)]
        tokens = [3.0] * len(cells)
        kept = columns._choose(np.linspace(1, 0, n_cols), 0, cells, tokens, 60 * n_cols // 2)
        assert kept is not None and len(kept) == n_cols // 2
        assert len(calls) <= 3  # the first pair, then only ties; not once per column


@pytest.mark.slow
def test_a_ten_thousand_column_table_is_pruned_within_budget() -> None:
    page = _wide_table(10_000)
    result = HtmlPruner(scorer="bm25").prune(page, "Col 17 values", max_tokens=1024)
    assert 0 < get_counter(None).count(result.html) <= 1024
    assert "Col 17" in result.html


def test_a_two_thousand_column_table_is_pruned_within_budget() -> None:
    page = _wide_table(2_000)
    result = HtmlPruner(scorer="bm25").prune(page, "Col 17 values", max_tokens=1024)
    assert 0 < get_counter(None).count(result.html) <= 1024
    assert "Col 17" in result.html


def test_no_cleaning_query_selects_the_parents_of_attributes() -> None:
    # libxml2 de-duplicates the parents of an attribute step ("descendant::*/@class/..") in
    # time quadratic in their number: 2 MB of <span class> took seconds in that step alone.
    clean_mod._queries.cache_clear()
    sources: list[str] = []
    real = lxml.etree.XPath

    def recording(path: str, **kwargs: Any) -> Any:
        sources.append(path)
        return real(path, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(lxml.etree, "XPath", recording)
        clean_mod._queries()
    clean_mod._queries.cache_clear()
    assert sources
    assert not [s for s in sources if "/.." in s or "@*/" in s]


_ATTRIBUTED = """<html><head><title>t</title></head><body>
<nav>menu</nav><div class="navbox">links</div><p id="x">text <span class="sortkey">k</span>v</p>
<div role="navigation">r</div><aside>side</aside><footer>f</footer><main><p>Content here
is long enough to be the page. More words, and more words, and more.</p></main>
<table><tr><td rowspan="2" data-x="1">a</td><td style="display:none">h</td></tr>
<tr><td hidden>b</td><td aria-hidden="true">c</td></tr></table></body></html>"""


@pytest.mark.parametrize(
    ("name", "old"),
    [
        (
            "boiler",
            "descendant::aside | descendant::footer | descendant::nav | descendant::*/@class/.."
            " | descendant::*/@id/.. | descendant::*/@role/..",
        ),
        (
            "boiler_attrs",
            "descendant::*/@class/.. | descendant::*/@id/.. | descendant::*/@role/..",
        ),
        ("attributed", "descendant::*/@*/.."),
    ],
)
def test_each_cleaning_query_selects_what_its_attribute_step_form_did(name: str, old: str) -> None:
    root = lxml.html.document_fromstring(_ATTRIBUTED)
    # The boilerplate queries moved to their own module with boilerplate removal.
    queries = boilerplate._queries() if name.startswith("boiler") else clean_mod._queries()
    new = getattr(queries, name)(root)
    assert new == lxml.etree.XPath(old)(root)  # the same elements, in document order
    assert new


def test_the_elements_read_from_attributes_are_those_of_the_attribute_step_form() -> None:
    root = lxml.html.document_fromstring(_ATTRIBUTED)
    queries = clean_mod._queries()
    hiding = {el for q in queries.hiding for el in clean_mod._owners(q, root)}
    hiding |= set(queries.sortkeys(root))
    old = lxml.etree.XPath(
        "descendant::*/@hidden/.. | descendant::*/@aria-hidden/.. | descendant::*/@style/.."
        " | descendant::span[contains(@class, 'sortkey')]"
    )(root)
    assert hiding == set(old) and len(old) == 4
    spanning = clean_mod._owners(queries.row_spans, root)
    assert spanning == lxml.etree.XPath("descendant::*/@rowspan/..")(root) and spanning


def test_a_big_block_tree_is_built_with_the_collector_paused_and_restored(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    root = clean_document("<html><body><p>One two.</p><div><p>Three.</p><p>Four.</p></div>")
    seen: list[bool] = []

    def too_big(tag: str, html: str) -> bool:
        seen.append(gc.isenabled())
        return True

    assert gc.isenabled()
    build_forest([root], max_words=100, too_big=too_big)
    assert seen == [True]  # a small page: the collector runs as usual
    monkeypatch.setattr(blocks, "_PAUSE_GC_ELEMENTS", 5)
    seen.clear()
    build_forest([root], max_words=100, too_big=too_big)
    assert seen == [False]
    assert gc.isenabled()
    gc.disable()  # a caller that paused it itself finds it paused still
    try:
        build_forest([root], max_words=1)
        assert not gc.isenabled()
    finally:
        gc.enable()


class _GcWatchingEmbedder(KeywordEmbedder):
    """Records whether the collector ran while the pruner scored the blocks."""

    def __init__(self) -> None:
        super().__init__(dim=64)
        self.enabled: list[bool] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.enabled.append(gc.isenabled())
        return super().embed(texts)


def test_a_big_page_is_pruned_with_the_collector_paused_and_restored(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    page = "<html><body>" + "".join(f"<p>Paragraph {i} about owls.</p>" for i in range(40))
    embedder = _GcWatchingEmbedder()
    pruner = HtmlPruner(embedder=embedder)
    small = pruner.prune(page, "owls", max_tokens=64)
    assert embedder.enabled and all(embedder.enabled)  # a small page: the collector runs
    monkeypatch.setattr(blocks, "_PAUSE_GC_ELEMENTS", 10)
    embedder.enabled.clear()
    big = pruner.prune(page, "owls", max_tokens=64)
    assert embedder.enabled and not any(embedder.enabled)  # scoring ran with it paused
    assert gc.isenabled()
    assert big.html == small.html  # the pause changes nothing but the time


def test_a_wide_body_renders_its_kept_blocks_across_long_dropped_runs() -> None:
    # The writer jumps from the first dropped paragraph after a kept one (a line break: no
    # later dropped one changes the space written) to the next kept one; inline runs without
    # white space are still read one by one, as they decide whether two words touch.
    paras = "".join(f"<p>Paragraph {i} text.</p>" for i in range(5000))
    # The div holds a block too: inline content alone is one block, never opened.
    page = f"<html><body>{paras}<div><b>x1</b><i>y</i><b>x2</b><p>z</p></div></body></html>"
    forest = build_forest([clean_document(page)], max_words=1)
    wanted = {"Paragraph 10 text.", "Paragraph 4000 text.", "x1", "x2"}
    kept = [n.id for n in forest.tree.nodes if n.text in wanted]
    renderer = Renderer(forest)
    for _ in range(2):  # the children listed on the first render serve the second
        assert renderer.render(kept) == [
            "<p>Paragraph 10 text.</p><p>Paragraph 4000 text.</p><div><b>x1</b> <b>x2</b></div>"
        ]
    assert renderer.render(kept[:1]) == ["<p>Paragraph 10 text.</p>"]


def test_the_text_of_a_childless_element_is_read_without_a_walk(shared_data: Path) -> None:
    # element_text skips the walk for an element without children; on every such element of
    # real pages it must read what the walk reads.
    pages = [*sorted((shared_data / "wtq" / "pages").glob("*.html"))[:10]]
    pages += [*sorted((shared_data / "leval" / "nq" / "docs").glob("*.html"))[:3]]
    extra = "<p>  a\n b </p><td>\u3000x\u00a0y</td><img alt=' Alt  text '><br><hr>"
    roots = [clean_document(p.read_bytes()) for p in pages]
    roots.append(lxml.html.document_fromstring(f"<html><body>{extra}</body></html>"))
    seen = 0
    for root in roots:
        for el in root.iter():
            if len(el) == 0:
                seen += 1
                assert element_text(el) == normalize_space(shown_text(el)), el.tag
    assert seen > 1000


def test_a_grid_made_wide_by_spans_is_not_built() -> None:
    rows = "".join(
        "<tr>"
        + "".join(f'<td colspan="1000" rowspan="2">v{r}x{c}</td>' for c in range(80))
        + "</tr>"
        for r in range(20)
    )
    spanned = lxml.html.fragment_fromstring(f"<table>{rows}</table>")
    assert columns.table_grid(spanned) is None
    plain = lxml.html.fragment_fromstring(
        "<table><tr><th colspan=3>Title</th></tr><tr><td>a</td><td>b</td><td>c</td></tr></table>"
    )
    grid = columns.table_grid(plain)
    assert grid is not None and grid.n_cols == 3


def test_a_table_of_spanning_cells_is_pruned_within_budget() -> None:
    rows = "".join(
        "<tr>" + "".join(f'<td colspan="1000">value {r} {c}</td>' for c in range(80)) + "</tr>"
        for r in range(40)
    )
    page = f"<html><body><table><tr><th>a</th><th>b</th></tr>{rows}</table></body></html>"
    result = HtmlPruner(scorer="bm25").prune(page, "value 7 3", max_tokens=256)
    assert 0 < get_counter(None).count(result.html) <= 256


def _crowded_page() -> str:
    rnd = random.Random(3)
    parts = []
    for i in range(400):
        kind = rnd.randrange(6)
        if kind == 0:
            parts.append(f'<span class="c{i}">word{i} </span>')
        elif kind == 1:
            parts.append(f"<a href='/x{i}'>link{i}</a>, ")
        elif kind == 2:
            parts.append(f"<span><b>bold{i}</b> inner</span> tail{i}")
        elif kind == 3:
            parts.append(f"<b>kept{i}</b>  and ")
        elif kind == 4:
            parts.append(f"<font>  spaced {i}  </font>")
        else:
            parts.append(f"<span></span><br>line{i}")
    return f"<html><body><div>Start {''.join(parts)} end.</div><p>Other</p></body></html>"


@pytest.mark.parametrize("keep", [("alt",), ("alt", "href")])
def test_a_crowded_element_is_unwrapped_as_strip_tags_would_unwrap_it(
    keep: tuple[str, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    page = _crowded_page()
    monkeypatch.setattr(clean_mod, "_SMALL_PAGE", 0)  # a small page, checked all the same
    joined = clean_mod.clean_html(page, keep_attrs=keep)
    monkeypatch.setattr(_unwrap, "_MAX_TEXT_RUN", 10**9)  # no element is crowded now
    _unwrap.crowded_query.cache_clear()
    try:
        plain = clean_mod.clean_html(page, keep_attrs=keep)
    finally:
        _unwrap.crowded_query.cache_clear()
    assert joined == plain
    assert "word" in joined and "kept" in joined and "link" in joined


def test_the_crowded_query_runs_only_where_enough_elements_could_be_unwrapped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    unwrap = ("b", "span")
    queried: list[int] = []
    query = _unwrap.crowded_query

    def counting(tags: tuple[str, ...]) -> Any:
        queried.append(1)
        return query(tags)

    monkeypatch.setattr(_unwrap, "crowded_query", counting)
    paras = lxml.html.document_fromstring("".join(f"<p>p{i}</p>" for i in range(500)))
    assert _unwrap.crowded(paras, unwrap) == [] and not queried  # no <b> or <span> at all
    few = lxml.html.document_fromstring("<div>" + "<span>w</span>" * 64 + "</div>")
    assert _unwrap.crowded(few, unwrap) == [] and not queried  # 64: none can hold more
    # 65 in all, but no element holds more than 64 of them: the query decides.
    spread = lxml.html.document_fromstring(
        "<div>" + "<span>w</span>" * 40 + "</div><div>" + "<b>w</b>" * 25 + "</div>"
    )
    assert _unwrap.crowded(spread, unwrap) == [] and len(queried) == 1
    many = lxml.html.document_fromstring("<div>" + "<span>w</span>" * 65 + "</div>")
    found = _unwrap.crowded(many, unwrap)
    assert [el.tag for el in found] == ["div"] and len(queried) == 2


def test_unwrapping_a_crowded_element_leaves_one_text_node_per_run() -> None:
    # lxml reads a run of adjacent text nodes in time quadratic in its length: after the
    # unwrapping there is one node per run, whatever the number of spans.
    for n in (100, 400):
        root = lxml.html.document_fromstring(
            "<div>a " + "".join(f"<span>w{i} </span>t " for i in range(n)) + "<b>x</b> z</div>"
        )
        div = root.find("body/div")
        clean_mod._strip_attributes(root, frozenset(), keep_links=False)
        assert len(lxml.etree.XPath("text()", smart_strings=False)(div)) == 2
        assert div.text.startswith("a w0 t w1 t ") and div.text.endswith(f"w{n - 1} t ")
