"""Run methods over datasets at several token budgets and score what they keep.

:func:`run_eval` runs one method on one dataset; :func:`run_many` runs every method on every
dataset (building each method once); :func:`evaluate_items` runs a compressor on items you
loaded yourself. Outputs are scored by the gold each item carries (see
:func:`score_output`), and optionally read by an LLM for EM/F1.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hrefine.budget import TokenCounter, get_counter
from hrefine.errors import ConfigError, MissingDependencyError, ModelNotFoundError
from hrefine.eval.base import Compressor
from hrefine.eval.baselines import as_plain_text
from hrefine.eval.environment import run_meta as run_meta
from hrefine.eval.loaders import (
    DATASETS,
    DatasetUnavailableError,
    EvalItem,
    Half,
    data_sha256,
    load_dataset,
    resolve_dataset_name,
)
from hrefine.eval.methods import build_methods, get_method
from hrefine.eval.metrics import (
    exact_match,
    token_f1,
)
from hrefine.eval.results import BudgetSummary, EvalResult, ItemResult, score_output, summarise

__all__ = [
    "DEFAULT_BUDGETS",
    "READER_PROMPT",
    "BudgetSummary",
    "EvalResult",
    "ItemResult",
    "evaluate_items",
    "run_eval",
    "run_many",
    "score_output",
]

logger = logging.getLogger(__name__)

DEFAULT_BUDGETS: tuple[int, ...] = (512, 1024, 2048)

#: Prompt for the optional reader LLM; ``{context}`` and ``{question}`` are filled in.
READER_PROMPT = (
    "Answer the question using only the context. Reply with the answer only, no explanation.\n\n"
    "Context:\n{context}\n\nQuestion: {question}\nAnswer:"
)


class _Progress:
    """A rich progress bar, or nothing."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._bar: Any = None

    @contextmanager
    def run(self) -> Iterator[_Progress]:
        if not self.enabled:
            yield self
            return
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        # On stderr: stdout carries the Markdown tables (``hrefine eval ... > table.md``).
        with Progress(
            TextColumn("{task.description}", markup=False),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            transient=False,
            console=Console(stderr=True),
        ) as bar:
            self._bar = bar
            try:
                yield self
            finally:
                self._bar = None

    def task(self, description: str, total: int) -> Callable[[], None]:
        if self._bar is None:
            return lambda: None
        bar = self._bar
        task_id = bar.add_task(description, total=total)
        return lambda: bar.advance(task_id)


#: A method's errors that come from its set-up, not from the item it was given.
_NOT_THE_ITEMS = (ModelNotFoundError, MissingDependencyError)


