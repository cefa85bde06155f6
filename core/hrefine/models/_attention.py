"""Attention capture for :class:`~hrefine.models.lm.LMSession`: per-segment sums via forward hooks.

Each attention layer's weights are reduced to one running sum per named token span as soon as the
layer returns them, so capturing attention costs the memory of one layer's weights, not all.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from hrefine.errors import HrefineError

__all__ = ["KernelGate", "attention_hooks", "eager_attention"]


class KernelGate:
    """Ordinary passes over a model run side by side; a pass that switches its kernel runs alone.

    The kernel is a setting of the shared model config: switched while another thread's pass is
    half way, that pass would finish its layers on a kernel it did not prepare for (eager
    attention without the causal mask the fused kernel builds itself). Waiting switchers keep
    new ordinary passes out, so a switch is not starved.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._running = 0
        self._alone = False
        self._waiting = 0

    @contextmanager
    def shared(self) -> Iterator[None]:
        """An ordinary pass: runs alongside other ordinary passes."""
        with self._cond:
            while self._alone or self._waiting:
                self._cond.wait()
            self._running += 1
        try:
            yield
        finally:
            with self._cond:
                self._running -= 1
                if not self._running:
                    self._cond.notify_all()

    @contextmanager
    def alone(self) -> Iterator[None]:
        """A pass that switches the kernel: waits for the running passes, keeps others out."""
        with self._cond:
            self._waiting += 1
            try:
                while self._alone or self._running:
                    self._cond.wait()
            finally:
                self._waiting -= 1
            self._alone = True
        try:
            yield
        finally:
            with self._cond:
                self._alone = False
                self._cond.notify_all()


@contextmanager
def eager_attention(model: Any) -> Iterator[None]:
    """Run the model with the eager attention kernel inside the block, then restore its own.

    Only the eager kernel hands its weights to the hooks; fused kernels (``sdpa``) are several
    times faster on long prompts, so a model is loaded with one and switched for capture passes.
    Callers hold the model's :class:`KernelGate` ``alone()`` around it.
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
        message = f"found no attention layers with a layer index in {type(model).__name__}"
        raise HrefineError(message)

    def hook(module: Any, args: Any, output: Any) -> None:
        weights = output[1] if isinstance(output, tuple) and len(output) > 1 else None
        if weights is None:
            message = (
                "the attention layers returned no weights (this model's attention kernel "
                "cannot be switched to 'eager'); load the LM with attn_implementation='eager'"
            )
            raise HrefineError(message)
        # weights: (batch, heads, new tokens, all tokens); reduce now and let the tensor go.
        for name, start, end in segments:
            mass = weights[0, :, :, start:end].float().sum(dim=-1).mean()
            sums[name] = sums.get(name, 0.0) + mass
        layers[0] += 1

    return [m.register_forward_hook(hook) for m in modules]
