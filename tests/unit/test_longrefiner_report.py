"""The LongRefiner HTML report: what was kept is marked kept, what was dropped says why, every
text is escaped, nothing runs or loads, and a big document draws a bounded page quickly."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest
from hrefine.eval import load_dataset
from hrefine.longrefiner import LongRefiner, RefineResult
from hrefine.longrefiner.report import DROPPED_PER_SECTION, REASONS, render_report
from hrefine.testing import ScriptedLM
from lxml import html as lxml_html

QUESTION = (
    'Highlight the parts (if any) of this contract related to "Expiration Date" that should '
    "be reviewed by a lawyer. Details: On what date will the contract's initial term expire?"
)
CLAUSE = "initial period of five (5) years"
HOSTILE = '<script>alert("doc")</script> "><img src=x onerror=alert(1)>'


def _inert(page: str) -> None:
    """No script, event handler, external resource; the policy forbids them anyway."""
    assert "<script" not in page.lower()
    assert not re.search(r"<[^>]*\son\w+\s*=", page, re.IGNORECASE)
    assert not re.search(r"(src|href)=\"(https?:)?//", page)
    assert "script-src 'none'" in page and "default-src 'none'" in page


def _node(page: str, doc: int, node_id: int) -> Any:
    found = lxml_html.fromstring(page).get_element_by_id(f"d{doc}-n{node_id}")
    assert found is not None
    return found


def _classes(element: Any) -> set[str]:
    return set(str(element.get("class", "")).split())


@pytest.fixture(scope="module")
def contract() -> str:
    return next(it.document for it in load_dataset("leval-cuad") if it.doc_id == "cuad_00")


@pytest.fixture(scope="module")
def result(contract: str, embedder: Any) -> RefineResult:
    """The real contract refined for its real question with the embedded embedder."""
    return LongRefiner(embedder=embedder).refine(QUESTION, contract, 400)


def test_the_kept_clause_is_marked_kept_and_shown_whole(result: RefineResult) -> None:
    doc = result.documents[0]
    assert CLAUSE in doc.text  # the refiner keeps the clause that answers
    page = render_report(result, title="cuad_00.txt", sources=["cuad_00.txt"])
    _inert(page)
    tree = doc.structure.tree
    leaf = next(
        n.id for n in tree if n.kind == "paragraph" and CLAUSE in doc.structure.node_text(n.id)
    )
    owner = next(k for k in doc.kept if k == leaf or leaf in tree.descendants(k))
    drawn = _node(page, 0, owner)
    assert "kept" in _classes(drawn)
    assert "kept" in drawn.text_content()
    assert CLAUSE in _node(page, 0, leaf).text_content()
    if owner != leaf:  # a kept section: its paragraph is marked as inside it
        assert f"inside kept #{owner}" in _node(page, 0, leaf).text_content()
    # The kept-units table links every kept unit, and its scores are the result's.
    for k in doc.kept:
        assert f'href="#d0-n{k}"' in page
    assert f"{float(doc.combined[owner]):.3f}" in drawn.text_content()
    assert "cuad_00.txt" in page and "LongRefiner report" in page


def test_a_dropped_section_shows_its_reason(result: RefineResult) -> None:
    doc = result.documents[0]
    page = render_report(result)
    sections = {n.id for n in doc.structure.tree if n.kind == "section"}
    holding = {a for k in doc.kept for a in doc.structure.tree.ancestors(k)}
    dropped = [n for n, why in doc.dropped.items() if n in sections and n not in holding]
    assert dropped
    for node_id in dropped[:10]:
        summary = _node(page, 0, node_id).find("summary").text_content()
        why = doc.dropped[node_id]
        assert f"dropped: {why}" in summary
        assert doc.structure.tree[node_id].metadata["title"] in summary
    # Every reason is explained once, in the legend.
    for meaning in REASONS.values():
        assert meaning in page


def test_the_header_shows_query_analysis_budget_and_timings(result: RefineResult) -> None:
    page = render_report(result)
    assert result.to_html() == page  # the result's own method writes this report
    text = lxml_html.fromstring(page).text_content()
    assert "On what date will the contract's initial term expire?" in text
    assert f"{result.tokens:,} tokens kept of {result.budget:,}" in text
    assert result.tokenizer in text
    assert "step 1 off: the configured weights" in text  # no model: the fixed weights
    for step in ("query analysis", "structuring", "global selection", "local scoring", "total"):
        assert step in text
    assert "structure from numbered" in text


def test_long_dropped_paragraphs_are_cut_in_the_display_and_say_so(result: RefineResult) -> None:
    page = render_report(result)
    assert "display cut:" in page
    doc = result.documents[0]
    long_dropped = next(
        n
        for n in doc.dropped
        if not doc.structure.tree[n].children and len(doc.structure.node_text(n)) > 600
    )
    shown = _node(page, 0, long_dropped).text_content()
    assert "characters shown" in shown
    assert len(shown) < len(doc.structure.node_text(long_dropped))


def test_hostile_text_is_escaped_everywhere() -> None:
    doc = (
        "# Security notes\n\n"
        f"The attacker typed {HOSTILE} into the search box of the shop.\n\n"
        "## Fixes\n\nEvery field of the shop is escaped now, and the search box is safe.\n"
    )
    refiner = LongRefiner(scorer="bm25", tokenizer="regex")
    result = refiner.refine(f"What did the attacker type? {HOSTILE}", [doc, "   "], 200)
    assert "<script>" in result.documents[0].structure.text  # it is the document's own text
    page = render_report(result, title=HOSTILE, sources=[HOSTILE, "blank.txt"])
    _inert(page)
    assert "&lt;script&gt;alert(&quot;doc&quot;)&lt;/script&gt;" in page
    text = lxml_html.fromstring(page).text_content()
    assert text.count('<script>alert("doc")</script>') >= 4  # query, title, source, document
    assert "This document is empty" in page


def test_step_three_and_step_one_answers_are_shown(contract: str) -> None:
    def answer(prompt: str) -> str:
        if "[Local] or [Global]" in prompt:
            return "[Global] <b>because</b>"
        return '["11 TERM AND TERMINATION", "No Such Section"]'

    refiner = LongRefiner(llm=ScriptedLM(answer), scorer="bm25")
    result = refiner.refine(QUESTION, contract, 300)
    doc = result.documents[0]
    assert doc.selection.selected and doc.selection.unmatched == ("No Such Section",)
    page = render_report(result)
    text = lxml_html.fromstring(page).text_content()
    assert "the label a text LLM answered" in text and "global" in text
    assert "[Global] <b>because</b>" in text  # the raw answer, escaped
    assert "'No Such Section'" in text
    chosen = doc.selection.selected[0]
    summary = _node(page, 0, chosen).find("summary").text_content()
    assert "chosen" in summary and "GS 1.000" in summary


def test_a_trimmed_result_says_the_unit_was_cut() -> None:
    doc = (
        "# Term\n\nThe term of this Agreement shall commence on the Effective Date and shall "
        "continue in full force and effect for an initial period of five (5) years.\n\n"
        "# Fees\n\nThe customer pays the license fees within thirty (30) days of each invoice, "
        "in United States dollars, without any deduction or set-off.\n"
    )
    result = LongRefiner(scorer="bm25").refine(QUESTION, doc, 5)
    assert result.trimmed and 0 < result.tokens <= 5
    page = render_report(result)
    assert "the best paragraph was cut to fit" in page
    assert "kept, cut to fit the budget" in page


def test_a_big_document_renders_fast_and_bounded() -> None:
    docs: dict[str, str] = {}
    for item in load_dataset("leval-cuad"):
        docs.setdefault(item.doc_id, item.document)
    big = "\n\n".join(docs.values())
    result = LongRefiner(scorer="bm25").refine("When does the initial term expire?", big, 3000)
    doc = result.documents[0]
    leaves = sum(1 for n in doc.structure.tree if n.kind == "paragraph")
    assert leaves > 3000
    started = time.perf_counter()
    page = render_report(result)
    took = time.perf_counter() - started
    assert took < 5.0
    assert len(page) < 2_500_000
    drawn = len(re.findall(r'id="d0-n\d+"', page))
    assert drawn < len(doc.structure.tree) // 2
    assert "Not drawn, to keep the report small" in page and "not drawn (dropped" in page
    for k in doc.kept:  # what was kept is always drawn
        assert f'id="d0-n{k}"' in page
    # No section draws more than its cap of dropped paragraphs.
    root = lxml_html.fromstring(page)
    for sec in root.find_class("sec"):
        body = sec.find_class("in")[0]
        dropped = [p for p in body if "par" in _classes(p) and "dropped" in _classes(p)]
        assert len(dropped) <= DROPPED_PER_SECTION
