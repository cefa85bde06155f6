"""Loaders for the shared evaluation data (and for a user's own JSONL of the same shape).

Every dataset becomes a list of :class:`EvalItem`: one question over one document, with the gold
answers and whatever other gold the dataset has (supporting paragraphs, gold article text). The
documents are read lazily from disk, on first access of :attr:`EvalItem.document`.

The data folder is, in order: the ``data_dir`` argument, the ``HREFINE_DATA`` environment
variable, or ``<repo>/../shared/data``.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hrefine._saved import file_sha256
from hrefine.errors import ConfigError, DatasetUnavailableError
from hrefine.eval.dataset_readers import (
    doc_format_of,
    hotpot_paragraph_text,
    jsonl_rows,
    leval_loader,
    load_articles,
    load_hotpotqa,
    load_wtq,
    numbered_jsonl_rows,
    render_hotpot,
    repair_nq_html,
    require_file,
)
from hrefine.eval.halves import Half, half_of, subset
from hrefine.eval.items import AnswerMode, DocFormat, EvalItem

# EvalItem, Half, half_of, subset, repair_nq_html and hotpot_paragraph_text live in their own
# modules (items, halves, dataset_readers) and are imported from here too.
__all__ = [
    "DATASETS",
    "AnswerMode",
    "DatasetSpec",
    "DatasetUnavailableError",
    "DocFormat",
    "EvalItem",
    "Half",
    "data_sha256",
    "default_data_dir",
    "half_of",
    "hotpot_paragraph_text",
    "load_dataset",
    "load_jsonl",
    "repair_nq_html",
    "subset",
]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class DatasetSpec:
    """A dataset of the shared evaluation data."""

    name: str
    """Registered name."""
    folder: str
    """Folder relative to the data root."""
    loader: Callable[[Path], list[EvalItem]]
    """``(folder) -> list[EvalItem]``."""
    primary_metric: str
    """The headline metric of this dataset (plotted and pinned as a floor)."""
    metrics: tuple[str, ...]
    """Every metric reported for this dataset, headline first."""
    description: str
    """One line for listings."""


def default_data_dir(data_dir: str | os.PathLike[str] | None = None) -> Path:
    """Resolve the data root.

    Parameters
    ----------
    data_dir:
        Explicit folder; wins over everything else.

    Returns
    -------
    Path
        ``data_dir``, else ``$HREFINE_DATA``, else ``<repo>/../shared/data`` (the repository that
        holds ``core/hrefine``), else ``../shared/data`` from the working directory (an installed,
        non-editable package has no repository around it).
    """
    if data_dir is not None:
        return Path(data_dir).expanduser()
    env = os.environ.get("HREFINE_DATA")
    if env:
        return Path(env).expanduser()
    repo_data = Path(__file__).resolve().parents[3].parent / "shared" / "data"
    cwd_data = Path.cwd().parent / "shared" / "data"
    return cwd_data if not repo_data.is_dir() and cwd_data.is_dir() else repo_data


DATASETS: dict[str, DatasetSpec] = {
    spec.name: spec
    for spec in [
        DatasetSpec(
            "wtq",
            "wtq",
            load_wtq,
            "containment",
            ("containment",),
            "WikiTableQuestions: table QA over full Wikipedia HTML pages",
        ),
        DatasetSpec(
            "leval-nq",
            "leval/nq",
            leval_loader("nq"),
            "containment",
            ("containment",),
            "L-Eval NQ: factoid QA over long Wikipedia pages (tokenised HTML)",
        ),
        DatasetSpec(
            "leval-cuad",
            "leval/cuad",
            leval_loader("cuad"),
            "containment",
            ("containment",),
            "L-Eval CUAD: clause extraction from legal contracts",
        ),
        DatasetSpec(
            "leval-qasper",
            "leval/qasper",
            leval_loader("qasper"),
            "containment",
            ("containment",),
            "L-Eval Qasper: QA over full NLP papers",
        ),
        DatasetSpec(
            "leval-quality",
            "leval/quality",
            leval_loader("quality"),
            # The options paraphrase the story: containment is almost always 0, so the headline is
            # the recall of the gold option's content words (containment is still scored).
            "option_recall",
            ("option_recall",),
            "L-Eval QuALITY: multiple choice over long stories (gold option's word recall)",
        ),
        DatasetSpec(
            "hotpotqa",
            "hotpotqa",
            load_hotpotqa,
            "support_recall",
            ("support_recall", "containment", "fact_recall"),
            "HotpotQA dev distractor: multi-hop QA over 10 paragraphs",
        ),
        DatasetSpec(
            "articles",
            "articles",
            load_articles,
            "token_recall",
            ("token_recall",),
            "Article extraction benchmark: main text of news/blog pages",
        ),
    ]
}

_ALIASES = {
    "nq": "leval-nq",
    "cuad": "leval-cuad",
    "qasper": "leval-qasper",
    "quality": "leval-quality",
    "hotpot": "hotpotqa",
    "article": "articles",
}


def resolve_dataset_name(name: str) -> str:
    """Canonical dataset name for ``name`` (accepts ``nq``, ``leval/nq``, ``leval-nq``)."""
    key = name.strip().lower().replace("/", "-").replace("_", "-")
    return _ALIASES.get(key, key)


def _row_error(file: Path, lineno: int, problem: str) -> ConfigError:
    return ConfigError(f"{file} line {lineno}: {problem}")


def _check_row(file: Path, lineno: int, row: dict[str, Any]) -> list[str] | None:
    """Refuse a malformed row of a user's JSONL; return its answers (None when it has none).

    Without these checks a null document or question became the text ``"None"`` (and scored),
    and a typo in ``answer_mode``/``doc_format`` silently fell back to the default.
    """
    missing = [k for k in ("id", "question") if k not in row]
    if missing or ("document" not in row and "doc" not in row and "paragraphs" not in row):
        problem = (
            f"missing {missing or ['document or doc']}; "
            "each line needs id, question and document (inline) or doc (a path)"
        )
        raise _row_error(file, lineno, problem)
    for key in ("question", "document", "doc"):
        if key in row and not isinstance(row[key], str):
            raise _row_error(file, lineno, f"{key} must be a string, got {row[key]!r}"[:200])
    for key, allowed in (("answer_mode", ("all", "any")), ("doc_format", ("html", "text"))):
        if key in row and row[key] not in allowed:
            raise _row_error(file, lineno, f"{key} must be one of {allowed}, got {row[key]!r}")
    if "paragraphs" in row:
        paragraphs = row["paragraphs"]
        if not isinstance(paragraphs, list) or not all(
            isinstance(p, dict) and "title" in p and "sentences" in p for p in paragraphs
        ):
            problem = "paragraphs must be a list of objects with title and sentences"
            raise _row_error(file, lineno, problem)
    if "answers" not in row:
        return None
    answers = row["answers"]
    if isinstance(answers, str):
        return [answers]
    if not isinstance(answers, list) or not all(isinstance(a, str) for a in answers):
        problem = f"answers must be a list of strings (or one string), got {answers!r}"[:200]
        raise _row_error(file, lineno, problem)
    return answers


def load_jsonl(path: str | os.PathLike[str], *, name: str | None = None) -> list[EvalItem]:
    """Load a user's own evaluation set: one JSON object per line.

    Fields: ``id`` (unique in the file), ``question``, ``answers`` (a list of strings, or one
    string), and the document either inline as ``document`` or as ``doc`` (a path relative to
    the JSONL's folder). Optional: ``doc_format`` (``"html"``/``"text"``, default from the file
    suffix or content), ``answer_mode`` (``"all"``/``"any"``, default ``"all"``), ``strict``,
    ``gold_text`` (or ``article_body``), ``supporting_paragraphs`` (list of gold texts), or
    HotpotQA's ``paragraphs`` + ``supporting_titles``. Other fields go to
    :attr:`EvalItem.extra`. A row without ``answers`` loads with none (for rows scored by
    ``gold_text`` or supporting paragraphs) and a warning: its answer metrics are not scored.

    Parameters
    ----------
    path:
        The JSONL file.
    name:
        Dataset name for the items (default: the file stem).

    Returns
    -------
    list[EvalItem]
        One item per line, in file order.

    Raises
    ------
    DatasetUnavailableError
        The file does not exist.
    hrefine.errors.HrefineError
        A line is not a JSON object, lacks ``id``/``question``/a document, repeats an earlier
        line's ``id``, or has a field of the wrong type or outside its documented values
        (:class:`ConfigError` naming the file and line).
    """
    file = require_file(Path(path).expanduser(), str(path))
    dataset = name or file.stem
    known = {"id", "question", "answers", "document", "doc", "doc_format", "answer_mode"}
    items = []
    seen: dict[str, int] = {}
    no_answers: list[int] = []
    for lineno, row in numbered_jsonl_rows(file):
        answers = _check_row(file, lineno, row)
        item_id = str(row["id"])
        if item_id in seen:
            # Results are keyed by id: a repeated one would drop one row and count the other twice.
            problem = f"id {item_id!r} repeats line {seen[item_id]}; ids must be unique"
            raise _row_error(file, lineno, problem)
        seen[item_id] = lineno
        if answers is None:
            no_answers.append(lineno)
        extra = {k: v for k, v in row.items() if k not in known}
        if "article_body" in extra and "gold_text" not in extra:
            extra["gold_text"] = extra["article_body"]
        doc_path: Path | None = None
        doc_text: str | None = None
        if "document" in row:
            doc_text = row["document"]
        elif "doc" in row:
            doc_path = file.parent / row["doc"]
        if "paragraphs" in row and "supporting_paragraphs" not in extra:
            by_title = {p["title"]: p for p in row["paragraphs"]}
            extra["supporting_paragraphs"] = [
                hotpot_paragraph_text(by_title[t])
                for t in row.get("supporting_titles", [])
                if t in by_title
            ]
            if doc_text is None and doc_path is None:
                doc_text = render_hotpot(row["paragraphs"])
        fmt = row.get("doc_format")
        if fmt is None:
            if doc_path is not None:
                fmt = doc_format_of(doc_path.name)
            else:
                from hrefine.eval.text import looks_like_html

                fmt = "html" if doc_text and looks_like_html(doc_text) else "text"
        items.append(
            EvalItem(
                id=item_id,
                question=row["question"],
                answers=tuple(answers or ()),
                dataset=dataset,
                doc_id=str(row.get("doc_id", row.get("doc", row["id"]))),
                doc_format="html" if fmt == "html" else "text",
                answer_mode="any" if row.get("answer_mode") == "any" else "all",
                extra=extra,
                doc_path=doc_path,
                doc_text=doc_text,
            )
        )
    if no_answers:
        logger.warning(
            "%s: %d line(s) without answers (first: line %d); answer metrics skip them",
            file,
            len(no_answers),
            no_answers[0],
        )
    return items


def load_dataset(
    name: str,
    data_dir: str | os.PathLike[str] | None = None,
    *,
    strict_only: bool = False,
    limit: int | None = None,
    half: Half | None = None,
) -> list[EvalItem]:
    """Load a dataset of the shared evaluation data, or a JSONL file.

    Parameters
    ----------
    name:
        A name of :data:`DATASETS` (``"wtq"``, ``"leval-nq"``, ``"leval-cuad"``,
        ``"leval-qasper"``, ``"leval-quality"``, ``"hotpotqa"``, ``"articles"``; short forms
        ``"nq"``… work), or a path to a ``.jsonl`` file (see :func:`load_jsonl`).
    data_dir:
        Data root (see :func:`default_data_dir`).
    strict_only:
        Keep only items whose ``extra["strict"]`` is true (WTQ's verbatim-answer questions).
    limit:
        Keep a deterministic subset of this many items (see :func:`subset`).
    half:
        Keep only the items of one half of the documents (:func:`half_of`): ``"check"`` for
        the documents an adapter trained on the default ``"tune"`` half never saw. None: all.

    Returns
    -------
    list[EvalItem]
        The items, in file order (or subset order when ``limit`` is given).

    Raises
    ------
    DatasetUnavailableError
        The dataset's files are missing (callers that loop over datasets skip it).
    ValueError
        ``name`` is neither a registered dataset nor a ``.jsonl`` path.
    """
    if name.endswith(".jsonl") or Path(name).suffix == ".jsonl":
        items = load_jsonl(name)
    else:
        key = resolve_dataset_name(name)
        spec = DATASETS.get(key)
        if spec is None:
            msg = f"unknown dataset {name!r}; use one of {sorted(DATASETS)} or a .jsonl path"
            raise ConfigError(msg)
        folder = default_data_dir(data_dir) / spec.folder
        if not folder.is_dir():
            msg = f"dataset {key!r} is not available: folder {folder} does not exist"
            raise DatasetUnavailableError(msg)
        items = spec.loader(folder)
    if strict_only:
        items = [it for it in items if it.extra.get("strict", False)]
    if half is not None:
        if half not in ("tune", "check"):
            msg = f"half must be 'tune', 'check' or None (all), got {half!r}"
            raise ConfigError(msg)
        items = [it for it in items if half_of(it.doc_id) == half]
    if limit is not None:
        items = subset(items, limit)
    return items


def data_sha256(name: str, data_dir: str | os.PathLike[str] | None = None) -> str | None:
    """SHA-256 over every file of a dataset's folder (relative paths and contents, sorted).

    Parameters
    ----------
    name:
        Registered dataset name or a ``.jsonl`` path (then the file and the ``doc`` files its
        rows name are hashed).
    data_dir:
        Data root.

    Returns
    -------
    str or None
        Hex digest, or None when the dataset is missing.
    """
    if name.endswith(".jsonl"):
        # The file and the documents its rows name, not its whole folder (which may hold the
        # report being written, or anything else).
        jsonl = Path(name).expanduser()
        if not jsonl.is_file():
            return None
        folder = jsonl.parent
        named = {r["doc"] for r in jsonl_rows(jsonl) if isinstance(r.get("doc"), str)}
        files = [jsonl, *sorted(folder / d for d in named if (folder / d).is_file())]
    else:
        spec = DATASETS.get(resolve_dataset_name(name))
        if spec is None:
            return None
        folder = default_data_dir(data_dir) / spec.folder
        if not folder.is_dir():
            return None
        files = sorted(p for p in folder.rglob("*") if p.is_file())
    digest = hashlib.sha256()
    for file in files:
        where = os.path.relpath(file, folder).replace(os.sep, "/")
        digest.update(where.encode("utf-8", "surrogateescape") + b"\0")
        digest.update(bytes.fromhex(file_sha256(file)))
    return digest.hexdigest()
