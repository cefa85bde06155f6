"""The RAPTOR retrieval report: every retrieved node shown, the reasons replayed exactly, and
hostile text (in the documents, the summaries and the query) written as inert, escaped text."""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

import pytest
from hrefine.budget import default_counter
from hrefine.errors import ConfigError, InputTypeError
from hrefine.eval import load_dataset
from hrefine.raptor import RaptorTree, Source
from hrefine.raptor.report import OVER_BUDGET, explain, render_report, write_report
from lxml import html as lxml_html

pytest.importorskip("umap")

HOSTILE = (
    '<script>alert("doc")</script> "><img src=x onerror=alert(1)> '
    '<a href="javascript:alert(2)">click</a> </div></main><style>body{display:none}</style>'
)
QUESTION = "Why did people say the story about Clinton hiding under a blanket was untrue?"


def echo_llm(prompt: str) -> str:
    """A fast fake summariser: the first 50 words of the texts it is given (hostile text too)."""
    body = prompt.split(":", 1)[1]
    return " ".join(body.split()[:50])


def _opening(text: str, tokens: int) -> str:
    counter = default_counter()
    kept: list[str] = []
    for line in text.split("\n"):
        if counter.count("\n".join([*kept, line])) > tokens:
            break
        kept.append(line)
    return "\n".join(kept)


@pytest.fixture(scope="module")
def tree(embedder: Any) -> RaptorTree:
    """A tree over the opening of a real QuALITY story plus a hostile document."""
    item = next(it for it in load_dataset("quality") if it.doc_id == "quality_01")
    story = _opening(item.document, 1800)
    hostile = f"{HOSTILE} The Secret Service guards the president at night. {HOSTILE}"
    docs = [Source(story, {"source": "quality_01"}, "quality_01"), Source(hostile, {}, "evil")]
    return RaptorTree.build(docs, llm=echo_llm, embedder=embedder, max_tokens=300)


def _inert(page: str) -> None:
    """No script, event handler, javascript: link, external resource or unescaped input."""
    assert "<script" not in page.lower()
    assert not re.search(r"<[^>]*\son\w+\s*=", page, re.I)
    assert 'href="javascript' not in page.lower()  # only as escaped text
    assert not re.search(r"(src|href)=\"(https?:)?//", page)
    assert "script-src 'none'" in page and "default-src 'none'" in page


def test_report_shows_every_retrieved_node_with_its_score(tree: RaptorTree) -> None:
    nodes = tree.retrieve(QUESTION)
    page = render_report(tree, QUESTION, nodes, title="quality_01")
    assert page.startswith("<!DOCTYPE html>")
    root = lxml_html.fromstring(page)
    cards = root.xpath('//div[contains(concat(" ", @class, " "), " node ")]')
    assert len(cards) == len(tree)  # every node of every layer drawn once
    hits = root.xpath('//div[contains(concat(" ", @class, " "), " hit ")]')
    assert sorted(int(c.get("id")[1:]) for c in hits) == sorted(n.id for n in nodes)
    rows = root.xpath("//table[1]/tr[td]")
    assert len(rows) == len(nodes)
    for rank, (row, node) in enumerate(zip(rows, nodes, strict=True), 1):
        cells = [c.text_content() for c in row.xpath("td")]
        assert cells[0] == str(rank) and cells[1] == f"#{node.id}"
        assert cells[2] == str(node.layer)
        assert float(cells[4]) == pytest.approx(node.score, abs=1e-4)
        assert cells[-1] == node.text  # the whole text, unescaped back to itself
    assert f"{sum(n.tokens for n in nodes):,}" in page
    # each summary lists its children with their membership weights
    summary = next(n for n in tree.tree if n.level == 1)
    child = summary.children[0]
    assert f'href="#n{child}">#{child}</a> ({tree.tree.weight(summary.id, child):.2f})' in page


def test_hostile_text_and_query_stay_inert(tree: RaptorTree, tmp_path: Path) -> None:
    query = '</title><script>alert("q")</script> Secret Service at night'
    nodes = tree.retrieve(query, k=None, max_tokens=None)
    assert any("<script>" in n.text for n in nodes)  # the hostile leaves and summaries are in it
    out = write_report(tree, query, nodes, tmp_path / "r.html", title='<b onmouseover="x">')
    page = out.read_text(encoding="utf-8")
    _inert(page)
    assert html.escape('<script>alert("doc")</script>', quote=True) in page
    assert html.escape(query, quote=True) in page
    root = lxml_html.fromstring(page)
    assert root.xpath("//script | //img | //iframe | //object | //embed") == []
    assert [s.text for s in root.xpath("//style")] and len(root.xpath("//style")) == 1
    assert root.xpath("//title")[0].text_content().endswith('<b onmouseover="x">')


