"""Running hrefine's work inside the caller's LangChain run: the LLM calls a retriever's search
or a compressor makes report to the run's callbacks and keep the config of the chain around
them (configurable fields, recursion limit), on the sync and the async path."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from langchain_core.callbacks import Callbacks
from langchain_core.runnables.config import RunnableConfig, ensure_config, set_config_context
from langchain_core.runnables.utils import coro_with_context

__all__ = ["arun_in", "run_in"]

_T = TypeVar("_T")


def _config(callbacks: Callbacks) -> RunnableConfig:
    """The config of the run around the call with ``callbacks``, without that run's name and
    id, which are not the LLM calls' (what ``patch_config`` does, for a list of handlers too)."""
    config = ensure_config()
    config["callbacks"] = callbacks
    config.pop("run_name", None)
    config.pop("run_id", None)
    return config


def run_in(callbacks: Callbacks, fn: Callable[..., _T], *args: Any) -> _T:
    """``fn(*args)`` with ``callbacks`` as its LLM calls' parent (None: as it is)."""
    if callbacks is None:
        return fn(*args)
    with set_config_context(_config(callbacks)) as context:
        return context.run(fn, *args)


async def arun_in(callbacks: Callbacks, coro: Coroutine[Any, Any, _T]) -> _T:
    """``await coro`` with ``callbacks`` as its LLM calls' parent (None: as it is)."""
    if callbacks is None:
        return await coro
    with set_config_context(_config(callbacks)) as context:
        return await coro_with_context(coro, context)
