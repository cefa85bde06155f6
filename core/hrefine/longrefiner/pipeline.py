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
import dataclasses
import hashlib
import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence, Set
from pathlib import Path
from typing import Any

import numpy as np

from hrefine._encodable import encodable
from hrefine._query import check_query
from hrefine.budget import TokenCounter, get_counter
from hrefine.errors import (
    ConfigError,
    EmptyInputError,
    InputTypeError,
    PersistenceError,
    TreeError,
)
from hrefine.longrefiner import analyze as analysis
from hrefine.longrefiner.document import StructuredDocument, build_document, check_structure
from hrefine.longrefiner.options import LongRefinerOptions
from hrefine.longrefiner.select import (
    GlobalSelection,
    Picked,
    global_scores,
    local_scores,
    parse_selection,
    pick,
    selection_prompt,
)
from hrefine.longrefiner.spans import Span, fill_gaps

__all__ = ["USED_FOR", "LongRefiner", "RefineResult", "RefinedDocument", "lift_single_root"]

#: What an empty query's error says LongRefiner needs the query for.
USED_FOR = "LongRefiner scores the document's sections against the query"

logger = logging.getLogger(__name__)

_ADAPTERS = {
    "query_analysis": "query_analysis_adapter",
    "structuring": "structuring_adapter",
    "global_selection": "selection_adapter",
}
# A model's skeleton that places fewer of its paragraphs than this share is not used.
_MIN_MATCHED = 0.5
# Most notes kept of one window's structuring answer.
_WINDOW_NOTES = 20
# Structures kept in memory per refiner.
_MEMORY_CACHE = 256
_STRUCTURE_KIND = "longrefiner_structure"
# Step 3's answer is a list of titles: a local model stops once it is closed, or at the end of
# its first paragraph (SmolLM2 went on for all 256 tokens it was allowed over a paper's
# outline, 380-420 s on 2 CPU cores).
_LIST_END = ("]", "\n\n")


@dataclasses.dataclass
class RefinedDocument:
    """One input document's part of a :class:`RefineResult`.

    Attributes
    ----------
    index:
        Position of the document in the input.
    text:
        The kept text: the kept units in document order, joined by the separator (``""`` when
        nothing of this document was kept).
    kept:
        Ids of the kept nodes of ``structure.tree``, in document order.
    tokens:
        Tokens of ``text`` in the budget's tokenizer.
    score:
        The best combined score among the kept nodes (None when nothing was kept).
    structure:
        The document's section tree.
    local, global_, combined:
        Every node's local score, global score and combined score (arrays indexed by node id).
    selection:
        What step 3 chose in this document.
    dropped:
        Every node left out, mapped to why (``"over_budget"``, ``"expanded_into_children"``…).
    """

    index: int
    text: str
    kept: list[int]
    tokens: int
    score: float | None
    structure: StructuredDocument
    local: np.ndarray
    global_: np.ndarray
    combined: np.ndarray
    selection: GlobalSelection
    dropped: dict[int, str]


@dataclasses.dataclass
class RefineResult:
    """The outcome of :meth:`LongRefiner.refine`.

    Attributes
    ----------
    query:
        The question.
    documents:
        One entry per input document, in input order.
    analysis:
        Step 1's outcome (the weights used).
    budget:
        The token budget asked for.
    tokens:
        Tokens of the output (all documents' texts joined), never over ``budget``.
    tokenizer:
        Name of the tokenizer that counted them.
    separator:
        What joins kept units and documents in :attr:`text`.
    timings:
        Seconds per step: ``"analysis"``, ``"structure"``, ``"selection"`` (step 3),
        ``"scoring"`` (local scores), ``"fill"`` (the budgeted selection) and ``"total"``.
    trimmed:
        The budget was below every unit: the best paragraph was cut to fit.
    notes:
        Fallbacks and repairs, in order (also in each structure's ``notes``).
    """

    query: str
    documents: list[RefinedDocument]
    analysis: analysis.QueryAnalysis
    budget: int
    tokens: int
    tokenizer: str
    separator: str
    timings: dict[str, float]
    trimmed: bool = False
    notes: list[str] = dataclasses.field(default_factory=list)

    @property
    def text(self) -> str:
        """The kept text of every document, in input order, joined by the separator."""
        return self.separator.join(d.text for d in self.documents if d.text)

    def to_html(self) -> str:
        """A self-contained HTML report: each document's section tree with every section's
        local, global and combined score, what was kept and what was dropped and why."""
        from hrefine.longrefiner.report import render_report

        return render_report(self)


