"""HtmlRAG's two-step block-tree pruning (§3.4) under an exact token budget.

Stage 1 scores every block's text (with its headings and table header as context) for the query
with an embedding, BM25 or cross-encoder scorer (:mod:`hrefine.html.scoring`) and keeps the best
blocks that fit. Stage 2 (``generative=True``, :mod:`hrefine.html.generative`) rebuilds a finer
block tree from the stage-1 output and rescores it by the generation probability of each
block's tag path. Both stages fill the budget the same way (:func:`hrefine.html.fill.fill`):
greedy by score, then measured on the real rendered output, shrunk until it fits and topped up
while a next-best block still fits.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Sequence
from typing import Any

from hrefine.budget import MemoCounter, TokenCounter, get_counter
from hrefine.html._cleancache import CleanedCache
from hrefine.html._locate import document_order, positions
from hrefine.html.blocks import (
    BlockForest,
    collector_paused,
    serialize_element,
    title_parts,
)
from hrefine.html.columns import ColumnChoice, project_columns
from hrefine.html.costed_forest import costed_forest, split_limit
from hrefine.html.fill import fill, reports
from hrefine.html.generative import refine
from hrefine.html.options import MIN_BUDGET, HtmlPrunerOptions
from hrefine.html.outcome import check_query
from hrefine.html.paragraphs import split_long_paragraphs
from hrefine.html.prune_inputs import check_budget, clean_pages, pages_of
from hrefine.html.render import omit_end_tags
from hrefine.html.result import BlockReport, PruneResult
from hrefine.html.scoring import (
    BlockScorer,
    asks_order,
    inherit_table_scores,
    last_rows,
    neighbour_scores,
    stage1_items,
)
from hrefine.models._loop import run_in_worker
from hrefine.models.scorers import EmbeddingScorer
from hrefine.options import show_settings_as_keywords

__all__ = ["MIN_BUDGET", "HtmlPruner"]

logger = logging.getLogger(__name__)

# Largest share of the budget a table too big for it keeps when narrowed to its best columns.
_NARROW_SHARE = 0.5
# warmup()'s call: a page of a few short blocks, a question on it and a budget under the page.
_WARMUP_PAGE = (
    "<html><head><title>Warm-up</title></head><body><h1>Rivers of Europe</h1>"
    "<p>The Danube flows through ten countries, more than any other river in the world.</p>"
    "<p>The Rhine rises in the Swiss Alps and reaches the North Sea at Rotterdam.</p>"
    "<p>The Volga is the longest river of Europe, at about 3,530 kilometres.</p>"
    "<table><tr><th>River</th><th>Length (km)</th></tr><tr><td>Volga</td><td>3530</td></tr>"
    "<tr><td>Danube</td><td>2850</td></tr><tr><td>Rhine</td><td>1230</td></tr></table>"
    "</body></html>"
)
_WARMUP_QUERY = "Which river of Europe is the longest?"
_WARMUP_BUDGET = 32


class HtmlPruner:
    """Prune HTML pages to a token budget, keeping the blocks most relevant to a query.

    Parameters
    ----------
    options:
        The settings (:class:`~hrefine.html.HtmlPrunerOptions`); default: its defaults.
    **settings:
        Any :class:`~hrefine.html.HtmlPrunerOptions` field, overriding ``options``:
        ``scorer``, ``embedder``, ``tokenizer``, ``max_words``, ``generative``, ``lm``,
        ``generative_adapter``, ``fine_max_words``, ``stage1_max_tokens``, ``boilerplate``,
        ``omit_end_tags``, ``lexical_weight``, ``narrow_tables``, ``split_paragraphs``,
        ``demote_back_matter``, ``read_words``, ``embed_max_tokens``, ``record_tables``,
        ``keep_last_rows``, ``neighbour_rows``, ``cleaned_cache``, ``input_format``. An unknown
        name raises :class:`~hrefine.errors.ConfigError` listing them.

    Examples
    --------
    >>> pruner = HtmlPruner(scorer="bm25", max_words=128)
    >>> result = pruner.prune(page_html, "who won in 1972?", 1024)  # doctest: +SKIP
    >>> result.html, result.tokens  # doctest: +SKIP
    """

    def __init__(self, options: HtmlPrunerOptions | None = None, /, **settings: Any) -> None:
        self.options = HtmlPrunerOptions.build(options, **settings)
        self._scoring = BlockScorer(self.options)
        self._counter: TokenCounter | None = None
        self._default_lm: Any = None
        self._adapter_name: str | None = None  # generative_adapter's name in the LM, once loaded
        self._cleaned = CleanedCache(max_pages=self.options.cleaned_cache)
        self._warm = False
        # Names are resolved now, so that a tokenizer, cross-encoder or LM that is not on disk
        # fails here, with a hint, instead of at the first call; weights load on first use or
        # in warmup().
        _ = self.counter
        _ = self._scoring.scorer
        if self.options.generative_adapter is not None:
            from hrefine.models._adapter_folder import check_adapter_folder

            check_adapter_folder(self.options.generative_adapter, "generative_adapter")
        if isinstance(self.options.lm, (str, os.PathLike)):
            self._lm()

    def __getstate__(self) -> dict[str, Any]:
        # Pickled (or deep-copied) as its settings: the scorer, the token counter and the
        # default LM are resolved again on first use, and the caches start empty.
        state = dict(self.__dict__)
        state.update(
            _scoring=BlockScorer(self.options),
            _counter=None,
            _default_lm=None,
            _adapter_name=None,
            _warm=False,
        )
        return state

    def __repr__(self) -> str:
        changed = {
            k: v
            for k, v in self.options.plain().items()
            if v != HtmlPrunerOptions.__dataclass_fields__[k].default
        }
        return f"HtmlPruner({', '.join(f'{k}={v!r}' for k, v in changed.items())})"

    # -- lazily resolved models ------------------------------------------------------------
    @property
    def scorer(self) -> Any:
        """The stage-1 scorer (resolved on first use)."""
        return self._scoring.scorer

    @property
    def counter(self) -> TokenCounter:
        """The budget's token counter (remembering block and cell counts across calls)."""
        if self._counter is None:
            counter = get_counter(self.options.tokenizer)
            self._counter = counter if isinstance(counter, MemoCounter) else MemoCounter(counter)
        return self._counter

    def _lm(self) -> Any:
        """The generative stage's LM: the one given, the one named, or the embedded SmolLM2,
        with ``generative_adapter`` loaded into it (see :attr:`generative_adapter_name`)."""
        lm = self.options.lm
        if lm is None or isinstance(lm, (str, os.PathLike)):
            if self._default_lm is None:
                if lm is None:
                    from hrefine.models import default_lm

                    self._default_lm = default_lm()
                else:
                    from hrefine.models._lm_name import local_lm_from

                    self._default_lm = local_lm_from(lm)
            lm = self._default_lm
        path = self.options.generative_adapter
        if path is not None and self._adapter_name is None:
            from hrefine.models._adapter_folder import load_adapter_once

            # The LM may be shared (the embedded one is): the adapter is loaded beside any
            # others under a name of its own, and stage 2 selects it only for its own calls.
            self._adapter_name = load_adapter_once(lm, path, "html_pruner", "generative_adapter")
        return lm

    @property
    def generative_adapter_name(self) -> str | None:
        """The name ``generative_adapter`` runs under in the LM (``lm.adapters`` lists it), or
        None without one. Asking loads the adapter, and so the LM's weights."""
        if self.options.generative_adapter is None:
            return None
        self._lm()
        return self._adapter_name

    def warmup(self) -> HtmlPruner:
        """Load the models now and run one tiny call, so that the first real call is fast.

        Loads the tokenizer that counts the budget; the stage-1 scorer's model (the
        embedder's weights for ``scorer="embedding"``, the cross-encoder's for
        ``"cross-encoder:<model>"``) and the BM25 match's stopwords; and, with
        ``generative=True``, the LM's weights. Then it prunes a small built-in page, which
        runs each model once and pays the one-off costs of a first pass (the embedder's CPU
        checks, the LM's first forward pass). On a CPU this takes a few seconds the first time
        in a process, mostly importing torch and transformers and reading the weights; the
        models are shared, so warming one pruner warms others using the same ones.

        Idempotent: a second call returns at once. A copy or a pickle of the pruner starts
        cold.

        Returns
        -------
        HtmlPruner
            This pruner, so that ``pruner = HtmlPruner(...).warmup()`` reads as one step.

        Raises
        ------
        ModelNotFoundError, MissingDependencyError
            A model, or the package that runs it, is missing.
        """
        if self._warm:
            return self
        if self.options.generative:
            lm = self._lm()
            _ = lm.tokenizer  # a LocalLM loads its tokenizer and weights together
        # Stage 2 runs on this page when generative: its stage-1 output (4x the budget)
        # exceeds the budget.
        budget = _WARMUP_BUDGET // 2 if self.options.generative else _WARMUP_BUDGET
        self.prune(_WARMUP_PAGE, _WARMUP_QUERY, budget)
        self._warm = True
        return self

    def clear_cache(self) -> None:
        """Forget the cleaned pages kept for pruning them again (the next call cleans anew)."""
        self._cleaned.clear()

    # -- public API ------------------------------------------------------------------------
    def prune(
        self, html: str | bytes | Sequence[str | bytes], query: str, max_tokens: int
    ) -> PruneResult:
        """Prune one page, or several pages against one budget.

        Parameters
        ----------
        html:
            A page (str or bytes) or a sequence of pages; blocks of all pages compete.
        query:
            The question the output should answer.
        max_tokens:
            Budget in tokens of the pruner's tokenizer; the output never exceeds it.

        Returns
        -------
        PruneResult
            Pruned HTML (original tag names, valid HTML) and a report on every block.
            If not even the best block fits on its own, the output is that block's text cut to
            the budget, with ``stats["truncated"] = True``. A page among several that cannot
            be read (binary, over ``max_input_bytes``, of a wrong type, or one the parser
            fails on) is skipped and listed in ``stats["failed_documents"]`` with the reason;
            its blocks report ``"failed"``.

        Raises
        ------
        EmptyInputError
            No page was given, every page is empty, or the query is empty.
        HtmlParseError
            The only page, or every page, cannot be read (the message names each one).
        BudgetTooSmallError
            ``max_tokens`` is below :data:`MIN_BUDGET`, or not even one word fits.
        InputTypeError
            ``html`` is not text, bytes or an iterable of them, ``query`` is not a str, or
            ``max_tokens`` is not an integer.
        MissingDependencyError
            The BM25 match is on (``lexical_weight > 0`` or ``scorer="bm25"``) and ``bm25s``
            is not installed.
        """
        docs = pages_of(html)
        query = check_query(query)  # InputTypeError / EmptyInputError; surrogates replaced
        max_tokens = check_budget(max_tokens)
        opts = self.options
        counter = self.counter
        pages = clean_pages(docs, opts, self._cleaned)
        roots, doc_ids, cleaned, formats = pages.roots, pages.doc_ids, pages.cleaned, pages.formats
        # A huge page allocates millions of objects, none of them garbage: see collector_paused.
        with collector_paused(roots):
            # The whole cleaned input, written as the output is (with or without optional end tags).
            whole = "\n".join(c for c in cleaned if c)
            original_tokens = counter.count(omit_end_tags(whole) if opts.omit_end_tags else whole)
            stage1_budget = opts.stage1_max_tokens or (
                4 * max_tokens if opts.generative else max_tokens
            )
            stage1_budget = max(stage1_budget, max_tokens)
            # Element indexes of the documents as cleaned, taken before the first in-place change
            # (narrowed tables, split paragraphs), which the block reports refer to.
            order: dict[Any, int] = {}

            def record_order() -> None:
                if not order:
                    for root in roots:
                        order.update(document_order(root))

            narrowed = self._narrow(roots, doc_ids, query, stage1_budget, record_order)
            pieces = self._split(roots, stage1_budget, order, record_order)
            cleaned_order = order or None
            forest, costs, groups = self.block_forest(roots, doc_ids, opts.max_words, stage1_budget)
            ids = forest.block_ids()
            scoring = self._scoring
            # BM25 alone: a single page's title opens every block's context, where it tells the
            # blocks apart by nothing but their lengths, and takes its words' weight (IDF) to zero,
            # so a question naming the page's subject matches none of its text. Several pages keep
            # it: there it tells the pages apart.
            drop = title_parts(roots[0]) if scoring.lexical and len(roots) == 1 else ()
            # Tables and lists are also scored as a whole, in the same call (one embedding batch,
            # one BM25 index, so block and group scores are on one scale): a question about a
            # table (its columns, its extremes) may match no single row of it. With an embedder
            # and the BM25 match, a split paragraph is embedded whole, as it would be unsplit, and
            # its pieces take that score; another scorer scores each piece itself.
            found = stage1_items(
                forest,
                ids,
                pieces,
                drop=drop,
                demote=opts.demote_back_matter,
                paragraphs_whole=isinstance(scoring.scorer, EmbeddingScorer)
                and opts.lexical_weight != 0,
            )
            all_scores = scoring.score(query, found.items, read=scoring.reader(query))
            n, g = len(ids), len(found.group_ids)
            group_scores = dict(zip(found.group_ids, all_scores[n : n + g].tolist(), strict=True))
            # A table kept in part keeps its last row too: the latest entry, the end of a ranking.
            lead = last_rows(forest, ids, found.tables) if opts.keep_last_rows else ()
            own = all_scores[:n]
            if opts.neighbour_rows and asks_order(query):  # the named row's neighbours too
                own = neighbour_scores(forest, ids, found.tables, own, group_scores)
            scores1 = inherit_table_scores(ids, own, found.tables, group_scores, lead)

            def fill_to(budget: int) -> Any:
                return fill(
                    forest, ids, costs, scores1, budget, counter, len(docs), groups, group_scores
                )

            def reports_of(fitted: Any) -> list[BlockReport]:
                return reports(
                    forest, ids, costs, fitted, scores1, None, positions(forest, cleaned_order)
                )

            fit1 = fill_to(stage1_budget)
            stats: dict[str, Any] = {
                "stage1_tokens": fit1.tokens,
                "renders": fit1.renders,
                "truncated": fit1.truncated,
                "scorer": getattr(scoring.scorer, "name", type(scoring.scorer).__name__),
                "narrowed_tables": [vars(c) for c in narrowed],
                "split_paragraphs": len(set(pieces.values())),
                "back_matter_blocks": sum(it.back for it in found.items[:n]),
                "input_formats": formats,
            }
            block_reports = reports_of(fit1)
            fit = fit1
            if fit1.tokens > max_tokens and (fit1.truncated or not opts.generative):
                # Stage 1 read more than the output holds, and stage 2 cannot narrow it (a block
                # cut to fit): filled again at the budget itself, never returned over it.
                fit = fill_to(max_tokens)
                block_reports = reports_of(fit)
                stats["truncated"] = fit.truncated
            elif opts.generative and fit1.tokens > max_tokens:
                lm = self._lm()
                adapter = self._adapter_name
                with lm.using(adapter) if adapter is not None else contextlib.nullcontext():
                    fit, reports2, cost = refine(
                        lm,
                        fit1,
                        forest,
                        ids,
                        scores1,
                        query,
                        max_tokens,
                        fine_max_words=opts.fine_max_words,
                        build_forest=self.block_forest,
                        counter=counter,
                        omit_optional_end_tags=opts.omit_end_tags,
                        cleaned_order=cleaned_order,
                    )
                stats.update(cost, generative_adapter=adapter)
                block_reports = [r for r in block_reports if not r.kept] + reports2
            block_reports.extend(
                BlockReport(-1, d, "", "", 0, None, None, -1, False, pages.skip_reason(d))
                for d in range(len(docs))
                if d not in doc_ids
            )
            stats.update(pages.skipped_stats())
            block_reports.sort(key=lambda r: (r.doc, r.block_id))
            stats["renders"] = fit1.renders + (0 if fit is fit1 else fit.renders)
            return PruneResult(
                html=fit.html,
                documents=fit.documents,
                blocks=block_reports,
                query=query,
                budget=max_tokens,
                tokens=fit.tokens,
                original_tokens=original_tokens,
                cleaned=cleaned,
                tokenizer=counter.name,
                stats=stats,
            )

    async def aprune(
        self, html: str | bytes | Sequence[str | bytes], query: str, max_tokens: int
    ) -> PruneResult:
        """:meth:`prune` run in hrefine's worker threads, so the event loop stays free.

        An embedder with async methods (LangChain's ``aembed_documents``, LlamaIndex's
        ``aget_text_embedding_batch``) has them awaited on this event loop meanwhile.
        """
        return await run_in_worker(self.prune, html, query, max_tokens)

    # -- steps -----------------------------------------------------------------------------
    def _narrow(
        self,
        roots: Sequence[Any],
        doc_ids: Sequence[int],
        query: str,
        budget: int,
        before_change: Callable[[], None],
    ) -> list[ColumnChoice]:
        """Column projection of the tables too big for ``budget`` (in place, see narrow_tables);
        what each narrowed table kept, each also logged (named by its input, ``doc_ids``)."""
        if not self.options.narrow_tables:
            return []
        return project_columns(
            roots,
            query,
            budget=budget,
            share=_NARROW_SHARE,
            score_groups=self._scoring.score_groups,
            match=self._scoring.bm25().score,
            count_many=self.counter.count_many,
            serialize=self._counted_html,
            before_change=before_change,
            documents=doc_ids,
        )

    def _split(
        self,
        roots: Sequence[Any],
        budget: int,
        order: dict[Any, int],
        before_change: Callable[[], None],
    ) -> dict[Any, Any]:
        """Paragraphs over their share of ``budget`` split in place (see split_paragraphs);
        each piece → its paragraph. Each piece takes its paragraph's index in ``order``."""
        if not self.options.split_paragraphs:
            return {}
        origin = split_long_paragraphs(
            roots,
            split_limit(budget),
            count_many=self.counter.count_many,
            serialize=self._counted_html,
            before_change=before_change,
        )
        for piece, paragraph in origin.items():
            order[piece] = order[paragraph]
        return origin

    def _counted_html(self, el: Any) -> str:
        """An element's HTML as the budget counts it (without its tail)."""
        html = serialize_element(el)
        return omit_end_tags(html) if self.options.omit_end_tags else html

    def block_forest(
        self, roots: Sequence[Any], doc_ids: Sequence[int], max_words: int, budget: int
    ) -> tuple[BlockForest, dict[int, int], dict[int, int]]:
        """The block tree the pruner scores, built as either stage builds it.

        Stage 1 builds it over the cleaned pages with ``max_words`` and its budget; stage 2
        over the stage-1 output with ``fine_max_words`` and the final budget. The pruner's
        token counter prices the blocks, and its ``omit_end_tags`` and ``record_tables``
        settings apply. :mod:`hrefine.train` builds the pruner's training targets on it, so
        that they name the blocks stage 2 scores.

        Parameters
        ----------
        roots:
            Parsed, cleaned pages (lxml roots, e.g. from
            :func:`hrefine.html.clean.clean_document`).
        doc_ids:
            The index of each page among the inputs (the block reports' ``doc``).
        max_words:
            Largest block, in words.
        budget:
            The token budget of the stage: a block over a quarter of it (at least 64 tokens)
            is split into its children, a row, item or paragraph only when over all of it.

        Returns
        -------
        forest, costs, groups
            The :class:`~hrefine.html.blocks.BlockForest`; each block's token cost by node
            id; the cost of each table or list that fits ``budget`` whole, by node id.
        """
        return costed_forest(
            roots,
            doc_ids,
            max_words,
            budget,
            self.counter,
            omit_end_tags=self.options.omit_end_tags,
            record_tables=self.options.record_tables,
        )


show_settings_as_keywords(HtmlPruner.__init__, HtmlPrunerOptions)
