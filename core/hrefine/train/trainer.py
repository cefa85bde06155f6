"""LoRA fine-tuning of a causal LM on built examples (:func:`train`).

The model is loaded a second time through the same loader as :class:`~hrefine.models.LocalLM`
(the LM given stays untouched: PEFT rewrites the model it wraps), and each example is written
with that LM's own :meth:`~hrefine.models.LocalLM.chat_prompt`, so the adapter is trained on the
exact prompt it will see. The loss is taken on the target tokens only (and the end-of-turn token
after them), averaged over all target tokens of an optimizer step, so gradient accumulation gives
the same update as one large batch. Examples longer than ``max_length`` lose tokens from the
prompt (the template's opening is kept); each such cut is counted.

The run saves a checkpoint every ``save_every`` steps and at its end; ``resume=True`` goes on
from the newest one with the same data order, optimizer, schedule and random state, so no step
is done twice (a finished run goes on to a larger ``max_steps`` the same way).
A run stopped with Ctrl-C saves a checkpoint of the steps it finished before it stops. The
finished adapter is saved at the top of the output folder, where
:meth:`~hrefine.models.LocalLM.load_adapter` reads it; ``train-report.json`` is written last.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import signal
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import hrefine.train._base as _base
import hrefine.train._checkpoint as _checkpoint
from hrefine._atomic import write_text
from hrefine._optional import require
from hrefine.errors import ConfigError, EmptyInputError
from hrefine.train._loss import Tokenized, evaluate, make_batch, token_losses
from hrefine.train.example_prep import split_examples, tokenize
from hrefine.train.examples import Example
from hrefine.train.options import TrainOptions
from hrefine.train.run_folder import REPORT, SPELLINGS, check_output, prepare_out
from hrefine.train.run_folder import fingerprint as run_fingerprint

# REPORT, SPELLINGS, check_output, split_examples and tokenize live in run_folder and
# example_prep; they are imported from here too.
__all__ = [
    "REPORT",
    "SPELLINGS",
    "Tokenized",
    "TrainResult",
    "check_output",
    "split_examples",
    "tokenize",
    "train",
]

logger = logging.getLogger(__name__)


@dataclasses.dataclass
class TrainResult:
    """What a run did.

    train_examples, eval_examples:
        Sizes of the two parts.
    truncated:
        Examples whose prompt was cut to fit ``max_length``.
    dropped:
        Examples whose target alone leaves no room for the prompt.
    interrupted:
        The run stopped early (Ctrl-C or the callback); a checkpoint holds its last step.
    seconds:
        Time of this call.
    """

    out: Path
    """The output folder (the adapter is at its top)."""
    steps: int
    """Optimizer steps done in all (including those before a resume)."""
    resumed_from: int | None
    """The step the run went on from, or None for a fresh run."""
    losses: list[tuple[int, float]]
    """``(step, mean loss per target token)`` of each step."""
    evals: list[dict[str, float]]
    """Held-out evaluations: ``step``, ``loss`` (per target token), ``token_accuracy`` (the
    model's top token equals the target's) and ``exact`` (share of examples whose every
    target token is the top token).
    """
    train_examples: int
    eval_examples: int
    truncated: int
    dropped: int
    interrupted: bool = False
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """The result as JSON-able values."""
        d = dataclasses.asdict(self)
        d["out"] = str(self.out)
        d["losses"] = [list(x) for x in self.losses]
        return d


def _precision(device: str, precision: str) -> Any:
    """The autocast dtype, or None for full precision."""
    import torch

    if not device.startswith("cuda"):
        if precision in ("bf16", "fp16"):
            msg = f"precision={precision!r} needs a CUDA device; this run is on {device!r}"
            raise ConfigError(msg)
        return None
    if precision == "auto":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    return {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}[precision]


def _stream(n: int, seed: int, start: int) -> Iterator[int]:
    """Example indexes from position ``start`` of the run's order: each epoch a fresh
    permutation seeded by ``seed`` and the epoch, so the order never depends on a resume."""
    import torch

    epoch, offset = divmod(start, n)
    while True:
        gen = torch.Generator().manual_seed(seed * 100_003 + epoch)
        perm = torch.randperm(n, generator=gen).tolist()
        yield from perm[offset:]
        epoch, offset = epoch + 1, 0


@contextlib.contextmanager
def _interrupt_deferred() -> Iterator[None]:
    """Hold back Ctrl-C (SIGINT) until the block ends, then raise it; in the main thread only
    (elsewhere signals cannot be handled, and the block runs as it is)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, _frame: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if caught:
        raise KeyboardInterrupt