def evaluate_items(
    compressor: Any,
    items: Sequence[EvalItem],
    budgets: Sequence[int] = DEFAULT_BUDGETS,
    *,
    tokenizer: Any = None,
    reader: Any = None,
    fail_fast: bool = False,
    on_step: Callable[[], None] | None = None,
) -> list[ItemResult]:
    """Run ``compressor`` on every item at every budget and score the outputs.

    Items are processed grouped by document (so per-document caches are reused); a method that
    raises on an item is recorded with the error and an empty context, unless ``fail_fast``.
    A model that cannot be found or a package that is missing is raised at once: it would fail
    every item the same way.

    Parameters
    ----------
    compressor:
        The method: a :class:`Compressor`, a plain ``(document, query, max_tokens) -> str``
        function, or anything else :func:`hrefine.eval.get_method` accepts.
    items:
        Items to run; their ids must be unique (results are keyed by id).
    budgets:
        Token budgets.
    tokenizer:
        Counts tokens in and out (default: Llama-3.2's tokenizer).
    reader:
        Optional LLM (a :class:`hrefine.models.TextGenerator` or ``str -> str`` callable) that
        answers from the context; adds ``reader_em`` and ``reader_f1``.
    fail_fast:
        Re-raise the first error instead of recording it.
    on_step:
        Called after every (item, budget).

    Returns
    -------
    list[ItemResult]
        One row per (item, budget), items in the given order.

    Raises
    ------
    ConfigError
        Two items share an id.
    ModelNotFoundError, MissingDependencyError
        The method's model or package is missing (raised on the first item).
    """
    counter: TokenCounter = get_counter(tokenizer)
    # The same adapter as run_eval's, so every documented compressor form works here too.
    method: Compressor = get_method(compressor, tokenizer=counter)
    label = str(getattr(method, "name", None) or type(method).__name__)
    seen: set[str] = set()
    for it in items:
        if it.id in seen:
            msg = f"two items have the id {it.id!r}; ids must be unique (results are keyed by id)"
            raise ConfigError(msg)
        seen.add(it.id)
    generate: Callable[[str], str] | None = None
    if reader is not None:
        from hrefine.models import as_text_generator

        generate = as_text_generator(reader)
    doc_tokens: dict[tuple[str, str], int] = {}
    position = {it.id: i for i, it in enumerate(items)}
    rows: dict[tuple[str, int], ItemResult] = {}
    for item in sorted(items, key=lambda it: (it.doc_id, position[it.id])):
        key = (item.dataset, item.doc_id)
        document: str | None = None
        read_error: str | None = None
        try:
            # Inside the per-item handling: a missing or unreadable document file is this
            # item's error, not the end of the run.
            document = item.document
            if key not in doc_tokens:
                doc_tokens[key] = counter.count(document)
        except Exception as exc:
            if fail_fast:
                raise
            read_error = f"{type(exc).__name__}: {exc}"
            logger.warning("cannot read the document of %s: %s", item.id, read_error)
        for budget in budgets:
            error: str | None = read_error
            context = ""
            start = time.perf_counter()
            try:
                if document is not None:
                    context = method.compress(document, item.question, budget)
            except _NOT_THE_ITEMS:
                raise  # it would repeat on every item (and reload the model each time)
            except Exception as exc:
                if fail_fast:
                    raise
                context = ""
                error = f"{type(exc).__name__}: {exc}"
                logger.warning("%s failed on %s at %d: %s", label, item.id, budget, error)
            seconds = time.perf_counter() - start
            tokens_out = counter.count(context) if context else 0
            metrics = score_output(item, context)
            prediction = None
            if generate is not None and item.answers:
                prompt = READER_PROMPT.format(
                    context=as_plain_text(context) if context else "", question=item.question
                )
                prediction = generate(prompt).strip()
                metrics["reader_em"] = exact_match(prediction, item.answers, mode=item.answer_mode)
                metrics["reader_f1"] = token_f1(prediction, item.answers, mode=item.answer_mode)
            rows[(item.id, budget)] = ItemResult(
                item_id=item.id,
                doc_id=item.doc_id,
                budget=budget,
                tokens_in=doc_tokens.get(key, 0),
                tokens_out=tokens_out,
                seconds=seconds,
                over_budget=tokens_out > budget,
                error=error,
                metrics=metrics,
                prediction=prediction,
            )
            if on_step is not None:
                on_step()
    return [rows[(it.id, b)] for it in items for b in budgets]


def _dataset_metrics(dataset: str, items: Sequence[EvalItem]) -> tuple[str, list[str]]:
    spec = DATASETS.get(resolve_dataset_name(dataset))
    if spec is not None:
        return spec.primary_metric, list(spec.metrics)
    found: list[str] = []
    for probe in items[:50]:
        for key in score_output(probe, ""):
            if key not in found:
                found.append(key)
    preferred = ["token_recall", "support_recall", "option_recall", "containment", "fact_recall"]
    ordered = [m for m in preferred if m in found] or ["containment"]
    return ordered[0], ordered


def _dataset_label(dataset: str) -> str:
    if dataset.endswith(".jsonl"):
        return Path(dataset).stem
    return resolve_dataset_name(dataset)


