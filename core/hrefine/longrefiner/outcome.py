"""Refining a list of retrieved documents, one outcome per document: what the adapters share.

LangChain compressors and LlamaIndex postprocessors both get a list of texts and must give back
one result per text (or leave the text out, visibly). Running :class:`LongRefiner` over them
against one shared budget (the paper's setting), the ``top_n`` choice, the all-empty rule and
the ``relevance_score``/``hrefine_*`` metadata live here once; the adapters only convert types.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from hrefine._adapter_jobs import job_settings, merged_by_index
from hrefine._query import check_query as _check_query
from hrefine._top_n import TopNRetry
from hrefine.errors import BudgetTooSmallError, EmptyInputError
from hrefine.longrefiner.options import LongRefinerOptions
from hrefine.longrefiner.outcome_metadata import METADATA_KEYS, kept_with_metadata, outcome_metadata
from hrefine.longrefiner.pipeline import USED_FOR, LongRefiner
from hrefine.options import Rebuilt

if TYPE_CHECKING:
    from hrefine.longrefiner.analyze import QueryAnalysis
    from hrefine.longrefiner.pipeline import RefinedDocument, RefineResult

# METADATA_KEYS, kept_with_metadata and outcome_metadata live in outcome_metadata; they are
# imported from here too.
__all__ = [
    "METADATA_KEYS",
    "DocumentOutcome",
    "RefineJob",
    "RefinerSlot",
    "check_query",
    "kept_with_metadata",
    "outcome_metadata",
]

logger = logging.getLogger(__name__)


class RefinerSlot(Rebuilt[LongRefiner]):
    """The :class:`~hrefine.longrefiner.LongRefiner` an adapter makes from its fields, made
    again when a field changed, and after a pickle or deep copy: a copy holds only the recipe,
    never the refiner (whose ``llm`` may be a wrapped framework model that cannot be pickled)."""

    def __init__(self) -> None:
        super().__init__(LongRefinerOptions, LongRefiner)

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_built": None, "_key": None}


@dataclass(frozen=True)
class DocumentOutcome:
    """What refining did to one input document."""

    index: int
    """Position of the document in the input."""
    text: str
    """The kept text (``""`` when nothing was kept)."""
    score: float | None
    """The best combined score (``w_local * LS + w_global * GS``) among the kept nodes; None
    when nothing was kept.
    """
    tokens: int
    """Tokens of ``text`` in the budget's tokenizer."""
    budget: int
    """The token budget the document was refined under."""
    tokenizer: str
    """Name of the budget's tokenizer."""
    scope: str = "shared"
    """``"shared"`` (all documents against one budget) or ``"split"`` (``top_n`` documents,
    each an equal share of the budget: see :class:`RefineJob`).
    """
    structure: str = "empty"
    """Where the document's sections came from (``"markup"`` sources, ``"model"``,
    ``"paragraphs"``, or ``"empty"`` for a document with no text).
    """
    sections_kept: tuple[str, ...] = ()
    """Titles of the sections the kept text comes from, in document order (the lead text
    before the first section is ``"Abstract"``).
    """
    sections_selected: tuple[str, ...] = ()
    """Titles of the sections step 3 (global selection) chose, in document order."""
    analysis: QueryAnalysis | None = None
    """Step 1's outcome for the query (the weights used)."""
    notes: tuple[str, ...] = ()
    """Fallbacks and repairs that concern this document (its structure's notes, a query
    analysis answer that named no label, a best paragraph cut to fit).
    """
    doc_score: float | None = None
    """The best combined score among all the document's nodes, kept or not (None: no text);
    ``top_n`` picks by it.
    """
    units_kept: int = 0
    """Number of the document's nodes kept."""
    below_top_n: bool = False
    """The document was left out because ``top_n`` more relevant ones were returned."""
    repeat_of: int | None = None
    """The earlier input document this one repeats word for word, when it does: it was read
    once, as that one."""

    @property
    def kept(self) -> bool:
        """True when some of the document survived refining."""
        return not self.below_top_n and bool(self.text.strip())

    @property
    def relevance(self) -> float | None:
        """``score`` in [0, 1] (the combined score already is: clipped for safety)."""
        return None if self.score is None else min(1.0, max(0.0, float(self.score)))

    @property
    def reason(self) -> str | None:
        """Why the document was left out (None: it was not)."""
        if self.kept:
            return None
        if self.repeat_of is not None:
            return f"the same text as input {self.repeat_of}"
        if self.doc_score is None:
            return "no text"
        return "below top_n" if self.below_top_n else "nothing fitted the budget"


def check_query(query: object) -> str:
    """The query, checked (see :func:`hrefine._query.check_query`)."""
    return _check_query(query, used_for=USED_FOR)


