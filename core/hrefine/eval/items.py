"""One evaluation question over one document (:class:`EvalItem`), its document read lazily
from disk on first access."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from hrefine.errors import ConfigError

__all__ = ["AnswerMode", "DocFormat", "EvalItem", "read_document"]

DocFormat = Literal["html", "text"]
AnswerMode = Literal["all", "any"]


@lru_cache(maxsize=16)
def read_document(path: Path) -> str:
    """A document file's text: UTF-8, else cp1252 (a few pages of the shared data are)."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace")


@dataclass(frozen=True, kw_only=True)
class EvalItem:
    """One evaluation question over one document."""

    id: str
    """Question id, unique within the dataset."""
    question: str
    """The query passed to the compressor."""
    answers: tuple[str, ...]
    """Gold answers. With ``answer_mode="all"`` every answer is required (WTQ multi-valued
    answers); with ``"any"`` they are alternative references (L-Eval).
    """
    dataset: str
    """Dataset name (``"wtq"``, ``"leval-nq"``, …, or the JSONL's name)."""
    doc_id: str
    """Id of the document; questions over the same document share it."""
    doc_format: DocFormat = "text"
    """``"html"`` or ``"text"``."""
    answer_mode: AnswerMode = "all"
    """``"all"`` or ``"any"`` (see ``answers``)."""
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Dataset-specific fields: ``strict`` (WTQ), ``supporting_paragraphs`` and
    ``supporting_sentences`` (HotpotQA: gold texts), ``gold_text`` (articles), ``options``
    (QuALITY), and any unknown JSONL field.
    """
    doc_path: Path | None = None
    """File holding the document (read on first access), or None."""
    doc_text: str | None = field(default=None, repr=False)
    """The document itself, when held in memory."""

    @property
    def document(self) -> str:
        """The raw document (HTML or plain text), read from disk on first access."""
        if self.doc_text is not None:
            return self.doc_text
        if self.doc_path is None:
            msg = f"item {self.id!r} has neither doc_text nor doc_path"
            raise ConfigError(msg)
        return read_document(self.doc_path)
