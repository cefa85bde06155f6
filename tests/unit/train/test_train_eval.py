"""Trained adapters through ``hrefine eval``: a few steps of training on the embedded SmolLM2,
then the evaluated methods load the adapter, run under it and score other than the base model;
the command the trainer records runs as it is written."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest
from hrefine.errors import ConfigError, ModelNotFoundError
from hrefine.eval import evaluate_items, get_method
from hrefine.eval.loaders import EvalItem, half_of, load_dataset
from hrefine.html import HtmlPruner
from hrefine.html.generative import PROMPT_TEMPLATE
from hrefine.longrefiner.options import LongRefinerOptions
from hrefine.models import LocalLM
from hrefine.train import Example, train
from hrefine.train.checking import EVAL_TARGETS, eval_command
from hrefine.train.refiner_data import query_analysis_example
from hrefine.train.trainer import REPORT

pytestmark = [pytest.mark.lm, pytest.mark.usefixtures("one_torch_thread")]

_FAST = {
    "max_steps": 2,
    "batch_size": 2,
    "rank": 4,
    "top_layers": 2,
    "learning_rate": 5e-3,
    "eval_fraction": 0,
    "max_length": 256,
    "progress": False,
}


@pytest.fixture(scope="module")
def base_folder() -> str:
    from lm_fixture import load_default_lm

    return load_default_lm().model_name_or_path


def _table(rows: list[tuple[str, str]]) -> str:
    body = "".join(f"<tr><td>{a}<td>{b}" for a, b in rows)
    return f"<html><body><table><tr><th>Team<th>City{body}</table></body></html>"


@pytest.fixture(scope="module")
def pruner_adapter(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two steps of html-pruner training: the row that answers, as a tag path."""
    pages = [
        ([("Lions", "Leeds"), ("Tigers", "York")], "Which city do the Tigers play in?", 3),
        ([("Owls", "Hull"), ("Bears", "Bath")], "Where are the Owls from?", 2),
    ]
    examples = [
        Example(
            task="html-pruner",
            user=PROMPT_TEMPLATE.format(html=_table(rows), question=q),
            target=f"<html><body><table><tr{row}>",
            group=f"page{i}",
        )
        for i, (rows, q, row) in enumerate(pages)
    ]
    out = tmp_path_factory.mktemp("pruner") / "adapter"
    train(examples, out, **_FAST)  # type: ignore[arg-type]
    return out


