"""The trainer: the loss falls on the embedded LM, the adapter reloads into LocalLM and changes
its answers, an interrupted run resumes with no step done twice, bad output folders and long
examples are handled. Plumbing runs on the tiny random Llama of lm_fixture (seconds)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hrefine.errors import ConfigError, EmptyInputError
from hrefine.longrefiner import prompts
from hrefine.longrefiner.options import LongRefinerOptions
from hrefine.models import LocalLM
from hrefine.train import Example, train
from hrefine.train.refiner_data import query_analysis_example
from hrefine.train.trainer import REPORT
from lm_fixture import TINY_WORDS, build_tiny_lm

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> LocalLM:
    folder = build_tiny_lm(tmp_path_factory.mktemp("tiny") / "lm")
    return LocalLM(str(folder), device="cpu", name="tiny")


def _words(start: int, n: int) -> str:
    return " ".join(TINY_WORDS[(start + i) % len(TINY_WORDS)] for i in range(n))


def _tiny_examples(n: int = 12) -> list[Example]:
    return [
        Example(
            task="query-analysis",
            user=_words(i, 6),
            target=TINY_WORDS[50 + i % 3],
            group=f"doc{i % 4}",
        )
        for i in range(n)
    ]


_FAST = {"rank": 2, "batch_size": 2, "learning_rate": 1e-2, "progress": False}


def test_interrupted_run_resumes_with_no_step_done_twice(tiny: LocalLM, tmp_path: Path) -> None:
    import torch
    from safetensors.torch import load_file

    examples = _tiny_examples()
    settings = {**_FAST, "max_steps": 6, "save_every": 2, "eval_fraction": 0.25}
    whole = train(examples, tmp_path / "whole", lm=tiny, **settings)
    assert whole.steps == 6 and [s for s, _ in whole.losses] == [1, 2, 3, 4, 5, 6]

    def stop_at_three(step: int, loss: float) -> None:
        if step == 3:
            raise KeyboardInterrupt

    out = tmp_path / "cut"
    with pytest.raises(KeyboardInterrupt):
        train(examples, out, lm=tiny, callback=stop_at_three, **settings)
    # Ctrl-C saved the three finished steps (the step-2 checkpoint stays as the older one).
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == [
        "step-000002",
        "step-000003",
    ]
    assert not (out / REPORT).exists()
    with pytest.raises(ConfigError, match="resume"):
        train(examples, out, lm=tiny, **settings)  # neither resume nor overwrite
    done: list[int] = []
    resumed = train(
        examples, out, lm=tiny, resume=True, callback=lambda s, _: done.append(s), **settings
    )
    assert resumed.resumed_from == 3
    assert done == [4, 5, 6]  # only the steps not done before
    assert [s for s, _ in resumed.losses] == [1, 2, 3, 4, 5, 6]
    # The same data order, optimizer and random state: the same losses and the same adapter.
    assert [v for _, v in resumed.losses] == pytest.approx([v for _, v in whole.losses], rel=1e-5)
    a = load_file(str(tmp_path / "whole" / "adapter_model.safetensors"))
    b = load_file(str(out / "adapter_model.safetensors"))
    assert a.keys() == b.keys()
    for key in a:
        assert torch.allclose(a[key], b[key], atol=1e-6), key
    report = json.loads((out / REPORT).read_text(encoding="utf-8"))
    assert report["steps"] == 6 and report["resumed_from"] == 3
    assert report["eval_examples"] > 0 and report["evals"][-1]["step"] == 6


def test_resume_with_other_data_is_refused(tiny: LocalLM, tmp_path: Path) -> None:
    examples = _tiny_examples()
    out = tmp_path / "run"
    result = train(examples, out, lm=tiny, max_steps=2, callback=lambda s, _: False, **_FAST)
    assert result.interrupted and result.steps == 1
    with pytest.raises(ConfigError, match="other examples or settings"):
        train(examples[:-1], out, lm=tiny, max_steps=2, resume=True, **_FAST)


def test_existing_output_folder_is_refused_unless_overwrite(tiny: LocalLM, tmp_path: Path) -> None:
    out = tmp_path / "adapter"
    out.mkdir()
    (out / "notes.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(ConfigError, match="exists and is not empty"):
        train(_tiny_examples(), out, lm=tiny, max_steps=1, **_FAST)
    assert (out / "notes.txt").read_text(encoding="utf-8") == "mine"
    result = train(_tiny_examples(), out, lm=tiny, max_steps=1, overwrite=True, **_FAST)
    assert result.steps == 1 and not (out / "notes.txt").exists()
    assert (out / "adapter_config.json").is_file()
    with pytest.raises(ConfigError, match="holds a run of 1 steps already; give max_steps above 1"):
        train(_tiny_examples(), out, lm=tiny, max_steps=1, resume=True, **_FAST)
    a_file = tmp_path / "a_file"
    a_file.write_text("x", encoding="utf-8")
    with pytest.raises(ConfigError, match="is a file"):
        train(_tiny_examples(), a_file, lm=tiny, max_steps=1, **_FAST)


def test_missing_parent_folders_of_the_output_are_made(tiny: LocalLM, tmp_path: Path) -> None:
    out = tmp_path / "adapters" / "qa"
    result = train(_tiny_examples(), out, lm=tiny, max_steps=1, eval_fraction=0, **_FAST)
    assert result.steps == 1 and (out / "adapter_config.json").is_file()
    blocked = tmp_path / "a_file"
    blocked.write_text("x", encoding="utf-8")
    with pytest.raises(ConfigError, match="is a file, not a folder"):
        train(_tiny_examples(), blocked / "qa", lm=tiny, max_steps=1, **_FAST)


def test_a_finished_run_resumes_to_more_steps(tiny: LocalLM, tmp_path: Path) -> None:
    from safetensors.torch import load_file

    examples = _tiny_examples()
    out = tmp_path / "run"
    first = train(examples, out, lm=tiny, max_steps=2, eval_fraction=0, **_FAST)
    assert first.steps == 2
    before = load_file(str(out / "adapter_model.safetensors"))
    done: list[int] = []
    more = train(
        examples,
        out,
        lm=tiny,
        max_steps=4,
        eval_fraction=0,
        resume=True,
        callback=lambda s, _: done.append(s),
        **_FAST,
    )
    assert more.resumed_from == 2 and more.steps == 4 and done == [3, 4]
    assert [s for s, _ in more.losses] == [1, 2, 3, 4]
    after = load_file(str(out / "adapter_model.safetensors"))
    # The two new steps moved the weights: the rate went on from the end of the first run
    # (where it had decayed to 0) towards the new last step.
    assert any(not bool((after[k] == before[k]).all()) for k in before)
    assert json.loads((out / REPORT).read_text(encoding="utf-8"))["steps"] == 4
    with pytest.raises(ConfigError, match="holds a run of 4 steps already"):
        train(examples, out, lm=tiny, max_steps=4, eval_fraction=0, resume=True, **_FAST)


def test_half_precision_on_a_cpu_is_refused_before_anything_is_written(
    tiny: LocalLM, tmp_path: Path
) -> None:
    out = tmp_path / "adapter"
    with pytest.raises(ConfigError, match="needs a CUDA device"):
        train(_tiny_examples(), out, lm=tiny, max_steps=1, device="cpu", precision="bf16")
    assert not out.exists()


def test_long_prompts_are_cut_from_the_prompt_side_and_counted(
    tiny: LocalLM, tmp_path: Path
) -> None:
    from hrefine.train.trainer import tokenize

    long = Example(task="query-analysis", user=_words(0, 120), target=_words(5, 3), group="a")
    t = tokenize(tiny, long, 64)
    assert t is not None and len(t.prompt) + len(t.target) == 64 and t.cut > 0
    full = tokenize(tiny, long, 512)
    assert full is not None
    # The prompt's first 16 tokens and its end are kept; the target is whole.
    assert t.prompt[:16] == full.prompt[:16] and t.prompt[-20:] == full.prompt[-20:]
    assert t.target == full.target
    too_long = Example(task="query-analysis", user="w1 w2", target=_words(0, 60), group="b")
    assert tokenize(tiny, too_long, 64) is None
    examples = [long, too_long, *_tiny_examples(4)]
    result = train(
        examples, tmp_path / "cut", lm=tiny, max_steps=1, max_length=64, eval_fraction=0, **_FAST
    )
    assert result.truncated == 1 and result.dropped == 1 and result.train_examples == 5
    with pytest.raises(EmptyInputError, match="max_length"):
        train([too_long], tmp_path / "none", lm=tiny, max_steps=1, max_length=64, **_FAST)


@pytest.fixture(scope="module")
def qa_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Example]]:
    """Three steps of query analysis on the embedded SmolLM2, on one fixed batch of four."""
    opts = LongRefinerOptions()
    questions = [
        ("who directed the film that won best picture in 1972?", "[Local]"),
        ("what year did the bridge open?", "[Local]"),
        ("summarise how the story's themes develop across all chapters", "[Global]"),
        ("compare the careers of both writers over their lives", "[Global]"),
    ]
    examples = [
        query_analysis_example(q, label == "[Local]", f"g{i}", opts)
        for i, (q, label) in enumerate(questions)
    ]
    out = tmp_path_factory.mktemp("qa") / "adapter"
    result = train(
        examples,
        out,
        max_steps=3,
        batch_size=4,
        rank=4,
        top_layers=4,
        learning_rate=5e-3,
        eval_fraction=0,
        max_length=128,
        progress=False,
    )
    losses = [v for _, v in result.losses]
    assert len(losses) == 3
    # Every step sees the same batch (batch size = all examples): the loss falls on it.
    assert losses[2] < losses[1] < losses[0], losses
    assert losses[2] < 0.9 * losses[0], losses
    return out, examples


@pytest.mark.lm
def test_training_reduces_the_loss_on_a_fixed_batch(qa_run: tuple[Path, list[Example]]) -> None:
    out, _ = qa_run
    report = json.loads((out / REPORT).read_text(encoding="utf-8"))
    assert report["tasks"] == ["query-analysis"] and report["options"]["top_layers"] == 4


@pytest.mark.lm
def test_saved_adapter_loads_into_local_lm_and_changes_its_answers(
    qa_run: tuple[Path, list[Example]],
) -> None:
    from lm_fixture import load_default_lm

    out, examples = qa_run
    shared = load_default_lm()
    own = LocalLM(shared.model_name_or_path, device="cpu", name="trained")  # leave shared alone
    own.load_adapter(str(out), "query_analysis")
    choices = list(prompts.CHOICES)
    for ex in examples:
        before = own.choice_probs(ex.user, choices, system=ex.system, adapter=None)
        after = own.choice_probs(ex.user, choices, system=ex.system, adapter="query_analysis")
        assert abs(after[ex.target] - before[ex.target]) > 1e-3
        assert after[ex.target] > before[ex.target]  # trained towards its label


@pytest.mark.lm
def test_longrefiner_loads_the_adapter_and_its_analysis_follows_it(
    qa_run: tuple[Path, list[Example]],
) -> None:
    from hrefine.longrefiner import LongRefiner
    from lm_fixture import load_default_lm

    out, examples = qa_run
    own = LocalLM(load_default_lm().model_name_or_path, device="cpu", name="pipeline")
    tuned = LongRefiner(lm=own, query_analysis_adapter=str(out))
    for ex in examples:
        after = tuned.analyze(ex.user.lstrip("\n"))
        assert after.source == "lm"
        # The pipeline asks with the published prompt once an adapter is set: the base model's
        # answer to that same prompt is the "before".
        before = own.choice_probs(ex.user, list(prompts.CHOICES), system=ex.system, adapter=None)
        if ex.target == "[Local]":
            assert after.p_local > before["[Local]"] + 1e-3
        else:
            assert after.p_global > before["[Global]"] + 1e-3


@pytest.mark.lm
def test_pruner_targets_are_tokenised_as_the_path_scorer_reads_them() -> None:
    from hrefine.html.generative import build_prompt
    from hrefine.models.token_trie import encode
    from lm_fixture import load_default_lm

    lm = load_default_lm()
    prompt = build_prompt(lm, "<html><body><table><tr><td>x</td></tr></table></body></html>", "q")
    for path in ("<html><body><table2><tr11>", "<html><body><div1><p>", "<html><body><h2_3>"):
        assert lm.answer_ids(prompt, path) == encode(lm.tokenizer, path)


def test_ctrl_c_during_an_update_waits_for_the_update_to_finish() -> None:
    import signal

    from hrefine.train.trainer import _interrupt_deferred

    finished: list[str] = []
    # What the block must put back: Python's handler, or SIG_IGN when the test process was
    # started in the background by a shell (which ignores SIGINT there).
    before = signal.getsignal(signal.SIGINT)

    def update() -> None:
        with _interrupt_deferred():
            os.kill(os.getpid(), signal.SIGINT)
            finished.append("update")  # still runs: the interrupt waits for the block's end

    with pytest.raises(KeyboardInterrupt):
        update()
    assert finished == ["update"]
    assert signal.getsignal(signal.SIGINT) is before
