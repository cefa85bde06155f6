"""Edge cases of the runner: duplicate ids, plain functions, limit keys, skipped runs, missing
documents, and the evaluation docs' own examples."""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hrefine.errors import ConfigError, MissingDependencyError, ModelNotFoundError
from hrefine.eval import EvalItem, evaluate_items, get_method, register_method, run_eval, run_many

DOCS = Path(__file__).resolve().parents[3] / "docs"


def _item(item_id: str, text: str = "alpha beta", **fields: Any) -> EvalItem:
    return EvalItem(
        id=item_id,
        question="q?",
        answers=("alpha",),
        dataset="mine",
        doc_id=fields.pop("doc_id", item_id),
        doc_text=text,
        **fields,
    )


def keep_all(document: str, query: str, max_tokens: int) -> str:
    """Return the whole document."""
    return document


def test_evaluate_items_refuses_duplicate_ids() -> None:
    items = [_item("q1"), _item("q2"), _item("q1", "delta")]
    with pytest.raises(ConfigError, match="'q1'"):
        evaluate_items(keep_all, items, [50], tokenizer="regex")


def test_evaluate_items_takes_a_plain_function() -> None:
    (row,) = evaluate_items(keep_all, [_item("q1")], [50], tokenizer="regex")
    assert row.error is None and row.metrics["containment"] == 1.0 and row.tokens_out == 2


def test_an_object_without_a_name_that_raises_is_recorded() -> None:
    class NoName:
        def compress(self, document: str, query: str, max_tokens: int) -> str:
            raise RuntimeError("boom")

    (row,) = evaluate_items(NoName(), [_item("q1")], [50], tokenizer="regex")
    assert row.error == "RuntimeError: boom" and row.tokens_out == 0


def test_a_model_that_cannot_load_is_raised_once_not_recorded_per_item() -> None:
    # Was: every item recorded the same ModelNotFoundError (the model tried again each time)
    from hrefine.eval import ChunkCompressor

    chunks = ChunkCompressor("embedding", embedder="no-such-model", tokenizer="regex")
    items = [_item(f"q{i}") for i in range(3)]
    with pytest.raises(ModelNotFoundError, match="no-such-model"):
        evaluate_items(chunks, items, [50], tokenizer="regex")

    class Missing:
        name = "needs-a-package"

        def compress(self, document: str, query: str, max_tokens: int) -> str:
            raise MissingDependencyError("umap", "raptor")

    with pytest.raises(MissingDependencyError, match="'raptor'"):
        evaluate_items(Missing(), items, [50], tokenizer="regex")


def test_a_factory_may_return_a_plain_function(tmp_path: Path) -> None:
    register_method("test-fn-factory", lambda tokenizer=None, **options: keep_all)
    comp = get_method("test-fn-factory", tokenizer="regex")
    assert comp.name == "test-fn-factory"
    assert comp.compress("a b", "q", 5) == "a b"


def _jsonl(tmp_path: Path, rows: list[dict[str, Any]], name: str = "mine.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _rows(n: int) -> list[dict[str, Any]]:
    return [
        {"id": f"q{i}", "question": "q?", "answers": ["x"], "document": f"x doc {i}"}
        for i in range(n)
    ]


def test_limit_keys_resolve_like_datasets(tmp_path: Path) -> None:
    path = _jsonl(tmp_path, _rows(3))
    (by_path,) = run_many(["lead-text"], [str(path)], [8], {str(path): 1}, tokenizer="regex")
    (by_label,) = run_many(["lead-text"], [str(path)], [8], {"mine": 2}, tokenizer="regex")
    assert (by_path.n_items, by_label.n_items) == (1, 2)
    assert by_path.meta["limit"] == 1


def test_a_limit_key_naming_no_dataset_of_the_run_is_refused(tmp_path: Path) -> None:
    path = _jsonl(tmp_path, _rows(2))
    with pytest.raises(ConfigError, match=r"'nq'.*\['mine'\]"):
        run_many(["lead-text"], [str(path)], [8], {"nq": 1}, tokenizer="regex")


def test_an_alias_key_limits_the_dataset_given_by_alias(shared_data: Path) -> None:
    (result,) = run_many(
        ["lead-text"], ["nq"], [64], {"nq": 2}, data_dir=shared_data, tokenizer="regex"
    )
    assert result.dataset == "leval-nq" and result.n_items == 2


def test_score_of_a_skipped_run_says_why(tmp_path: Path) -> None:
    path = _jsonl(tmp_path, _rows(1))
    result = run_eval("nomod_for_this_test:Thing", str(path), budgets=[4], tokenizer="regex")
    assert result.skipped
    with pytest.raises(ConfigError, match="was skipped: method unavailable"):
        result.score(4)


def test_a_missing_document_file_is_an_item_error(tmp_path: Path) -> None:
    rows = [
        {"id": "q1", "question": "q?", "answers": ["x"], "doc": "nope.txt"},
        {"id": "q2", "question": "q?", "answers": ["x"], "document": "x"},
    ]
    result = run_eval("lead-text", str(_jsonl(tmp_path, rows)), budgets=[4], tokenizer="regex")
    missing, present = result.items
    assert missing.error is not None and "FileNotFoundError" in missing.error
    assert missing.tokens_in == 0 and missing.tokens_out == 0
    assert present.error is None and present.metrics["containment"] == 1.0
    assert result.summary(4).errors == 1
    with pytest.raises(FileNotFoundError):
        run_eval("lead-text", str(tmp_path / "mine.jsonl"), [4], tokenizer="regex", fail_fast=True)


def test_the_custom_method_example_scores_on_its_dataset(shared_data: Path, tmp_path: Path) -> None:
    # The example must keep something the dataset's questions ask about: split on a separator
    # its documents hold, or it keeps nothing and scores 0 at every budget.
    text = (DOCS / "evaluation.md").read_text(encoding="utf-8")
    block = next(b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "def first_" in b)
    block = block.replace('out_dir="runs"', f"out_dir={str(tmp_path)!r}")
    block = block.replace('"leval-qasper",', f'"leval-qasper", data_dir={str(shared_data)!r},')
    namespace: dict[str, Any] = {}
    exec(compile(block, "evaluation.md", "exec"), namespace)
    result = namespace["result"]
    assert result.summary(512).tokens_out > 0
    assert result.score(512) > 0


def test_the_training_docs_name_importable_objects() -> None:
    text = (DOCS / "train.md").read_text(encoding="utf-8")
    refs = set(re.findall(r"`(hrefine(?:\.\w+)+)`", text))
    refs |= {f"{mod}.{name}" for name, mod in re.findall(r"`(\w+)` in `(hrefine[\w.]*)`", text)}
    assert "hrefine.eval.halves.half_of" in refs
    for ref in sorted(refs):
        try:
            importlib.import_module(ref)
        except ImportError:
            module, _, attr = ref.rpartition(".")
            assert hasattr(importlib.import_module(module), attr), ref
