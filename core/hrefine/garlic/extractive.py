"""GARLIC's no-model stand-in LLM: the default when no LLM is given.

Measured against SmolLM2 and Qwen2.5-Coder-1.5B on HotpotQA and Qasper (docs/garlic.md), an LLM
added nothing the stand-in does not: the same share of questions with both supporting paragraphs
kept, or within one question, at every budget. It needs no model and builds a 5,000-word paper's
graph in seconds where SmolLM2 took minutes on 2 CPU cores, and it writes no sentence that is
not in the source. With it the graph has embedding edges and the search runs in prompt-only mode
(no attention, no KV cache); pass ``lm=`` a LocalLM or a model name for the paper's LLM-built
graph.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from hrefine._prompt_slot import slot_text
from hrefine._question_words import QUESTION_STOP_WORDS
from hrefine.errors import ConfigError, InputTypeError
from hrefine.garlic.options import SEARCH_PROMPT, SUMMARY_PROMPT, GarlicOptions
from hrefine.garlic.readers import INFORMATION_MARK, QUESTION_MARK

__all__ = ["COPIES", "ExtractiveGarlicLM", "copied_inputs", "default_search_lm"]

#: Metadata key of a summary point the no-model LM wrote: the ids of the input nodes whose text
#: it copies (:func:`copied_inputs`). Its documents are theirs; its edges still go to every
#: input of its batch (the search reads those).
COPIES = "hrefine_copies"

_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+")
_WORD = re.compile(r"[a-z0-9]+")
#: Words the Yes/No rule ignores in a question.
_STOP_WORDS = QUESTION_STOP_WORDS | {"their"}


class ExtractiveGarlicLM:
    """A no-model stand-in for GARLIC's LLM (``str -> str``), for quick benchmark rows and tests.

    - **Summary prompts** (``summary_prompt`` with its inputs, one a line): one ``*`` bullet per
      two consecutive inputs, made of the first sentence of each, so every level halves and the
      graph converges.
    - **Search prompts** (``search_prompt`` first): ``"Yes"`` when every content word of the
      question (lower-cased, stop words left out) appears in the information, else ``"No"``.

    Parameters
    ----------
    summary_prompt:
        The summary template the graph uses (``{points}`` marks the inputs).
    search_prompt:
        The Yes/No instruction the search uses.
    """

    __name__ = "extractive"
    name = "extractive"

    def __init__(
        self,
        summary_prompt: str = SUMMARY_PROMPT,
        search_prompt: str = SEARCH_PROMPT,
    ) -> None:
        if "{points}" not in summary_prompt:
            msg = "summary_prompt must contain '{points}', where the inputs go"
            raise ConfigError(msg)
        self.head, _, self.tail = summary_prompt.partition("{points}")
        self.search_prompt = search_prompt

    def inputs(self, prompt: str) -> list[str]:
        """The input lines a summary prompt holds."""
        body = slot_text(prompt, self.head, self.tail)
        return [line.strip() for line in body.split("\n") if line.strip()]

    def __call__(self, prompt: str) -> str:
        """A bullet summary, or ``"Yes"``/``"No"`` for a search prompt."""
        if not isinstance(prompt, str):
            msg = f"prompt must be a str, got {type(prompt).__name__}"
            raise InputTypeError(msg)
        if prompt.startswith(self.search_prompt) and QUESTION_MARK in prompt:
            return self.answer(prompt)
        return "\n".join(f"* {p}" for p, _ in _pairs(self.inputs(prompt)))

    @staticmethod
    def answer(prompt: str) -> str:
        """The word-overlap Yes/No rule on a search prompt."""
        rest = prompt.split(QUESTION_MARK, 1)[1]
        question, _, information = rest.partition(INFORMATION_MARK)
        wanted = {w for w in _WORD.findall(question.lower()) if w not in _STOP_WORDS}
        have = set(_WORD.findall(information.lower()))
        return "Yes" if wanted and wanted <= have else "No"


def _pairs(inputs: Sequence[str]) -> list[tuple[str, tuple[int, ...]]]:
    """Each bullet :class:`ExtractiveGarlicLM` writes over ``inputs`` (the first sentences of
    two consecutive non-blank inputs), with the indexes of those inputs."""
    kept = [(i, text.strip()) for i, text in enumerate(inputs) if text.strip()]
    firsts = [(i, _SENTENCE_END.split(text, maxsplit=1)[0]) for i, text in kept]
    return [
        (" ".join(f for _, f in firsts[k : k + 2]), tuple(i for i, _ in firsts[k : k + 2]))
        for k in range(0, len(firsts), 2)
    ]


def copied_inputs(inputs: Sequence[str], points: Sequence[str]) -> list[list[int]]:
    """For each point :class:`ExtractiveGarlicLM` wrote over ``inputs`` (a batch's input
    lines, in order), the indexes of the inputs whose text it copies: its bullet's pair (every
    pair of the same text, whitespace runs counting as one space), or every input where no
    bullet is that text (not one of its points)."""
    by_text: dict[str, list[int]] = {}
    for text, indexes in _pairs(inputs):
        by_text.setdefault(" ".join(text.split()), []).extend(indexes)
    every = list(range(len(inputs)))
    return [sorted(set(by_text.get(" ".join(p.split()), every))) for p in points]


def default_search_lm(graph: Any, options: GarlicOptions) -> Any:
    """The LLM a searcher takes when none is given (nor in its options): the embedded SmolLM2
    for a graph an LM built (attention edges: it is searched as it was built), else the
    no-model stand-in with the options' prompts."""
    if getattr(graph, "edge_mode", "embedding") == "attention":
        from hrefine.models import default_lm

        return default_lm()
    return ExtractiveGarlicLM(options.summary_prompt, options.search_prompt)
