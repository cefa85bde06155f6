"""LongRefiner as an evaluated method: one refinement per (document, question, budget).

:class:`LongRefinerCompressor` runs :class:`~hrefine.longrefiner.LongRefiner` on one document
with the harness's token counter as the budget's tokenizer, so both count the same tokens. The
harness asks every question of a document at several budgets, so the compressor keeps what does
not depend on the budget, each computed once and reused:

- the document's structure (step 2), per document text;
- the query analysis (step 1), per question;
- the global selection (step 3), per question and document.

The model steps are deterministic (greedy decoding, choice probabilities), so the reuse changes
no output, only the time. Each call's :class:`CallRecord` keeps the time every step took as
the call ran and as it would have taken without the reuse (``cold``: a reused step counts what
computing it cost), which is what a caller who refines each question once pays.

Registered in :mod:`hrefine.eval.methods` as ``"longrefiner"`` (no model: the document's markup,
fixed weights, embedding + BM25 local scores) and ``"longrefiner-lm"`` (``lm="default"``: the
embedded SmolLM2-135M-Instruct analyses the query and picks sections; a document without markup
is structured by it too).
"""

from __future__ import annotations

import dataclasses
import hashlib
import threading
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, TypeVar

from hrefine.budget import TokenCounter, get_counter
from hrefine.errors import EmptyInputError
from hrefine.eval.baselines import _LRU
from hrefine.longrefiner import (
    GlobalSelection,
    LongRefiner,
    QueryAnalysis,
    StructuredDocument,
    coverage,
)

__all__ = ["STEPS", "CallRecord", "LongRefinerCompressor", "document_key"]

#: The steps a call's time is broken into, in pipeline order.
STEPS = ("analysis", "structure", "selection", "scoring", "fill")
_WARMUP_QUERY = "Which river is the longest?"
#: Steps whose outcome is reused across the budgets and questions of one document.
_REUSED = ("analysis", "structure", "selection")
_T = TypeVar("_T")


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def document_key(document: str) -> str:
    """The key a :class:`CallRecord` names its document by (hex digest of the text)."""
    return _digest(document).hex()


@dataclasses.dataclass
class CallRecord:
    """What one ``compress`` call did."""

    doc_key: str
    """Hex digest of the document (the same for every question on it)."""
    query: str
    """The question."""
    budget: int
    """The token budget."""
    tokens: int
    """Tokens of the output, in the harness's tokenizer."""
    timings: dict[str, float]
    """Seconds per step (:data:`STEPS`) and ``"total"`` as the call ran (a reused step costs
    about nothing).
    """
    cold: dict[str, float]
    """Seconds per step and ``"total"`` without the reuse: a reused step counts the seconds it
    took when it was computed.
    """
    reused: tuple[str, ...]
    """The steps whose outcome was reused (``"analysis"``, ``"structure"``, ``"selection"``)."""
    source: str
    """Where the document's structure came from (``"numbered"``, ``"headings"``, ``"html"``,
    ``"markdown"``, ``"paragraphs"``, ``"model"``).
    """
    sections: int
    """Titled sections of the structure."""
    leaves: int
    """Paragraph leaves of the structure."""
    coverage: float
    """:func:`hrefine.longrefiner.coverage` of the structure (1.0: no text lost)."""
    analysis: dict[str, Any]
    """Step 1's label (``"local"`` or ``"global"``) and weights."""
    selected: tuple[str, ...]
    """Titles step 3 chose (empty when it was off)."""
    selection_source: str
    """``"off"``, ``"lm"``, ``"llm"`` or ``"fallback"``."""
    trimmed: bool
    """The budget was below every unit: the best paragraph was cut."""


