"""The picture script's stand-in for step 3 answers the real selection prompt as a model would."""

from __future__ import annotations

import json

from hrefine.longrefiner import LongRefiner
from hrefine.longrefiner.select import parse_selection, selection_prompt

from benchmarks.longrefiner_picture import title_words_selector

CONTRACT = """This Agreement is made between Northwind Ltd. and Contoso Inc.

1. DEFINITIONS

1.1 "Software" means the Northwind Analytics platform in object code form.

2. FEES

2.1 Licensee shall pay an annual fee of USD 120,000 within thirty days of invoice.

3. TERM AND TERMINATION

3.1 Term. This Agreement lasts three years and then renews for one year periods.

3.2 Termination. Either party may end this Agreement after an uncured material breach.
"""


def test_stand_in_names_the_outline_titles_that_share_a_word_with_the_question() -> None:
    refiner = LongRefiner(scorer="bm25", llm=title_words_selector, global_selection="on")
    doc = refiner.structure(CONTRACT)
    question = "What is the renewal term after the initial term expires?"
    system, user = selection_prompt(question, doc, refiner.options, tuned=False)
    answer = title_words_selector(f"{system.strip()}\n\n{user}")
    assert json.loads(answer) == ["3. TERM AND TERMINATION"]
    chosen = parse_selection(answer, doc, source="llm")
    assert chosen.source == "llm" and not chosen.unmatched
    assert [doc.tree[i].metadata["title"] for i in chosen.selected] == json.loads(answer)


def test_stand_in_drives_step_3_of_a_refinement() -> None:
    refiner = LongRefiner(
        scorer="bm25", llm=title_words_selector, query_analysis="off", global_selection="on"
    )
    result = refiner.refine("What fees does the licensee pay?", CONTRACT, 40)
    (doc,) = result.documents
    assert [doc.structure.tree[i].metadata["title"] for i in doc.selection.selected] == ["2. FEES"]
    assert "120,000" in result.text and result.tokens <= 40
