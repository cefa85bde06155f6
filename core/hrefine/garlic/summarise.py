"""One GARLIC summary level: batches packed to the token limit, summary points written and
parsed, and the weight of the edge from each point to each input of its batch.

Two writers stand behind the same calls:

- :class:`LocalWriter` runs a :class:`~hrefine.models.LocalLM`: prompts are counted in its own
  tokenizer with its chat template, and the attention each written point paid to each input is
  measured by replaying the prompt and the answer through an
  :class:`~hrefine.models.lm_session.LMSession` (the paper's edge weights);
- :class:`CallableWriter` runs any ``str -> str`` LLM (sync or async, or a
  :class:`~hrefine.models.text_generator.TextGenerator`): prompts are counted with the budget
  tokenizer, and edges come from embedding similarity, since such an LLM shows no attention.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hrefine.budget import TokenCounter
from hrefine.errors import ConfigError, GenerationError, ModelOutputError
from hrefine.garlic.extractive import ExtractiveGarlicLM
from hrefine.garlic.options import GarlicOptions
from hrefine.garlic.points import Point, parse_points
from hrefine.models.text_generator import TextGenerator, answer_text, as_text_generator

__all__ = [
    "RETRY_TEMPERATURE",
    "Batch",
    "CallableWriter",
    "LocalWriter",
    "Written",
    "edge_mode",
    "embedding_weights",
    "is_local_lm",
    "llm_generator",
    "make_writer",
    "normalise_rows",
    "one_line",
    "pack",
    "summary_prompt",
    "write_level",
]

#: Temperature of a retried summary call: greedy decoding would only repeat the failed answer.
RETRY_TEMPERATURE = 0.7
# Stands for the input nodes while the chat template is split around them.
_MARK = "\x00hrefine-garlic-points\x00"
# Characters of a failed answer quoted in an error message.
_QUOTE = 300


def one_line(text: str) -> str:
    """``text`` on one line: the prompt separates its input nodes by newlines."""
    return " ".join(text.split())


def summary_prompt(template: str, lines: Sequence[str]) -> str:
    """The summary prompt over ``lines`` (``{points}`` replaced literally: texts may hold
    braces of their own)."""
    return template.replace("{points}", "\n".join(lines))


def is_local_lm(lm: object) -> bool:
    """Whether ``lm`` is a :class:`~hrefine.models.LocalLM` (or shaped like one): it generates,
    opens sessions and formats chat prompts."""
    return all(callable(getattr(lm, name, None)) for name in ("generate", "session", "chat_prompt"))


def edge_mode(edges: str, lm: object) -> str:
    """``"attention"`` or ``"embedding"``: the ``edges`` setting resolved for ``lm``.

    Raises
    ------
    ConfigError
        ``edges="attention"`` with an LLM that shows no attention.
    """
    local = is_local_lm(lm)
    if edges == "auto":
        return "attention" if local else "embedding"
    if edges == "attention" and not local:
        msg = (
            f"edges='attention' needs a LocalLM, whose attention can be read; got a "
            f"{type(lm).__name__}. Pass edges='embedding' (or 'auto') for this LLM"
        )
        raise ConfigError(msg)
    return edges


@dataclass(frozen=True)
class Batch:
    """Consecutive nodes of one level summarised by one call."""

    index: int
    """Position of the batch in its level."""
    inputs: tuple[int, ...]
    """Ids of its input nodes, in document order."""
    lines: tuple[str, ...]
    """Their texts, one line each, as the prompt holds them."""
    prompt: str
    """The summary prompt (before any chat template)."""
    tokens: int
    """Tokens of the prompt as the writer sends it (with its chat template, for a LocalLM)."""


@dataclass(frozen=True)
class Written:
    """A batch's answer and its summary points."""

    answer: str
    points: list[Point]


