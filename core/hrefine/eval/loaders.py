"""Loaders for the shared evaluation data (and for a user's own JSONL of the same shape).

Every dataset becomes a list of :class:`EvalItem`: one question over one document, with the gold
answers and whatever other gold the dataset has (supporting paragraphs, gold article text). The
documents are read lazily from disk, on first access of :attr:`EvalItem.document`.

The data folder is, in order: the ``data_dir`` argument, the ``HREFINE_DATA`` environment
variable, or ``<repo>/../shared/data``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from hrefine.errors import ConfigError, DatasetUnavailableError

__all__ = [
    "DATASETS",
    "DatasetSpec",
    "DatasetUnavailableError",
    "EvalItem",
    "Half",
    "data_sha256",
    "default_data_dir",
    "half_of",
    "load_dataset",
    "load_jsonl",
    "repair_nq_html",
    "subset",
]

logger = logging.getLogger(__name__)

DocFormat = Literal["html", "text"]
AnswerMode = Literal["all", "any"]
Half = Literal["tune", "check"]


@lru_cache(maxsize=16)
def _read_document(path: Path) -> str:
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace")


@dataclass(frozen=True, kw_only=True)
class EvalItem:
    """One evaluation question over one document.

    Attributes
    ----------
    id:
        Question id, unique within the dataset.
    question:
        The query passed to the compressor.
    answers:
        Gold answers. With ``answer_mode="all"`` every answer is required (WTQ multi-valued
        answers); with ``"any"`` they are alternative references (L-Eval).
    dataset:
        Dataset name (``"wtq"``, ``"leval-nq"``, …, or the JSONL's name).
    doc_id:
        Id of the document; questions over the same document share it.
    doc_format:
        ``"html"`` or ``"text"``.
    answer_mode:
        ``"all"`` or ``"any"`` (see ``answers``).
    extra:
        Dataset-specific fields: ``strict`` (WTQ), ``supporting_paragraphs`` and
        ``supporting_sentences`` (HotpotQA: gold texts), ``gold_text`` (articles), ``options``
        (QuALITY), and any unknown JSONL field.
    doc_path:
        File holding the document (read on first access), or None.
    doc_text:
        The document itself, when held in memory.
    """

    id: str
    question: str
    answers: tuple[str, ...]
    dataset: str
    doc_id: str
    doc_format: DocFormat = "text"
    answer_mode: AnswerMode = "all"
    extra: Mapping[str, Any] = field(default_factory=dict)
    doc_path: Path | None = None
    doc_text: str | None = field(default=None, repr=False)

    @property
    def document(self) -> str:
        """The raw document (HTML or plain text), read from disk on first access."""
        if self.doc_text is not None:
            return self.doc_text
        if self.doc_path is None:
            msg = f"item {self.id!r} has neither doc_text nor doc_path"
            raise ConfigError(msg)
        return _read_document(self.doc_path)


@dataclass(frozen=True)
class DatasetSpec:
    """A dataset of the shared evaluation data.

    Attributes
    ----------
    name:
        Registered name.
    folder:
        Folder relative to the data root.
    loader:
        ``(folder) -> list[EvalItem]``.
    primary_metric:
        The headline metric of this dataset (plotted and pinned as a floor).
    metrics:
        Every metric reported for this dataset, headline first.
    description:
        One line for listings.
    """

    name: str
    folder: str
    loader: Callable[[Path], list[EvalItem]]
    primary_metric: str
    metrics: tuple[str, ...]
    description: str


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


def _jsonl(path: Path) -> Iterable[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                msg = f"{path}:{lineno} is not valid JSON: {exc.msg}"
                raise ConfigError(msg) from exc
            if not isinstance(row, dict):
                msg = f"{path}:{lineno} holds a {type(row).__name__}, expected a JSON object"
                raise ConfigError(msg)
            yield row


def _require_file(path: Path, dataset: str) -> Path:
    if not path.is_file():
        msg = f"dataset {dataset!r} is not available: {path} does not exist"
        raise DatasetUnavailableError(msg)
    return path


def _doc_format(path: str) -> DocFormat:
    return "html" if path.lower().endswith((".html", ".htm")) else "text"


def _doc_id(doc: str) -> str:
    name = Path(doc).name
    return name.split(".", 1)[0]


def _load_wtq(folder: Path) -> list[EvalItem]:
    items = []
    for row in _jsonl(_require_file(folder / "questions.jsonl", "wtq")):
        items.append(
            EvalItem(
                id=row["id"],
                question=row["question"],
                answers=tuple(row["answers"]),
                dataset="wtq",
                doc_id=_doc_id(row["doc"]),
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
        )
    return items


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


def _leval(task: str) -> Callable[[Path], list[EvalItem]]:
    name = f"leval-{task}"

    def load(folder: Path) -> list[EvalItem]:
        items = []
        for row in _jsonl(_require_file(folder / "questions.jsonl", name)):
            answers = [a.strip() for a in row["answers"]]
            extra: dict[str, Any] = {}
            if task == "quality":
                # The gold option as given, "(B) " letter included; the answer is its text
                # without the letter.
                extra["gold_option"] = answers[0]
                extra["options"] = list(row.get("options", []))
                answers = [_OPTION_PREFIX.sub("", a).strip() for a in answers]
            path = folder / row["doc"]
            doc_format = _doc_format(row["doc"])
            text = None
            if task == "nq" and doc_format == "html":
                text = repair_nq_html(_read_document(path))
            items.append(
                EvalItem(
                    id=row["id"],
                    question=row["question"],
                    answers=tuple(answers),
                    dataset=name,
                    doc_id=_doc_id(row["doc"]),
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


def _render_hotpot(paragraphs: Sequence[Mapping[str, Any]]) -> str:
    return "\n\n".join(f"{p['title']}\n{hotpot_paragraph_text(p)}" for p in paragraphs)


def _load_hotpotqa(folder: Path) -> list[EvalItem]:
    items = []
    for row in _jsonl(_require_file(folder / "questions.jsonl", "hotpotqa")):
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
            EvalItem(
                id=row["id"],
                question=row["question"],
                answers=tuple(row["answers"]),
                dataset="hotpotqa",
                doc_id=row["id"],
                doc_format="text",
                answer_mode="any",
                extra=extra,
                doc_text=_render_hotpot(paragraphs),
            )
        )
    return items


def _load_articles(folder: Path) -> list[EvalItem]:
    items = []
    for row in _jsonl(_require_file(folder / "ground_truth.jsonl", "articles")):
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


DATASETS: dict[str, DatasetSpec] = {
    spec.name: spec
    for spec in [
        DatasetSpec(
            "wtq",
            "wtq",
            _load_wtq,
            "containment",
            ("containment",),
            "WikiTableQuestions: table QA over full Wikipedia HTML pages",
        ),
        DatasetSpec(
            "leval-nq",
            "leval/nq",
            _leval("nq"),
            "containment",
            ("containment",),
            "L-Eval NQ: factoid QA over long Wikipedia pages (tokenised HTML)",
        ),
        DatasetSpec(
            "leval-cuad",
            "leval/cuad",
            _leval("cuad"),
            "containment",
            ("containment",),
            "L-Eval CUAD: clause extraction from legal contracts",
        ),
        DatasetSpec(
            "leval-qasper",
            "leval/qasper",
            _leval("qasper"),
            "containment",
            ("containment",),
            "L-Eval Qasper: QA over full NLP papers",
        ),
        DatasetSpec(
            "leval-quality",
            "leval/quality",
            _leval("quality"),
            # The options paraphrase the story: containment is almost always 0, so the headline is
            # the recall of the gold option's content words (containment is still scored).
            "option_recall",
            ("option_recall",),
            "L-Eval QuALITY: multiple choice over long stories (gold option's word recall)",
        ),
        DatasetSpec(
            "hotpotqa",
            "hotpotqa",
            _load_hotpotqa,
            "support_recall",
            ("support_recall", "containment", "fact_recall"),
            "HotpotQA dev distractor: multi-hop QA over 10 paragraphs",
        ),
        DatasetSpec(
            "articles",
            "articles",
            _load_articles,
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


def load_jsonl(path: str | os.PathLike[str], *, name: str | None = None) -> list[EvalItem]:
    """Load a user's own evaluation set: one JSON object per line.

    Fields: ``id``, ``question``, ``answers`` (list), and the document either inline as
    ``document`` or as ``doc`` (a path relative to the JSONL's folder). Optional:
    ``doc_format`` (``"html"``/``"text"``, default from the file suffix or content),
    ``answer_mode`` (``"all"``/``"any"``, default ``"all"``), ``strict``, ``gold_text`` (or
    ``article_body``), ``supporting_paragraphs`` (list of gold texts), or HotpotQA's
    ``paragraphs`` + ``supporting_titles``. Other fields go to :attr:`EvalItem.extra`.

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
        A line is not a JSON object or lacks ``id``/``question``/a document.
    """
    file = _require_file(Path(path).expanduser(), str(path))
    dataset = name or file.stem
    known = {"id", "question", "answers", "document", "doc", "doc_format", "answer_mode"}
    items = []
    for lineno, row in enumerate(_jsonl(file), 1):
        missing = [k for k in ("id", "question") if k not in row]
        if missing or ("document" not in row and "doc" not in row and "paragraphs" not in row):
            msg = (
                f"{file} line {lineno}: missing {missing or ['document or doc']}; "
                "each line needs id, question and document (inline) or doc (a path)"
            )
            raise ConfigError(msg)
        extra = {k: v for k, v in row.items() if k not in known}
        if "article_body" in extra and "gold_text" not in extra:
            extra["gold_text"] = extra["article_body"]
        doc_path: Path | None = None
        doc_text: str | None = None
        if "document" in row:
            doc_text = str(row["document"])
        elif "doc" in row:
            doc_path = file.parent / str(row["doc"])
        if "paragraphs" in row and "supporting_paragraphs" not in extra:
            by_title = {p["title"]: p for p in row["paragraphs"]}
            extra["supporting_paragraphs"] = [
                hotpot_paragraph_text(by_title[t])
                for t in row.get("supporting_titles", [])
                if t in by_title
            ]
            if doc_text is None and doc_path is None:
                doc_text = _render_hotpot(row["paragraphs"])
        fmt = row.get("doc_format")
        if fmt is None:
            if doc_path is not None:
                fmt = _doc_format(doc_path.name)
            else:
                from hrefine.eval.text import looks_like_html

                fmt = "html" if doc_text and looks_like_html(doc_text) else "text"
        answers = row.get("answers", [])
        if isinstance(answers, str):
            answers = [answers]
        items.append(
            EvalItem(
                id=str(row["id"]),
                question=str(row["question"]),
                answers=tuple(str(a) for a in answers),
                dataset=dataset,
                doc_id=str(row.get("doc_id", row.get("doc", row["id"]))),
                doc_format="html" if fmt == "html" else "text",
                answer_mode="any" if row.get("answer_mode") == "any" else "all",
                extra=extra,
                doc_path=doc_path,
                doc_text=doc_text,
            )
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


def _id_hash(item_id: str) -> str:
    return hashlib.sha1(item_id.encode("utf-8")).hexdigest()


def half_of(doc_id: str) -> Half:
    """The half of the dev data a page belongs to: ``"tune"`` or ``"check"``.

    The rule, fixed before any result was looked at: the first byte of the SHA-1 of the page id
    (UTF-8) is even for the tuning half and odd for the checking half. Every question on a page
    falls in the page's half, so a change tuned on one half is checked on pages it never saw.
    Decisions (defaults, new settings) are made on the tuning half only; both are reported.

    Parameters
    ----------
    doc_id:
        The page's id (:attr:`EvalItem.doc_id`).

    Returns
    -------
    Half
        ``"tune"`` or ``"check"``.

    >>> half_of("203-342"), half_of("203-124")
    ('tune', 'check')
    """
    first = hashlib.sha1(doc_id.encode("utf-8")).digest()[0]
    return "tune" if first % 2 == 0 else "check"


def subset(items: Sequence[EvalItem], limit: int | None) -> list[EvalItem]:
    """A deterministic subset, grouped by document.

    Documents are ordered by the SHA-1 of their ``doc_id``, questions within a document by the
    SHA-1 of their ``id``, and the first ``limit`` questions are kept. The choice depends only on
    the ids, so the same limit always gives the same items and a larger limit contains every item
    of a smaller one. Grouping keeps the number of distinct documents (and so the cost of
    methods that index each document) small; where every question has its own document
    (HotpotQA, articles) this is simply the order of the id hashes.

    Parameters
    ----------
    items:
        All items.
    limit:
        How many to keep (None or >= len(items): all, in subset order).

    Returns
    -------
    list[EvalItem]
        The subset, in subset order.
    """
    if limit is not None and limit < 0:
        msg = f"limit must be >= 0, got {limit}"
        raise ConfigError(msg)
    ranked = sorted(items, key=lambda it: (_id_hash(it.doc_id), _id_hash(it.id), it.id))
    return ranked if limit is None else ranked[:limit]


def data_sha256(name: str, data_dir: str | os.PathLike[str] | None = None) -> str | None:
    """SHA-256 over every file of a dataset's folder (relative paths and contents, sorted).

    Parameters
    ----------
    name:
        Registered dataset name or a ``.jsonl`` path (then its folder is hashed).
    data_dir:
        Data root.

    Returns
    -------
    str or None
        Hex digest, or None when the dataset is missing.
    """
    if name.endswith(".jsonl"):
        folder = Path(name).expanduser().parent
    else:
        spec = DATASETS.get(resolve_dataset_name(name))
        if spec is None:
            return None
        folder = default_data_dir(data_dir) / spec.folder
    if not folder.is_dir():
        return None
    digest = hashlib.sha256()
    for file in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(file.relative_to(folder).as_posix().encode("utf-8") + b"\0")
        digest.update(hashlib.sha256(file.read_bytes()).digest())
    return digest.hexdigest()
