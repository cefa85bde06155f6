"""The readers of each dataset of the shared evaluation data (WTQ, L-Eval's NQ, CUAD, Qasper
and QuALITY, HotpotQA, articles): its questions file to :class:`~hrefine.eval.items.EvalItem`
objects, and the helpers the user's own JSONL is read with too."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from hrefine._json_lines import json_object
from hrefine.errors import DatasetUnavailableError
from hrefine.eval.items import DocFormat, EvalItem, read_document

__all__ = [
    "doc_format_of",
    "doc_id_of",
    "hotpot_paragraph_text",
    "jsonl_rows",
    "leval_loader",
    "load_articles",
    "load_hotpotqa",
    "load_wtq",
    "numbered_jsonl_rows",
    "render_hotpot",
    "repair_nq_html",
    "require_file",
]


def jsonl_rows(path: Path) -> Iterable[dict[str, Any]]:
    """The JSON objects of a JSONL file, one a line (blank lines skipped)."""
    for _, row in numbered_jsonl_rows(path):
        yield row


def numbered_jsonl_rows(path: Path) -> Iterable[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for each JSON object of a JSONL file (blank lines skipped)."""
    # utf-8-sig: a file an editor saved with a byte-order mark reads as its first object.
    with path.open(encoding="utf-8-sig") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            yield lineno, json_object(line, f"{path}, line {lineno}")


def require_file(path: Path, dataset: str) -> Path:
    """``path``, or :class:`DatasetUnavailableError` naming ``dataset`` when it is missing."""
    if not path.is_file():
        msg = f"dataset {dataset!r} is not available: {path} does not exist"
        raise DatasetUnavailableError(msg)
    return path


def doc_format_of(path: str) -> DocFormat:
    """``"html"`` for an ``.html``/``.htm`` file, else ``"text"``."""
    return "html" if path.lower().endswith((".html", ".htm")) else "text"


def doc_id_of(doc: str) -> str:
    """A document's id: its file name up to the first dot."""
    name = Path(doc).name
    return name.split(".", 1)[0]


def _question_rows(folder: Path, dataset: str) -> Iterable[dict[str, Any]]:
    return jsonl_rows(require_file(folder / "questions.jsonl", dataset))


def _question_item(
    row: Mapping[str, Any], dataset: str, answers: Sequence[str] | None = None, **fields: Any
) -> EvalItem:
    """The item of a questions file's ``row``: its ``id``, ``question`` and ``answers`` (or
    ``answers`` as given), and ``fields``."""
    answers = row["answers"] if answers is None else answers
    return EvalItem(
        id=row["id"], question=row["question"], answers=tuple(answers), dataset=dataset, **fields
    )


def load_wtq(folder: Path) -> list[EvalItem]:
    """WikiTableQuestions: a question over one Wikipedia page's table, every answer required."""
    return [
        _question_item(
            row,
            "wtq",
            doc_id=doc_id_of(row["doc"]),
            doc_format="html",
            answer_mode="all",
            extra={
                "strict": bool(row.get("strict", False)),
                "table_index": row.get("table_index"),
                "gold_table_text": row.get("gold_table_text", ""),
                "page_title": row.get("page_title", ""),
            },
            doc_path=folder / row["doc"],
        )
        for row in _question_rows(folder, "wtq")
    ]


_OPTION_PREFIX = re.compile(r"^\s*\(([A-D])\)\s*")
# Natural Questions' tokenised HTML glues a cell's span to its tag name: ``<Th_colspan="2">``.
_NQ_GLUED_SPAN = re.compile(r"<(t[hd])_((?:col|row)span=\"\d+\")>", re.I)


def repair_nq_html(document: str) -> str:
    """Natural Questions HTML with each glued cell span written as an attribute again.

    NQ writes ``<Th_colspan="2">``; an HTML parser reads that as an unknown element named
    ``th_colspan="2"``, so the cell loses its table role and its span. Repaired, it is
    ``<Th colspan="2">``, and every method reads the same ordinary table.

    >>> repair_nq_html('<Tr> <Th_colspan="2"> Production </Th> </Tr>')
    '<Tr> <Th colspan="2"> Production </Th> </Tr>'
    """
    return _NQ_GLUED_SPAN.sub(r"<\1 \2>", document)


