"""Every loader on the real shared data: counts match PROVENANCE.md; JSONL and paths."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hrefine.eval import (
    DATASETS,
    DatasetUnavailableError,
    data_sha256,
    default_data_dir,
    load_dataset,
    load_jsonl,
    subset,
)
from hrefine.eval.loaders import repair_nq_html

# (dataset, documents, questions) from the PROVENANCE.md files.
COUNTS = [
    ("wtq", 93, 734),
    ("leval-nq", 15, 78),
    ("leval-cuad", 14, 91),
    ("leval-qasper", 9, 65),
    ("leval-quality", 10, 140),
    ("hotpotqa", 344, 344),
    ("articles", 105, 105),
]


@pytest.mark.parametrize(("name", "docs", "questions"), COUNTS)
def test_loader_counts_match_provenance(
    shared_data: Path, name: str, docs: int, questions: int
) -> None:
    items = load_dataset(name, shared_data)
    assert len(items) == questions
    assert len({it.doc_id for it in items}) == docs
    assert len({it.id for it in items}) == questions
    assert all(it.dataset == name for it in items)


def test_every_registered_dataset_is_counted() -> None:
    assert sorted(DATASETS) == sorted(name for name, _, _ in COUNTS)


def test_wtq_strict_flag_and_html_pages(shared_data: Path) -> None:
    items = load_dataset("wtq", shared_data)
    strict = load_dataset("wtq", shared_data, strict_only=True)
    assert sum(it.extra["strict"] for it in items) == 242
    assert len(strict) == 242
    first = strict[0]
    assert first.doc_format == "html"
    assert first.answer_mode == "all"
    assert "<table" in first.document.lower()


@pytest.mark.parametrize("name", ["leval-nq", "leval-cuad", "leval-qasper", "leval-quality"])
def test_leval_documents_read_and_answers_are_alternatives(shared_data: Path, name: str) -> None:
    items = load_dataset(name, shared_data)
    assert all(it.answer_mode == "any" and it.answers for it in items)
    assert len(items[0].document) > 5_000
    assert items[0].doc_format == ("html" if name == "leval-nq" else "text")


def test_nq_cells_with_glued_spans_are_repaired(shared_data: Path) -> None:
    items = load_dataset("leval-nq", shared_data)
    raw = {it.doc_id: it.doc_path.read_text(encoding="utf-8") for it in items if it.doc_path}
    glued = sum(len(re.findall(r"<T[hd]_(?:col|row)span=", doc)) for doc in raw.values())
    assert glued > 100  # NQ writes <Th_colspan="2">
    for it in items:
        assert not re.search(r"<t[hd]_", it.document, re.I)
        assert len(it.document) < len(raw[it.doc_id]) + 1  # only a space replaces each "_"
    assert '<Th colspan="2">' in items[0].document
    assert repair_nq_html('<Td_rowspan="3"> x </Td>') == '<Td rowspan="3"> x </Td>'
    assert repair_nq_html("<Td_class> x </Td>") == "<Td_class> x </Td>"  # only spans


def test_quality_answer_is_gold_option_text_without_letter(shared_data: Path) -> None:
    item = load_dataset("leval-quality", shared_data)[0]
    assert item.extra["gold_option"].startswith("(B)")
    assert not item.answers[0].startswith("(")
    assert item.extra["gold_option"].endswith(item.answers[0])
    assert len(item.extra["options"]) == 4


def test_hotpotqa_items_carry_supporting_paragraphs_and_facts(shared_data: Path) -> None:
    items = load_dataset("hotpotqa", shared_data)
    assert all(len(it.extra["supporting_paragraphs"]) == 2 for it in items)
    assert sum("supporting_sentences" in it.extra for it in items) == 72
    item = items[0]
    for gold in item.extra["supporting_paragraphs"]:
        assert gold in " ".join(item.document.split())
    assert item.document.count("\n\n") == len(item.extra["paragraphs"]) - 1


def test_articles_carry_gold_text(shared_data: Path) -> None:
    items = load_dataset("articles", shared_data)
    assert all(it.extra["gold_text"] and it.doc_format == "html" for it in items)
    assert items[0].document.lstrip().startswith("<")


def test_short_names_resolve(shared_data: Path) -> None:
    assert len(load_dataset("nq", shared_data)) == 78
    assert len(load_dataset("leval/cuad", shared_data)) == 91


def test_unknown_dataset_name_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown dataset"):
        load_dataset("imagenet")


def test_missing_dataset_raises_unavailable(tmp_path: Path) -> None:
    with pytest.raises(DatasetUnavailableError, match="not available"):
        load_dataset("wtq", tmp_path)
    assert data_sha256("wtq", tmp_path) is None


def test_data_dir_from_parameter_env_and_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HREFINE_DATA", raising=False)
    default = default_data_dir()
    assert default.parts[-2:] == ("shared", "data")
    monkeypatch.setenv("HREFINE_DATA", str(tmp_path))
    assert default_data_dir() == tmp_path
    assert default_data_dir("/elsewhere") == Path("/elsewhere")


def test_subset_is_deterministic_and_nested(shared_data: Path) -> None:
    items = load_dataset("hotpotqa", shared_data)
    small = subset(items, 5)
    assert [it.id for it in small] == [it.id for it in subset(list(reversed(items)), 5)]
    assert [it.id for it in subset(items, 10)[:5]] == [it.id for it in small]
    assert [it.id for it in load_dataset("hotpotqa", shared_data, limit=5)] == [
        it.id for it in small
    ]


def test_user_jsonl_with_inline_and_file_documents(tmp_path: Path) -> None:
    (tmp_path / "page.html").write_text("<p>The capital is <b>Paris</b>.</p>", encoding="utf-8")
    rows = [
        {"id": "a", "question": "capital?", "answers": ["Paris"], "doc": "page.html"},
        {
            "id": "b",
            "question": "who?",
            "answers": "Ada",
            "document": "Ada wrote it.",
            "gold_text": "Ada wrote it",
            "answer_mode": "any",
        },
    ]
    path = tmp_path / "mine.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    a, b = load_dataset(str(path))
    assert a.dataset == "mine" and a.doc_format == "html" and "Paris" in a.document
    assert b.answers == ("Ada",) and b.answer_mode == "any" and b.doc_format == "text"
    assert b.extra["gold_text"] == "Ada wrote it"
    assert load_jsonl(path, name="x")[0].dataset == "x"


def test_user_jsonl_missing_fields_is_a_clear_error(tmp_path: Path) -> None:
    from hrefine.errors import HrefineError

    path = tmp_path / "bad.jsonl"
    path.write_text('{"id": "a", "question": "q"}\n', encoding="utf-8")
    with pytest.raises(HrefineError, match="document"):
        load_jsonl(path)


def test_data_sha256_is_stable(shared_data: Path) -> None:
    first = data_sha256("leval-qasper", shared_data)
    assert first is not None and len(first) == 64
    assert data_sha256("qasper", shared_data) == first
