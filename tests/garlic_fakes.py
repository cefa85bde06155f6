"""Fakes and data for the GARLIC adapter tests (imported as ``garlic_fakes``).

The LLM is instant and deterministic: asked for summary points it writes one ``*`` bullet (the
first words) for every other input line, so each level shrinks; asked the search question it
says "Yes" once the information read holds ``FACT`` (a detail of the answer's paragraph that
no summary point keeps), else "No". The documents are the
paragraphs of a real HotpotQA item from the shared data.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hrefine.eval.loaders import hotpot_paragraph_text, load_dataset

#: Where the summary prompt's inputs end (its text after ``{points}``).
_AFTER_POINTS = "\n\nSplit your summary"
_INFORMATION = "\n\nInformation:\n"
#: The answer of the HotpotQA item the tests read.
ANSWER = "Animorphs"
#: What the fake LLM needs to have read to say Yes: from the answer's paragraph, past the
#: words a summary point keeps of its first sentence.
FACT = "Michael Grant"
#: The settings that make several batches and levels out of the item's paragraphs.
SMALL: dict[str, Any] = {"chunk_tokens": 64, "batch_tokens": 400, "summary_tokens": 48}


def garlic_llm(prompt: str) -> str:
    """What the fake LLM answers to a GARLIC summary or search prompt."""
    if _INFORMATION in prompt:
        information = prompt.split(_INFORMATION, 1)[1]
        return "Yes" if FACT in information else "No"
    body = prompt.split("\n\n", 1)[1].split(_AFTER_POINTS, 1)[0]
    lines = [line for line in body.split("\n") if line.strip()]
    return "\n".join("* " + " ".join(line.split()[:14]) for line in lines[::2])


def hotpot(data: Path) -> Any:
    """The first HotpotQA item of the shared data (its question's answer is ``ANSWER``)."""
    return load_dataset("hotpotqa", data_dir=data)[0]


def hotpot_paragraphs(data: Path) -> list[tuple[str, str]]:
    """``(title, text)`` of each paragraph of the first HotpotQA item."""
    item = hotpot(data)
    return [(p["title"], hotpot_paragraph_text(p)) for p in item.extra["paragraphs"]]