@pytest.fixture(scope="module")
def qa_adapter(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two steps of query-analysis training with the published prompt."""
    opts = LongRefinerOptions()
    questions = [
        ("what year did the bridge open?", "[Local]"),
        ("compare the careers of both writers over their lives", "[Global]"),
    ]
    examples = [
        query_analysis_example(q, label == "[Local]", f"g{i}", opts)
        for i, (q, label) in enumerate(questions)
    ]
    out = tmp_path_factory.mktemp("qa") / "adapter"
    train(examples, out, **_FAST)  # type: ignore[arg-type]
    return out


def _check_items(dataset: str, shared_data: Path, n: int) -> list[EvalItem]:
    strict = dataset == "wtq"  # WTQ's answers written on the page, as the eval runs it
    items = load_dataset(dataset, shared_data, strict_only=strict, limit=n, half="check")
    assert len(items) == n and all(half_of(it.doc_id) == "check" for it in items)
    return items


def test_the_trainer_records_the_eval_command_of_its_task(pruner_adapter: Path) -> None:
    report = json.loads((pruner_adapter / REPORT).read_text(encoding="utf-8"))
    words = shlex.split(report["eval_command"])
    assert words[:4] == ["hrefine", "eval", "--method", "htmlrag-generative"]
    assert f"generative_adapter={pruner_adapter}" in words and "check" in words
    assert "lm=" not in report["eval_command"]  # trained on the embedded model: the default
    structuring = shlex.split(eval_command("structuring", "a b", lm="models/qwen"))
    assert "structuring_adapter=a b" in structuring and "structure=model" in structuring
    assert "lm=models/qwen" in structuring
    assert set(EVAL_TARGETS) == {"html-pruner", "query-analysis", "structuring", "global-selection"}
    with pytest.raises(ConfigError, match="unknown task"):
        eval_command("summaries", "a")


def test_the_generative_pruner_runs_under_a_trained_adapter(
    pruner_adapter: Path, base_folder: str, shared_data: Path
) -> None:
    lm = LocalLM(base_folder, device="cpu", name="pruner-check")  # not the shared one
    items = _check_items("wtq", shared_data, 2)
    comp = get_method("htmlrag-generative", lm=lm, generative_adapter=str(pruner_adapter))
    rows = evaluate_items(comp, items, [128], fail_fast=True)
    pruner = comp.pruner  # type: ignore[attr-defined]
    assert pruner.generative_adapter_name == "html_pruner" and lm.adapters == ["html_pruner"]
    assert lm.active_adapter is None  # the LM's default stays the base model
    assert len(rows) == 2 and all(r.error is None and 0 < r.tokens_out <= 128 for r in rows)
    # Stage 2 scored the same blocks under the adapter, and scored them otherwise.
    item = items[0]
    tuned = pruner.prune(item.document, item.question, 128)
    plain = HtmlPruner(generative=True, lm=lm).prune(item.document, item.question, 128)
    assert tuned.stats["generative_adapter"] == "html_pruner"
    assert plain.stats["generative_adapter"] is None

    def stage2(result: object) -> dict[str, float]:
        return {
            b.text: b.stage2_score
            for b in result.blocks  # type: ignore[attr-defined]
            if b.stage2_score is not None
        }

    a, b = stage2(tuned), stage2(plain)
    assert a.keys() == b.keys() and a
    assert max(abs(a[k] - b[k]) for k in a) > 1e-3
    # A second pruner with the same folder reuses the loaded adapter; a missing one fails early.
    HtmlPruner(generative=True, lm=lm, generative_adapter=str(pruner_adapter)).warmup()
    assert lm.adapters == ["html_pruner"]
    with pytest.raises(ModelNotFoundError, match="generative_adapter"):
        HtmlPruner(generative=True, generative_adapter=str(pruner_adapter / "missing"))
    with pytest.raises(ConfigError, match="generative=False"):
        HtmlPruner(generative_adapter=str(pruner_adapter))


def test_longrefiner_analyses_queries_under_a_trained_adapter(
    qa_adapter: Path, pruner_adapter: Path, base_folder: str, shared_data: Path
) -> None:
    lm = LocalLM(base_folder, device="cpu", name="qa-check")
    items = _check_items("hotpotqa", shared_data, 2)
    # No generation: the structure from the markup, step 3 off; step 1 is what is checked.
    settings: dict[str, Any] = {"lm": lm, "global_selection": "off", "structure": "markup"}
    tuned = get_method("longrefiner-lm", query_analysis_adapter=str(qa_adapter), **settings)
    plain = get_method("longrefiner-lm", **settings)
    rows = evaluate_items(tuned, items, [256], fail_fast=True)
    evaluate_items(plain, items, [256], fail_fast=True)
    assert lm.adapters == ["query_analysis"] and lm.active_adapter is None
    assert all(r.error is None for r in rows)
    for t, p in zip(tuned.records, plain.records, strict=True):  # type: ignore[attr-defined]
        assert t.analysis["source"] == p.analysis["source"] == "lm"
        assert abs(t.analysis["w_local"] - p.analysis["w_local"]) > 1e-4
    # Another folder for the same step is loaded beside it under its own name, not mistaken
    # for the first (the LM is often shared by the whole process).
    other = get_method("longrefiner-lm", query_analysis_adapter=str(pruner_adapter), **settings)
    other.compress(items[0].document, items[0].question, 256)
    assert lm.adapters == ["query_analysis", "query_analysis_2"]


def test_the_recorded_command_evaluates_the_adapter(
    pruner_adapter: Path, shared_data: Path, tmp_path: Path
) -> None:
    from hrefine.cli import app
    from typer.testing import CliRunner

    report = json.loads((pruner_adapter / REPORT).read_text(encoding="utf-8"))
    words = shlex.split(report["eval_command"])[2:]  # without "hrefine eval"
    words[words.index("--limit") + 1] = "1"
    extra = ["--budgets", "128", "--out", str(tmp_path), "--data-dir", str(shared_data)]
    res = CliRunner().invoke(app, ["eval", *words, *extra, "--no-progress"])
    assert res.exit_code == 0, res.output
    written = json.loads((tmp_path / "html-pruner-adapter.json").read_text(encoding="utf-8"))
    assert "htmlrag-generative" in json.dumps(written)
    assert '"half": "check"' in json.dumps(written)
