"""Step 1, dual-level query analysis: how local or global the information a query needs is.

With a :class:`~hrefine.models.LocalLM` the model's probabilities of answering ``[Local]`` and
``[Global]`` are read at the answer position (one forward pass, no generation) and turned into
the two weights ``softmax(P_local, P_global)``, as in the paper. Any other LLM is asked the
same question in text and its answer parsed; an answer that names neither label falls back to
the configured weights and says so.
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Any

import hrefine.longrefiner.prompts as prompts
from hrefine.longrefiner.options import LongRefinerOptions

__all__ = ["QueryAnalysis", "analysis_prompt", "fixed_analysis", "parse_analysis", "weights_of"]

_LABEL = re.compile(r"\b(local|global)\b", re.IGNORECASE)


@dataclasses.dataclass(frozen=True)
class QueryAnalysis:
    """The outcome of step 1.

    Attributes
    ----------
    p_local, p_global:
        The model's probabilities of the two labels (renormalised over the two), or the
        label a text answer named (1 and 0), or the configured weights when step 1 is off.
    w_local, w_global:
        The weights of the local and the global score: ``softmax(p_local, p_global)`` when
        the model answered, else ``1 - global_weight`` and ``global_weight``.
    source:
        ``"lm"`` (choice probabilities), ``"llm"`` (a parsed text answer), ``"off"`` or
        ``"fallback"`` (the model's answer named neither label).
    raw:
        A text LLM's answer, kept as it came.
    """

    p_local: float
    p_global: float
    w_local: float
    w_global: float
    source: str
    raw: str | None = None

    @property
    def label(self) -> str:
        """``"local"`` or ``"global"``: the larger weight (local on a tie)."""
        return "global" if self.w_global > self.w_local else "local"


def weights_of(p_local: float, p_global: float) -> tuple[float, float]:
    """``softmax(p_local, p_global)`` (the paper's weights from the two probabilities)."""
    a, b = math.exp(p_local), math.exp(p_global)
    return a / (a + b), b / (a + b)


def fixed_analysis(
    options: LongRefinerOptions, source: str = "off", raw: str | None = None
) -> QueryAnalysis:
    """The configured weights, used when step 1 is off or its answer could not be read."""
    g = float(options.global_weight)
    return QueryAnalysis(1.0 - g, g, 1.0 - g, g, source, raw)


def analysis_prompt(question: str, options: LongRefinerOptions, *, tuned: bool) -> tuple[str, str]:
    """``(system, user)`` of step 1: the published prompt for the authors' adapter
    (``tuned``), else the instructions an untuned model needs."""
    user = options.analysis_user.format(question=question)
    if tuned:
        return options.analysis_system, user
    return prompts.ANALYSIS_INSTRUCTIONS, f"Query: {question}"


def from_probabilities(probs: dict[str, float]) -> QueryAnalysis:
    """A :class:`QueryAnalysis` from the model's probabilities of the two labels."""
    p_local, p_global = float(probs[prompts.CHOICES[0]]), float(probs[prompts.CHOICES[1]])
    total = p_local + p_global
    if total > 0:
        p_local, p_global = p_local / total, p_global / total
    w_local, w_global = weights_of(p_local, p_global)
    return QueryAnalysis(p_local, p_global, w_local, w_global, "lm")


def parse_analysis(answer: Any, options: LongRefinerOptions) -> QueryAnalysis:
    """Read a text LLM's step-1 answer: the first label it names (``[Local]``, ``Global``, in
    any case) sets the probabilities to 1 and 0; an answer naming neither falls back to the
    configured weights (source ``"fallback"``), keeping the answer."""
    text = answer if isinstance(answer, str) else str(answer)
    found = _LABEL.search(text)
    if found is None:
        return fixed_analysis(options, "fallback", text)
    local = found.group(1).lower() == "local"
    p_local, p_global = (1.0, 0.0) if local else (0.0, 1.0)
    w_local, w_global = weights_of(p_local, p_global)
    return QueryAnalysis(p_local, p_global, w_local, w_global, "llm", text)
