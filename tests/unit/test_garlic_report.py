"""The GARLIC search report (``SearchResult.to_html``): a prompt-only search over a graph of a
real HotpotQA item (built with a fast echo summariser), rendered inert and complete."""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from hrefine.errors import InputTypeError
from hrefine.garlic import GarlicGraph, GarlicSearcher, SearchResult
from hrefine.garlic.report import render_report
from hrefine.raptor import Source
from hrefine.testing import ScriptedLM


def echo_points(prompt: str) -> str:
    """A fast fake summariser: one bullet of ten words per two input lines (levels shrink)."""
    body = prompt.split("\n\n", 1)[1].split("\n\nSplit your summary", 1)[0]
    lines = body.split("\n")
    pairs = [" ".join(lines[i : i + 2]) for i in range(0, len(lines), 2)]
    return "\n".join("* " + " ".join(pair.split()[:10]) for pair in pairs)


class _Tags(HTMLParser):
    """Every tag and attribute name of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.attributes: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.attributes.update(name for name, _ in attrs)


@pytest.fixture(scope="module")
def item(shared_data: Path) -> Any:
    from hrefine.eval.loaders import load_dataset

    return load_dataset("hotpotqa", data_dir=shared_data)[0]


def _sources(item: Any, count: int) -> list[Source]:
    from hrefine.eval.loaders import hotpot_paragraph_text

    return [
        Source(hotpot_paragraph_text(p), {"source": p["title"]}, p["title"])
        for p in item.extra["paragraphs"][:count]
    ]


@pytest.fixture(scope="module")
def graph(item: Any, embedder: Any) -> GarlicGraph:
    return GarlicGraph.build(
        _sources(item, 4),
        lm=echo_points,
        embedder=embedder,
        chunk_tokens=48,
        batch_tokens=400,
        summary_tokens=48,
    )


@pytest.fixture(scope="module")
def searched(graph: GarlicGraph, item: Any) -> SearchResult:
    # No, then a reply that is neither Yes nor No (a note), then Yes: stopped by patience.
    llm = ScriptedLM(["No", "Maybe <b>so</b>", "Yes."])
    return GarlicSearcher(graph, lm=llm).search(item.question)


def _visible(page: str) -> str:
    """The page's text with tags removed and entities decoded."""
    return html.unescape(re.sub(r"<[^>]+>", " ", page))


def test_the_report_shows_the_trace_and_the_visited_nodes(
    searched: SearchResult, graph: GarlicGraph, item: Any
) -> None:
    page = searched.to_html(graph)
    assert page == render_report(searched, graph)
    text = _visible(page)
    assert searched.stopped_by == "patience" and len(searched.trace) == 3
    assert item.question in text and "stopped by patience" in text
    assert "prompt-only mode" in text and "3 Yes/No questions, 1 answered Yes" in text
    # one trace row per question, with P(Yes)/P(No), the answer and the new tokens
    trace = page.split("<h2>The Yes/No trace</h2>", 1)[1].split("</table>", 1)[0]
    rows = re.findall(r"<tr class=\"(yes|no)\">", trace)
    assert rows == ["no", "no", "yes"]
    for step in searched.trace:
        assert f"{step.new_tokens:,}" in trace
    assert "Maybe &lt;b&gt;so&lt;/b&gt;" in trace  # the reply, escaped
    assert f"<b>{searched.prefilled_tokens:,}</b> tokens pre-filled" in page
    assert f"<b>{searched.recompute_tokens:,}</b>" in page
    # the visited nodes, in document order, each anchored once, with its level
    visited = page.split("<h2>Visited nodes, in document order</h2>", 1)[1].split("</table>")[0]
    anchors = [int(i) for i in re.findall(r'<tr id="n(\d+)">', visited)]
    assert anchors == searched.document_order
    assert len(anchors) == len(searched.visited) >= 2
    for v in searched.visited:
        assert html.escape(v.text.split()[0]) in visited
    # the note about the unreadable reply
    assert "Notes" in text and "neither Yes nor No" in text
    # the graph's levels with their node counts and visited counts
    levels = page.split("<h2>The graph, top level first</h2>", 1)[1]
    for lv in range(graph.levels + 1):
        ids = graph.tree.at_level(lv)
        seen = sum(1 for v in searched.visited if v.level == lv)
        assert f'<td class="num">{lv}</td>' in levels
        assert f'<td class="num">{len(ids):,}</td><td class="num">{seen}</td>' in levels


def test_the_report_is_inert_and_escapes_every_text(graph: GarlicGraph) -> None:
    hostile = '<script>alert("q")</script> & <img src=x onerror=alert(1)>'
    result = GarlicSearcher(graph, lm=ScriptedLM(["<script>evil()</script>"], cycle=True)).search(
        hostile, max_steps=2
    )
    page = result.to_html(graph)
    found = _Tags()
    found.feed(page)
    assert not found.tags & {"script", "img", "iframe", "object", "embed", "link", "form"}
    assert not {a for a in found.attributes if a.startswith("on") or a in {"src", "style"}}
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page)
    assert csp is not None
    assert "default-src 'none'" in csp.group(1) and "script-src 'none'" in csp.group(1)
    assert html.escape(hostile) in page
    assert "&lt;script&gt;evil()&lt;/script&gt;" in page


def test_without_the_graph_the_levels_are_left_out(searched: SearchResult) -> None:
    page = searched.to_html()
    assert "The graph, top level first" not in page
    assert "Visited nodes, in document order" in page


def test_a_big_graph_is_capped(item: Any, embedder: Any) -> None:
    big = GarlicGraph.build(
        _sources(item, 10),
        lm=echo_points,
        embedder=embedder,
        chunk_tokens=16,
        batch_tokens=300,
        summary_tokens=32,
    )
    leaves = big.tree.at_level(0)
    assert len(leaves) > 40
    result = GarlicSearcher(big, lm=ScriptedLM(["No"], cycle=True)).search(
        item.question, max_steps=3
    )
    page = result.to_html(big)
    level0 = page.split("<summary>level 0:", 1)[1].split("</details>", 1)[0]
    assert level0.count("<tr>") == 41  # the header row and the first 40 leaves
    assert f"and {len(leaves) - 40:,} more nodes (not shown)" in level0
    assert result.stopped_by == "max_steps" and len(result.trace) == 4


def test_render_report_refuses_what_is_not_a_search_result() -> None:
    with pytest.raises(InputTypeError, match="SearchResult"):
        render_report("not a result")  # type: ignore[arg-type]