class LongRefiner:
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
        if opts.llm is not None and any(getattr(opts, a) for a in _ADAPTERS.values()):
            msg = "LoRA adapters load into a LocalLM: pass lm= (not llm=) with *_adapter paths"
            raise ConfigError(msg)
        if (
            opts.lm is None
            and not opts.has_model
            and any(getattr(opts, a) for a in _ADAPTERS.values())
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
        self._memory: OrderedDict[str, StructuredDocument] = OrderedDict()
        # Cache entries found damaged, by key, until the structure is built again (its note).
        self._damaged: dict[str, str] = {}
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
            _memory=OrderedDict(),
            _damaged={},
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

    def _lm(self) -> Any:
        """The LocalLM of the model steps (None in prompt-only mode or with no model), with the
        configured adapters loaded."""
        lm = self.options.lm
        if lm is None:
            return None
        with self._lock:
            if self._lm_obj is None:
                if isinstance(lm, (str, os.PathLike)):
                    if str(lm) == "default":
                        from hrefine.models import default_lm

                        lm = default_lm()
                    else:
                        from hrefine.models._lm_name import local_lm_from

                        lm = local_lm_from(lm)
                names: dict[str, str] = {}
                for step, field in _ADAPTERS.items():
                    path = getattr(self.options, field)
                    if path is not None:
                        from hrefine.models._adapter_folder import load_adapter_once

                        # The LM may be shared: each folder gets a name of its own there.
                        names[step] = load_adapter_once(lm, path, step, field)
                self._adapter_names = names
                self._lm_obj = lm
            return self._lm_obj

    def _adapter(self, step: str) -> str | None:
        """The name the step's adapter runs under in the LM (None: the base model)."""
        if getattr(self.options, _ADAPTERS[step]) is None:
            return None
        self._lm()
        return self._adapter_names[step]

    def _text_llm(self) -> Any:
        """The prompt-only LLM as a TextGenerator (None without one)."""
        if self.options.llm is None:
            return None
        if self._generator is None:
            from hrefine.models._lm_name import model_or_name
            from hrefine.models.text_generator import TextGenerator, as_text_generator

            llm = model_or_name(self.options.llm)  # a model name or folder: its LocalLM
            # A framework model wrapped by an adapter comes as a TextGenerator, set up already.
            self._generator = (
                llm
                if isinstance(llm, TextGenerator)
                else as_text_generator(
                    llm,
                    max_concurrency=self.options.llm_concurrency,
                    retries=self.options.llm_retries,
                    timeout=self.options.llm_timeout,
                )
            )
        return self._generator

    def _ask_many(
        self,
        prompts: Sequence[tuple[str, str]],
        *,
        step: str,
        max_new_tokens: int,
        stop: Sequence[str] | None = None,
    ) -> list[str]:
        """The model's answers to ``(system, user)`` prompts of one step: one batched
        ``generate`` on the LocalLM under the step's adapter, or the text LLM's calls side by
        side (its concurrency limit), the system message on top of each prompt. A LocalLM
        stops at any of ``stop`` (a text LLM is not asked to)."""
        if not prompts:
            return []
        lm = self._lm()
        if lm is not None:
            out: list[str] = [""] * len(prompts)
            by_system: dict[str, list[int]] = {}
            for k, (system, _) in enumerate(prompts):
                by_system.setdefault(system, []).append(k)
            for system, ks in by_system.items():
                answers = lm.generate(
                    [prompts[k][1] for k in ks],
                    system=system,
                    max_new_tokens=max_new_tokens,
                    adapter=self._adapter(step),
                    stop=stop,
                )
                for k, a in zip(ks, answers, strict=True):
                    out[k] = _answer(a)
            return out
        llm = self._text_llm()
        return [_answer(a) for a in llm.batch([f"{sy.strip()}\n\n{us}" for sy, us in prompts])]

    async def _aask_many(
        self,
        prompts: Sequence[tuple[str, str]],
        *,
        step: str,
        max_new_tokens: int,
        stop: Sequence[str] | None = None,
    ) -> list[str]:
        """:meth:`_ask_many` on the async path: a text LLM's native async calls, a LocalLM's
        batch in a worker thread."""
        if not prompts:
            return []
        if self._lm() is not None:
            return await asyncio.to_thread(
                self._ask_many, prompts, step=step, max_new_tokens=max_new_tokens, stop=stop
            )
        llm = self._text_llm()
        answers = await llm.abatch([f"{sy.strip()}\n\n{us}" for sy, us in prompts])
        return [_answer(a) for a in answers]

    def _step_on(self, step: str) -> bool:
        switch = getattr(self.options, step)
        return switch == "on" or (switch == "auto" and self.options.has_model)

    def warmup(self) -> LongRefiner:
        """Load the budget tokenizer, the scorer's model and the LM (when given) and run one
        tiny refinement, so that the first real call is fast. Returns this refiner."""
        self.refine("Which river is the longest?", _WARMUP_DOC, 32)
        return self

    # -- step 1 ----------------------------------------------------------------------------
    def analyze(self, query: str) -> analysis.QueryAnalysis:
        """Step 1: the local and global weights for ``query`` (the configured weights when the
        step is off or no model is given)."""
        query = _check_query(query)
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
        return analysis.parse_analysis(_answer(answer), self.options)

    async def aanalyze(self, query: str) -> analysis.QueryAnalysis:
        """:meth:`analyze` on the async path (a text LLM's native async call; a LocalLM's
        forward pass in a worker thread)."""
        query = _check_query(query)
        if not self._step_on("query_analysis") or self._lm() is not None:
            return await asyncio.to_thread(self.analyze, query)
        tuned = self.options.query_analysis_adapter is not None
        system, user = analysis.analysis_prompt(query, self.options, tuned=tuned)
        answer = await self._text_llm().agenerate(f"{system.strip()}\n\n{user}")
        return analysis.parse_analysis(_answer(answer), self.options)

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
        prompts = [p for plan in plans if isinstance(plan, _Pending) for p in plan.prompts]
        raws = self._ask_many(
            prompts, step="structuring", max_new_tokens=self.options.structure_max_new_tokens
        )
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
        prompts = [p for plan in plans if isinstance(plan, _Pending) for p in plan.prompts]
        raws = await self._aask_many(
            prompts, step="structuring", max_new_tokens=self.options.structure_max_new_tokens
        )
        return await asyncio.to_thread(self._finish_plans, plans, raws)

    def _plans(
        self, documents: Sequence[str], titles: Sequence[str] | None, skip_empty: bool
    ) -> list[StructuredDocument | _Pending | None]:
        """Each document's structure when its markup (or paragraphs) gives it, or what the
        model must be asked; None for an empty one (with ``skip_empty``). A document seen
        twice is asked once."""
        out: list[StructuredDocument | _Pending | None] = []
        pending: dict[str, _Pending] = {}
        for i, document in enumerate(documents):
            try:
                plan = self._plan(document, titles[i] if titles else "")
            except EmptyInputError:
                if not skip_empty:
                    raise
                out.append(None)
                continue
            if isinstance(plan, _Pending):
                if plan.key in pending:
                    plan = _Pending(**{**plan.__dict__, "prompts": [], "same_as": plan.key})
                else:
                    pending[plan.key] = plan
            out.append(plan)
        return out

    def _plan(self, document: str, title: str) -> StructuredDocument | _Pending:
        text = _check_document(document, self.options.max_input_chars)
        from hrefine.longrefiner.markup import markup_spans

        plain, spans, source = markup_spans(text)
        if not plain.strip():
            msg = "the document has no text (only whitespace or markup)"
            raise EmptyInputError(msg)
        spans, found_title = lift_single_root(plain, spans)
        doc_title = title or found_title or _first_title(plain, spans)
        mode = self.options.structure
        if mode == "paragraphs" or (mode == "markup" and source == "paragraphs"):
            from hrefine.longrefiner.markup import paragraph_spans

            spans, source = paragraph_spans(plain), "paragraphs"
        use_model = mode == "model" or (
            mode == "auto" and source == "paragraphs" and self.options.has_model
        )
        if not use_model:
            return self._build(plain, spans, source, doc_title, [], [])
        key = self._cache_key(plain)
        cached = self._cached(key, plain)
        if cached is not None:
            return cached
        from hrefine.longrefiner.skeleton import windows

        lm = self._lm()
        count = lm.count_tokens if lm is not None else self.counter.count
        cuts = windows(plain, count, self.options.window_tokens)
        tuned = self.options.structuring_adapter is not None
        prompts = [_structure_prompt(plain[a:b], self.options, tuned=tuned) for a, b in cuts]
        return _Pending(plain, list(spans), source, doc_title, key, cuts, prompts)

    def _finish_plans(
        self, plans: list[StructuredDocument | _Pending | None], raws: list[str]
    ) -> list[StructuredDocument | None]:
        out: list[StructuredDocument | None] = []
        done: dict[str, StructuredDocument] = {}
        k = 0
        for plan in plans:
            if not isinstance(plan, _Pending):
                out.append(plan)
                continue
            if plan.same_as is not None:
                out.append(None)  # filled below, once its twin is built
                continue
            answers = raws[k : k + len(plan.prompts)]
            k += len(plan.prompts)
            doc = self._from_skeletons(plan, answers)
            done[plan.key] = doc
            out.append(doc)
        for i, plan in enumerate(plans):
            if isinstance(plan, _Pending) and plan.same_as is not None:
                out[i] = done[plan.same_as]
        return out

    def _from_skeletons(self, plan: _Pending, raws: list[str]) -> StructuredDocument:
        """The structure a model's answers (one per window) give, or the markup's when they
        place too few paragraphs; stored in the cache."""
        from hrefine.longrefiner.skeleton import match_skeleton, parse_skeleton

        text = plan.text
        spans: list[Span] = []
        notes: list[str] = []
        given = matched = 0
        for (start, end), raw in zip(plan.cuts, raws, strict=True):
            found, report = match_skeleton(text, parse_skeleton(raw), start=start, end=end)
            given += report.paragraphs
            matched += report.matched
            problems = list(report.problems)
            if len(problems) > _WINDOW_NOTES:
                # A runaway answer can hold thousands of faults: the notes (copied into every
                # returned document's metadata) keep the first ones and a count.
                more = len(problems) - _WINDOW_NOTES
                problems = [*problems[:_WINDOW_NOTES], f"... and {more} more problems"]
            notes.extend(f"window {start}:{end}: {p}" for p in problems)
            spans.extend(found)
        if given == 0 or matched / given < _MIN_MATCHED:
            notes.append(
                f"the model's structure placed {matched} of {given} paragraphs; "
                f"used the document's {plan.source} structure instead"
            )
            logger.warning("LongRefiner: %s", notes[-1])
            doc = self._build(text, plan.markup, plan.source, plan.title, notes, list(raws))
        else:
            doc = self._build(text, fill_gaps(text, spans), "model", plan.title, notes, list(raws))
        self._store(plan.key, doc)
        damaged = self._damaged.pop(plan.key, None)
        if damaged is not None:  # said for this call only: the new entry is sound
            doc = dataclasses.replace(doc, notes=[damaged, *doc.notes])
        return doc

    def _build(
        self,
        text: str,
        spans: Sequence[Span],
        source: str,
        title: str,
        notes: list[str],
        raw: list[str],
    ) -> StructuredDocument:
        return build_document(
            text,
            spans,
            self.counter,
            source=source,
            leaf_tokens=self.options.leaf_tokens,
            min_leaf_tokens=self.options.min_leaf_tokens,
            title=title,
            notes=notes,
            raw_outputs=raw,
        )

    def _cache_key(self, text: str) -> str:
        opts = self.options
        lm = self._lm()
        model = str(getattr(lm, "name", None) or getattr(self._text_llm(), "name", "llm"))
        parts = [
            text,
            model,
            str(opts.structuring_adapter),
            opts.structure_system,
            opts.structure_user,
            str(opts.window_tokens),
            str(opts.structure_max_new_tokens),
            str(opts.leaf_tokens),
            str(opts.min_leaf_tokens),
            str(getattr(self.counter, "name", "")),
        ]
        return hashlib.sha256("\x00".join(parts).encode("utf-8", "surrogatepass")).hexdigest()

    def _cached(self, key: str, text: str) -> StructuredDocument | None:
        with self._lock:
            doc = self._memory.get(key)
            if doc is not None:
                self._memory.move_to_end(key)
                return doc
        entry = self._entry(key)
        if entry is None or not entry.exists():
            return None
        from hrefine.persist import load_tree

        try:
            tree, config, _ = load_tree(entry, kind=_STRUCTURE_KIND)
        except (OSError, PersistenceError) as exc:
            # A damaged entry (cut short by a crash, edited, not ours) is a miss: the model
            # structures the document again and the entry is written again, whole.
            self._miss(key, f"the cached structure {entry} is unreadable ({exc})")
            return None
        if (
            config.get("text_sha256")
            != hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        ):
            return None
        doc = StructuredDocument(
            text,
            tree,
            str(config.get("source", "model")),
            title=str(config.get("title", "")),
            notes=[str(n) for n in config.get("notes", [])],
            raw_outputs=[str(r) for r in config.get("raw_outputs", [])],
        )
        try:
            # A forged entry can pass the checksums (they are recomputed with it): the tree is
            # checked as a model's is, so no paragraph is lost to an emptied extent.
            check_structure(doc)
        except TreeError as exc:
            self._miss(key, f"the cached structure {entry} does not fit the text ({exc})")
            return None
        self._remember(key, doc)
        return doc

    def _entry(self, key: str) -> Path | None:
        """The cache folder of ``key`` (None without a cache), never a link out of it.

        A link in the entry's place is removed, not followed: reading through it would use a
        structure from elsewhere, and writing through it would put files outside ``cache_dir``.
        """
        folder = self.options.cache_dir
        if folder is None:
            return None
        entry = Path(folder) / key
        if entry.is_symlink():
            note = f"the cached structure {entry} is a link, not a folder; removed"
            logger.warning("LongRefiner: %s", note)
            self._damaged[key] = f"{note}; structured again"
            with contextlib.suppress(OSError):  # _store fails cleanly if it is still there
                entry.unlink()
        return entry

    def _miss(self, key: str, why: str) -> None:
        note = f"{why}; structured again"
        logger.warning("LongRefiner: %s", note)
        self._damaged[key] = note

    def _remember(self, key: str, doc: StructuredDocument) -> None:
        with self._lock:
            self._memory[key] = doc
            while len(self._memory) > _MEMORY_CACHE:
                self._memory.popitem(last=False)

    def _store(self, key: str, doc: StructuredDocument) -> None:
        self._remember(key, doc)
        folder = self.options.cache_dir
        entry = self._entry(key)
        if folder is None or entry is None:
            return
        if entry.is_symlink():
            note = f"the structure could not be cached: {entry} is a link that cannot be removed"
            doc.notes.append(note)
            logger.warning("LongRefiner: %s", note)
            return
        from hrefine.persist import save_tree

        config = {
            "text_sha256": hashlib.sha256(doc.text.encode("utf-8", "surrogatepass")).hexdigest(),
            "source": doc.source,
            "title": doc.title,
            "notes": list(doc.notes),
            "raw_outputs": list(doc.raw_outputs),
        }
        try:
            save_tree(doc.tree, entry, kind=_STRUCTURE_KIND, config=config)
        except (OSError, PersistenceError) as exc:
            # The cache only saves a model call next time: the structure is still good.
            note = f"the structure could not be cached in {folder}: {exc}"
            doc.notes.append(note)
            logger.warning("LongRefiner: %s", note)

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
        raws = self._ask_many(
            prompts,
            step="global_selection",
            max_new_tokens=self.options.selection_max_new_tokens,
            stop=_LIST_END,
        )
        return self._read_selections(docs, asked, raws)

    async def aselect_many(
        self, query: str, docs: Sequence[StructuredDocument]
    ) -> list[GlobalSelection]:
        """:meth:`select_many` on the async path."""
        asked, prompts = self._selection_prompts(query, docs)
        raws = await self._aask_many(
            prompts,
            step="global_selection",
            max_new_tokens=self.options.selection_max_new_tokens,
            stop=_LIST_END,
        )
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
        query, budget, texts = _check_call(query, documents, max_tokens, titles)
        timings: dict[str, float] = {}
        t = time.perf_counter()
        found = self.analyze(query)
        timings["analysis"] = time.perf_counter() - t
        t = time.perf_counter()
        docs = self.structure_many(texts, titles=titles)
        timings["structure"] = time.perf_counter() - t
        present = _present(docs)
        t = time.perf_counter()
        chosen = self.select_many(query, present)
        timings["selection"] = time.perf_counter() - t
        return self._finish(query, found, budget, docs, chosen, timings, started)

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
        query, budget, texts = _check_call(query, documents, max_tokens, titles)
        timings: dict[str, float] = {}
        t = time.perf_counter()
        found = await self.aanalyze(query)
        timings["analysis"] = time.perf_counter() - t
        t = time.perf_counter()
        docs = await self.astructure_many(texts, titles=titles)
        timings["structure"] = time.perf_counter() - t
        present = _present(docs)
        t = time.perf_counter()
        chosen = await self.aselect_many(query, present)
        timings["selection"] = time.perf_counter() - t
        return await asyncio.to_thread(
            self._finish, query, found, budget, docs, chosen, timings, started
        )

    def _finish(
        self,
        query: str,
        found: analysis.QueryAnalysis,
        budget: int,
        docs: list[StructuredDocument | None],
        chosen: list[GlobalSelection],
        timings: dict[str, float],
        started: float,
    ) -> RefineResult:
        """Local and global scores, the budgeted selection and the result."""
        present = _present(docs)
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
        notes = [f"document {i} has no text: skipped" for i, d in enumerate(docs) if d is None]
        for d, c in zip(present, chosen, strict=True):
            notes.extend(d.notes)
            if c.source == "fallback":
                notes.append("global selection named no section of the outline; none chosen")
        return self._result(
            query, found, budget, docs, chosen, ls, gs, combined, picked, timings, notes
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
    ) -> RefineResult:
        out: list[RefinedDocument] = []
        k = 0
        empty = np.zeros(0, dtype=np.float64)
        for i, doc in enumerate(docs):
            if doc is None:
                blank = StructuredDocument("", _empty_tree(), "empty")
                out.append(
                    RefinedDocument(
                        i, "", [], 0, None, blank, empty, empty, empty, GlobalSelection(), {}
                    )
                )
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


@dataclasses.dataclass
class _Pending:
    """A document the model has to structure: its text, its markup's structure (the
    fallback), the cache key, the windows and their prompts."""

    text: str
    markup: list[Span]
    source: str
    title: str
    key: str
    cuts: list[tuple[int, int]]
    prompts: list[tuple[str, str]]
    same_as: str | None = None  # the key of an identical document of the same call


def _present(docs: Sequence[StructuredDocument | None]) -> list[StructuredDocument]:
    present = [d for d in docs if d is not None]
    if not present:
        msg = f"all {len(docs)} documents are empty (no text to refine)"
        raise EmptyInputError(msg)
    return present


def _check_call(
    query: object, documents: object, max_tokens: object, titles: Sequence[str] | None
) -> tuple[str, int, list[str]]:
    text = _check_query(query)
    budget = _check_budget(max_tokens)
    if isinstance(documents, (str, bytes, bytearray)):
        texts: list[Any] = [documents]
    elif isinstance(documents, (Mapping, Set)):
        # A dict would be read as its keys, a set in no set order: neither is a list of texts.
        msg = (
            f"documents must be a string or a list of strings, got {type(documents).__name__}; "
            "pass the texts in a list"
        )
        raise InputTypeError(msg)
    elif isinstance(documents, Sequence) or hasattr(documents, "__iter__"):
        texts = list(documents)  # type: ignore[call-overload]
    else:
        msg = f"documents must be a string or a list of strings, got {type(documents).__name__}"
        raise InputTypeError(msg)
    if titles is not None and len(titles) != len(texts):
        msg = f"got {len(titles)} titles for {len(texts)} documents; pass one per document"
        raise ConfigError(msg)
    return text, budget, texts


_WARMUP_DOC = (
    "# Rivers of Europe\n\nThe Danube flows through ten countries.\n\n"
    "## Length\n\nThe Volga is the longest river of Europe, at about 3,530 kilometres.\n"
)


def _empty_tree() -> Any:
    from hrefine.tree import Tree

    tree = Tree()
    tree.add_node("", kind="document", order=0, metadata={"start": 0, "end": 0})
    return tree


def _structure_prompt(window: str, options: LongRefinerOptions, *, tuned: bool) -> tuple[str, str]:
    """``(system, user)`` of step 2 for one window of text."""
    from hrefine.longrefiner import prompts

    user = options.structure_user.format(doc_content=window)
    return (options.structure_system if tuned else prompts.STRUCTURE_INSTRUCTIONS), user


def lift_single_root(text: str, spans: Sequence[Span]) -> tuple[list[Span], str]:
    """Read a document's one top-level heading as its title, as the pipeline does.

    When one top-level section holds every other section (a page's ``<h1>``, a Markdown
    file's single ``#``), that heading is the document's title rather than a section: the
    spans lose the first step of their path, and the text before its sub-sections is the
    lead. Used by :meth:`LongRefiner.structure` and by the training data builders
    (:mod:`hrefine.train`), so both see the same sections.

    Parameters
    ----------
    text:
        The document's plain text (as :func:`hrefine.longrefiner.markup.markup_spans`
        returns it).
    spans:
        The spans of ``text``.

    Returns
    -------
    tuple[list[Span], str]
        The spans (unchanged when there is no such heading) and the title, as the heading's
        section title (markup such as ``#`` left out; at most 200 characters), or ``""``.
    """
    tops = {s.path[0] for s in spans if s.path}
    if len(tops) != 1 or not any(len(s.path) > 1 for s in spans):
        return list(spans), ""
    heads = [s for s in spans if s.heading and len(s.path) == 1]
    if len(heads) != 1:
        return list(spans), ""
    title = _heading_title(text, heads[0])
    return [Span(s.start, s.end, s.path[1:], s.heading and len(s.path) > 1) for s in spans], title


def _first_title(text: str, spans: Sequence[Span]) -> str:
    for s in spans:
        if s.heading:
            return _heading_title(text, s)
    return ""


def _heading_title(text: str, span: Span) -> str:
    """A heading span's title: the title its section is known by (the markup parsers strip
    ``## `` and ``====`` underlines), else the heading's text, on one line."""
    title = span.path[-1] if span.path and span.path[-1].strip() else text[span.start : span.end]
    return " ".join(title.split())[:200]


def _answer(raw: object) -> str:
    """A model's answer as text every writer takes: kept as raw output (in notes, the
    report, the JSON and the cache), so a lone surrogate in it becomes U+FFFD."""
    return encodable(str(raw))


def _check_query(query: object) -> str:
    return check_query(query, used_for=USED_FOR)


def _check_budget(max_tokens: object) -> int:
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int):
        msg = f"max_tokens must be a whole number, got {type(max_tokens).__name__}"
        raise InputTypeError(msg)
    if max_tokens < 1:
        msg = f"max_tokens must be at least 1, got {max_tokens}"
        raise ConfigError(msg)
    return max_tokens


def _check_document(document: object, max_chars: int) -> str:
    if isinstance(document, (bytes, bytearray)):
        document = bytes(document).decode("utf-8", errors="replace")
    if not isinstance(document, str):
        msg = f"a document must be a string (HTML, Markdown or text), got {type(document).__name__}"
        raise InputTypeError(msg)
    # Lone surrogates (JSON's "\\ud800", text cut inside a pair) reach no tokenizer: each
    # becomes U+FFFD, as in the query, so the structure still holds every other character.
    document = encodable(document)
    if len(document) > max_chars:
        msg = (
            f"document of {len(document):,} characters is over max_input_chars "
            f"({max_chars:,}); raise the limit or split the document"
        )
        raise ConfigError(msg)
    if not document.strip():
        msg = "the document is empty"
        raise EmptyInputError(msg)
    return document
