"""Attention capture for :meth:`~hrefine.models.local_lm.LocalLM.forward`: per-segment sums.

Each attention layer's weights are reduced to one running sum per named token span as soon as the
layer returns them (in a forward hook), so capturing attention costs the memory of one layer's
weights, not all. Only the eager kernel returns weights; :func:`eager_attention` switches it in
for one pass, which the model's :class:`~hrefine.models._gate.ModelGate` runs alone.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from hrefine.errors import ConfigError

__all__ = ["attention_hooks", "eager_attention"]


@contextmanager
def eager_attention(model: Any) -> Iterator[None]:
    """Run the model with the eager attention kernel inside the block, then restore its own.

    Only the eager kernel hands its weights to the hooks; fused kernels (``sdpa``) are several
    times faster on long prompts, so a model is loaded with one and switched for capture passes.
    Callers hold the model's gate alone around it: the kernel is a setting every pass shares.
    """
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    config = base.config
    before = getattr(config, "_attn_implementation", "eager")
    if before == "eager":
        yield
        return
    switch = getattr(base, "set_attn_implementation", None)
    try:
        if switch is not None:
            switch("eager")
        else:
            config._attn_implementation = "eager"
        yield
    finally:
        if switch is not None:
            switch(before)
        else:
            config._attn_implementation = before


def attention_hooks(
    model: Any, segments: list[tuple[str, int, int]], sums: dict[str, Any], layers: list[int]
) -> list[Any]:
    """Register hooks that reduce each layer's attention weights to per-segment sums on the fly."""
    modules = [
        m
        for m in model.modules()
        if "Attention" in type(m).__name__ and isinstance(getattr(m, "layer_idx", None), int)
    ]
    if not modules:
        msg = (
            f"found no attention layers with a layer index in {type(model).__name__}; attention "
            "capture needs a transformers decoder whose attention modules carry `layer_idx`"
        )
        raise ConfigError(msg)

    def hook(module: Any, args: Any, output: Any) -> None:
        weights = output[1] if isinstance(output, tuple) and len(output) > 1 else None
        if weights is None:
            msg = (
                "the attention layers returned no weights (this model's attention kernel "
                "cannot be switched to 'eager'); load the LM with attn_implementation='eager'"
            )
            raise ConfigError(msg)
        # weights: (batch, heads, new tokens, all tokens); reduce now and let the tensor go.
        for name, start, end in segments:
            mass = weights[0, :, :, start:end].float().sum(dim=-1).mean()
            sums[name] = sums.get(name, 0.0) + mass
        layers[0] += 1

    return [m.register_forward_hook(hook) for m in modules]
