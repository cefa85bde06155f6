"""Step 2 of LongRefiner, structuring: each document's sections from its own markup, or the
windows a model is asked to outline and its skeletons matched back to the text.

:class:`Structuring` is a mixin of :class:`~hrefine.longrefiner.pipeline.LongRefiner` (which
holds the public ``structure`` methods): it plans what the model must be asked, and builds the
structures from its answers, through the refiner's :class:`StructureCache`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from hrefine.errors import EmptyInputError
from hrefine.longrefiner.document import StructuredDocument, build_document
from hrefine.longrefiner.inputs import check_document
from hrefine.longrefiner.model_calls import ModelCalls
from hrefine.longrefiner.options import LongRefinerOptions
from hrefine.longrefiner.prompts import STRUCTURE_INSTRUCTIONS
from hrefine.longrefiner.spans import Span, fill_gaps
from hrefine.longrefiner.structure_cache import StructureCache

if TYPE_CHECKING:
    from hrefine.budget import TokenCounter

__all__ = ["PendingStructure", "Structuring", "lift_single_root", "structure_prompt"]

logger = logging.getLogger("hrefine.longrefiner.pipeline")  # the logger it always wrote to

# A model's skeleton that places fewer of its paragraphs than this share is not used.
_MIN_MATCHED = 0.5
# Most notes kept of one window's structuring answer.
_WINDOW_NOTES = 20


class Structuring(ModelCalls):
    """Plans and builds documents' structures (step 2) for a refiner."""

    _cache: StructureCache

    if TYPE_CHECKING:

        @property
        def counter(self) -> TokenCounter: ...

    def _plans(
        self, documents: Sequence[str], titles: Sequence[str] | None, skip_empty: bool
    ) -> list[StructuredDocument | PendingStructure | None]:
        """Each document's structure when its markup (or paragraphs) gives it, or what the
        model must be asked; None for an empty one (with ``skip_empty``). A document seen
        twice is asked once."""
        out: list[StructuredDocument | PendingStructure | None] = []
        pending: dict[str, PendingStructure] = {}
        for i, document in enumerate(documents):
            try:
                plan = self._plan(document, titles[i] if titles else "")
            except EmptyInputError:
                if not skip_empty:
                    raise
                out.append(None)
                continue
            if isinstance(plan, PendingStructure):
                if plan.key in pending:
                    plan = PendingStructure(**{**plan.__dict__, "prompts": [], "same_as": plan.key})
                else:
                    pending[plan.key] = plan
            out.append(plan)
        return out

    def _plan(self, document: str, title: str) -> StructuredDocument | PendingStructure:
        text = check_document(document, self.options.max_input_chars)
        from hrefine.longrefiner.markup import markup_spans

        plain, spans, source = markup_spans(text)
        if not plain.strip():
            msg = "the document has no text (only whitespace or markup)"
            raise EmptyInputError(msg)
        spans, found_title = lift_single_root(plain, spans)
        doc_title = title or found_title or first_title(plain, spans)
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
        cached = self._cache.get(key, plain)
        if cached is not None:
            return cached
        from hrefine.longrefiner.skeleton import windows

        lm = self._lm()
        count = lm.count_tokens if lm is not None else self.counter.count
        cuts = windows(plain, count, self.options.window_tokens)
        tuned = self.options.structuring_adapter is not None
        prompts = [structure_prompt(plain[a:b], self.options, tuned=tuned) for a, b in cuts]
        return PendingStructure(plain, list(spans), source, doc_title, key, cuts, prompts)

    def _finish_plans(
        self, plans: list[StructuredDocument | PendingStructure | None], raws: list[str]
    ) -> list[StructuredDocument | None]:
        out: list[StructuredDocument | None] = []
        done: dict[str, StructuredDocument] = {}
        k = 0
        for plan in plans:
            if not isinstance(plan, PendingStructure):
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
            if isinstance(plan, PendingStructure) and plan.same_as is not None:
                out[i] = done[plan.same_as]
        return out

    def _from_skeletons(self, plan: PendingStructure, raws: list[str]) -> StructuredDocument:
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
        self._cache.put(plan.key, doc)
        damaged = self._cache.pop_damaged(plan.key)
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


@dataclasses.dataclass
class PendingStructure:
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


def structure_prompt(window: str, options: LongRefinerOptions, *, tuned: bool) -> tuple[str, str]:
    """``(system, user)`` of step 2 for one window of text."""
    user = options.structure_user.format(doc_content=window)
    return (options.structure_system if tuned else STRUCTURE_INSTRUCTIONS), user


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
    title = heading_title(text, heads[0])
    return [Span(s.start, s.end, s.path[1:], s.heading and len(s.path) > 1) for s in spans], title


def first_title(text: str, spans: Sequence[Span]) -> str:
    """The title of the first heading among ``spans`` (``""`` when none is a heading)."""
    for s in spans:
        if s.heading:
            return heading_title(text, s)
    return ""


def heading_title(text: str, span: Span) -> str:
    """A heading span's title: the title its section is known by (the markup parsers strip
    ``## `` and ``====`` underlines), else the heading's text, on one line."""
    title = span.path[-1] if span.path and span.path[-1].strip() else text[span.start : span.end]
    return " ".join(title.split())[:200]
