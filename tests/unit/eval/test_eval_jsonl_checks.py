"""A user's JSONL is checked line by line: malformed rows are refused with the file and line."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from hrefine.errors import ConfigError
from hrefine.eval import load_jsonl


def _write(tmp_path: Path, rows: list[dict[str, Any]], blank_first: bool = False) -> Path:
    path = tmp_path / "mine.jsonl"
    text = "".join(json.dumps(r) + "\n" for r in rows)
    path.write_text(("\n" if blank_first else "") + text, encoding="utf-8")
    return path


def _row(**fields: Any) -> dict[str, Any]:
    return {"id": "q1", "question": "q?", "answers": ["x"], "document": "x y", **fields}


def test_a_repeated_id_is_refused_with_both_line_numbers(tmp_path: Path) -> None:
    # A blank first line: the numbers are the file's lines, not the rows' positions.
    path = _write(tmp_path, [_row(), _row(id="q2"), _row(question="other?")], blank_first=True)
    with pytest.raises(ConfigError, match=r"mine\.jsonl line 4: id 'q1' repeats line 2"):
        load_jsonl(path)


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"document": None}, "document must be a string"),
        ({"document": 12}, "document must be a string"),
        ({"question": None}, "question must be a string"),
        ({"answers": None}, "answers must be a list of strings"),
        ({"answers": 42}, "answers must be a list of strings"),
        ({"answers": {"a": 1}}, "answers must be a list of strings"),
        ({"answers": ["x", 3]}, "answers must be a list of strings"),
        ({"answer_mode": "ANY"}, "answer_mode must be one of"),
        ({"doc_format": "HTML"}, "doc_format must be one of"),
    ],
)
def test_a_malformed_field_names_file_and_line(
    tmp_path: Path, fields: dict[str, Any], problem: str
) -> None:
    path = _write(tmp_path, [_row(id="q0"), _row(**fields)])
    with pytest.raises(ConfigError, match=rf"mine\.jsonl line 2: {problem}"):
        load_jsonl(path)


def test_paragraphs_without_a_title_are_refused(tmp_path: Path) -> None:
    row = {"id": "q1", "question": "q?", "answers": ["x"], "paragraphs": [{"sentences": ["x"]}]}
    with pytest.raises(ConfigError, match=r"line 1: paragraphs must be a list of objects"):
        load_jsonl(_write(tmp_path, [row]))


def test_a_row_without_answers_loads_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Documented: rows scored by gold_text need no answers; the warning says what is not scored.
    row = {"id": "q1", "question": "q?", "document": "Ada wrote it.", "gold_text": "Ada wrote it"}
    with caplog.at_level(logging.WARNING, logger="hrefine"):
        (item,) = load_jsonl(_write(tmp_path, [row]))
    assert item.answers == ()
    assert "1 line(s) without answers (first: line 1)" in caplog.text


def test_valid_values_still_load(tmp_path: Path) -> None:
    rows = [_row(answer_mode="any", doc_format="html", answers="x"), _row(id="q2", answers=[])]
    a, b = load_jsonl(_write(tmp_path, rows))
    assert (a.answer_mode, a.doc_format, a.answers) == ("any", "html", ("x",))
    assert b.answers == ()


def test_a_jsonl_saved_with_a_byte_order_mark_loads(tmp_path: Path) -> None:
    path = tmp_path / "bom.jsonl"
    row = {"id": "q1", "question": "Who?", "answers": ["Ann"], "document": "Ann did."}
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(row).encode("utf-8") + b"\n")
    assert [it.id for it in load_jsonl(path)] == ["q1"]  # was "not JSON"