class LocalWriter:
    """Summary calls on a :class:`~hrefine.models.LocalLM`, with attention edge weights.

    Parameters
    ----------
    lm:
        The model.
    options:
        The graph's settings (prompt, summary length, seed).
    """

    #: A LocalLM always writes its own points.
    extractive = False

    def __init__(self, lm: Any, options: GarlicOptions) -> None:
        self.lm = lm
        self.options = options
        self.name = str(getattr(lm, "name", type(lm).__name__))
        # The chat-templated prompt around the inputs, to replay it piece by piece.
        before, _, after = options.summary_prompt.partition("{points}")
        templated = str(lm.chat_prompt(before + _MARK + after))
        if templated.count(_MARK) != 1:
            msg = f"the chat template of {self.name} does not keep the prompt text as written"
            raise ConfigError(msg)
        self.head, self.tail = templated.split(_MARK)
        #: Tokens the attention sessions ran through the model.
        self.prefilled_tokens = 0

    def prompt_tokens(self, prompt: str) -> int:
        """Tokens of ``prompt`` in the chat template, as :meth:`write` sends it."""
        return len(self.lm.encode(self.lm.chat_prompt(prompt)))

    def line_tokens(self, lines: Sequence[str]) -> list[int]:
        """Tokens of each input line."""
        return [len(self.lm.encode(line)) for line in lines]

    def write(self, prompts: Sequence[str], attempt: int) -> list[str]:
        """Answers to ``prompts``: greedy on the first attempt, sampled (seeded) on retries."""
        opts = self.options
        return [
            answer_text(text, self.name)
            for text in self.lm.generate(
                list(prompts),
                max_new_tokens=opts.summary_tokens,
                temperature=0.0 if attempt == 0 else RETRY_TEMPERATURE,
                seed=opts.seed + attempt,
            )
        ]

    def attention(self, lines: Sequence[str], answer: str, points: Sequence[Point]) -> np.ndarray:
        """``(points, inputs)`` weights: each point's attention to each input, rows summing to 1.

        The prompt is pre-filled as the generation saw it, each input line as its own segment;
        then the answer, each point's span appended with its attention captured, so each
        point's tokens attend causally to the inputs and to the points before it, as they did
        while being written.
        """
        session = self.lm.session()
        session.append(self.head)
        last = len(lines) - 1
        for j, line in enumerate(lines):
            session.append(line if j == last else line + "\n", segment=f"in{j}")
        session.append(self.tail)
        mass = np.zeros((len(points), len(lines)), dtype=np.float64)
        done = 0
        for i, point in enumerate(points):
            if point.start > done:
                session.append(answer[done : point.start])  # a dropped line, a newline
            result = session.append(
                answer[point.start : point.end], segment=f"p{i}", capture_attention=True
            )
            seen = result.attention or {}
            mass[i] = [seen.get(f"in{j}", 0.0) for j in range(len(lines))]
            done = point.end
        self.prefilled_tokens += int(session.prefilled_tokens)
        return normalise_rows(mass)


class CallableWriter:
    """Summary calls on any ``str -> str`` LLM (sync or async) or a TextGenerator.

    Parameters
    ----------
    llm:
        The LLM.
    counter:
        The budget tokenizer's counter (the LLM's own tokenizer is not known).
    timeout:
        Seconds per try of a call (``llm_timeout``); see :func:`llm_generator`.
    """

    def __init__(self, llm: Any, counter: TokenCounter, *, timeout: float | None = 120.0) -> None:
        self.generator = llm_generator(llm, timeout)
        self.counter = counter
        self.name = str(self.generator.name)
        #: The no-model writer: its points are its inputs' own text, so one that holds no
        #: letter or digit is kept as written (asking again would give it back unchanged).
        self.extractive = isinstance(llm, ExtractiveGarlicLM)

    def prompt_tokens(self, prompt: str) -> int:
        """Tokens of ``prompt`` (budget tokenizer)."""
        return int(self.counter.count(prompt))

    def line_tokens(self, lines: Sequence[str]) -> list[int]:
        """Tokens of each input line (budget tokenizer)."""
        return [int(n) for n in self.counter.count_many(list(lines))]

    def write(self, prompts: Sequence[str], attempt: int) -> list[str]:
        """Answers to ``prompts``, sent concurrently (``attempt`` does not change the call).

        Each answer went through :func:`~hrefine.models.text_generator.answer_text`, the check
        every method makes: a dict or list answer is a GenerationError, never its repr.
        """
        del attempt
        return list(self.generator.batch(prompts))


Writer = LocalWriter | CallableWriter


def make_writer(lm: Any, options: GarlicOptions, counter: TokenCounter) -> Writer:
    """The writer for ``lm`` (a LocalLM, or any other LLM)."""
    if is_local_lm(lm):
        return LocalWriter(lm, options)
    return CallableWriter(lm, counter, timeout=options.llm_timeout)


def llm_generator(lm: Any, timeout: float | None) -> TextGenerator:
    """``lm`` as a TextGenerator whose every try of a call gives up after ``timeout`` seconds
    (the ``llm_timeout`` setting; None: no limit).

    A TextGenerator is used with its own settings, and a LocalLM-shaped model with none (a
    timed-out local batch would keep the device busy), as :func:`as_text_generator` makes it.
    """
    if isinstance(lm, TextGenerator) or (hasattr(lm, "generate") and hasattr(lm, "session")):
        return as_text_generator(lm)
    return as_text_generator(lm, timeout=timeout)