def _resolve_limits(
    limit: int | dict[str, int] | None, datasets: Sequence[str]
) -> int | dict[str, int] | None:
    """``limit`` with a dict's keys turned into the run's dataset labels.

    A key is resolved as a dataset is (``"nq"`` and ``"leval_nq"`` name ``leval-nq``, a
    ``.jsonl`` path its stem), so it matches however the dataset was given; a key that names
    no dataset of the run is refused rather than silently ignored.
    """
    if not isinstance(limit, dict):
        return limit
    labels = {_dataset_label(d) for d in datasets}
    resolved: dict[str, int] = {}
    for key, n in limit.items():
        label = _dataset_label(key)
        if label not in labels:
            msg = (
                f"limit names dataset {key!r}, which is not in this run; "
                f"its datasets are {sorted(labels)}"
            )
            raise ConfigError(msg)
        resolved[label] = n
    return resolved


def run_eval(
    method: Any,
    dataset: str,
    budgets: Sequence[int] = DEFAULT_BUDGETS,
    limit: int | None = None,
    *,
    data_dir: str | os.PathLike[str] | None = None,
    tokenizer: Any = None,
    strict_only: bool | None = None,
    reader: Any = None,
    method_options: dict[str, Any] | None = None,
    progress: bool = False,
    fail_fast: bool = False,
    out_dir: str | os.PathLike[str] | None = None,
    name: str = "eval",
    half: Half | None = None,
) -> EvalResult:
    """Evaluate one method on one dataset at several budgets.

    Parameters
    ----------
    method:
        A registered name (``"lead-text"``, ``"chunks-bm25"``, ``"chunks-embedding"``,
        ``"htmlrag"``, ``"htmlrag-bm25"``, ``"htmlrag-generative"``), an import path
        ``"module:Name"`` (LangChain compressor, LlamaIndex postprocessor, compressor class or
        function) or a :class:`Compressor` (see :func:`hrefine.eval.get_method`).
    dataset:
        A dataset name (see :data:`hrefine.eval.DATASETS`) or a ``.jsonl`` path.
    budgets:
        Token budgets.
    limit:
        Evaluate a deterministic subset of this many items (smallest SHA-1 of the id).
    data_dir:
        Data root (default: ``$HREFINE_DATA`` or ``<repo>/../shared/data``).
    tokenizer:
        Budget tokenizer (default: Llama-3.2's), shared by the method and the harness.
    strict_only:
        Keep only WTQ's strict questions (default: True for ``wtq``, False otherwise).
    reader:
        Optional reader LLM for EM/F1.
    method_options:
        Constructor options for the method.
    progress:
        Show a rich progress bar.
    fail_fast:
        Re-raise the method's first error.
    out_dir:
        When given, write ``<name>.json``, ``<name>.md`` and ``<name>.png`` there.
    name:
        Base name of the report files.
    half:
        Only the questions on one half of the documents (``"tune"`` or ``"check"``, see
        :func:`hrefine.eval.halves.half_of`); None: all.

    Returns
    -------
    EvalResult
        The result; ``skipped`` says why when the dataset or method is unavailable.
    """
    results = run_many(
        [method],
        [dataset],
        budgets,
        limit,
        data_dir=data_dir,
        tokenizer=tokenizer,
        strict_only=strict_only,
        reader=reader,
        method_options=method_options,
        progress=progress,
        fail_fast=fail_fast,
        half=half,
    )
    if out_dir is not None:
        from hrefine.eval.report import write_report

        write_report(results, out_dir, name=name)
    return results[0]


def _method_label(method: Any) -> str:
    if isinstance(method, str):
        return method
    return str(getattr(method, "name", None) or type(method).__name__)


