"""The LoRA adapters of one LocalLM: which are loaded, and which one each call runs under.

A call runs under its own ``adapter=``, else the innermost ``using()`` block of the calling thread
or task, else the LM's default. The blocks live in a context variable rather than a thread-local,
so a block also covers the asyncio tasks it starts and the calls hrefine runs for it in executor
threads (those copy the caller's context). Switching the shared PEFT model between adapters is
:meth:`LoraAdapters.apply`, which the LM's :class:`~hrefine.models._gate.ModelGate` calls between
passes; nothing here runs the model.
"""

from __future__ import annotations

import contextvars
import enum
import inspect
from collections.abc import Hashable, Iterator
from contextlib import contextmanager
from typing import Any, Final, TypeAlias

from hrefine._optional import require
from hrefine.errors import ConfigError, InputTypeError

__all__ = ["INHERIT", "AdapterChoice", "LoraAdapters"]


class _Inherit(enum.Enum):
    INHERIT = "inherit"

    def __repr__(self) -> str:
        return "INHERIT"


#: ``adapter=`` default: the innermost ``LocalLM.using()`` block, else the LM's default adapter.
INHERIT: Final = _Inherit.INHERIT

#: What ``adapter=`` takes: an adapter name, ``None`` for the base model, or :data:`INHERIT`.
AdapterChoice: TypeAlias = "str | _Inherit | None"

# One stack of (LM scope, adapter) pairs per thread or task, innermost last.
_USING: contextvars.ContextVar[tuple[tuple[object, str | None], ...]] = contextvars.ContextVar(
    "hrefine_lora_using", default=()
)


class LoraAdapters:
    """Names, default and per-thread choice of one model's adapters; the PEFT calls."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.default: str | None = None
        self._freeze_on_switch = False
        self._scope = object()  # this model's key in the using() stacks

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state["_scope"]  # a copy is another model: blocks on the original do not cover it
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._scope = object()

    def resolve(self, adapter: AdapterChoice) -> str | None:
        """The adapter a call with ``adapter=`` runs under; validates a name."""
        if adapter is INHERIT:
            for scope, name in reversed(_USING.get()):
                if scope is self._scope:
                    return name
            return self.default
        if adapter is not None and not isinstance(adapter, str):
            msg = f"adapter must be an adapter's name (str) or None, got {type(adapter).__name__}"
            raise InputTypeError(msg)
        if adapter is not None and adapter not in self.names:
            msg = f"no adapter named {adapter!r}; loaded: {self.names}"
            raise ConfigError(msg)
        return adapter

    @contextmanager
    def using(self, adapter: AdapterChoice) -> Iterator[None]:
        """Push ``adapter`` on this thread's (or task's) stack for the block."""
        name = self.resolve(adapter)
        token = _USING.set((*_USING.get(), (self._scope, name)))
        try:
            yield
        finally:
            _USING.reset(token)

    def load(self, model: Any, path: str, name: str) -> Any:
        """Load the adapter at ``path`` into ``model`` (no pass may run); return the model.

        The first adapter wraps the base model in a ``PeftModel``; later ones are added to it.
        """
        peft = require("peft", "models")
        if name in self.names:
            msg = f"an adapter named {name!r} is already loaded; loaded: {self.names}"
            raise ConfigError(msg)
        if not self.names:
            model = peft.PeftModel.from_pretrained(
                model, path, adapter_name=name, is_trainable=False
            )
            # Newer PEFT unfreezes the adapter it activates unless asked not to.
            self._freeze_on_switch = (
                "inference_mode" in inspect.signature(model.set_adapter).parameters
            )
        else:
            model.load_adapter(path, adapter_name=name, is_trainable=False)
        self.names.append(name)
        return model

    def apply(self, model: Any, state: Hashable) -> None:
        """Put ``model`` in ``state``: an adapter's name, or ``None`` for the base model."""
        if not self.names:
            return  # a plain model has only the base state
        if state is None:
            model.base_model.disable_adapter_layers()
            return
        model.base_model.enable_adapter_layers()
        if self._freeze_on_switch:
            model.set_adapter(state, inference_mode=True)
        else:
            model.set_adapter(state)
