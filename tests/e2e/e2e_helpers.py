"""Helpers for the end-to-end adapter tests: real WikiTableQuestions pages and recording fakes.

The corpus is three small real Wikipedia pages from ``../shared/data/wtq`` (or ``$HREFINE_DATA``);
each test asks one of their questions, whose answer is in a table of one page.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from hrefine.testing import keyword_tokens
from langchain_core.callbacks import CallbackManagerForLLMRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.language_models import FakeListChatModel
from langchain_core.messages import BaseMessage
from langchain_core.retrievers import BaseRetriever
from pydantic import Field

#: The corpus: small pages, so the embedded model ranks every block in seconds on a CPU.
CORPUS = ("pages/202-216.html", "pages/203-170.html", "pages/202-79.html")
#: Questions (WTQ ids) whose answer is verbatim and unambiguous in one corpus page.
LRT_QUESTION = "nu-1760"  # which lrt station was open on 1 january 2013? -> Cheng Lim
CRATER_QUESTION = "nu-2703"  # latitude of the crater with the smallest diameter -> 7.0° N
#: Token budget of the pruned context (all retrieved pages together).
BUDGET = 1024


def load_question(data: Path, qid: str) -> dict[str, Any]:
    """The WTQ question ``qid`` (question, answers, doc...)."""
    for line in (data / "wtq" / "questions.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row["id"] == qid:
            return row  # type: ignore[no-any-return]
    msg = f"question {qid} not in {data / 'wtq' / 'questions.jsonl'}"
    raise KeyError(msg)


def load_corpus(data: Path) -> list[tuple[str, str]]:
    """``(doc path, raw HTML)`` of each corpus page."""
    return [(doc, (data / "wtq" / doc).read_text(encoding="utf-8")) for doc in CORPUS]


def normalize(text: str) -> str:
    """Case-folded, whitespace-collapsed text (for answer matching)."""
    return " ".join(text.casefold().split())


def contains_answer(text: str, answers: list[str]) -> bool:
    """True when every answer string occurs in ``text`` (case and spacing ignored)."""
    hay = normalize(text)
    return all(normalize(a) in hay for a in answers)


_TAG_RE = re.compile(r"<[^>]+>")


class PagesRetriever(BaseRetriever):
    """An in-memory base retriever over whole HTML pages: query-word overlap, top ``k``."""

    documents: list[Document]
    k: int = 3

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        words = set(keyword_tokens(query))

        def overlap(doc: Document) -> int:
            return len(words & set(keyword_tokens(_TAG_RE.sub(" ", doc.page_content))))

        return sorted(self.documents, key=overlap, reverse=True)[: int(kwargs.get("k", self.k))]


class RecordingChatModel(FakeListChatModel):
    """A fake chat model that records the messages it was called with."""

    received: list[list[BaseMessage]] = Field(default_factory=list)

    def _call(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> str:
        self.received.append(list(messages))
        return super()._call(messages, stop, run_manager, **kwargs)


#: How far the leaf holding an end-to-end test's answer must lead every leaf without it (cosine).
#: bfloat16 and float32 vectors of the default embedder differ by about 1e-3 in a cosine, so a
#: lead of 0.02 cannot flip with the compute path, the batch or the CPU.
ANSWER_MARGIN = 0.02


def answer_lead(tree: Any, question: str, answer: str) -> float:
    """How far the best leaf of a RAPTOR ``tree`` (a :class:`hrefine.raptor.RaptorTree`) that
    holds ``answer`` leads the best leaf that does not, in cosine with ``question``."""
    leaves = [r for r in tree.retrieve(question, k=None, max_tokens=None) if r.layer == 0]
    holding = [r.score for r in leaves if answer in r.text]
    others = [r.score for r in leaves if answer not in r.text]
    assert holding and others
    return max(holding) - max(others)
