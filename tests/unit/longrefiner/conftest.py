"""LongRefiner structure fixtures: every L-Eval document, read once per session."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

LEVAL = ("cuad", "nq", "qasper", "quality")


@pytest.fixture(scope="session")
def leval_docs(shared_data: Path) -> dict[str, dict[str, str]]:
    """``{task: {doc_id: document}}`` for the L-Eval tasks, as the loaders read them."""
    from hrefine.eval.loaders import load_dataset

    docs: dict[str, dict[str, str]] = {}
    for task in LEVAL:
        items: list[Any] = load_dataset(f"leval-{task}", data_dir=shared_data)
        docs[task] = {item.doc_id: item.document for item in items}
    return docs


class WordTokenizer:
    """A whitespace tokenizer: one id a word (enough for the format's 8-token anchors)."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.words: list[str] = []

    def encode(self, text: str) -> list[int]:
        out = []
        for w in text.split():
            if w not in self.ids:
                self.ids[w] = len(self.words)
                self.words.append(w)
            out.append(self.ids[w])
        return out

    def decode(self, ids: list[int]) -> str:
        return " ".join(self.words[i] for i in ids)


@pytest.fixture
def words() -> WordTokenizer:
    return WordTokenizer()