class _ReusingRefiner(LongRefiner):
    """A LongRefiner that reuses step 1, 2 and 3 outcomes across calls (see the module).

    Every reused outcome is kept with the seconds it took to compute; the steps a call reused
    and those seconds are collected per thread for the caller to read after ``refine``. The
    harness calls one method at a time; the caches are not shared between threads safely.
    """

    def __init__(self, *, memory: int = 8, **settings: Any) -> None:
        super().__init__(**settings)
        self._structures = _LRU(memory)
        self._analyses = _LRU(64)
        self._selections = _LRU(64 * memory)
        self._coverage = _LRU(memory)
        self._local = threading.local()

    def begin(self) -> None:
        """Start collecting one call's reuse (``spent`` and ``reused``)."""
        self._local.spent = dict.fromkeys(_REUSED, 0.0)
        self._local.reused = set()

    def collected(self) -> tuple[dict[str, float], set[str]]:
        """The computing seconds of the reusable steps of the call since :meth:`begin`, and
        which of them were reused."""
        return dict(self._local.spent), set(self._local.reused)

    def _account(self, step: str, seconds: float, reused: bool) -> None:
        spent = getattr(self._local, "spent", None)
        if spent is None:  # called outside compress (e.g. warmup): nothing to collect
            return
        spent[step] += seconds
        if reused:
            self._local.reused.add(step)

    def _reuse(self, step: str, cache: _LRU, key: Any, compute: Callable[[], _T]) -> _T:
        """``compute()``, kept in ``cache`` under ``key`` with the seconds it took (a reuse
        counts those seconds as the step's)."""
        found = cache.get(key)
        if found is not None:
            self._account(step, found[1], True)
            return found[0]  # type: ignore[no-any-return]
        started = time.perf_counter()
        value = compute()
        seconds = time.perf_counter() - started
        cache.put(key, (value, seconds))
        self._account(step, seconds, False)
        return value

    def analyze(self, query: str) -> QueryAnalysis:
        return self._reuse("analysis", self._analyses, query, partial(super().analyze, query))

    def _structure_one(self, document: str, title: str) -> StructuredDocument:
        """:meth:`structure` of one document, reused (``structure`` and ``structure_many``
        both come here through :meth:`_structure_many`)."""
        compute = partial(self._structure_alone, document, title)
        if not isinstance(document, str):  # bytes or a wrong type: the refiner decodes or says
            return compute()
        return self._reuse("structure", self._structures, (_digest(document), title), compute)

    def _structure_alone(self, document: str, title: str) -> StructuredDocument:
        (doc,) = super()._structure_many([document], [title], skip_empty=False)
        assert doc is not None  # skip_empty=False raises instead
        return doc

    def select_sections(self, query: str, doc: StructuredDocument) -> GlobalSelection:
        key = (query, _digest(doc.text), doc.source, len(doc.tree))
        compute = partial(super().select_sections, query, doc)
        return self._reuse("selection", self._selections, key, compute)

    def _structure_many(
        self, documents: Sequence[str], titles: Sequence[str] | None, *, skip_empty: bool
    ) -> list[StructuredDocument | None]:
        """Each document on its own (so that it is reused)."""
        out: list[StructuredDocument | None] = []
        for i, document in enumerate(documents):
            try:
                out.append(self._structure_one(document, titles[i] if titles else ""))
            except EmptyInputError:
                if not skip_empty:
                    raise
                out.append(None)
        return out

    def select_many(self, query: str, docs: Sequence[StructuredDocument]) -> list[GlobalSelection]:
        """Each document through :meth:`select_sections` (so that it is reused)."""
        return [self.select_sections(query, d) for d in docs]

    def coverage_of(self, doc: StructuredDocument) -> float:
        """:func:`~hrefine.longrefiner.coverage` of ``doc`` (computed once per structure)."""
        key = (_digest(doc.text), doc.source, len(doc.tree))
        value = self._coverage.get(key)
        if value is None:
            value = coverage(doc)
            self._coverage.put(key, value)
        return float(value)


