"""The readers of GARLIC's search: where each visited node's attention to the query and each
Yes/No answer come from.

- :class:`SessionReader` (attention mode): a KV-cached :class:`~hrefine.models.LMSession`
  over the first-turn prompt, read node by node; the Yes/No question is rolled back after
  each answer.
- :class:`PromptReader` (prompt-only mode): the whole prompt to a text LLM at every step, its
  reply's first word read as Yes or No.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from hrefine.budget import TokenCounter
from hrefine.errors import ConfigError
from hrefine.models.text_generator import TextGenerator

__all__ = ["PromptReader", "Reader", "SessionReader", "Verdict", "parse_yes_no", "search_prompt"]

#: Stands in for the user turn when the chat template is split around it.
_MARK = "\u2063GARLIC-USER-TURN\u2063"
#: Markers of the search prompt (the no-model stand-in reads the question between them).
QUESTION_MARK = "\n\nQuestion:\n"
INFORMATION_MARK = "\n\nInformation:\n"
_WORD = re.compile(r"[A-Za-z]+")


@dataclass(frozen=True)
class Verdict:
    """One Yes/No answer from a reader."""

    p_yes: float
    p_no: float
    recompute_tokens: int
    answer: str | None = None


class Reader(Protocol):
    """Where attention and Yes/No answers come from (the seam tests substitute)."""

    #: Whether ``a_i`` is multiplied by the node's position in the prompt.
    positional: bool

    @property
    def prefilled_tokens(self) -> int:
        """Tokens run through the model so far."""
        ...

    def add(self, node_id: int, text: str) -> float:
        """Read one more visited node; return its raw attention to the query."""
        ...

    def ask(self) -> Verdict:
        """Ask whether the visited nodes answer the question."""
        ...

    def fits(self, text: str) -> bool:
        """Whether one more node of ``text`` still fits the model's context window."""
        ...


def search_prompt(instruction: str, query: str, texts: Sequence[str]) -> str:
    """The first-turn user message: instruction, question, then the visited texts, one a line.

    Parameters
    ----------
    instruction:
        The Yes/No instruction (``GarlicOptions.search_prompt``).
    query:
        The question.
    texts:
        The visited nodes' texts, in reading order.

    Returns
    -------
    str
        The message, exactly as the KV-cached session holds it.
    """
    return instruction + QUESTION_MARK + query + INFORMATION_MARK + "".join(t + "\n" for t in texts)


def parse_yes_no(reply: str) -> bool | None:
    """Read a Yes/No answer from the first word of ``reply``.

    ``"yes."``, ``"**Yes**"`` and ``"Yes, it can"`` are Yes; ``"No, because ..."`` is No;
    anything whose first word is neither gives ``None``.

    Parameters
    ----------
    reply:
        The LLM's text answer.

    Returns
    -------
    bool or None
        True for Yes, False for No, None when unreadable.
    """
    match = _WORD.search(reply)
    if match is None:
        return None
    # The first word must open the reply (only punctuation and markup may come before it).
    if any(ch.isalnum() for ch in reply[: match.start()]):
        return None
    word = match.group(0).lower()
    return True if word == "yes" else False if word == "no" else None


class SessionReader:
    """Attention mode: a KV-cached :class:`LMSession` over the first-turn prompt."""

    positional = True

    def __init__(self, lm: Any, instruction: str, query: str) -> None:
        parts = lm.chat_prompt(_MARK).split(_MARK)
        if len(parts) != 2:
            msg = (
                f"the chat template of {getattr(lm, 'name', 'the LM')} does not hold the user "
                "turn in one place; GARLIC's search needs a template with one user message"
            )
            raise ConfigError(msg)
        prefix, self._suffix = parts
        self._suffix_tokens = lm.count_tokens(self._suffix)
        self._lm = lm
        config = getattr(getattr(lm, "model", None), "config", None)
        self.window: int | None = getattr(config, "max_position_embeddings", None)
        self._session = lm.session()
        self._session.append(prefix + instruction + QUESTION_MARK)
        self._session.append(query, segment="query")
        self._session.append(INFORMATION_MARK)

    @property
    def prefilled_tokens(self) -> int:
        return int(self._session.prefilled_tokens)

    @property
    def session(self) -> Any:
        """The live session (its cache holds the prompt read so far)."""
        return self._session

    def add(self, node_id: int, text: str) -> float:
        result = self._session.append(text + "\n", segment=f"n{node_id}", capture_attention=True)
        return float((result.attention or {}).get("query", 0.0))

    def fits(self, text: str) -> bool:
        if not self.window:
            return True
        need = self._lm.count_tokens(text + "\n") + self._suffix_tokens + 2  # + the answer
        return bool(self._session.length + need <= self.window)

    def ask(self) -> Verdict:
        session = self._session
        mark = session.checkpoint()
        done = session.append(self._suffix)
        try:
            probs = session.choice_probs(["Yes", "No"])
        finally:
            session.rollback(mark)
        return Verdict(probs["Yes"], probs["No"], mark + done.new_tokens)


@dataclass(eq=False)
class PromptReader:
    """Prompt-only mode: the whole prompt to a text LLM at every step (no attention: a node's
    weight is its query ``similarity``)."""

    generator: TextGenerator
    instruction: str
    query: str
    similarity: np.ndarray
    counter: TokenCounter
    positional: bool = field(default=False, init=False)
    texts: list[str] = field(default_factory=list, init=False)
    prefilled_tokens: int = field(default=0, init=False)

    def add(self, node_id: int, text: str) -> float:
        self.texts.append(text)
        return float(self.similarity[node_id])

    def ask(self) -> Verdict:
        prompt = search_prompt(self.instruction, self.query, self.texts)
        reply = str(self.generator.generate(prompt))
        tokens = self.counter.count(prompt)
        self.prefilled_tokens += tokens
        yes = parse_yes_no(reply) is True
        return Verdict(float(yes), float(not yes), tokens, answer=reply)

    def fits(self, text: str) -> bool:
        return True  # the text LLM's window is unknown; max_tokens bounds the prompt