def _titles(refined: RefinedDocument, ids: Sequence[int]) -> tuple[str, ...]:
    """Titles of the sections holding nodes ``ids`` (a section's own or its nearest
    enclosing one's), in document order, each once."""
    tree = refined.structure.tree
    found: dict[int, str] = {}
    for node_id in ids:
        node = tree[node_id]
        while node.kind != "section" and node.parents:
            node = tree[node.parents[0]]
        if node.kind == "section":
            found.setdefault(node.id, str(node.metadata.get("title", "")))
    ordered = sorted(found, key=lambda i: refined.structure.extent(i)[0])
    return tuple(t for t in (found[i] for i in ordered) if t)


def _call_notes(result: RefineResult) -> list[str]:
    """Notes about the call as a whole, repeated on every document it returns."""
    notes: list[str] = []
    if result.analysis.source == "fallback":
        notes.append(
            "query analysis: the model's answer named neither [Local] nor [Global]; used the "
            "configured global_weight"
        )
    if result.trimmed and not any(d.truncated for d in result.documents):
        # A result built without truncation records: the cut is only known call-wide.
        notes.append("the budget was below every unit: the best paragraph was cut to fit")
    return notes


def _truncation_notes(refined: RefinedDocument) -> list[str]:
    """The cut of this document's kept paragraph, the note ``RefineResult.notes`` has too."""
    return [t.note(n) for n, t in refined.truncated.items()]


def _selection_notes(refined: RefinedDocument) -> list[str]:
    """Step 3's fallback for one document, when its answer named no section."""
    if refined.selection.source == "fallback":
        return ["global selection named no section of the outline; none chosen"]
    return []


def outcomes_of(
    result: RefineResult, *, indices: Sequence[int] = (), scope: str = "shared"
) -> list[DocumentOutcome]:
    """Split a :class:`~hrefine.longrefiner.RefineResult` into one outcome per document.

    Parameters
    ----------
    result:
        The result of one ``LongRefiner.refine`` call.
    indices:
        Index among all input documents of each document of the call (default: 0 onwards).
    scope:
        The budget's scope (see :attr:`DocumentOutcome.scope`).
    """
    shared = _call_notes(result)
    out: list[DocumentOutcome] = []

    def index(local: int) -> int:
        return indices[local] if indices else local

    for local, refined in enumerate(result.documents):
        nodes = refined.combined[1:]
        empty = refined.structure.source == "empty"
        out.append(
            DocumentOutcome(
                index=index(local),
                text=refined.text,
                score=None if refined.score is None else float(refined.score),
                tokens=int(refined.tokens),
                budget=int(result.budget),
                tokenizer=result.tokenizer,
                scope=scope,
                structure=refined.structure.source,
                sections_kept=_titles(refined, refined.kept),
                sections_selected=_titles(refined, refined.selection.selected),
                analysis=result.analysis,
                notes=()
                if empty
                else (
                    *refined.structure.notes,
                    *_selection_notes(refined),
                    *shared,
                    *_truncation_notes(refined),
                ),
                doc_score=None if empty or not len(nodes) else float(np.max(nodes)),
                units_kept=len(refined.kept),
                repeat_of=None if refined.repeat_of is None else index(refined.repeat_of),
            )
        )
    return out