def _load_trainable(lm: Any, opts: TrainOptions, device: str) -> Any:
    """A fresh float32 copy of ``lm``'s weights on ``device``, wrapped for LoRA training."""
    peft = require("peft", "models")
    from hrefine.models._hf_load import load_pretrained

    _ = lm.tokenizer  # makes the weights' folder (the embedded model converts once)
    _, base = load_pretrained(
        lm.model_name_or_path,
        gguf_file=lm.gguf_file,
        device=device,
        dtype="float32",
        attn_implementation="sdpa",
    )
    extra: dict[str, Any] = {}
    if opts.top_layers is not None:
        total = int(base.config.num_hidden_layers)
        extra["layers_to_transform"] = list(range(max(0, total - opts.top_layers), total))
    if opts.gradient_checkpointing:
        base.gradient_checkpointing_enable()
        base.enable_input_require_grads()
    config = peft.LoraConfig(
        **extra,
        r=opts.rank,
        lora_alpha=opts.alpha,
        lora_dropout=opts.dropout,
        target_modules=list(opts.target_modules),
        task_type="CAUSAL_LM",
    )
    try:
        with warnings.catch_warnings():  # transformers' deprecation notes, no action for users
            warnings.simplefilter("ignore", FutureWarning)
            model = peft.get_peft_model(base, config)
    except ValueError as exc:
        msg = f"cannot put LoRA on target_modules={list(opts.target_modules)}: {exc}"
        raise ConfigError(msg) from exc
    model.train()
    return model


