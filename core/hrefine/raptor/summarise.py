"""The summariser of a RAPTOR tree: any LLM as a checked, concurrent ``prompts -> summaries``.

A summary is stored only if the LLM returned text: an exception, a timeout or an empty answer
is retried (``llm_retries`` times) and then raised as :class:`GenerationError` naming the
cluster, and an answer that is not text (a dict, a number: the check every method shares,
:func:`~hrefine.models.text_generator.answer_text`) fails at once; none is ever kept as a
summary (the authors' code stores the error message as the summary).
All clusters of a layer go out together: concurrently for a callable or an API LLM, in batches
for a :class:`~hrefine.models.LocalLM`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from hrefine.errors import GenerationError
from hrefine.models._lm_name import model_or_name
from hrefine.models.text_generator import (
    TextGenerator,
    answer_text,
    as_text_generator,
    is_async_callable,
)
from hrefine.raptor.options import RaptorOptions

__all__ = ["EmptySummaryError", "Summariser", "summary_prompt"]


class EmptySummaryError(Exception):
    """The LLM answered with nothing but whitespace (a failed try, retried like an error)."""


def summary_prompt(template: str, texts: Sequence[str]) -> str:
    """The prompt that asks for a summary of ``texts`` (joined by blank lines).

    ``{context}`` is replaced literally: the texts may hold braces of their own.
    """
    return template.replace("{context}", "\n\n".join(texts))


def _checked(fn: Callable[[str], Any], name: str) -> Callable[[str], Any]:
    """``fn`` with its answer checked as every method's is (:func:`answer_text`: an answer
    that is not text fails at once), and an empty answer turned into a failed try."""
    if is_async_callable(fn):

        async def acall(prompt: str) -> str:
            return _non_empty(answer_text(await fn(prompt), name))

        return acall

    @functools.wraps(fn)
    def call(prompt: str) -> str:
        return _non_empty(answer_text(fn(prompt), name))

    return call


def _non_empty(text: str) -> str:
    if not text.strip():
        msg = "the LLM returned an empty summary"
        raise EmptySummaryError(msg)
    return text.strip()


class Summariser:
    """Summaries of clusters through ``llm``, checked.

    Parameters
    ----------
    llm:
        A ``str -> str`` callable (sync or async), a :class:`~hrefine.models.LocalLM`, a
        :class:`~hrefine.models.text_generator.TextGenerator` (used with its own settings), or
        None for :class:`~hrefine.raptor.ExtractiveSummariser` (no model: the leading
        sentences of the cluster's texts; pass ``default_lm()`` for the embedded SmolLM2-135M).
    options:
        The tree's options (prompt, system prompt, summary length, concurrency, retries,
        timeout).
    """

    def __init__(self, llm: Any, options: RaptorOptions) -> None:
        self.options = options
        self.generator = self._generator(llm, options)
        #: Summaries asked for (the stand-in's extracts too), with the re-asks of a batch or
        #: framework LLM's empty answers; a callable's own retries (after an error or an empty
        #: answer, inside its TextGenerator) are not counted.
        self.calls = 0
        from hrefine.raptor.extractive import ExtractiveSummariser  # lazily, as _generator

        #: No model writes: the summaries are the no-model stand-in's extracts.
        self.extractive = llm is None or isinstance(llm, ExtractiveSummariser)

    @staticmethod
    def _generator(llm: Any, options: RaptorOptions) -> TextGenerator:
        if llm is None:  # measured no worse than SmolLM2's summaries, and never invents
            from hrefine.raptor.extractive import ExtractiveSummariser

            llm = ExtractiveSummariser(
                options.prompt, tokenizer=options.tokenizer, max_tokens=options.summary_tokens
            )
        if isinstance(llm, TextGenerator):
            return llm
        llm = model_or_name(llm)  # "qwen2.5-coder-1.5b", a folder: its LocalLM
        if hasattr(llm, "generate") and hasattr(llm, "session"):  # a LocalLM
            generate = {"max_new_tokens": options.summary_tokens}
            if options.system_prompt:
                generate["system"] = options.system_prompt  # type: ignore[assignment]
            return as_text_generator(llm, generate_options=generate)
        if not callable(llm):
            return as_text_generator(llm)  # raises InputTypeError naming what it got
        name = getattr(llm, "__name__", type(llm).__name__)
        return TextGenerator(
            _checked(llm, name),
            max_concurrency=options.llm_concurrency,
            retries=options.llm_retries,
            timeout=options.llm_timeout,
            retry_on=(Exception,),
            name=name,
        )

    @property
    def llm_calls(self) -> int:
        """Summaries an LLM was asked for, counted as :attr:`calls` is (0 for the no-model
        stand-in: no model wrote its extracts)."""
        return 0 if self.extractive else self.calls

    @property
    def name(self) -> str:
        """The LLM's name (for stats and errors)."""
        return str(self.generator.name)

    def prompts(self, clusters: Sequence[Sequence[str]]) -> list[str]:
        """One summary prompt per cluster of texts."""
        return [summary_prompt(self.options.prompt, texts) for texts in clusters]

    def summarise(self, prompts: Sequence[str]) -> list[str]:
        """Summaries for ``prompts``, all sent at once (order kept).

        Empty answers from a batch or framework LLM (a callable's are retried call by call)
        are asked again, ``llm_retries`` times, before they count as a failure.
        """
        self.calls += len(prompts)
        out = [str(t) for t in self.generator.batch(prompts)]
        for _ in range(self.options.llm_retries):
            empty = [i for i, text in enumerate(out) if not text.strip()]
            if not empty:
                break
            self.calls += len(empty)
            for i, text in zip(
                empty, self.generator.batch([prompts[i] for i in empty]), strict=True
            ):
                out[i] = str(text)
        return self.check(out)

    async def asummarise(self, prompts: Sequence[str]) -> list[str]:
        """Async :meth:`summarise`."""
        self.calls += len(prompts)
        out = [str(t) for t in await self.generator.abatch(prompts)]
        for _ in range(self.options.llm_retries):
            empty = [i for i, text in enumerate(out) if not text.strip()]
            if not empty:
                break
            self.calls += len(empty)
            again = await self.generator.abatch([prompts[i] for i in empty])
            for i, text in zip(empty, again, strict=True):
                out[i] = str(text)
        return self.check(out)

    def check(self, summaries: Sequence[str]) -> list[str]:
        """``summaries`` stripped; an empty one (a batch LLM's) raises GenerationError."""
        out: list[str] = []
        for i, text in enumerate(summaries):
            try:
                out.append(_non_empty(text))
            except EmptySummaryError as exc:
                where = f"cluster {i + 1} of {len(summaries)}"
                msg = f"LLM {self.name} gave no summary for {where}: {exc}"
                raise GenerationError(msg) from exc
        return out
