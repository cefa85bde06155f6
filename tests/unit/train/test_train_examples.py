"""Examples files, the held-out split and the training options: no model needed."""

from __future__ import annotations

from pathlib import Path

import pytest
from hrefine.errors import ConfigError, DatasetUnavailableError, InputTypeError
from hrefine.train import Example, TrainOptions, read_examples, write_examples
from hrefine.train.trainer import split_examples


def _example(i: int, group: str = "doc") -> Example:
    return Example(
        task="query-analysis",
        system="sys",
        user=f"question {i}?",
        target="[Local]",
        group=group,
        meta={"i": i},
    )


def test_examples_round_trip_through_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "ex.jsonl"
    examples = [_example(1), _example(2, "other")]
    assert write_examples(path, examples) == 2
    report = read_examples(path)
    assert report.examples == examples
    assert report.lines == 2 and report.malformed == []


def test_malformed_rows_are_skipped_and_counted(tmp_path: Path) -> None:
    path = tmp_path / "ex.jsonl"
    good = '{"task": "query-analysis", "user": "Who?", "target": "[Local]"}'
    path.write_text(
        "\n".join(
            [
                good,
                "{not json",
                '["a", "list"]',
                '{"task": "query-analysis", "user": "", "target": "[Local]"}',
                '{"task": "query-analysis", "user": "Who?"}',
                '{"task": "structuring", "user": "text", "target": "<abstract>x</abstract>"}',
                '{"task": "nonsense", "user": "u", "target": "t"}',
                '{"task": "query-analysis", "user": "u", "target": "t", "system": 3}',
                "",
                good,
            ]
        ),
        encoding="utf-8",
    )
    report = read_examples(path, task="query-analysis")
    assert len(report.examples) == 2
    assert report.lines == 9  # the blank line is not a row
    assert [n for n, _ in report.malformed] == [2, 3, 4, 5, 6, 7, 8]
    reasons = dict(report.malformed)
    assert "not JSON" in reasons[2]
    assert "'target'" in reasons[5]
    assert "trains 'query-analysis'" in reasons[6]


def test_invalid_utf8_is_malformed_and_a_null_group_is_no_group(tmp_path: Path) -> None:
    path = tmp_path / "ex.jsonl"
    row = b'{"task": "query-analysis", "user": "%s", "target": "[Local]", "group": %s}'
    path.write_bytes(
        b"\n".join([row % (b"ok", b'"d1"'), row % (b"caf\xe9", b'"d2"'), row % (b"q3", b"null")])
    )
    report = read_examples(path)
    assert [e.user for e in report.examples] == ["ok", "q3"]  # nothing replaced silently
    assert report.malformed == [(2, "not UTF-8 (byte 40 of the row)")]
    assert report.examples[1].group == ""  # as a row without a group, not "None"


def test_missing_examples_file_says_how_to_build_one(tmp_path: Path) -> None:
    with pytest.raises(DatasetUnavailableError, match="build-data"):
        read_examples(tmp_path / "nope.jsonl")


def test_held_out_split_keeps_documents_whole_and_both_parts_non_empty() -> None:
    examples = [_example(i, f"doc{i % 7}") for i in range(70)]
    train, held = split_examples(examples, 0.3, seed=0)
    assert train and held
    assert {e.group for e in train}.isdisjoint({e.group for e in held})
    assert len(train) + len(held) == 70
    assert split_examples(examples, 0.3, seed=0) == (train, held)  # deterministic
    # Two documents and a tiny share: one is still held out, one still trained on.
    two = [_example(1, "a"), _example(2, "b")]
    t, h = split_examples(two, 0.01, seed=0)
    assert len(t) == 1 and len(h) == 1
    assert split_examples(two, 0.0, seed=0) == (two, [])


def test_examples_without_a_group_are_each_a_document_of_their_own() -> None:
    # They all shared the group "": the held-out part was all of them or none.
    loose = [_example(i, "") for i in range(40)]
    train, held = split_examples(loose, 0.3, seed=0)
    assert train and held and len(train) + len(held) == 40
    assert 0.1 < len(held) / 40 < 0.5  # about the share asked for
    # The split follows each example's text, not its place in the file.
    _, again_held = split_examples(loose[::-1], 0.3, seed=0)
    assert sorted(e.user for e in again_held) == sorted(e.user for e in held)
    # Grouped examples next to loose ones: a document still goes whole to one side.
    mixed = loose + [_example(100 + i, f"doc{i % 3}") for i in range(9)]
    t, h = split_examples(mixed, 0.3, seed=1)
    for name in ("doc0", "doc1", "doc2"):
        assert not ({e.group for e in t} >= {name} and {e.group for e in h} >= {name})


@pytest.mark.parametrize(
    ("settings", "error"),
    [
        ({"rank": 0}, ConfigError),
        ({"max_steps": 1.5}, InputTypeError),
        ({"precision": "int8"}, ConfigError),
        ({"eval_fraction": 1.0}, ConfigError),
        ({"target_modules": "q_proj"}, ConfigError),
        ({"top_layers": 0}, ConfigError),
        ({"learning_rat": 1e-3}, ConfigError),
    ],
)
def test_bad_training_settings_fail_when_made(settings: dict[str, object], error: type) -> None:
    with pytest.raises(error):
        TrainOptions.build(**settings)


@pytest.mark.parametrize("module", ["hrefine.train", "hrefine.train.cli"])
def test_importing_train_leaves_heavy_libraries_out(module: str) -> None:
    import subprocess
    import sys

    code = (
        f"import sys, {module}; "
        "print(','.join(m for m in ('torch', 'transformers', 'peft') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == "", f"importing {module} pulled in {out}"
