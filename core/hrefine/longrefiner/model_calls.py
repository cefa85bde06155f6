"""How LongRefiner asks its model: the LocalLM (with each step's LoRA adapter) or a
prompt-only text LLM, resolved on first use, and each step's prompts sent as one batch.

:class:`ModelCalls` is a mixin of :class:`~hrefine.longrefiner.pipeline.LongRefiner`: the
attributes it reads are set by the refiner's ``__init__``.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Sequence
from typing import Any

from hrefine._encodable import encodable
from hrefine.longrefiner.options import LongRefinerOptions

__all__ = ["ADAPTERS", "ModelCalls", "answer_text"]

#: The option naming each model step's LoRA adapter.
ADAPTERS = {
    "query_analysis": "query_analysis_adapter",
    "structuring": "structuring_adapter",
    "global_selection": "selection_adapter",
}

# Step 3's answer is a list of titles: a local model stops once it is closed, or at the end of
# its first paragraph (SmolLM2 went on for all 256 tokens it was allowed over a paper's
# outline, 380-420 s on 2 CPU cores).
_LIST_END = ("]", "\n\n")

# What each generating step may write: the option holding its most new tokens, and the texts a
# LocalLM stops at (None: only its end of text).
_ANSWERS: dict[str, tuple[str, tuple[str, ...] | None]] = {
    "structuring": ("structure_max_new_tokens", None),
    "global_selection": ("selection_max_new_tokens", _LIST_END),
}


class ModelCalls:
    """The model side of a refiner: which model answers, under which adapter, in batches."""

    options: LongRefinerOptions
    _lock: threading.Lock
    _lm_obj: Any
    _adapter_names: dict[str, str]
    _generator: Any

    def _lm(self) -> Any:
        """The LocalLM of the model steps (None in prompt-only mode or with no model), with the
        configured adapters loaded."""
        lm = self.options.lm
        if lm is None:
            return None
        with self._lock:
            if self._lm_obj is None:
                if isinstance(lm, (str, os.PathLike)):
                    if str(lm) == "default":
                        from hrefine.models import default_lm

                        lm = default_lm()
                    else:
                        from hrefine.models._lm_name import local_lm_from

                        lm = local_lm_from(lm)
                names: dict[str, str] = {}
                for step, field in ADAPTERS.items():
                    path = getattr(self.options, field)
                    if path is not None:
                        from hrefine.models._adapter_folder import load_adapter_once

                        # The LM may be shared: each folder gets a name of its own there.
                        names[step] = load_adapter_once(lm, path, step, field)
                self._adapter_names = names
                self._lm_obj = lm
            return self._lm_obj

    def _adapter(self, step: str) -> str | None:
        """The name the step's adapter runs under in the LM (None: the base model)."""
        if getattr(self.options, ADAPTERS[step]) is None:
            return None
        self._lm()
        return self._adapter_names[step]

    def _text_llm(self) -> Any:
        """The prompt-only LLM as a TextGenerator (None without one)."""
        if self.options.llm is None:
            return None
        if self._generator is None:
            from hrefine.models._lm_name import model_or_name
            from hrefine.models.text_generator import TextGenerator, as_text_generator

            llm = model_or_name(self.options.llm)  # a model name or folder: its LocalLM
            # A framework model wrapped by an adapter comes as a TextGenerator, set up already.
            self._generator = (
                llm
                if isinstance(llm, TextGenerator)
                else as_text_generator(
                    llm,
                    max_concurrency=self.options.llm_concurrency,
                    retries=self.options.llm_retries,
                    timeout=self.options.llm_timeout,
                )
            )
        return self._generator

    def _ask_many(self, prompts: Sequence[tuple[str, str]], *, step: str) -> list[str]:
        """The model's answers to ``(system, user)`` prompts of one step: one batched
        ``generate`` on the LocalLM under the step's adapter, or the text LLM's calls side by
        side (its concurrency limit), the system message on top of each prompt. The step's
        ``_ANSWERS`` entry sets how much the model may write and where a LocalLM stops (a text
        LLM is not asked to)."""
        if not prompts:
            return []
        lm = self._lm()
        if lm is not None:
            limit, stop = _ANSWERS[step]
            out: list[str] = [""] * len(prompts)
            by_system: dict[str, list[int]] = {}
            for k, (system, _) in enumerate(prompts):
                by_system.setdefault(system, []).append(k)
            for system, ks in by_system.items():
                answers = lm.generate(
                    [prompts[k][1] for k in ks],
                    system=system,
                    max_new_tokens=getattr(self.options, limit),
                    adapter=self._adapter(step),
                    stop=stop,
                )
                for k, a in zip(ks, answers, strict=True):
                    out[k] = answer_text(a)
            return out
        llm = self._text_llm()
        return [answer_text(a) for a in llm.batch(_one_message(prompts))]

    async def _aask_many(self, prompts: Sequence[tuple[str, str]], *, step: str) -> list[str]:
        """:meth:`_ask_many` on the async path: a text LLM's native async calls, a LocalLM's
        batch in a worker thread."""
        if not prompts:
            return []
        if self._lm() is not None:
            return await asyncio.to_thread(self._ask_many, prompts, step=step)
        llm = self._text_llm()
        answers = await llm.abatch(_one_message(prompts))
        return [answer_text(a) for a in answers]

    def _step_on(self, step: str) -> bool:
        """The step runs: switched on, or on "auto" with a model given."""
        switch = getattr(self.options, step)
        return switch == "on" or (switch == "auto" and self.options.has_model)


def answer_text(raw: object) -> str:
    """A model's answer as text every writer takes: kept as raw output (in notes, the
    report, the JSON and the cache), so a lone surrogate in it becomes U+FFFD."""
    return encodable(str(raw))


def _one_message(prompts: Sequence[tuple[str, str]]) -> list[str]:
    """Each ``(system, user)`` prompt as one message for a text LLM: the system part on top."""
    return [f"{sy.strip()}\n\n{us}" for sy, us in prompts]
