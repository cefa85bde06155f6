"""The passes of a :class:`~hrefine.models.local_lm.LocalLM` through its model: one forward
pass after a KV cache (with attention capture), and batched generation.

Both run through the LM's :class:`~hrefine.models._gate.ModelGate` under the resolved
adapter; torch and transformers are imported on first use.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any

from hrefine.errors import ConfigError, EmptyInputError, InputTypeError
from hrefine.models._adapters import AdapterChoice
from hrefine.models._attention import attention_hooks, eager_attention
from hrefine.models.device import batch_size_for
from hrefine.models.lm_session import ForwardResult

if TYPE_CHECKING:
    from hrefine.models.local_lm import LocalLM

__all__ = ["forward_pass", "generate_batched"]


def forward_pass(
    lm: LocalLM,
    ids: Sequence[int],
    cache: Any,
    *,
    adapter: AdapterChoice,
    capture: Sequence[tuple[str, int, int]] | None,
) -> ForwardResult:
    """:meth:`LocalLM.forward <hrefine.models.local_lm.LocalLM.forward>` (see there)."""
    import torch

    new = [int(i) for i in ids]
    if not new:
        msg = "forward() got no token ids; pass at least one"
        raise EmptyInputError(msg)
    state = lm.resolve_adapter(adapter)
    lm._load()
    sums: dict[str, Any] = {}
    layers = [0]
    alone = bool(capture)  # with no span to measure, there is nothing to capture
    with lm._gate.hold(state, alone=alone):
        model = lm._model
        hooks = attention_hooks(model, list(capture), sums, layers) if capture else []
        kernel = eager_attention(model) if alone else nullcontext()
        try:
            with kernel, torch.no_grad():
                out = model(
                    input_ids=torch.tensor([new], device=lm.device),
                    use_cache=True,
                    **{lm._cache_key: cache},
                    **lm._logits_kwargs,
                )
        finally:
            for hook in hooks:
                hook.remove()
    logits, cache = out.logits[0, -1].float(), getattr(out, lm._cache_key)
    if capture is None:
        return ForwardResult(cache, logits)
    if capture and layers[0] == 0:
        msg = (
            "no attention weights came back from the model's attention layers; load the LM "
            "with attn_implementation='eager'"
        )
        raise ConfigError(msg)
    attention = {name: float(value) / layers[0] for name, value in sums.items()}
    return ForwardResult(cache, logits, attention)


def generate_batched(
    lm: LocalLM,
    prompts: str | Sequence[str],
    *,
    max_new_tokens: int,
    system: str | None,
    chat: bool,
    temperature: float,
    seed: int,
    batch_size: int | None,
    adapter: AdapterChoice,
    stop: Sequence[str] | None,
) -> list[str]:
    """:meth:`LocalLM.generate <hrefine.models.local_lm.LocalLM.generate>` (see there)."""
    import torch
    from transformers import GenerationConfig

    items = [prompts] if isinstance(prompts, str) else list(prompts)
    state = lm.resolve_adapter(adapter)
    if not items:
        return []
    if max_new_tokens < 1:
        msg = f"max_new_tokens must be at least 1, got {max_new_tokens}"
        raise ConfigError(msg)
    # Checked here: a negative temperature sampled greedily, batch_size 0 took the device's,
    # and a None prompt failed inside the chat template.
    if (
        isinstance(temperature, bool)
        or not isinstance(temperature, (int, float))
        or not (0 <= temperature < float("inf"))
    ):
        msg = f"temperature must be a number >= 0 (0: greedy), got {temperature!r}"
        raise ConfigError(msg)
    if batch_size is not None and (isinstance(batch_size, bool) or batch_size < 1):
        msg = f"batch_size must be at least 1 or None (the device's), got {batch_size!r}"
        raise ConfigError(msg)
    for k, p in enumerate(items):
        if not isinstance(p, str):
            msg = f"prompt {k} is a {type(p).__name__}; prompts must be strings"
            raise InputTypeError(msg)
    encoded = [lm._prompt_ids(p, chat=chat, system=system) for p in items]
    tok, pad = lm.tokenizer, lm.pad_token_id
    eos = lm.model.generation_config.eos_token_id
    config = GenerationConfig(
        max_new_tokens=max_new_tokens,
        do_sample=temperature > 0,
        temperature=temperature if temperature > 0 else 1.0,
        top_k=0 if temperature > 0 else 50,
        top_p=1.0,
        pad_token_id=pad,
        eos_token_id=eos if eos is not None else tok.eos_token_id,
        stop_strings=list(stop) if stop else None,
    )
    # Stop strings are matched on the decoded text, so generate needs the tokenizer.
    extra = {"tokenizer": tok} if stop else {}
    size = batch_size or batch_size_for(lm.device)
    order = sorted(range(len(items)), key=lambda i: -len(encoded[i]))
    outputs = [""] * len(items)
    devices = [torch.device(lm.device).index or 0] if lm.device.startswith("cuda") else []
    for start in range(0, len(order), size):
        chunk = order[start : start + size]
        width = max(len(encoded[i]) for i in chunk)
        ids = [[pad] * (width - len(encoded[i])) + encoded[i] for i in chunk]
        mask = [[0] * (width - len(encoded[i])) + [1] * len(encoded[i]) for i in chunk]
        input_ids = torch.tensor(ids, device=lm.device)
        attention_mask = torch.tensor(mask, device=lm.device)
        with (
            lm._gate.hold(state, alone=temperature > 0),
            torch.random.fork_rng(devices=devices),
            torch.no_grad(),
        ):
            torch.manual_seed(seed)
            out = lm._model.generate(
                input_ids=input_ids,
                attention_mask=attention_mask,
                generation_config=config,
                **extra,
            )
        for row, index in zip(out, chunk, strict=True):
            outputs[index] = tok.decode(row[width:], skip_special_tokens=True).strip()
    return outputs
