"""Fixtures for the HtmlRAG tests: hand-made broken pages, real WTQ pages and a scripted LM."""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

PAGES = Path(__file__).resolve().parents[2] / "data" / "html"


@pytest.fixture(scope="session")
def pages() -> Path:
    """Folder of the small hand-made pages in tests/data/html."""
    return PAGES


@pytest.fixture(scope="session")
def wtq(shared_data: Path) -> dict[str, Any]:
    """WTQ questions and a page loader (pages read once)."""
    folder = shared_data / "wtq"
    questions = [json.loads(line) for line in (folder / "questions.jsonl").open()]
    cache: dict[str, bytes] = {}

    def page(doc: str) -> bytes:
        if doc not in cache:
            cache[doc] = (folder / doc).read_bytes()
        return cache[doc]

    return {"questions": questions, "page": page, "folder": folder}


class FakeTokenizer:
    """Splits text into tags' pieces, words, digits and single characters; ids grow as seen."""

    _PIECE = re.compile(r"[a-z]+|\d+|\s+|.", re.I)

    def __init__(self) -> None:
        self.vocab: dict[str, int] = {}

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        return [self.vocab.setdefault(p, len(self.vocab)) for p in self._PIECE.findall(text)]


class FakeSession:
    """A KV-cache session whose next-token scores hash the whole sequence so far."""

    def __init__(self, lm: FakeLM) -> None:
        self.lm = lm
        self.ids: list[int] = []
        self.prefilled_tokens = 0

    @property
    def length(self) -> int:
        return len(self.ids)

    def append(self, text: str, segment: str | None = None) -> None:
        self.append_ids(self.lm.tokenizer.encode(text))

    def append_ids(self, ids: Sequence[int]) -> None:
        self.ids.extend(int(i) for i in ids)
        self.prefilled_tokens += len(ids)

    def checkpoint(self) -> int:
        return self.length

    def rollback(self, length: int) -> None:
        assert 0 <= length <= self.length
        del self.ids[length:]

    def token_probs(self, candidate_ids: Sequence[int]) -> np.ndarray:
        self.lm.calls.append(self.length)
        key = zlib.crc32(np.asarray(self.ids, dtype=np.int64).tobytes())
        logits = np.array(
            [(zlib.crc32(f"{key}:{c}".encode()) % 1000) / 100.0 for c in candidate_ids]
        )
        probs = np.exp(logits - logits.max())
        return probs / probs.sum()


class FakeLM:
    """The LocalLM surface the token-tree scorer uses, with no model behind it."""

    def __init__(self) -> None:
        self.tokenizer = FakeTokenizer()
        self.calls: list[int] = []  # session length at each token_probs call
        self.sessions: list[FakeSession] = []

    def chat_prompt(self, user: str, system: str | None = None) -> str:
        return f"<|user|>{user}<|assistant|>"

    def session(self) -> FakeSession:
        s = FakeSession(self)
        self.sessions.append(s)
        return s


@pytest.fixture
def fake_lm() -> FakeLM:
    """A fresh scripted LM."""
    return FakeLM()