def test_reasons_replay_the_retrieval_exactly(tree: RaptorTree) -> None:
    for mode, k, budget in [
        ("collapsed", 10, 300),
        ("collapsed", 3, None),
        ("collapsed", None, 150),
        ("traversal", 2, None),
        ("traversal", 3, 250),
    ]:
        nodes = tree.retrieve(QUESTION, mode=mode, k=k, max_tokens=budget)
        why = explain(tree, QUESTION, mode=mode, k=k, max_tokens=budget)
        assert why.chosen == [n.id for n in nodes], (mode, k, budget)
        for n in nodes:
            assert why.scores[n.id] == pytest.approx(n.score, abs=1e-5)
            assert n.id not in why.reasons


def test_the_budget_drop_is_explained(tree: RaptorTree) -> None:
    budget = 120
    nodes = tree.retrieve(QUESTION, k=None, max_tokens=budget)
    why = explain(tree, QUESTION, k=None, max_tokens=budget)
    over = [i for i, r in why.reasons.items() if r == OVER_BUDGET]
    assert over  # some nodes scored high enough but were too big for the room left
    page = render_report(tree, QUESTION, nodes, k=None, max_tokens=budget)
    best_dropped = max(over, key=lambda i: why.scores[i])
    tokens = tree.tree[best_dropped].metadata["hrefine_tokens"]
    room = why.room[best_dropped]
    assert tokens > room
    assert f"did not fit: {tokens} tokens, {room} left of {budget}" in page
    assert '<meter class="bar" min="0" max="120"' in page


def test_traversal_reasons_name_the_layer_limit(tree: RaptorTree) -> None:
    nodes = tree.retrieve(QUESTION, mode="traversal", k=1, max_tokens=None)
    page = render_report(tree, QUESTION, nodes, mode="traversal", k=1, max_tokens=None)
    assert "not among the best k of its layer" in page or "none of its parents was chosen" in page
    assert "mode traversal" in page


def test_nodes_from_other_settings_are_flagged(tree: RaptorTree) -> None:
    nodes = tree.retrieve(QUESTION, k=2, max_tokens=None)
    page = render_report(tree, QUESTION, nodes, k=8, max_tokens=None)
    assert "were not retrieved with the settings above" in page


def test_reasons_replay_leaves_only_and_cosine_only(tree: RaptorTree) -> None:
    from hrefine.raptor.report import SUMMARIES_OFF

    for changes in ({"summary_rank": "off"}, {"lexical_weight": 0.0}):
        other = RaptorTree.from_tree(
            tree.tree, tree.options.replace(**changes), llm=tree.summariser, embedder=tree.embedder
        )
        for mode in ("collapsed", "traversal"):
            nodes = other.retrieve(QUESTION, mode=mode, k=3, max_tokens=400)
            why = explain(other, QUESTION, mode=mode, k=3, max_tokens=400)
            assert why.chosen == [n.id for n in nodes], (changes, mode)
        if changes.get("summary_rank") == "off":
            summaries = [n.id for n in other.tree if n.level > 0]
            assert summaries and all(why.reasons[i] == SUMMARIES_OFF for i in summaries)


def test_a_retrieval_with_per_query_settings_is_replayed_with_them(tree: RaptorTree) -> None:
    # Was: explain and the report replayed the tree's own summary_rank and lexical_weight
    # (and refused them as keywords), so they explained another retrieval.
    for settings in ({"summary_rank": "free"}, {"summary_rank": "off"}, {"lexical_weight": 0.0}):
        nodes = tree.retrieve(QUESTION, k=3, max_tokens=400, **settings)
        why = explain(tree, QUESTION, k=3, max_tokens=400, **settings)
        assert why.chosen == [n.id for n in nodes], settings
        page = render_report(tree, QUESTION, nodes, k=3, max_tokens=400, **settings)
        assert "were not retrieved with the settings above" not in page
    # Checked as retrieve() checks them (k=0 chose nothing, silently).
    with pytest.raises(ConfigError):
        explain(tree, QUESTION, k=0)
    with pytest.raises(InputTypeError, match="unknown setting"):
        explain(tree, QUESTION, summary_rnak="free")
