"""Mixed precision on a CUDA device: a few bf16 (or fp16) steps lower the loss and the adapter
reloads. Deselected by default (``-m gpu``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hrefine.longrefiner import prompts
from hrefine.longrefiner.options import LongRefinerOptions
from hrefine.models import LocalLM
from hrefine.train import train
from hrefine.train.refiner_data import query_analysis_example

pytestmark = [pytest.mark.gpu, pytest.mark.lm]


def test_mixed_precision_steps_on_cuda_lower_the_loss(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    from lm_fixture import load_default_lm

    opts = LongRefinerOptions()
    examples = [
        query_analysis_example(q, label == "[Local]", f"g{i}", opts)
        for i, (q, label) in enumerate(
            [
                ("what year did the bridge open?", "[Local]"),
                ("compare the careers of both writers over their lives", "[Global]"),
            ]
        )
    ]
    out = tmp_path / "adapter"
    result = train(
        examples,
        out,
        max_steps=5,
        batch_size=2,
        learning_rate=5e-3,
        eval_fraction=0,
        device="cuda",
        precision="auto",
        progress=False,
    )
    losses = [v for _, v in result.losses]
    assert losses[-1] < losses[0]
    report = json.loads((out / "train-report.json").read_text(encoding="utf-8"))
    assert report["device"].startswith("cuda")
    lm = LocalLM(load_default_lm().model_name_or_path, device="cuda", name="gpu-trained")
    lm.load_adapter(str(out), "qa")
    probs = lm.choice_probs(examples[0].user, list(prompts.CHOICES), system=examples[0].system)
    assert set(probs) == set(prompts.CHOICES)
