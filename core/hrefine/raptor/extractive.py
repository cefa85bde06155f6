"""RAPTOR's default summariser: sentences of the cluster's texts, written by no model.

An extract never invents a fact, and a tree of extracts builds a 5,000-word paper in seconds on
2 CPU cores, where the embedded SmolLM2-135M takes minutes. Measured on every document of the
dev data (``benchmarks/never_behind.py``, tuning half, NQ + CUAD + Qasper at 512/1024/2048
tokens), leading sentences did best: 103 question-budget hits, against 95 for the most central
sentences and 99 for no summaries at all. Pass an LLM (``llm=``) for written summaries.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any, Literal

from hrefine._prompt_slot import slot_text
from hrefine.budget import TokenCounter, get_counter
from hrefine.errors import ConfigError, InputTypeError
from hrefine.models.lexical import BM25Scorer, lexical_tokens
from hrefine.raptor.options import DEFAULT_PROMPT
from hrefine.repeats import sentences

__all__ = ["PICKS", "ExtractiveSummariser", "sentences"]

#: How an extract picks its sentences.
PICKS = ("central", "leading")
_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")


class ExtractiveSummariser:
    """A no-LLM summariser: sentences of the texts being summarised, in their order.

    It reads the texts out of the summary prompt (what the ``prompt`` template puts around
    ``{context}`` is removed; the texts are its blank-line separated paragraphs) and keeps
    sentences while they fit ``max_tokens``:

    - ``pick="leading"`` (default): the first sentence of every text, then the second ones,
      and so on;
    - ``pick="central"``: the sentences whose content words recur most in the cluster's
      *other* texts first (each word counted once per text, divided by the square root of the
      sentence's word count), so the extract holds what the cluster has in common. It
      retrieved worse on the dev data's tuning half (see the module docstring).

    Parameters
    ----------
    prompt:
        The summary prompt template the tree uses (``{context}`` marks the texts).
    tokenizer:
        Counts the summary's tokens (anything :func:`hrefine.budget.get_counter` accepts).
    max_tokens:
        Longest summary, in tokens (the tree's ``summary_tokens``).
    pick:
        ``"central"`` or ``"leading"``.
    """

    __name__ = "extractive"

    def __init__(
        self,
        prompt: str = DEFAULT_PROMPT,
        *,
        tokenizer: Any = None,
        max_tokens: int = 100,
        pick: Literal["central", "leading"] = "leading",
    ) -> None:
        if not isinstance(prompt, str) or "{context}" not in prompt:
            msg = "prompt must be a string containing '{context}', where the texts to summarise go"
            raise ConfigError(msg)
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            msg = f"max_tokens must be a positive int, got {max_tokens!r}"
            raise ConfigError(msg)
        if pick not in PICKS:
            msg = f"pick must be one of {', '.join(map(repr, PICKS))}, got {pick!r}"
            raise ConfigError(msg)
        self.head, _, self.tail = prompt.partition("{context}")
        self.counter: TokenCounter = get_counter(tokenizer)
        self.max_tokens = max_tokens
        self.pick = pick

    def texts(self, prompt: str) -> list[str]:
        """The texts a summary prompt asks to summarise (its context's paragraphs)."""
        context = slot_text(prompt, self.head, self.tail)
        return [p.strip() for p in _PARAGRAPH_BREAK.split(context) if p.strip()]

    def __call__(self, prompt: str) -> str:
        """The extract for ``prompt``; empty only when the prompt holds no text at all."""
        if not isinstance(prompt, str):
            msg = f"prompt must be a str, got {type(prompt).__name__}"
            raise InputTypeError(msg)
        texts = self.texts(prompt)
        split = [sentences(t) for t in texts]
        flat = [(i, j) for i, text in enumerate(split) for j in range(len(text))]
        counts = self.counter.count_many([split[i][j] for i, j in flat])
        costs = dict(zip(flat, counts, strict=True))
        chosen: set[tuple[int, int]] = set()
        used = 0
        for i, j in self._order(split, flat):
            if used + costs[(i, j)] + 1 <= self.max_tokens:
                chosen.add((i, j))
                used += costs[(i, j)] + 1  # one for the joining space
        if not chosen:  # every sentence is too long: the start of the first text
            return self._cut(texts[0]) if texts else ""
        return self._cut(" ".join(split[i][j] for i, j in sorted(chosen)))

    def _order(
        self, sentences: list[list[str]], flat: list[tuple[int, int]]
    ) -> list[tuple[int, int]]:
        """The sentences in the order they are offered to the extract."""
        if self.pick == "leading":
            return sorted(flat, key=lambda ij: (ij[1], ij[0]))
        stop = BM25Scorer()._stop()
        words = {
            ij: [w for w in lexical_tokens(sentences[ij[0]][ij[1]]) if w not in stop] for ij in flat
        }
        per_text = [
            set().union(*(words[(i, j)] for j in range(len(s)))) for i, s in enumerate(sentences)
        ]
        spread = Counter(w for vocab in per_text for w in vocab)

        def centrality(ij: tuple[int, int]) -> float:
            own = set(words[ij])
            if not own:
                return 0.0
            # Texts other than the sentence's own that share each of its words.
            shared = sum(spread[w] - 1 for w in own)
            return shared / math.sqrt(len(own))

        return sorted(flat, key=lambda ij: (-centrality(ij), ij[1], ij[0]))

    def _cut(self, text: str) -> str:
        """``text`` cut at a word boundary to ``max_tokens``."""
        if self.counter.count(text) <= self.max_tokens:
            return text
        words = text.split()
        lo, hi = 0, len(words)  # words[:lo] fit
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.counter.count(" ".join(words[:mid])) <= self.max_tokens:
                lo = mid
            else:
                hi = mid - 1
        return " ".join(words[:lo])