def run_many(
    methods: Sequence[Any],
    datasets: Sequence[str],
    budgets: Sequence[int] = DEFAULT_BUDGETS,
    limit: int | dict[str, int] | None = None,
    *,
    data_dir: str | os.PathLike[str] | None = None,
    tokenizer: Any = None,
    strict_only: bool | None = None,
    reader: Any = None,
    method_options: dict[str, Any] | None = None,
    progress: bool = False,
    fail_fast: bool = False,
    half: Half | None = None,
) -> list[EvalResult]:
    """Evaluate every method on every dataset; missing datasets and methods are skipped.

    Parameters
    ----------
    methods:
        Methods as accepted by :func:`run_eval`; each is built once and reused.
    datasets:
        Dataset names or ``.jsonl`` paths.
    budgets:
        Token budgets.
    limit:
        Items per dataset: one number for all, or a dict by dataset (keys as the datasets may
        be given: aliases such as ``"nq"``, ``.jsonl`` paths; missing: all).
    data_dir, tokenizer, strict_only, reader, progress, fail_fast, half:
        As in :func:`run_eval`.
    method_options:
        Constructor options shared by the methods: each method gets those it takes (one
        method alone must take them all), and a result records those its method did not take
        in ``meta["options_not_taken"]`` (see :func:`hrefine.eval.methods.build_methods`).

    Returns
    -------
    list[EvalResult]
        One per (dataset, method), datasets in the outer loop.

    Raises
    ------
    ConfigError
        A budget below 1, a ``limit`` key that names no dataset of the run, a method option
        that is unknown or not valid, or a method whose factory or class fails (see
        :func:`hrefine.eval.get_method`). Only a method whose optional package is missing
        (an :class:`ImportError`) is skipped, its result saying why.
    """
    budget_list = sorted({int(b) for b in budgets})
    if not budget_list or budget_list[0] < 1:
        msg = f"budgets must be positive token counts, got {list(budgets)}"
        raise ConfigError(msg)
    counter = get_counter(tokenizer)
    limits = _resolve_limits(limit, datasets)
    built: dict[int, Compressor | str] = {}
    # A missing optional package only makes a method unavailable: anything else (a bad
    # option, a factory's bug, hrefine's own error) is raised, never skipped as if a package
    # were missing.
    made = build_methods(methods, method_options, tokenizer=counter, fail_fast=fail_fast)
    not_taken = [left for _, left in made]
    for i, (made_i, _) in enumerate(made):
        if isinstance(made_i, ImportError):
            built[i] = f"method unavailable: {type(made_i).__name__}: {made_i}"
            logger.warning("skipping method %s: %s", _method_label(methods[i]), built[i])
        else:
            built[i] = made_i
    results: list[EvalResult] = []
    with _Progress(progress).run() as bar:
        for dataset in datasets:
            label = _dataset_label(dataset)
            n = limits.get(label) if isinstance(limits, dict) else limits
            strict = strict_only if strict_only is not None else label == "wtq"
            try:
                items = load_dataset(dataset, data_dir, strict_only=strict, limit=n, half=half)
                skipped: str | None = None
            except DatasetUnavailableError as exc:
                if fail_fast:
                    raise
                items, skipped = [], str(exc)
                logger.warning("skipping dataset %s: %s", label, exc)
            primary, metric_names = _dataset_metrics(dataset, items)
            meta = {
                "tokenizer": counter.name,
                "limit": n,
                "strict_only": strict,
                "data_sha256": None if skipped else data_sha256(dataset, data_dir),
            }
            if half is not None:
                meta["half"] = half
            for i, method in enumerate(methods):
                comp = built[i]
                result = EvalResult(
                    method=comp.name if not isinstance(comp, str) else _method_label(method),
                    dataset=label,
                    budgets=budget_list,
                    primary_metric=primary,
                    metrics=metric_names,
                    n_items=len(items),
                    meta=dict(meta),
                )
                if not_taken[i]:
                    result.meta["options_not_taken"] = list(not_taken[i])
                if isinstance(comp, str) or skipped:
                    result.skipped = skipped or str(comp)
                    result.n_items = 0
                    results.append(result)
                    continue
                step = bar.task(f"{result.method} · {label}", len(items) * len(budget_list))
                rows = evaluate_items(
                    comp,
                    items,
                    budget_list,
                    tokenizer=counter,
                    reader=reader,
                    fail_fast=fail_fast,
                    on_step=step,
                )
                result.items = rows
                result.summaries = [
                    summarise(b, [r for r in rows if r.budget == b]) for b in budget_list
                ]
                if reader is not None:
                    result.metrics = [*metric_names, "reader_em", "reader_f1"]
                results.append(result)
    return results
