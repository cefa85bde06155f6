"""Settings of a LoRA training run, declared and checked once (:class:`TrainOptions`)."""

from __future__ import annotations

import dataclasses

from hrefine.errors import ConfigError
from hrefine.options import Options, check_bool, check_int, check_ints, check_numbers, setting

__all__ = ["PRECISIONS", "TrainOptions"]

#: ``precision`` values: ``"auto"`` is bf16 on a CUDA device that has it, fp16 on other CUDA
#: devices, full precision elsewhere.
PRECISIONS = ("auto", "fp32", "bf16", "fp16")


@dataclasses.dataclass(frozen=True, kw_only=True)
class TrainOptions(Options):
    """How to fine-tune a LoRA adapter on built examples.

    The defaults suit a GPU run on the embedded SmolLM2; the CPU benchmark and the tests shrink
    ``max_steps``, ``rank`` and ``max_length``.

    Examples
    --------
    >>> TrainOptions(max_steps=200, rank=16).learning_rate
    0.0002
    """

    rank: int = setting(8, help="LoRA rank r.")
    alpha: float = setting(16.0, help="LoRA scaling alpha (the update is scaled by alpha / r).")
    dropout: float = setting(0.05, help="Dropout on the LoRA input.")
    target_modules: tuple[str, ...] = setting(
        ("q_proj", "k_proj", "v_proj", "o_proj"),
        help="Names of the linear layers that get a LoRA update.",
    )
    top_layers: int | None = setting(
        None,
        help="LoRA on the last this many decoder layers only (None: all); the backward pass "
        "then stops there, which makes CPU runs several times faster.",
    )
    gradient_checkpointing: bool = setting(
        False, help="Recompute activations in the backward pass (long prompts on a small GPU)."
    )
    learning_rate: float = setting(2e-4, help="Peak learning rate of AdamW.")
    weight_decay: float = setting(0.0, help="AdamW weight decay.")
    warmup_steps: int = setting(0, help="Steps of linear warm-up; the rate then decays linearly.")
    max_steps: int = setting(100, help="Optimizer steps in all.")
    batch_size: int = setting(4, help="Examples per forward pass.")
    grad_accumulation: int = setting(1, help="Forward passes per optimizer step.")
    max_grad_norm: float = setting(1.0, help="Gradients are clipped to this norm (0: never).")
    max_length: int = setting(
        2048, help="Most tokens of prompt + target; longer prompts are cut, and counted."
    )
    precision: str = setting("auto", help="'auto', 'fp32', 'bf16' or 'fp16' (fp16/bf16: CUDA).")
    eval_fraction: float = setting(
        0.1, help="Share of documents held out for evaluation (split by document)."
    )
    eval_every: int = setting(0, help="Evaluate every this many steps (0: only at the end).")
    save_every: int = setting(
        50, help="Write a checkpoint every this many steps (0: only at the end)."
    )
    keep_checkpoints: int = setting(2, help="Checkpoints kept (the newest).")
    seed: int = setting(0, help="Seed of the split, the data order and the LoRA initialisation.")
    device: str | None = setting(None, help="Torch device; None picks CUDA, then MPS, then CPU.")
    progress: bool = setting(True, help="Show a progress bar on stderr.")

    def __post_init__(self) -> None:
        check_ints(self, 1, "rank", "max_steps", "batch_size", "grad_accumulation")
        check_ints(self, 1, "keep_checkpoints")
        check_ints(self, 0, "warmup_steps", "eval_every", "save_every", "seed")
        check_int("max_length", self.max_length, minimum=64)
        check_int("top_layers", self.top_layers, minimum=1, none=True)
        check_bool("gradient_checkpointing", self.gradient_checkpointing)
        check_numbers(self, 0, "alpha", "learning_rate", "weight_decay", "max_grad_norm")
        check_numbers(self, 0, "dropout", "eval_fraction")
        check_bool("progress", self.progress)
        if self.dropout >= 1 or self.eval_fraction >= 1:
            msg = (
                f"dropout and eval_fraction must be below 1, got dropout={self.dropout}, "
                f"eval_fraction={self.eval_fraction}"
            )
            raise ConfigError(msg)
        if self.precision not in PRECISIONS:
            msg = f"precision must be one of {list(PRECISIONS)}, got {self.precision!r}"
            raise ConfigError(msg)
        modules = self.target_modules
        if isinstance(modules, str) or not modules or not all(isinstance(m, str) for m in modules):
            msg = f"target_modules must be a non-empty tuple of layer names, got {modules!r}"
            raise ConfigError(msg)
        object.__setattr__(self, "target_modules", tuple(modules))