def train(
    examples: Sequence[Example],
    out: str | Path,
    *,
    lm: Any = None,
    options: TrainOptions | None = None,
    overwrite: bool = False,
    resume: bool = False,
    callback: Callable[[int, float], bool | None] | None = None,
    **settings: Any,
) -> TrainResult:
    """Fine-tune a LoRA adapter on ``examples`` and save it in ``out``.

    Parameters
    ----------
    examples:
        Built examples (:mod:`hrefine.train.builders`, or read with
        :func:`~hrefine.train.examples.read_examples`).
    out:
        Output folder: the adapter at its top, ``checkpoints/``, ``train-report.json``. It is
        made with its missing parents.
    lm:
        The base model: a :class:`~hrefine.models.LocalLM`, a model folder or cached name, or
        None for the embedded SmolLM2. It is not modified (training runs on a copy).
    options:
        :class:`TrainOptions`; ``settings`` override its fields.
    overwrite:
        Replace ``out`` when it exists (otherwise a non-empty folder is refused).
    resume:
        Go on from the newest checkpoint in ``out`` (a fresh run when there is none): an
        interrupted run, or a finished one to a larger ``max_steps`` (its rate then decays
        from where it stands to the new last step).
    callback:
        Called after each step with ``(step, loss)``; returning False stops the run (it saves
        a checkpoint first, as Ctrl-C does).

    Returns
    -------
    TrainResult
        What was done (also written to ``out/train-report.json`` when the run finishes).

    Raises
    ------
    EmptyInputError
        No example is left to train on (after the split and the length limit).
    ConfigError
        A bad setting, an output folder that exists (without ``overwrite``/``resume``), a
        resume with other data or settings than the checkpoint's, or one to no more steps
        than it holds (see :func:`check_output`).
    KeyboardInterrupt
        Re-raised after the checkpoint of an interrupted run is saved.
    """
    import torch

    opts = TrainOptions.build(options, **settings)
    started = time.perf_counter()
    if not examples:
        msg = "no examples to train on; build some with hrefine.train.build_examples"
        raise EmptyInputError(msg)
    from hrefine.models.device import pick_device

    # Settings and the model are checked before the output folder is touched.
    device = pick_device(opts.device)
    autocast = _precision(device, opts.precision)
    out = Path(out).expanduser()
    base_lm = _base.lm_of(lm)  # nothing loads yet
    from_checkpoint = check_output(
        out, examples, opts, overwrite=overwrite, resume=resume, lm=base_lm
    )
    prepare_out(out, overwrite=overwrite, from_checkpoint=from_checkpoint)
    fingerprint = run_fingerprint(examples, opts)

    train_part, held_part = split_examples(examples, opts.eval_fraction, opts.seed)
    tokenized: list[Tokenized] = []
    held: list[Tokenized] = []
    dropped = 0
    for part, into in ((train_part, tokenized), (held_part, held)):
        for e in part:
            t = tokenize(base_lm, e, opts.max_length)
            if t is None:
                dropped += 1
            else:
                into.append(t)
    truncated = sum(1 for t in (*tokenized, *held) if t.cut)
    if truncated or dropped:
        logger.warning(
            "%d example(s) had their prompt cut to max_length=%d; %d dropped (target too long)",
            truncated,
            opts.max_length,
            dropped,
        )
    if not tokenized:
        msg = (
            f"no example left to train on ({len(train_part)} in the training part, {dropped} "
            f"dropped as longer than max_length={opts.max_length}); give more examples or a "
            "larger max_length"
        )
        raise EmptyInputError(msg)

    torch.manual_seed(opts.seed)
    model = _load_trainable(base_lm, opts, device)
    # After the load: the embedded model's folder (and its config.json) exists from then on.
    base_identity = _base.identity(base_lm)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=opts.learning_rate, weight_decay=opts.weight_decay)

    def schedule(step: int) -> float:
        if step < opts.warmup_steps:
            return (step + 1) / (opts.warmup_steps + 1)
        span = max(1, opts.max_steps - opts.warmup_steps)
        return max(0.0, 1.0 - (step - opts.warmup_steps) / span)

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)
    scaler = torch.amp.GradScaler("cuda") if autocast is torch.float16 else None
    pad = base_lm.pad_token_id

    step = 0
    losses: list[tuple[int, float]] = []
    evals: list[dict[str, float]] = []
    resumed_from: int | None = None
    if from_checkpoint is not None:
        state = _checkpoint.load(from_checkpoint, optimizer=optimizer)
        peft = require("peft", "models")
        weights = peft.utils.load_peft_weights(str(from_checkpoint), device=device)
        peft.set_peft_model_state_dict(model, weights)
        scheduler.load_state_dict(state["scheduler"])
        if scaler is not None and state.get("scaler"):
            scaler.load_state_dict(state["scaler"])
        step = resumed_from = int(state["step"])
        # The rate of the next step under this run's schedule: a resume to more steps than
        # the checkpoint's run had decays from here to the new max_steps (the finished run
        # left it at 0); with the same max_steps this is the rate the checkpoint holds.
        for group, base_lr in zip(optimizer.param_groups, scheduler.base_lrs, strict=True):
            group["lr"] = base_lr * schedule(step)
        losses = [(int(s), float(v)) for s, v in state["losses"]]
        evals = list(state["evals"])
        logger.info("Resuming from %s (step %d)", from_checkpoint, step)

    per_step = opts.batch_size * opts.grad_accumulation
    order = _stream(len(tokenized), opts.seed, step * per_step)
    saved_step = step

    def held_out() -> dict[str, float]:
        return {"step": step, **evaluate(model, held, opts.batch_size, pad, device, autocast)}

    def checkpoint() -> None:
        nonlocal saved_step
        if step == saved_step and _checkpoint.latest(out) is not None:
            return
        state = {
            "fingerprint": fingerprint,
            "base_model": base_identity,
            "scheduler": scheduler.state_dict(),
            "scaler": scaler.state_dict() if scaler is not None else None,
            "losses": losses,
            "evals": evals,
        }
        _checkpoint.save(out, step, model=model, optimizer=optimizer, state=state, rng=rng)
        _checkpoint.prune(out, opts.keep_checkpoints)
        saved_step = step

    bar = None
    if opts.progress:
        from tqdm.auto import tqdm

        bar = tqdm(
            total=opts.max_steps, initial=step, desc="training", unit="step", file=sys.stderr
        )
    # The generators' states as the last finished step left them: a Ctrl-C inside a step
    # (nearly always in its forward or backward pass) lands after that half step drew its
    # dropout, and a checkpoint holding those draws would not resume to the same run. The
    # half step changes nothing else that is saved: gradients are not, and the optimizer,
    # schedule, log and data position move only in the update below.
    rng = _checkpoint.rng_state()
    # A run stopped during the held-out evaluation of its last step saved that step without it.
    due = held and opts.eval_every and 0 < step < opts.max_steps and step % opts.eval_every == 0
    if due and not any(e["step"] == step for e in evals):
        evals.append(held_out())
    interrupted = False
    try:
        while step < opts.max_steps:
            groups = [
                [tokenized[next(order)] for _ in range(opts.batch_size)]
                for _ in range(opts.grad_accumulation)
            ]
            n_tokens = sum(len(t.target) for g in groups for t in g)
            total = 0.0
            for g in groups:
                losses_g, _, _ = token_losses(model, make_batch(g, pad, device), autocast)
                loss = losses_g.sum() / n_tokens
                (scaler.scale(loss) if scaler is not None else loss).backward()
                total += float(loss.detach())
            # A Ctrl-C here waits until the update and its bookkeeping are whole, so a
            # checkpoint never holds weights one step ahead of its step count.
            with _interrupt_deferred():
                if scaler is not None:
                    scaler.unscale_(optimizer)
                if opts.max_grad_norm > 0:
                    torch.nn.utils.clip_grad_norm_(params, opts.max_grad_norm)
                if scaler is not None:
                    scaler.step(optimizer)
                    scaler.update()
                else:
                    optimizer.step()
                scheduler.step()
                optimizer.zero_grad(set_to_none=True)
                step += 1
                losses.append((step, total))
                rng = _checkpoint.rng_state()
            if bar is not None:
                bar.update(1)
                bar.set_postfix(loss=f"{total:.4f}")
            if held and opts.eval_every and step % opts.eval_every == 0 and step < opts.max_steps:
                evals.append(held_out())
            if opts.save_every and step % opts.save_every == 0 and step < opts.max_steps:
                checkpoint()
            if callback is not None and callback(step, total) is False:
                interrupted = True
                break
    except KeyboardInterrupt:
        checkpoint()
        raise
    finally:
        if bar is not None:
            bar.close()
    if not interrupted and held:
        evals.append(held_out())
    # A finished run keeps its last checkpoint too, so that a resume can go on to more steps.
    checkpoint()
    if not interrupted:
        model.save_pretrained(str(out))
    result = TrainResult(
        out=out,
        steps=step,
        resumed_from=resumed_from,
        losses=losses,
        evals=evals,
        train_examples=len(tokenized),
        eval_examples=len(held),
        truncated=truncated,
        dropped=dropped,
        interrupted=interrupted,
        seconds=time.perf_counter() - started,
    )
    if not interrupted:
        tasks = sorted({e.task for e in examples})
        report = {
            **result.to_dict(),
            "base_model": base_lm.model_name_or_path,
            "device": device,
            "options": {**opts.plain(), "target_modules": list(opts.target_modules)},
            "fingerprint": fingerprint,
            "tasks": tasks,
        }
        if len(tasks) == 1:
            from hrefine.train.checking import eval_command

            # How to check the adapter in the method that loads it (docs/train.md).
            base = None if lm is None else base_lm.model_name_or_path
            report["eval_command"] = eval_command(tasks[0], out, lm=base)
        write_text(out / REPORT, json.dumps(report, indent=2) + "\n")
    return result
