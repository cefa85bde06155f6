"""Resuming a training run: a Ctrl-C inside a step or an evaluation resumes to the run an
uninterrupted one makes, a checkpoint of another base model is refused (a moved one is not),
and the temporary folder of a run killed while saving is no obstacle. On the tiny random Llama
of lm_fixture."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hrefine.errors import ConfigError
from hrefine.models import LocalLM
from hrefine.train import Example, TrainResult, train
from hrefine.train.options import TrainOptions
from hrefine.train.trainer import check_output
from lm_fixture import TINY_WORDS, build_tiny_lm

pytestmark = pytest.mark.usefixtures("one_torch_thread")

_SETTINGS: dict[str, Any] = {
    "rank": 2,
    "batch_size": 2,
    "learning_rate": 1e-2,
    "progress": False,
    "max_steps": 4,
    "save_every": 2,
    "eval_every": 2,
    "eval_fraction": 0.25,
}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> LocalLM:
    folder = build_tiny_lm(tmp_path_factory.mktemp("tiny") / "lm")
    return LocalLM(str(folder), device="cpu", name="tiny")


def _examples(n: int = 12) -> list[Example]:
    def words(start: int) -> str:
        return " ".join(TINY_WORDS[(start + i) % len(TINY_WORDS)] for i in range(6))

    return [
        Example(
            task="query-analysis", user=words(i), target=TINY_WORDS[50 + i % 3], group=f"d{i % 4}"
        )
        for i in range(n)
    ]


@pytest.fixture(scope="module")
def whole(tiny: LocalLM, tmp_path_factory: pytest.TempPathFactory) -> TrainResult:
    """The uninterrupted run the resumed ones must equal."""
    return train(_examples(), tmp_path_factory.mktemp("whole") / "out", lm=tiny, **_SETTINGS)


def _adapter(out: Path) -> dict[str, Any]:
    from safetensors.torch import load_file

    return load_file(str(out / "adapter_model.safetensors"))


@pytest.mark.parametrize(
    ("mode", "nth", "saved"),
    [
        ("training", 4, 3),  # after step 4's forward pass: the half step has drawn its dropout
        ("evaluation", 1, 2),  # inside the held-out evaluation after step 2
    ],
)
def test_ctrl_c_inside_a_step_resumes_to_the_uninterrupted_run(
    tiny: LocalLM,
    whole: TrainResult,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    mode: str,
    nth: int,
    saved: int,
) -> None:
    import hrefine.train._loss as loss_module
    import hrefine.train.trainer as trainer
    import torch

    real = trainer.token_losses
    calls = {"training": 0, "evaluation": 0}

    def interrupted(model: Any, *args: Any, **kwargs: Any) -> Any:
        result = real(model, *args, **kwargs)
        kind = "training" if model.training else "evaluation"
        calls[kind] += 1
        if kind == mode and calls[kind] == nth:
            raise KeyboardInterrupt  # where a real Ctrl-C nearly always lands
        return result

    out = tmp_path / "out"
    with monkeypatch.context() as patched:
        # The training step calls it from the trainer, the evaluation from _loss.
        patched.setattr(trainer, "token_losses", interrupted)
        patched.setattr(loss_module, "token_losses", interrupted)
        with pytest.raises(KeyboardInterrupt):
            train(_examples(), out, lm=tiny, **_SETTINGS)
    assert (out / "checkpoints" / f"step-{saved:06d}").is_dir()  # the steps finished
    resumed = train(_examples(), out, lm=tiny, resume=True, **_SETTINGS)
    assert resumed.resumed_from == saved
    assert [v for _, v in resumed.losses] == pytest.approx([v for _, v in whole.losses], rel=1e-6)
    assert [e["step"] for e in resumed.evals] == [e["step"] for e in whole.evals] == [2, 4]
    a, b = _adapter(whole.out), _adapter(out)
    for key in a:
        assert torch.allclose(a[key], b[key], atol=1e-7), key


def test_resume_on_another_base_model_is_refused(tiny: LocalLM, tmp_path: Path) -> None:
    other_folder = build_tiny_lm(tmp_path / "other", seed=1)  # the same architecture
    other = LocalLM(str(other_folder), device="cpu", name="other")
    out = tmp_path / "out"
    settings = {**_SETTINGS, "eval_fraction": 0}
    train(_examples(), out, lm=tiny, callback=lambda s, _: s < 2, **settings)
    with pytest.raises(ConfigError, match=r"another base model.*other") as caught:
        train(_examples(), out, lm=other, resume=True, **settings)
    assert tiny.model_name_or_path in str(caught.value)
    # The check runs before anything loads (the CLI calls it with the model's name too).
    with pytest.raises(ConfigError, match="another base model"):
        check_output(
            out, _examples(), TrainOptions.build(**settings), resume=True, lm=str(other_folder)
        )
    resumed = train(_examples(), out, lm=tiny, resume=True, **settings)
    assert resumed.resumed_from == 2 and resumed.steps == 4


def test_a_checkpoint_without_the_base_model_is_resumed(tiny: LocalLM, tmp_path: Path) -> None:
    # Checkpoints written before the base model was recorded: resumed, with a warning.
    out = tmp_path / "out"
    settings = {**_SETTINGS, "eval_fraction": 0}
    train(_examples(), out, lm=tiny, callback=lambda s, _: s < 2, **settings)
    state_file = out / "checkpoints" / "step-000002" / "state.json"
    state = json.loads(state_file.read_text(encoding="utf-8"))
    del state["base_model"]
    state_file.write_text(json.dumps(state), encoding="utf-8")
    assert train(_examples(), out, lm=tiny, resume=True, **settings).resumed_from == 2


@pytest.mark.parametrize("resume", [True, False])
def test_a_run_killed_during_its_first_save_leaves_no_obstacle(
    tiny: LocalLM, tmp_path: Path, resume: bool
) -> None:
    out = tmp_path / "out"
    leftover = out / "checkpoints" / ".step-000002.k2j3h4.tmp"  # what tempfile.mkdtemp left
    leftover.mkdir(parents=True)
    (leftover / "adapter_model.safetensors").write_bytes(b"\0" * 100)
    settings = {**_SETTINGS, "max_steps": 1, "eval_fraction": 0}
    result = train(_examples(), out, lm=tiny, resume=resume, **settings)
    assert result.resumed_from is None and result.steps == 1
    assert not leftover.exists()
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == ["step-000001"]


def test_resume_into_a_folder_without_a_checkpoint_names_the_way_out(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine", encoding="utf-8")
    options = TrainOptions.build(**_SETTINGS)
    with pytest.raises(ConfigError, match="no checkpoint to go on from") as caught:
        check_output(out, _examples(), options, resume=True, spelling="cli")
    assert "--resume" not in str(caught.value) and "--overwrite" in str(caught.value)


def test_a_moved_base_model_resumes_and_changed_weights_are_refused(tmp_path: Path) -> None:
    import shutil

    out = tmp_path / "out"
    settings = {**_SETTINGS, "eval_fraction": 0}
    opts = TrainOptions.build(**settings)
    base = build_tiny_lm(tmp_path / "base")
    lm = LocalLM(str(base), device="cpu")
    train(_examples(), out, lm=lm, callback=lambda s, _: s < 2, **settings)
    # The same files in another folder (moved to a bigger disk, say): the same model.
    moved = tmp_path / "elsewhere" / "base"
    shutil.copytree(base, moved)
    check_output(out, _examples(), opts, resume=True, lm=str(moved))
    # Another training of the same architecture written over the folder: refused, though its
    # file sizes, config and path are the checkpoint's.
    other = build_tiny_lm(tmp_path / "seed1", seed=1)
    for f in other.iterdir():
        shutil.copy2(f, base / f.name)
    with pytest.raises(ConfigError, match=r"the weights in .*base changed"):
        check_output(out, _examples(), opts, resume=True, lm=str(base))
    # A copy of it elsewhere is another model, not the checkpoint's moved.
    with pytest.raises(ConfigError, match="another base model"):
        check_output(out, _examples(), opts, resume=True, lm=str(other))
    # Resumed from the moved folder, the run records where the model is now.
    resumed = train(_examples(), out, lm=LocalLM(str(moved), device="cpu"), resume=True, **settings)
    assert resumed.resumed_from == 2 and resumed.steps == 4
    state = json.loads((out / "checkpoints" / "step-000004" / "state.json").read_text("utf-8"))
    assert state["base_model"]["model"] == str(moved.resolve())