class LongRefinerCompressor:
    """LongRefiner for :mod:`hrefine.eval`: each call refines one document to the budget.

    Parameters
    ----------
    lm:
        The model of the three model steps: None (none: markup structure, fixed weights),
        ``"default"`` (the embedded SmolLM2-135M-Instruct), a LocalLM, or a local model folder
        or cached name.
    tokenizer:
        The evaluation's token counter; budgets, leaves and outputs are counted in it.
    name:
        Report name (default ``"longrefiner"``, or ``"longrefiner-lm"`` with a model).
    keep_records:
        Keep a :class:`CallRecord` per call in :attr:`records` (the benchmark reads them).
    **settings:
        Any other :class:`~hrefine.longrefiner.LongRefinerOptions` field (``structure``,
        ``scorer``, ``global_weight``, ``llm``, ``cache_dir``…).

    Attributes
    ----------
    refiner:
        The :class:`~hrefine.longrefiner.LongRefiner` (it reuses per-document outcomes).
    records:
        One :class:`CallRecord` per successful call, in call order.
    """

    def __init__(
        self,
        *,
        lm: Any = None,
        tokenizer: Any = None,
        name: str | None = None,
        keep_records: bool = True,
        **settings: Any,
    ) -> None:
        self.counter: TokenCounter = get_counter(tokenizer)
        self.refiner = _ReusingRefiner(lm=lm, tokenizer=self.counter, **settings)
        has_model = self.refiner.options.has_model
        self.name: str = name or ("longrefiner-lm" if has_model else "longrefiner")
        self.keep_records = keep_records
        self.records: list[CallRecord] = []

    def warmup(self) -> LongRefinerCompressor:
        """Load the tokenizer, the scorer's model and the LM (one query analysis, no
        generation), so that the first timed call does not pay for loading. Returns self."""
        refiner = self.refiner
        refiner.scorer.score(_WARMUP_QUERY, [_WARMUP_QUERY])
        if refiner.options.has_model:
            refiner.analyze(_WARMUP_QUERY)
        return self

    def compress(self, document: str, query: str, max_tokens: int) -> str:
        """The text LongRefiner keeps of ``document`` (HTML, Markdown or plain text) for
        ``query`` within ``max_tokens`` tokens: the kept units in document order, joined by
        blank lines."""
        refiner = self.refiner
        refiner.begin()
        result = refiner.refine(query, document, max_tokens)
        spent, reused = refiner.collected()
        if self.keep_records:
            self.records.append(self._record(document, query, result, spent, reused))
        return result.text

    def _record(
        self,
        document: str,
        query: str,
        result: Any,
        spent: dict[str, float],
        reused: set[str],
    ) -> CallRecord:
        timings = {k: float(result.timings.get(k, 0.0)) for k in (*STEPS, "total")}
        cold = dict(timings)
        for step in _REUSED:  # a reused step costs what computing it cost
            cold[step] = max(timings[step], spent[step]) if step in reused else timings[step]
        cold["total"] = timings["total"] + sum(cold[s] - timings[s] for s in _REUSED)
        refined = result.documents[0]
        doc = refined.structure
        found = result.analysis
        return CallRecord(
            doc_key=document_key(document),
            query=query,
            budget=result.budget,
            tokens=result.tokens,
            timings=timings,
            cold=cold,
            reused=tuple(s for s in _REUSED if s in reused),
            source=doc.source,
            sections=len(doc.outline()),
            leaves=sum(1 for node in doc.tree if node.kind == "paragraph"),
            coverage=self.refiner.coverage_of(doc),
            analysis={
                "label": found.label,
                "w_local": float(found.w_local),
                "w_global": float(found.w_global),
                "source": found.source,
            },
            selected=tuple(refined.selection.names),
            selection_source=refined.selection.source,
            trimmed=bool(result.trimmed),
        )

    def step_seconds(self, records: Sequence[CallRecord] | None = None) -> dict[str, float]:
        """Mean cold seconds per step (and ``"total"``) over ``records`` (default: all)."""
        chosen = self.records if records is None else records
        if not chosen:
            return {}
        return {k: sum(r.cold[k] for r in chosen) / len(chosen) for k in (*STEPS, "total")}
