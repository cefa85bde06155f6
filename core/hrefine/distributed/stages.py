"""The Ray Data stages: callable classes that run hrefine's core functions on batches of rows.

Ray makes one instance per actor, so ``__init__`` loads the models once per actor and
``__call__`` runs on every batch. Each input row gives exactly one output row: its result
(``status="ok"``) or, when the core raised on it, its id, the stage and the reason
(``status="error"``), so one bad record never stops the pipeline. Every output row carries its
provenance: input file, hrefine version, method, settings hash, run id, worker and time.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import socket
import time
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from hrefine._decode import decode_bytes
from hrefine._optional import require
from hrefine.distributed.rows import INPUT_ERROR
from hrefine.errors import ConfigError, EmptyInputError, InputTypeError

__all__ = [
    "STAGES",
    "HtmlStage",
    "RefineStage",
    "Stage",
    "StructureStage",
    "base_fields",
]

# Output columns every stage writes, before its own (name, pyarrow type name).
_BASE = (
    ("id", "string"),
    ("status", "string"),
    ("stage", "string"),
    ("error", "string"),
    ("input_path", "string"),
    ("method", "string"),
    ("hrefine_version", "string"),
    ("options_hash", "string"),
    ("run_id", "string"),
    ("worker", "string"),
    ("processed_at", "timestamp"),
    ("seconds", "float64"),
)


def _pa_type(pa: Any, name: str) -> Any:
    if name == "timestamp":
        return pa.timestamp("us", tz="UTC")
    if name == "list<string>":
        return pa.list_(pa.string())
    return getattr(pa, name)()


def base_fields() -> list[tuple[str, str]]:
    """The provenance and status columns, in output order."""
    return list(_BASE)


class Stage:
    """Base of the stages: turns a batch of input rows into a batch of output rows.

    Parameters
    ----------
    settings:
        The core object's settings (plain values, and models where the stage takes them).
    provenance:
        ``method``, ``hrefine_version``, ``options_hash`` and ``run_id`` of this run.
    text_column:
        The input column the stage reads its text from.
    """

    #: The stage's name (the CLI verb), written in each row's ``stage``.
    name: ClassVar[str] = ""
    #: Output columns of a result, after the base ones.
    fields: ClassVar[tuple[tuple[str, str], ...]] = ()
    #: The stage runs a scorer or an LM (and so asks for a GPU when the cluster has them).
    uses_model: ClassVar[bool] = False
    #: Result columns a failure's row carries too, from its input row.
    error_columns: ClassVar[tuple[str, ...]] = ()

    def __init__(
        self, settings: Mapping[str, Any], provenance: Mapping[str, str], text_column: str
    ) -> None:
        self.settings = dict(settings)
        self.provenance = dict(provenance)
        self.text_column = text_column
        self.pa = require("pyarrow", "distributed")
        # which actor did the work: host and process (gethostname opens no connection)
        self.worker = f"{socket.gethostname()}:{os.getpid()}"
        self.schema = self.pa.schema([(n, _pa_type(self.pa, t)) for n, t in (*_BASE, *self.fields)])

    @classmethod
    def needs_model(cls, settings: Mapping[str, Any]) -> bool:
        """Whether the stage, with these settings, runs a model (and so takes a GPU actor)."""
        return cls.uses_model

    # -- what a stage implements ------------------------------------------------------------
    def process(self, row: Mapping[str, Any]) -> dict[str, Any]:
        """The result columns of one row; raises when the row cannot be processed."""
        raise NotImplementedError

    def process_many(self, rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any] | Exception]:
        """Results of several rows (one failure does not stop the others)."""
        out: list[dict[str, Any] | Exception] = []
        for row in rows:
            try:
                out.append(self.process(row))
            except Exception as exc:  # a bad record is recorded, never fatal
                out.append(exc)
        return out

    # -- Ray's entry point ------------------------------------------------------------------
    def __call__(self, batch: Any) -> Any:
        """Process a batch (a pyarrow Table of input rows) into a Table of output rows."""
        rows = batch.to_pylist()
        started = time.perf_counter()
        # a value that could not take its column's type fails its row, never the batch
        results: list[Any] = [
            InputTypeError(r[INPUT_ERROR]) if r.get(INPUT_ERROR) else None for r in rows
        ]
        good = [i for i, r in enumerate(rows) if not r.get(INPUT_ERROR)]
        if good:
            for i, result in zip(good, self.process_many([rows[i] for i in good]), strict=True):
                results[i] = result
        each = (time.perf_counter() - started) / max(1, len(rows))
        return self.table([(r, res, each) for r, res in zip(rows, results, strict=True)])

    def table(self, done: Sequence[tuple[Mapping[str, Any], Any, float]]) -> Any:
        """Output rows of ``(input row, result or exception, seconds)`` as a Table."""
        now = _dt.datetime.now(_dt.timezone.utc)
        columns: dict[str, list[Any]] = {f.name: [] for f in self.schema}
        for row, result, seconds in done:
            failed = isinstance(result, BaseException)
            base = {
                "id": str(row["id"]),
                "status": "error" if failed else "ok",
                "stage": self.name,
                "error": _reason(result) if failed else None,
                "input_path": row.get("input_path"),
                "worker": self.worker,
                "processed_at": now,
                "seconds": float(seconds),
                **self.provenance,
            }
            values = {k: row.get(k) for k in self.error_columns} if failed else result
            for name in columns:
                columns[name].append(base[name] if name in base else values.get(name))
        return self.pa.Table.from_pydict(columns, schema=self.schema)

    def text(self, row: Mapping[str, Any], column: str | None = None) -> str:
        """Column ``column`` (default: the text column) of ``row``, checked to be text."""
        name = column or self.text_column
        if name not in row:
            msg = f"the row has no column {name!r}; its columns are {sorted(row)}"
            raise ConfigError(msg)
        value = row[name]
        if isinstance(value, bytes):  # a binary column: decoded as a page is (not UTF-8 only)
            value = decode_bytes(value)
        if value is None:
            msg = f"column {name!r} is null"
            raise EmptyInputError(msg)
        if not isinstance(value, str):
            msg = f"column {name!r} holds a {type(value).__name__}, expected text"
            raise InputTypeError(msg)
        return value


def _reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class HtmlStage(Stage):
    """Clean each HTML page and split it into its block tree
    (:func:`~hrefine.html.clean_html`, :func:`~hrefine.html.build_block_tree`).

    Settings: ``boilerplate`` (bool, default True) and ``max_words`` (default 256).
    Results: ``cleaned_html``, ``block_tree`` (the :meth:`~hrefine.tree.Tree.to_dict` JSON),
    ``blocks`` (leaf blocks with text) and ``nodes``.
    """

    name = "html"
    fields = (
        ("cleaned_html", "string"),
        ("block_tree", "string"),
        ("blocks", "int64"),
        ("nodes", "int64"),
    )

    def process(self, row: Mapping[str, Any]) -> dict[str, Any]:
        """Clean one page and build its block tree."""
        from hrefine.html import build_block_tree, clean_html

        page = self.text(row)
        boilerplate = bool(self.settings.get("boilerplate", True))
        max_words = int(self.settings.get("max_words", 256))
        cleaned = clean_html(page, boilerplate=boilerplate)
        tree = build_block_tree(page, max_words=max_words, boilerplate=boilerplate)
        return {
            "cleaned_html": cleaned,
            "block_tree": json.dumps(tree.to_dict(), ensure_ascii=False),
            "blocks": sum(1 for n in tree.nodes if n.kind == "block"),
            "nodes": len(tree),
        }


class StructureStage(Stage):
    """Structure each long document into sections and paragraphs
    (:meth:`~hrefine.longrefiner.LongRefiner.structure_many`: its markup, or a model's
    skeleton with ``lm``/``structure="model"``).

    Settings: any :class:`~hrefine.longrefiner.LongRefinerOptions` field. An optional
    ``title`` column gives each document's title. Results: ``source``, ``title``,
    ``sections``, ``paragraphs``, ``structure`` (the tree's JSON) and ``notes`` (JSON list).
    """

    name = "structure"
    uses_model = True
    fields = (
        ("source", "string"),
        ("title", "string"),
        ("sections", "int64"),
        ("paragraphs", "int64"),
        ("structure", "string"),
        ("notes", "string"),
    )

    @classmethod
    def needs_model(cls, settings: Mapping[str, Any]) -> bool:
        """Only a model-made structure needs one (markup and paragraphs are parsed)."""
        return settings.get("lm") is not None or settings.get("llm") is not None

    def __init__(
        self, settings: Mapping[str, Any], provenance: Mapping[str, str], text_column: str
    ) -> None:
        super().__init__(settings, provenance, text_column)
        from hrefine.longrefiner import LongRefiner

        # No warmup: that would load the scorer, which structuring never uses.
        self.refiner = LongRefiner(**self.settings)

    def process_many(self, rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any] | Exception]:
        """Structure the batch in one call (a model sees all its windows at once); when that
        fails, each row alone, so that only the bad ones fail."""
        try:
            texts = [self.text(r) for r in rows]
            titles = [str(r.get("title") or "") for r in rows]
            docs = self.refiner.structure_many(texts, titles=titles, skip_empty=False)
        except Exception:
            return super().process_many(rows)
        return [self._result(d) for d in docs]

    def process(self, row: Mapping[str, Any]) -> dict[str, Any]:
        """Structure one document."""
        doc = self.refiner.structure(self.text(row), title=str(row.get("title") or ""))
        return self._result(doc)

    @staticmethod
    def _result(doc: Any) -> dict[str, Any]:
        if doc is None:  # skip_empty=False raises instead; kept for type narrowing
            msg = "the document is empty"
            raise EmptyInputError(msg)
        tree = doc.tree
        return {
            "source": doc.source,
            "title": doc.title,
            "sections": sum(1 for n in tree.nodes if n.kind == "section"),
            "paragraphs": sum(1 for n in tree.nodes if n.kind == "paragraph"),
            "structure": json.dumps(tree.to_dict(), ensure_ascii=False),
            "notes": json.dumps(list(doc.notes), ensure_ascii=False),
        }


#: Methods of the ``refine`` stage: LongRefiner on text, HtmlRAG pruning on HTML.
REFINE_METHODS = ("longrefiner", "htmlrag")


class RefineStage(Stage):
    """Refine or prune each (query, documents) pair to a token budget.

    ``method="longrefiner"`` runs :meth:`~hrefine.longrefiner.LongRefiner.refine`,
    ``method="htmlrag"`` :meth:`~hrefine.html.HtmlPruner.prune` (all the row's documents
    against one budget). The row holds the query (``query_column``), its documents (the text
    column: one text or a list of texts) and optionally its own budget (``max_tokens``).
    Results: ``text``, ``tokens``, ``budget``, ``tokenizer`` and ``documents``.
    """

    name = "refine"
    uses_model = True
    fields = (
        ("text", "string"),
        ("tokens", "int64"),
        ("budget", "int64"),
        ("tokenizer", "string"),
        ("documents", "int64"),
    )

    def __init__(
        self,
        settings: Mapping[str, Any],
        provenance: Mapping[str, str],
        text_column: str,
        *,
        method: str = "longrefiner",
        query_column: str = "query",
        max_tokens: int = 1024,
    ) -> None:
        super().__init__(settings, provenance, text_column)
        if method not in REFINE_METHODS:
            msg = f"method must be one of {REFINE_METHODS}, got {method!r}"
            raise ConfigError(msg)
        self.method = method
        self.query_column = query_column
        self.max_tokens = max_tokens
        if method == "htmlrag":
            from hrefine.html import HtmlPruner

            self.core: Any = HtmlPruner(**self.settings).warmup()
        else:
            from hrefine.longrefiner import LongRefiner

            self.core = LongRefiner(**self.settings).warmup()

    @classmethod
    def needs_model(cls, settings: Mapping[str, Any]) -> bool:
        """BM25 alone needs no model; an embedding or cross-encoder scorer, or an LM, does."""
        scorer = settings.get("scorer", "embedding")
        lm = any(settings.get(k) for k in ("lm", "llm", "generative"))
        return lm or not (isinstance(scorer, str) and scorer.strip().lower() == "bm25")

    def documents(self, row: Mapping[str, Any]) -> list[str]:
        """The row's documents: one text, or a list of texts."""
        value = row.get(self.text_column)
        if isinstance(value, (list, tuple)):
            return [self.text({"d": v}, "d") for v in value]
        return [self.text(row)]

    def process(self, row: Mapping[str, Any]) -> dict[str, Any]:
        """Refine one (query, documents) pair."""
        query = self.text(row, self.query_column)
        docs = self.documents(row)
        budget = row.get("max_tokens")
        if isinstance(budget, float):  # a column with a gap, read as floats
            budget = None if budget != budget else int(budget) if budget.is_integer() else budget
        budget = self.max_tokens if budget is None else budget
        if self.method == "htmlrag":
            pruned = self.core.prune(docs, query, budget)
            text, tokens, name = pruned.html, pruned.tokens, pruned.tokenizer
        else:
            refined = self.core.refine(query, docs, budget)
            text, tokens, name = refined.text, refined.tokens, refined.tokenizer
        return {
            "text": text,
            "tokens": int(tokens),
            "budget": int(budget),
            "tokenizer": name,
            "documents": len(docs),
        }


#: The row stages by name (RAPTOR works on groups: :mod:`hrefine.distributed.groups`).
STAGES: dict[str, type[Stage]] = {
    "html": HtmlStage,
    "structure": StructureStage,
    "refine": RefineStage,
}