def pack(
    ids: Sequence[int], lines: Sequence[str], writer: Writer, options: GarlicOptions
) -> tuple[list[Batch], int]:
    """Pack one level's nodes, in order, into batches that fit ``batch_tokens``.

    A batch grows while its prompt's tokens plus ``summary_tokens`` stay within
    ``batch_tokens``: grown on the nodes' own token counts, then counted in full and grown or
    shrunk until the whole prompt fits exactly (token counts of pieces do not always add up).
    A node too long to fit even alone makes a batch of its own.

    Returns
    -------
    batches, oversized
        The batches, and how many of them are single nodes over the limit.
    """
    template, limit = options.summary_prompt, options.batch_tokens - options.summary_tokens
    overhead = writer.prompt_tokens(summary_prompt(template, []))
    counts = writer.line_tokens(lines)
    batches: list[Batch] = []
    oversized = 0
    i = 0
    while i < len(ids):
        j, estimate = i + 1, overhead + counts[i]
        while j < len(ids) and estimate + 1 + counts[j] <= limit:  # +1: the newline
            estimate += 1 + counts[j]
            j += 1
        prompt = summary_prompt(template, lines[i:j])
        tokens = writer.prompt_tokens(prompt)
        while j < len(ids) and tokens <= limit:  # the estimate may stop short: try one more
            longer = summary_prompt(template, lines[i : j + 1])
            more = writer.prompt_tokens(longer)
            if more > limit:
                break
            j, prompt, tokens = j + 1, longer, more
        while tokens > limit and j - i > 1:
            j -= 1
            prompt = summary_prompt(template, lines[i:j])
            tokens = writer.prompt_tokens(prompt)
        oversized += tokens > limit
        batches.append(Batch(len(batches), tuple(ids[i:j]), tuple(lines[i:j]), prompt, tokens))
        i = j
    return batches, oversized


def write_level(
    batches: Sequence[Batch], writer: Writer, options: GarlicOptions, level: int
) -> tuple[list[Written], int, int]:
    """Write the summary points of every batch of a level (all prompts sent together).

    An answer with no summary point (empty or garbled) is asked again, ``options.retries``
    times; the no-model writer's is taken as written instead (its inputs held no letter).

    Returns
    -------
    written, calls, retries
        Each batch's answer and points; LLM calls made; how many of them were retries.

    Raises
    ------
    GenerationError
        The LLM failed, or a batch still had no summary point after its retries (the message
        names the level and batch; ``__cause__`` is a ModelOutputError with the raw output).
    """
    prompts = [b.prompt for b in batches]
    answers = _write(writer, prompts, 0, level)
    points = [_points(writer, a) for a in answers]
    calls, retries = len(prompts), 0
    for attempt in range(1, options.retries + 1):
        failed = [k for k, found in enumerate(points) if not found]
        if not failed:
            break
        again = _write(writer, [prompts[k] for k in failed], attempt, level)
        calls += len(failed)
        retries += len(failed)
        for k, answer in zip(failed, again, strict=True):
            answers[k], points[k] = answer, _points(writer, answer)
    for k, found in enumerate(points):
        if not found:
            raw = answers[k]
            quoted = raw if len(raw) <= _QUOTE else raw[:_QUOTE] + "..."
            msg = (
                f"{writer.name} wrote no summary point for batch {k + 1} of {len(batches)} at "
                f"level {level} (inputs: {len(batches[k].inputs)} nodes of level {level - 1}) "
                f"in {options.retries + 1} tries; its last answer was {quoted!r} (the raw "
                "output is on this error's __cause__.raw_output). Use a model that follows "
                "the summary prompt, or raise retries"
            )
            cause = ModelOutputError(f"no summary point in: {quoted!r}", raw_output=raw)
            raise GenerationError(msg) from cause
    written = [Written(a, p) for a, p in zip(answers, points, strict=True)]
    return written, calls, retries


def _points(writer: Writer, answer: str) -> list[Point]:
    """The points of ``answer``; the no-model writer's, when none has a letter or digit, as
    written (its inputs held none: a document of punctuation, emoji or zero-width characters)."""
    points = parse_points(answer)
    if not points and getattr(writer, "extractive", False):
        points = parse_points(answer, any_text=True)
    return points


def _write(writer: Writer, prompts: list[str], attempt: int, level: int) -> list[str]:
    try:
        return writer.write(prompts, attempt)
    except GenerationError as exc:
        msg = f"summary calls of level {level} failed: {exc}"
        raise GenerationError(msg) from exc


def normalise_rows(mass: np.ndarray) -> np.ndarray:
    """Non-negative rows scaled to sum to 1; an all-zero row becomes uniform."""
    m = np.clip(np.asarray(mass, dtype=np.float64), 0.0, None)
    if m.size == 0:
        return m
    sums = m.sum(axis=1, keepdims=True)
    uniform = np.full_like(m, 1.0 / m.shape[1])
    safe = np.where(sums > 0, sums, 1.0)
    return np.asarray(np.where(sums > 0, m / safe, uniform))


def embedding_weights(points: np.ndarray, inputs: np.ndarray) -> np.ndarray:
    """``(points, inputs)`` weights ``max(cos, 0)`` from unit vectors, rows summing to 1."""
    cos = np.asarray(points, dtype=np.float64) @ np.asarray(inputs, dtype=np.float64).T
    return normalise_rows(np.clip(cos, 0.0, None))
