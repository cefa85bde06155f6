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
from typing import Any

from hrefine._prompt_slot import slot_text
from hrefine._question_words import QUESTION_STOP_WORDS
from hrefine.errors import ConfigError, InputTypeError
from hrefine.garlic.options import SEARCH_PROMPT, SUMMARY_PROMPT, GarlicOptions
from hrefine.garlic.readers import INFORMATION_MARK, QUESTION_MARK

__all__ = ["ExtractiveGarlicLM", "default_search_lm"]

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
        firsts = [_SENTENCE_END.split(text, maxsplit=1)[0] for text in self.inputs(prompt)]
        pairs = [" ".join(firsts[i : i + 2]) for i in range(0, len(firsts), 2)]
        return "\n".join(f"* {p}" for p in pairs)

    @staticmethod
    def answer(prompt: str) -> str:
        """The word-overlap Yes/No rule on a search prompt."""
        rest = prompt.split(QUESTION_MARK, 1)[1]
        question, _, information = rest.partition(INFORMATION_MARK)
        wanted = {w for w in _WORD.findall(question.lower()) if w not in _STOP_WORDS}
        have = set(_WORD.findall(information.lower()))
        return "Yes" if wanted and wanted <= have else "No"


def default_search_lm(graph: Any, options: GarlicOptions) -> Any:
    """The LLM a searcher takes when none is given (nor in its options): the embedded SmolLM2
    for a graph an LM built (attention edges: it is searched as it was built), else the
    no-model stand-in with the options' prompts."""
    if getattr(graph, "edge_mode", "embedding") == "attention":
        from hrefine.models import default_lm

        return default_lm()
    return ExtractiveGarlicLM(options.summary_prompt, options.search_prompt)