def leval_loader(task: str) -> Callable[[Path], list[EvalItem]]:
    """The loader of one L-Eval task (``nq``, ``cuad``, ``qasper``, ``quality``)."""
    name = f"leval-{task}"

    def load(folder: Path) -> list[EvalItem]:
        items = []
        for row in _question_rows(folder, name):
            answers = [a.strip() for a in row["answers"]]
            extra: dict[str, Any] = {}
            if task == "quality":
                # The gold option as given, "(B) " letter included; the answer is its text
                # without the letter.
                extra["gold_option"] = answers[0]
                extra["options"] = list(row.get("options", []))
                answers = [_OPTION_PREFIX.sub("", a).strip() for a in answers]
            path = folder / row["doc"]
            doc_format = doc_format_of(row["doc"])
            text = None
            if task == "nq" and doc_format == "html":
                text = repair_nq_html(read_document(path))
            items.append(
                _question_item(
                    row,
                    name,
                    answers,
                    doc_id=doc_id_of(row["doc"]),
                    doc_format=doc_format,
                    answer_mode="any",
                    extra=extra,
                    doc_path=path,
                    doc_text=text,
                )
            )
        return items

    return load


def hotpot_paragraph_text(paragraph: Mapping[str, Any]) -> str:
    """The text of one HotpotQA paragraph: its sentences joined, whitespace collapsed."""
    return " ".join(" ".join(str(s) for s in paragraph["sentences"]).split())


def render_hotpot(paragraphs: Sequence[Mapping[str, Any]]) -> str:
    """HotpotQA paragraphs as one document: each title on its own line above its text."""
    return "\n\n".join(f"{p['title']}\n{hotpot_paragraph_text(p)}" for p in paragraphs)


def load_hotpotqa(folder: Path) -> list[EvalItem]:
    """HotpotQA distractor questions: ten paragraphs each, the supporting ones as gold."""
    items = []
    for row in _question_rows(folder, "hotpotqa"):
        paragraphs = row["paragraphs"]
        by_title = {p["title"]: p for p in paragraphs}
        support_titles = list(row.get("supporting_titles", []))
        support = [hotpot_paragraph_text(by_title[t]) for t in support_titles if t in by_title]
        facts: list[str] = []
        for title, idx in row.get("supporting_facts") or []:
            sents = by_title.get(title, {}).get("sentences", [])
            if 0 <= idx < len(sents):
                facts.append(" ".join(str(sents[idx]).split()))
        extra: dict[str, Any] = {
            "paragraphs": paragraphs,
            "supporting_titles": support_titles,
            "supporting_paragraphs": support,
            "sentences_exact": bool(row.get("sentences_exact", False)),
        }
        if facts:
            extra["supporting_sentences"] = facts
            extra["supporting_facts"] = row["supporting_facts"]
        for key in ("type", "level"):
            if key in row:
                extra[key] = row[key]
        items.append(
            _question_item(
                row,
                "hotpotqa",
                doc_id=row["id"],
                doc_format="text",
                answer_mode="any",
                extra=extra,
                doc_text=render_hotpot(paragraphs),
            )
        )
    return items


def load_articles(folder: Path) -> list[EvalItem]:
    """Main-content extraction: each page's gold article text."""
    items = []
    for row in jsonl_rows(require_file(folder / "ground_truth.jsonl", "articles")):
        items.append(
            EvalItem(
                id=row["id"],
                # The task is main-content extraction: the "query" asks for the article itself.
                question="the main article text of this page",
                answers=(),
                dataset="articles",
                doc_id=row["id"],
                doc_format="html",
                extra={"gold_text": row["article_body"], "url": row.get("url", "")},
                doc_path=folder / row["doc"],
            )
        )
    return items
