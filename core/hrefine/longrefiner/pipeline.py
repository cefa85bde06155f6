"""LongRefiner: query analysis, document structuring, dual-level scoring, exact-budget selection.

:class:`LongRefiner` runs the paper's three steps around the core budget selection:

1. **Query analysis** (:mod:`~hrefine.longrefiner.analyze`): the weights of the local and the
   global score, from the model's ``[Local]``/``[Global]`` probabilities.
2. **Structuring** (:meth:`LongRefiner.structure`): the document's section tree, from its own
   markup (HTML, Markdown, numbered clauses, title lines; no model call) or from a model's
   skeleton matched back to the text. Model-made structures are cached by document hash.
3. **Global selection and scoring** (:mod:`~hrefine.longrefiner.select`): the sections the
   model finds useful get a global score; each leaf gets a local score from the scorer; the
   best-scored nodes are kept to the exact budget, in document order.

Every step that needs a model is off when none is given, so ``LongRefiner()`` works offline
with the embedded embedder alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

import hrefine.longrefiner.analyze as analysis
from hrefine.budget import TokenCounter, get_counter
from hrefine.errors import ConfigError
from hrefine.longrefiner.document import StructuredDocument
from hrefine.longrefiner.inputs import (
    USED_FOR,
    blanked,
    check_call,
    check_refine_query,
    present_documents,
)
from hrefine.longrefiner.model_calls import ADAPTERS, answer_text
from hrefine.longrefiner.options import LongRefinerOptions
from hrefine.longrefiner.result import RefinedDocument, RefineResult
from hrefine.longrefiner.select import (
    GlobalSelection,
    Picked,
    global_scores,
    local_scores,
    parse_selection,
    pick,
    selection_prompt,
)
from hrefine.longrefiner.structure_cache import StructureCache
from hrefine.longrefiner.structuring import PendingStructure, Structuring, lift_single_root
from hrefine.options import show_settings_as_keywords
from hrefine.repeats import first_copies

# USED_FOR, RefineResult, RefinedDocument and lift_single_root are imported from here too.
__all__ = ["USED_FOR", "LongRefiner", "RefineResult", "RefinedDocument", "lift_single_root"]


class LongRefiner(Structuring):
    """Refine long documents to a token budget with LongRefiner's three steps.

    Parameters
    ----------
    options:
        The settings (:class:`~hrefine.longrefiner.LongRefinerOptions`); default: its defaults.
    **settings:
        Any :class:`~hrefine.longrefiner.LongRefinerOptions` field, overriding ``options``.

    Examples
    --------
    >>> refiner = LongRefiner(scorer="bm25")
    >>> result = refiner.refine("When does the term expire?", contract_text, 1024)  # doctest: +SKIP
    >>> print(result.text)  # doctest: +SKIP
    """

    def __init__(self, options: LongRefinerOptions | None = None, /, **settings: Any) -> None:
        self.options = LongRefinerOptions.build(options, **settings)
        opts = self.options
        if opts.structure == "model" and not opts.has_model:
            msg = "structure='model' needs a model: pass lm= (a LocalLM) or llm= (any text LLM)"
            raise ConfigError(msg)
        for step in ("query_analysis", "global_selection"):
            if getattr(opts, step) == "on" and not opts.has_model:
                msg = f"{step}='on' needs a model: pass lm= or llm=, or set {step}='auto'"
                raise ConfigError(msg)
        if opts.llm is not None and any(getattr(opts, a) for a in ADAPTERS.values()):
            msg = "LoRA adapters load into a LocalLM: pass lm= (not llm=) with *_adapter paths"
            raise ConfigError(msg)
        if (
            opts.lm is None
            and not opts.has_model
            and any(getattr(opts, a) for a in ADAPTERS.values())
        ):
            msg = "the *_adapter settings need lm= (the base model the adapters were trained on)"
            raise ConfigError(msg)
        cache = None if opts.cache_dir is None else Path(opts.cache_dir)
        if cache is not None and cache.exists() and not cache.is_dir():
            # Found now, not after a model has structured the first document.
            msg = f"cache_dir {opts.cache_dir!r} is a file; give a folder (or None)"
            raise ConfigError(msg)
        self._counter: TokenCounter | None = None
        self._scorer: Any = None
        self._lm_obj: Any = None
        self._adapter_names: dict[str, str] = {}
        self._generator: Any = None
        self._lock = threading.Lock()
        self._cache = StructureCache(opts.cache_dir)
        _ = self.counter
        # Found now, as the HtmlRAG pruner does: a cross-encoder not on disk fails here, not at
        # the first call (models load on first use).
        _ = self.scorer
        if isinstance(opts.lm, (str, os.PathLike)):
            self._lm()

    def __getstate__(self) -> dict[str, Any]:
        # Pickled as its settings: models and caches are resolved again on first use.
        state = dict(self.__dict__)
        state.update(
            _counter=None,
            _scorer=None,
            _lm_obj=None,
            _adapter_names={},
            _generator=None,
        )
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        fields = LongRefinerOptions.__dataclass_fields__
        changed = {k: v for k, v in self.options.plain().items() if v != fields[k].default}
        return f"LongRefiner({', '.join(f'{k}={v!r}' for k, v in changed.items())})"

    # -- models ----------------------------------------------------------------------------
    @property
    def counter(self) -> TokenCounter:
        """The budget's token counter."""
        if self._counter is None:
            self._counter = get_counter(self.options.tokenizer)
        return self._counter

    @property
    def scorer(self) -> Any:
        """The local scorer (resolved on first use)."""
        if self._scorer is None:
            from hrefine.models.scorers import get_scorer

            self._scorer = get_scorer(self.options.scorer, embedder=self.options.embedder)
        return self._scorer

    def warmup(self) -> LongRefiner:
        """Load the budget tokenizer, the scorer's model and the LM (when given) and run one
        tiny refinement, so that the first real call is fast. Returns this refiner."""
        self.refine("Which river is the longest?", _WARMUP_DOC, 32)
        return self

    # -- step 1 ----------------------------------------------------------------------------
    def analyze(self, query: str) -> analysis.QueryAnalysis:
        """Step 1: the local and global weights for ``query`` (the configured weights when the
        step is off or no model is given)."""
        query = check_refine_query(query)
        if not self._step_on("query_analysis"):
            return analysis.fixed_analysis(self.options)
        tuned = self.options.query_analysis_adapter is not None
        system, user = analysis.analysis_prompt(query, self.options, tuned=tuned)
        lm = self._lm()
        if lm is not None:
            probs = lm.choice_probs(
                user,
                list(analysis.prompts.CHOICES),
                system=system,
                adapter=self._adapter("query_analysis"),
            )
            return analysis.from_probabilities(probs)
        answer = self._text_llm().generate(f"{system.strip()}\n\n{user}")
        return analysis.parse_analysis(answer_text(answer), self.options)

    async def aanalyze(self, query: str) -> analysis.QueryAnalysis:
        """:meth:`analyze` on the async path (a text LLM's native async call; a LocalLM's
        forward pass in a worker thread)."""
        query = check_refine_query(query)
        if not self._step_on("query_analysis") or self._lm() is not None:
            return await asyncio.to_thread(self.analyze, query)
        tuned = self.options.query_analysis_adapter is not None
        system, user = analysis.analysis_prompt(query, self.options, tuned=tuned)
        answer = await self._text_llm().agenerate(f"{system.strip()}\n\n{user}")
        return analysis.parse_analysis(answer_text(answer), self.options)

    # -- step 2 ----------------------------------------------------------------------------
    def structure(self, document: str, *, title: str = "") -> StructuredDocument:
        """Step 2: the section tree of ``document`` (HTML, Markdown or plain text).

        With ``structure="auto"`` the document's own markup is used when it has sections;
        otherwise the model structures it (when one is given), else its paragraphs are used.
        A model's skeleton that places too few paragraphs is not used: the markup or paragraph
        structure is, and the structure's ``notes`` say why (its ``raw_outputs`` keep the
        model's answers). Model-made structures are cached by the document's hash.

        Raises
        ------
        EmptyInputError
            The document has no text.
        """
        (doc,) = self._structure_many([document], [title], skip_empty=False)
        assert doc is not None  # skip_empty=False raises instead
        return doc

    def structure_many(
        self,
        documents: Sequence[str],
        *,
        titles: Sequence[str] | None = None,
        skip_empty: bool = True,
    ) -> list[StructuredDocument | None]:
        """:meth:`structure` of several documents, with every window the model has to
        structure sent in one batch. An empty document gives None (``skip_empty``) or raises
        :class:`~hrefine.errors.EmptyInputError`."""
        return self._structure_many(documents, titles, skip_empty=skip_empty)

    def _structure_many(
        self, documents: Sequence[str], titles: Sequence[str] | None, *, skip_empty: bool
    ) -> list[StructuredDocument | None]:
        plans = self._plans(documents, titles, skip_empty)
        prompts = [p for plan in plans if isinstance(plan, PendingStructure) for p in plan.prompts]
        raws = self._ask_many(prompts, step="structuring")
        return self._finish_plans(plans, raws)

    async def astructure_many(
        self,
        documents: Sequence[str],
        *,
        titles: Sequence[str] | None = None,
        skip_empty: bool = True,
    ) -> list[StructuredDocument | None]:
        """:meth:`structure_many` on the async path."""
        plans = await asyncio.to_thread(self._plans, documents, titles, skip_empty)
        prompts = [p for plan in plans if isinstance(plan, PendingStructure) for p in plan.prompts]
        raws = await self._aask_many(prompts, step="structuring")
        return await asyncio.to_thread(self._finish_plans, plans, raws)

    # -- step 3 and selection --------------------------------------------------------------
    def select_sections(self, query: str, doc: StructuredDocument) -> GlobalSelection:
        """Step 3 for one document: the sections the model finds useful for ``query`` (none
        when the step is off, no model is given, or the document has no titled sections)."""
        return self._select_many(query, [doc])[0]

    def select_many(self, query: str, docs: Sequence[StructuredDocument]) -> list[GlobalSelection]:
        """:meth:`select_sections` of several documents, asked in one batch."""
        return self._select_many(query, docs)

    def _select_many(self, query: str, docs: Sequence[StructuredDocument]) -> list[GlobalSelection]:
        asked, prompts = self._selection_prompts(query, docs)
        raws = self._ask_many(prompts, step="global_selection")
        return self._read_selections(docs, asked, raws)

    async def aselect_many(
        self, query: str, docs: Sequence[StructuredDocument]
    ) -> list[GlobalSelection]:
        """:meth:`select_many` on the async path."""
        asked, prompts = self._selection_prompts(query, docs)
        raws = await self._aask_many(prompts, step="global_selection")
        return self._read_selections(docs, asked, raws)

    def _selection_prompts(
        self, query: str, docs: Sequence[StructuredDocument]
    ) -> tuple[list[int], list[tuple[str, str]]]:
        if not self._step_on("global_selection"):
            return [], []
        tuned = self.options.selection_adapter is not None
        asked = [i for i, d in enumerate(docs) if d.outline()]
        return asked, [selection_prompt(query, docs[i], self.options, tuned=tuned) for i in asked]

    def _read_selections(
        self, docs: Sequence[StructuredDocument], asked: list[int], raws: list[str]
    ) -> list[GlobalSelection]:
        out = [GlobalSelection() for _ in docs]
        source = "lm" if self._lm() is not None else "llm"
        for i, raw in zip(asked, raws, strict=True):
            out[i] = parse_selection(raw, docs[i], source=source)
        return out

    def refine(
        self,
        query: str,
        documents: str | Sequence[str],
        max_tokens: int,
        *,
        titles: Sequence[str] | None = None,
    ) -> RefineResult:
        """Refine ``documents`` to at most ``max_tokens`` tokens for ``query``.

        Parameters
        ----------
        query:
            The question.
        documents:
            One document or several (HTML, Markdown or plain text); several share the budget.
        max_tokens:
            The budget, in the tokenizer's tokens, for all documents' kept text together.
        titles:
            Optional title of each document (used in step 3's outline).

        Returns
        -------
        RefineResult
            The kept text per document, the scores, what was dropped and why, and timings.

        Raises
        ------
        EmptyInputError
            No document has any text.
        BudgetTooSmallError
            Not even the first word of the best paragraph fits.
        """
        started = time.perf_counter()
        query, budget, texts = check_call(query, documents, max_tokens, titles)
        repeats = first_copies(texts)  # a text given twice is read once
        timings: dict[str, float] = {}
        with _timed(timings, "analysis"):
            found = self.analyze(query)
        with _timed(timings, "structure"):
            docs = self.structure_many(blanked(texts, repeats), titles=titles)
        present = present_documents(docs)
        with _timed(timings, "selection"):
            chosen = self.select_many(query, present)
        return self._finish(query, found, budget, docs, chosen, repeats, timings, started)

    async def arefine(
        self,
        query: str,
        documents: str | Sequence[str],
        max_tokens: int,
        *,
        titles: Sequence[str] | None = None,
    ) -> RefineResult:
        """:meth:`refine` on the async path: a text LLM's native async calls (side by side),
        and everything that computes (a LocalLM's passes, parsing, scoring, the selection) in
        worker threads, so the event loop stays free. Same parameters and result."""
        started = time.perf_counter()
        query, budget, texts = check_call(query, documents, max_tokens, titles)
        repeats = first_copies(texts)
        timings: dict[str, float] = {}
        with _timed(timings, "analysis"):
            found = await self.aanalyze(query)
        with _timed(timings, "structure"):
            docs = await self.astructure_many(blanked(texts, repeats), titles=titles)
        present = present_documents(docs)
        with _timed(timings, "selection"):
            chosen = await self.aselect_many(query, present)
        return await asyncio.to_thread(
            self._finish, query, found, budget, docs, chosen, repeats, timings, started
        )

    def _finish(
        self,
        query: str,
        found: analysis.QueryAnalysis,
        budget: int,
        docs: list[StructuredDocument | None],
        chosen: list[GlobalSelection],
        repeats: dict[int, int],
        timings: dict[str, float],
        started: float,
    ) -> RefineResult:
        """Local and global scores, the budgeted selection and the result."""
        present = present_documents(docs)
        t = time.perf_counter()
        ls = local_scores(query, present, self.scorer, lexical_weight=self.options.lexical_weight)
        gs = [global_scores(d, c.selected) for d, c in zip(present, chosen, strict=True)]
        if any(c.selected for c in chosen):
            combined = [found.w_local * a + found.w_global * b for a, b in zip(ls, gs, strict=True)]
        else:
            # No section was chosen (step 3 off, or its answer named none): every global score
            # is 0 and the ranking is the local one; the score stays in [0, 1] at full scale.
            combined = [a.copy() for a in ls]
        timings["scoring"] = time.perf_counter() - t
        t = time.perf_counter()
        picked = pick(present, combined, budget, self.counter, separator=self.options.separator)
        timings["fill"] = time.perf_counter() - t
        timings["total"] = time.perf_counter() - started
        notes = [
            f"document {i} is the same text as document {repeats[i]}: read once"
            if i in repeats
            else f"document {i} has no text: skipped"
            for i, d in enumerate(docs)
            if d is None
        ]
        for d, c in zip(present, chosen, strict=True):
            notes.extend(d.notes)
            if c.source == "fallback":
                notes.append("global selection named no section of the outline; none chosen")
        for cuts in picked.truncated:
            notes.extend(t.note(n) for n, t in cuts.items())
        return self._result(
            query, found, budget, docs, chosen, ls, gs, combined, picked, timings, notes, repeats
        )

    def _result(
        self,
        query: str,
        found: analysis.QueryAnalysis,
        budget: int,
        docs: list[StructuredDocument | None],
        chosen: list[GlobalSelection],
        ls: list[np.ndarray],
        gs: list[np.ndarray],
        combined: list[np.ndarray],
        picked: Picked,
        timings: dict[str, float],
        notes: list[str],
        repeats: dict[int, int],
    ) -> RefineResult:
        out: list[RefinedDocument] = []
        k = 0
        for i, doc in enumerate(docs):
            if doc is None:
                out.append(RefinedDocument.skipped(i, repeat_of=repeats.get(i)))
                continue
            kept = picked.kept[k]
            text = picked.texts[k]
            best = max((float(combined[k][n]) for n in kept), default=None)
            out.append(
                RefinedDocument(
                    i,
                    text,
                    kept,
                    self.counter.count(text) if text else 0,
                    best,
                    doc,
                    ls[k],
                    gs[k],
                    combined[k],
                    chosen[k],
                    picked.dropped[k],
                    picked.truncated[k] if picked.truncated else {},
                )
            )
            k += 1
        name = str(getattr(self.counter, "name", "") or type(self.counter).__name__)
        return RefineResult(
            query,
            out,
            found,
            budget,
            picked.tokens,
            name,
            self.options.separator,
            timings,
            picked.trimmed,
            notes,
        )


_WARMUP_DOC = (
    "# Rivers of Europe\n\nThe Danube flows through ten countries.\n\n"
    "## Length\n\nThe Volga is the longest river of Europe, at about 3,530 kilometres.\n"
)


@contextlib.contextmanager
def _timed(timings: dict[str, float], step: str) -> Iterator[None]:
    """Seconds the block took, as ``timings[step]`` (not set when it raises)."""
    t = time.perf_counter()
    yield
    timings[step] = time.perf_counter() - t


show_settings_as_keywords(LongRefiner.__init__, LongRefinerOptions)