@dataclass(frozen=True)
class RefineJob(TopNRetry[DocumentOutcome]):
    """One adapter call: retrieved documents refined for a query against one shared budget."""

    refiner: LongRefiner
    """The configured refiner."""
    texts: Sequence[str]
    """Text of each retrieved document (HTML, Markdown or plain text), in retrieval order."""
    query: str
    """The question."""
    max_tokens: int
    """The budget, for all documents' kept text together (as in the paper)."""
    titles: Sequence[str] | None = None
    """Title of each document (step 3's outline shows it), or None."""
    top_n: int | None = None
    """Most documents returned (None: every document with something kept). The ``top_n``
    documents with the best-scored nodes are chosen; when others kept text too, the chosen
    ones are refined again on their own, so they share the whole budget, and when one of
    them would keep nothing each is refined to an equal share of the budget instead
    (scope ``"split"``), so exactly ``min(top_n, documents with text)`` come back.
    """
    strict: bool = False
    """Raise :class:`~hrefine.errors.EmptyInputError` when every document is empty; otherwise
    every outcome comes back empty and the reason is logged.
    """

    @classmethod
    def from_fields(
        cls,
        refiner: LongRefiner,
        texts: Sequence[str],
        titles: Sequence[str] | None,
        query: str,
        owner: Any,
    ) -> RefineJob:
        """The job an adapter's fields describe: its ``max_tokens`` field and its
        :class:`~hrefine.results.ResultOptions` fields (checked)."""
        settings = job_settings(owner)
        return cls(refiner, texts, check_query(query), titles=titles, **settings)

    def _titles_of(self, indices: Sequence[int]) -> list[str] | None:
        return None if self.titles is None else [self.titles[i] for i in indices]

    # -- sync ------------------------------------------------------------------------------
    def run(self) -> list[DocumentOutcome]:
        """One outcome per document, in input order."""
        if not self.texts:
            return []
        try:
            result = self.refiner.refine(
                self.query, list(self.texts), self.max_tokens, titles=self.titles
            )
        except EmptyInputError as exc:  # the query was checked: every document is empty
            return self._nothing(exc)
        outcomes = outcomes_of(result)
        chosen = self._chosen(outcomes)
        if chosen is not None and self._others_kept(outcomes, chosen):
            outcomes = self._retry(outcomes, chosen)
        return self._finish(outcomes, chosen)

    def _together(self, indices: Sequence[int]) -> list[DocumentOutcome]:
        texts = [self.texts[i] for i in indices]
        result = self.refiner.refine(
            self.query, texts, self.max_tokens, titles=self._titles_of(indices)
        )
        return outcomes_of(result, indices=indices)

    def _alone(self, i: int, budget: int) -> list[DocumentOutcome]:
        try:
            result = self.refiner.refine(
                self.query, [self.texts[i]], budget, titles=self._titles_of([i])
            )
        except BudgetTooSmallError:  # its share is too small for a word: it keeps nothing
            return []
        return outcomes_of(result, indices=[i], scope="split")

    def _alone_each(self, indices: Sequence[int], budget: int) -> list[DocumentOutcome]:
        return [o for i in indices for o in self._alone(i, budget)]

    # -- async -----------------------------------------------------------------------------
    async def arun(self) -> list[DocumentOutcome]:
        """:meth:`run` on the refiner's async path (the event loop is not blocked)."""
        if not self.texts:
            return []
        try:
            result = await self.refiner.arefine(
                self.query, list(self.texts), self.max_tokens, titles=self.titles
            )
        except EmptyInputError as exc:
            return self._nothing(exc)
        outcomes = outcomes_of(result)
        chosen = self._chosen(outcomes)
        if chosen is not None and self._others_kept(outcomes, chosen):
            outcomes = await self._aretry(outcomes, chosen)
        return self._finish(outcomes, chosen)

    async def _atogether(self, indices: Sequence[int]) -> list[DocumentOutcome]:
        texts = [self.texts[i] for i in indices]
        result = await self.refiner.arefine(
            self.query, texts, self.max_tokens, titles=self._titles_of(indices)
        )
        return outcomes_of(result, indices=indices)

    async def _aalone(self, i: int, budget: int) -> list[DocumentOutcome]:
        try:
            result = await self.refiner.arefine(
                self.query, [self.texts[i]], budget, titles=self._titles_of([i])
            )
        except BudgetTooSmallError:
            return []
        return outcomes_of(result, indices=[i], scope="split")

    async def _aalone_each(self, indices: Sequence[int], budget: int) -> list[DocumentOutcome]:
        # One after the other, as the sync path.
        return [o for i in indices for o in await self._aalone(i, budget)]

    # -- shared steps (pure) ---------------------------------------------------------------
    def _nothing(self, exc: EmptyInputError) -> list[DocumentOutcome]:
        """No document has text: an error with ``strict``, else none returned and why logged."""
        if self.strict:
            raise exc
        logger.warning(
            "LongRefiner returns nothing: all %d documents are empty (no text to refine)",
            len(self.texts),
        )
        return []

    @staticmethod
    def _rank(outcome: DocumentOutcome) -> float | None:
        """Documents are ranked by their best node score, kept or not."""
        return outcome.doc_score

    @staticmethod
    def _others_kept(outcomes: Sequence[DocumentOutcome], chosen: Sequence[int]) -> bool:
        """Whether a document outside ``chosen`` holds part of the budget (refining the chosen
        ones again then gives them that room), or a chosen one kept nothing."""
        picked = set(chosen)
        kept = {o.index for o in outcomes if o.kept}
        return bool(kept - picked) or not picked <= kept

    def _share(self, chosen: Sequence[int]) -> int:
        return max(1, self.max_tokens // max(1, len(chosen)))

    def _merge(
        self,
        first: Sequence[DocumentOutcome],
        again: Sequence[DocumentOutcome],
        chosen: Sequence[int],
    ) -> list[DocumentOutcome]:
        """``first`` with the chosen documents' outcomes from ``again``; a chosen document
        missing from ``again`` (its share of the budget fitted no word) keeps nothing."""
        missing = set(chosen) - {o.index for o in again}
        emptied = [
            dataclasses.replace(o, text="", score=None, tokens=0, units_kept=0, sections_kept=())
            for o in first
            if o.index in missing
        ]
        return merged_by_index(first, [*again, *emptied], chosen)

    @staticmethod
    def _finish(
        outcomes: Sequence[DocumentOutcome], chosen: Sequence[int] | None
    ) -> list[DocumentOutcome]:
        """Documents outside ``chosen`` marked left out."""
        if chosen is None:
            return list(outcomes)
        picked = set(chosen)
        return [
            dataclasses.replace(o, below_top_n=o.index not in picked and bool(o.text.strip()))
            for o in outcomes
        ]
