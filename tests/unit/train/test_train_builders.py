"""The data builders on real pages and documents from ../shared/data: well-formed examples
whose targets are what the inference code scores or parses, and correct."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hrefine.eval.loaders import EvalItem, half_of, load_dataset
from hrefine.html.generative import PROMPT_TEMPLATE
from hrefine.longrefiner import LongRefiner, prompts
from hrefine.longrefiner.options import LongRefinerOptions
from hrefine.longrefiner.select import parse_selection
from hrefine.longrefiner.skeleton import match_skeleton, parse_skeleton
from hrefine.train import build_examples
from hrefine.train.answers import contains_answers
from hrefine.train.html_data import html_pruner_examples
from hrefine.train.labels import label_of, paragraphs_of
from hrefine.train.refiner_data import structuring_examples

_PATH = re.compile(r"^<html><body>(<[a-z][a-z0-9_]*>)+$")


def _resolve(html: str, path: str) -> Any:
    """The element a prompt path names in the prompt's page: same-tag siblings with words are
    numbered from 1 (``table2``), as the block tree numbers them."""
    from lxml import html as lxml_html

    node = lxml_html.document_fromstring(html)
    for step in re.findall(r"<([^<>]+)>", path)[1:]:
        kids = [c for c in node if isinstance(c.tag, str) and c.text_content().strip()]
        totals = Counter(str(c.tag) for c in kids)
        seen: Counter[str] = Counter()
        chosen = None
        for c in kids:
            tag = str(c.tag)
            seen[tag] += 1
            sep = "_" if tag[-1:].isdigit() else ""
            if (f"{tag}{sep}{seen[tag]}" if totals[tag] > 1 else tag) == step:
                chosen = c
                break
        assert chosen is not None, f"no step {step!r} in {path}"
        node = chosen
    return node


@pytest.mark.usefixtures("shared_data")
def test_html_pruner_targets_point_at_the_block_holding_the_answer() -> None:
    tune = [it for it in load_dataset("wtq") if half_of(it.doc_id) == "tune"]
    pages = sorted({it.doc_id for it in tune if it.extra["strict"]})[:3]
    chosen = [
        it for p in pages for it in [x for x in tune if x.doc_id == p and x.extra["strict"]][:2]
    ]
    chosen += [it for it in tune if not it.extra["strict"]][:2]
    skipped: Counter[str] = Counter()
    examples = html_pruner_examples(chosen, skipped=skipped)
    assert len(examples) >= 2, skipped  # a strict answer may not survive stage 1
    assert len(examples) + sum(skipped.values()) == len(chosen)
    assert skipped["answer_not_verbatim"] == 2  # WTQ's computed answers give none
    items = {it.id: it for it in chosen}
    for ex in examples:
        item = items[ex.meta["id"]]
        assert item.extra["strict"]
        assert ex.system is None
        assert _PATH.match(ex.target), ex.target
        head, _, _ = PROMPT_TEMPLATE.partition("{html}")
        assert ex.user.startswith(head)
        assert f"**Question**: **{item.question}**" in ex.user
        page = ex.user[len(head) : ex.user.index("```\n**Question**")]
        element = _resolve(page, ex.target)
        assert contains_answers(" ".join(element.itertext()), item.answers, mode="all")
        assert contains_answers(ex.meta["block_text"], item.answers, mode="all")


def _item(document: str, answers: tuple[str, ...], **extra: Any) -> EvalItem:
    return EvalItem(
        id="q1",
        question="What happened?",
        answers=answers,
        dataset="mine",
        doc_id="d1",
        answer_mode="any",
        doc_text=document,
        extra=extra,
    )


def test_label_rule_on_written_documents() -> None:
    doc = (
        "The bridge opened in 1932 after six years of work.\n\n"
        "Engineers chose steel arches because the river floods every spring.\n\n"
        "Tolls paid for maintenance until the city bought the crossing outright."
    )
    assert label_of(_item(doc, ("1932",)))[0] == "local"
    spread = "bridge opened; arches, floods; tolls, city"
    label, rule = label_of(_item(doc, (spread,)))
    assert label == "global" and "spread over" in rule
    assert label_of(_item(doc, ("a purple elephant sang loudly",)))[0] is None
    hotpot = _item(doc, ("1932",), supporting_titles=["Bridge", "River"])
    assert label_of(hotpot)[0] == "global"


@pytest.mark.usefixtures("shared_data")
def test_query_analysis_examples_on_real_data_use_the_published_prompt() -> None:
    names = ["hotpotqa", "leval-nq", "leval-quality"]
    report = build_examples("query-analysis", names)
    questions = {it.id: it.question for name in names for it in load_dataset(name)}
    opts = LongRefinerOptions()
    labels = Counter(e.meta["label"] for e in report.examples)
    assert labels["local"] > 0 and labels["global"] > 0
    for ex in report.examples:
        assert ex.system == opts.analysis_system
        assert ex.user == opts.analysis_user.format(question=questions[ex.meta["id"]])
        assert ex.target == (
            prompts.CHOICES[0] if ex.meta["label"] == "local" else prompts.CHOICES[1]
        )
        if ex.meta["dataset"] == "hotpotqa":
            assert ex.target == "[Global]"
    nq = {it.id: it for it in load_dataset("leval-nq")}
    written = 0
    for ex in report.examples:
        if ex.meta["dataset"] != "leval-nq":
            continue
        assert ex.target == "[Local]"  # factoid questions: one paragraph holds the answer
        if ex.meta["rule"] == "answer written in one paragraph":
            item = nq[ex.meta["id"]]
            paras = paragraphs_of(item)
            assert any(contains_answers(p, item.answers, mode="any") for p in paras)
            written += 1
    assert written > 0
    assert report.skipped["unclear"] > 0  # QuALITY's paraphrased options mostly get no label


@pytest.mark.lm
@pytest.mark.usefixtures("shared_data")
def test_structuring_targets_round_trip_through_the_pipeline_parser() -> None:
    from lm_fixture import load_default_lm

    lm = load_default_lm()
    opts = LongRefinerOptions(window_tokens=1024)
    items = [it for it in load_dataset("leval-qasper") if half_of(it.doc_id) == "tune"][:1]
    examples = structuring_examples(
        items, encode=lm.encode, decode=lm.tokenizer.decode, options=opts
    )
    assert len(examples) > 1  # the paper is longer than one window
    for ex in examples:
        assert ex.system == opts.structure_system
        window = ex.user
        assert lm.count_tokens(window) <= 1024
        skeleton = parse_skeleton(ex.target)
        assert skeleton.problems == [] and not skeleton.truncated
        _, report = match_skeleton(window, skeleton)
        assert report.paragraphs > 0 and report.matched == report.paragraphs
        assert report.tails_missed == 0
    # The first window opens with the paper's first section, as its markup has it.
    assert examples[0].target.startswith("<section: ")


@pytest.mark.usefixtures("shared_data")
def test_global_selection_targets_name_the_sections_holding_the_answer() -> None:
    report = build_examples("global-selection", ["hotpotqa", "leval-qasper"], limit=10)
    by_data = Counter(e.meta["dataset"] for e in report.examples)
    assert by_data["hotpotqa"] == 10 and by_data["leval-qasper"] > 0
    hotpot = {it.id: it for it in load_dataset("hotpotqa")}
    qasper = {it.id: it for it in load_dataset("leval-qasper")}
    refiner = LongRefiner(structure="markup")
    for ex in report.examples:
        titles = json.loads(ex.target)
        assert ex.user.endswith("\nOutput:")
        assert ex.system == LongRefinerOptions().selection_system
        if ex.meta["dataset"] == "hotpotqa":
            assert sorted(titles) == sorted(hotpot[ex.meta["id"]].extra["supporting_titles"])
            continue
        item = qasper[ex.meta["id"]]
        doc = refiner.structure(item.document)
        chosen = parse_selection(ex.target, doc, source="lm")
        assert chosen.source == "lm" and not chosen.unmatched
        text = " ".join(doc.node_text(i) for i in chosen.selected)
        assert contains_answers(text, item.answers, mode="any")


def test_a_users_question_file_is_read_whole(tmp_path: Path) -> None:
    doc = "Intro text here.\n\nThe dam holds 4 billion litres of water for the valley."
    rows = [
        {
            "id": "a",
            "question": "How much does the dam hold?",
            "answers": ["4 billion litres"],
            "document": doc,
        },
        {"id": "b", "question": "Who built it?", "answers": ["nobody knows"], "document": doc},
    ]
    path = tmp_path / "mine.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    report = build_examples("query-analysis", [str(path)])
    assert report.sources == [str(path)]
    assert [e.meta["id"] for e in report.examples] == ["a"]
    assert report.examples[0].target == "[Local]"
    assert report.skipped == Counter({"unclear": 1})


def test_global_selection_skips_an_empty_document(tmp_path: Path) -> None:
    # One empty document is counted by reason, as the other builders do, not the build's end.
    rows = [
        {
            "id": "g1",
            "question": "Who wrote it?",
            "answers": ["Ada"],
            "document": "# Intro\nSome text.\n\n# Author\nIt was written by Ada.\n",
        },
        {"id": "g2", "question": "Empty?", "answers": ["x"], "document": ""},
    ]
    path = tmp_path / "gs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    built = build_examples("global-selection", [str(path)])
    assert len(built.examples) == 1
    assert built.skipped["empty_document"] == 1
