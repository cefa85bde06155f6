"""HtmlRAG's two-step block-tree pruning (§3.4) under an exact token budget.

Stage 1 scores every block's text (with its headings and table header as context) for the query
with an embedding, BM25 or cross-encoder scorer and keeps the best blocks that fit. Stage 2
(``generative=True``) rebuilds a finer block tree from the stage-1 output and rescores it by the
generation probability of each block's tag path (:mod:`hrefine.html.tokentree`). Both stages
fill the budget the same way (:func:`fill`): greedy by score, then measured on the real rendered
output, shrunk until it fits and topped up while a next-best block still fits.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import numbers
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from hrefine.budget import MemoCounter, TokenCounter, get_counter
from hrefine.errors import BudgetTooSmallError, EmptyInputError, MissingDependencyError
from hrefine.html._cleancache import CleanedCache
from hrefine.html._load import parse_document
from hrefine.html._locate import document_order, positions, traced_positions
from hrefine.html._text import count_words, element_text
from hrefine.html.blocks import (
    BlockForest,
    build_forest,
    inner_html,
    serialize_element,
    title_parts,
)
from hrefine.html.clean import clean_document, serialize
from hrefine.html.columns import ColumnChoice, project_columns
from hrefine.html.fill import Fit, fill, inherit_scores, reports
from hrefine.html.paragraphs import split_long_paragraphs
from hrefine.html.render import Renderer, omit_end_tags
from hrefine.html.result import EMPTY, BlockReport, PruneResult
from hrefine.html.tokentree import build_prompt, path_scores
from hrefine.models.lexical import BM25Scorer, query_window
from hrefine.models.scorers import EmbeddingScorer

__all__ = ["MIN_BUDGET", "HtmlPruner"]

logger = logging.getLogger(__name__)

#: Budgets below this many tokens raise BudgetTooSmallError: no useful HTML fits.
MIN_BUDGET = 4
# Default weight of the BM25 match added to a dense scorer's block scores (see lexical_weight).
_LEXICAL_WEIGHT = 0.3
# A block of a table with more words than this is prose: it neither borrows nor inherits its
# table's score (short rows are data, whose meaning is their table's).
_PROSE_WORDS = 64
# Text of a table or list scored as a whole is cut here (the embedder reads far less anyway).
_MAX_GROUP_CHARS = 200_000
# Words of a table or list scored as a whole a dense scorer reads with read_words set: its
# headings, caption, header row and first rows.
_GROUP_READ_WORDS = 30
# A block whose HTML would take more than this share of the budget is split into its children.
_BLOCK_SHARE = 0.25
_MIN_SPLIT_TOKENS = 64
# Largest share of the budget a table too big for it keeps when narrowed to its best columns.
_NARROW_SHARE = 0.5
# What prune() takes as one page (anything else is a collection of pages).
_PAGE_TYPES = (str, bytes, bytearray, memoryview)
# Structures whose parts make most sense together: kept whole when they fit.
_GROUP_TAGS = frozenset({"table", "ul", "ol", "dl"})
# Elements that hold one unit of text; split only when they alone exceed the budget.
_TEXT_UNITS = frozenset(
    [
        "p",
        "li",
        "tr",
        "td",
        "th",
        "dt",
        "dd",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "caption",
        "figcaption",
        "blockquote",
        "pre",
        "title",
    ]
)


class HtmlPruner:
    """Prune HTML pages to a token budget, keeping the blocks most relevant to a query.

    Parameters
    ----------
    scorer:
        Stage-1 block scorer: ``"embedding"`` (default), ``"bm25"``,
        ``"cross-encoder:<model>"`` or an object with ``score(query, texts)``. Each block is
        scored with its headings (page title, sections, table header); ``"bm25"`` leaves a
        single page's ``<title>`` and sole ``<h1>`` out, as they open every block's headings
        and would take their words' weight to zero.
    embedder:
        Embedder for ``scorer="embedding"`` (default: the embedded all-MiniLM-L6-v2); LangChain
        style objects with ``embed_documents``/``embed_query`` work too.
    tokenizer:
        The reader LLM's tokenizer, which counts the budget (default: Llama-3.2's).
    max_words:
        Stage-1 block granularity (paper: 256).
    generative:
        Run stage 2, the generative token-tree pruning, with ``lm``.
    lm:
        The :class:`~hrefine.models.LocalLM` for stage 2 (default: ``default_lm()``).
    fine_max_words:
        Stage-2 block granularity (paper: 128).
    stage1_max_tokens:
        Budget of stage 1; default ``max_tokens``, or ``4 * max_tokens`` when generative.
    boilerplate:
        Remove navigation, footers, cookie banners and sidebars while cleaning.
    omit_end_tags:
        Leave out the end tags HTML makes optional (``</td>``, ``</tr>``, ``</li>``, ``</p>``…)
        where they may go: the parsed page is the same and a table costs about half the
        tokens, so more of it fits the budget. False writes every end tag.
    lexical_weight:
        Weight of the BM25 match (scaled to [0, 1] by the page's best match) added to the
        stage-1 scores of a dense scorer (embedding, cross-encoder): names, dates and numbers
        of the question that an embedding blurs still count. The pruner's BM25 (this match,
        ``scorer="bm25"`` and the rows a narrowed table keeps) matches plural and singular
        forms (:func:`hrefine.models.lexical.plural_stem`). Default 0.3 for those scorers;
        ignored (0) for ``scorer="bm25"``; 0 turns it off.
    narrow_tables:
        A table bigger than the stage-1 budget keeps every row but only some columns: its key
        column (the one naming its rows), its best-scored column (header and values, with the
        stage-1 scorer), and further columns best first while it fits half the budget; a
        question over the whole table (its largest value, its last entry) needs every row of
        a few columns, not a few whole rows. The rows the query names (best BM25 matches, up
        to 3) are also kept whole in a copy of the table placed before it. A table whose key
        and best column alone exceed half the budget is left as it is
        (:func:`hrefine.html.columns.project_columns`). ``stats["narrowed_tables"]`` says
        what each table kept. False keeps tables' columns as they are.
    split_paragraphs:
        A paragraph (``<p>``) over a quarter of the stage-1 budget (at least 64 tokens) is
        split at sentence ends into pieces of about equal length, each a ``<p>`` and a block
        of its own (:func:`hrefine.html.paragraphs.split_long_paragraphs`); so is the text of
        a ``<div>``, ``<body>`` or similar container that holds no block (plain text given as
        a page, text laid out with ``<br>``), its pieces placed inside it. Whole, such a
        paragraph is skipped by the fill once a few smaller blocks are in, however well it
        scores. With an embedding scorer and the BM25 match on (the default), the paragraph is
        still embedded whole; its pieces take its dense score and are told apart by their own
        BM25 match, so the part that answers is kept where the paragraph ranks. Other scorers
        score each piece itself. Over all 240 WTQ and 78 NQ questions this found 3 more NQ
        answers at 512 tokens and 2 more at 1024, with none lost on WTQ, at no measurable cost
        on a cold page. ``stats["split_paragraphs"]`` counts them. False keeps paragraphs
        whole. :meth:`PruneResult.to_html` draws each piece where its paragraph was.
    demote_back_matter:
        Blocks under a heading naming back matter ("References", "Notes", "External links",
        "Further reading", "See also"...) rank after every other block, ordered by their BM25
        match (document order without it), and are not given to the scorer: citation lists
        repeat the question's words without answering it. ``stats["back_matter_blocks"]``
        counts them. False scores them like the rest.
    read_words:
        None (default): a dense scorer (embedding, cross-encoder) reads each block whole, to
        its own length limit. A number: it reads that many words of a block after its
        headings: the block's first words, or the window of that many that holds more of the
        query's words when they fall past the start
        (:func:`hrefine.models.lexical.query_window`); a table or list scored as a whole
        reads its first 30 words (at most ``read_words``): headings, caption, header row. The
        BM25 match always reads whole texts. A page's embedding cost is the words read: at
        45, cold calls on the HtmlRAG benchmark's 83 pages embedded 24% fewer word pieces in
        25% less time, and over all 240 WTQ and 78 NQ questions and three budgets found 2
        more answers than they lost (more on WTQ and at 512/1024 on NQ, fewer on NQ at 2048;
        see the HtmlRAG docs page). A second question on the same page re-embeds the windows
        that move.
    cleaned_cache:
        Pages whose cleaned tree the pruner keeps (the most recent; at most 4 million input
        characters in all, 12 to 25 MB), so a page pruned again for another question or budget
        is not cleaned again: about 8 ms of a 50 ms call on the benchmark's median page once
        its block vectors are cached. 0 keeps none.
    """

    def __init__(
        self,
        *,
        scorer: Any = "embedding",
        embedder: Any = None,
        tokenizer: Any = None,
        max_words: int = 256,
        generative: bool = False,
        lm: Any = None,
        fine_max_words: int = 128,
        stage1_max_tokens: int | None = None,
        boilerplate: bool = True,
        omit_end_tags: bool = True,
        lexical_weight: float | None = None,
        narrow_tables: bool = True,
        split_paragraphs: bool = True,
        demote_back_matter: bool = True,
        read_words: int | None = None,
        cleaned_cache: int = 64,
    ) -> None:
        if read_words is not None and read_words < 1:
            msg = f"read_words must be >= 1 or None, got {read_words}"
            raise ValueError(msg)
        if max_words < 1 or fine_max_words < 1:
            msg = f"max_words and fine_max_words must be >= 1, got {max_words}, {fine_max_words}"
            raise ValueError(msg)
        from hrefine.models.scorers import check_scorer

        check_scorer(scorer)  # a misspelt name fails here, not on the first page
        self.scorer_spec = scorer
        self.embedder = embedder
        self.tokenizer = tokenizer
        self.max_words = max_words
        self.generative = generative
        self.lm = lm
        self.fine_max_words = fine_max_words
        self.stage1_max_tokens = stage1_max_tokens
        self.boilerplate = boilerplate
        self.omit_end_tags = omit_end_tags
        if lexical_weight is not None and lexical_weight < 0:
            msg = f"lexical_weight must be >= 0, got {lexical_weight}"
            raise ValueError(msg)
        self.lexical_weight = lexical_weight
        self.narrow_tables = narrow_tables
        self.split_paragraphs = split_paragraphs
        self.demote_back_matter = demote_back_matter
        self.read_words = read_words
        self._scorer: Any = None
        self._lexical: BM25Scorer | None = None
        self._counter: TokenCounter | None = None
        self._default_lm: Any = None
        if cleaned_cache < 0:
            msg = f"cleaned_cache must be >= 0, got {cleaned_cache}"
            raise ValueError(msg)
        self.cleaned_cache = cleaned_cache
        self._cleaned = CleanedCache(max_pages=cleaned_cache)

    def __getstate__(self) -> dict[str, Any]:
        # Pickled (or deep-copied) as its settings: the scorer, the token counter and the
        # default LM are resolved again on first use, and the caches start empty.
        state = dict(self.__dict__)
        state.update(_scorer=None, _lexical=None, _counter=None, _default_lm=None)
        return state

    # -- lazily resolved models ------------------------------------------------------------
    @property
    def scorer(self) -> Any:
        """The stage-1 scorer (resolved on first use)."""
        if self._scorer is None:
            from hrefine.models.scorers import get_scorer

            if self.scorer_spec == "bm25":  # the pruner's own, stemming (see _bm25)
                self._scorer = self._bm25()
            else:
                self._scorer = get_scorer(self.scorer_spec, embedder=self.embedder)
        return self._scorer

    @property
    def counter(self) -> TokenCounter:
        """The budget's token counter (remembering block and cell counts across calls)."""
        if self._counter is None:
            counter = get_counter(self.tokenizer)
            self._counter = counter if isinstance(counter, MemoCounter) else MemoCounter(counter)
        return self._counter

    def _lm(self) -> Any:
        if self.lm is not None:
            return self.lm
        if self._default_lm is None:
            from hrefine.models.lm import default_lm

            self._default_lm = default_lm()
        return self._default_lm

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
            the budget, with ``stats["truncated"] = True``.

        Raises
        ------
        EmptyInputError
            No page was given, every page is empty, or the query is empty.
        BudgetTooSmallError
            ``max_tokens`` is below :data:`MIN_BUDGET`, or not even one word fits.
        TypeError
            ``html`` is not text, bytes or an iterable of them, or ``max_tokens`` is not an
            integer.
        """
        docs: list[Any]  # each is checked by the cleaner
        if isinstance(html, _PAGE_TYPES):
            docs = [html]
        elif isinstance(html, Iterable):
            docs = list(html)
        else:
            msg = (
                "expected HTML as str, bytes or bytearray, or an iterable of them, got "
                f"{type(html).__name__}"
            )
            raise TypeError(msg)
        if not docs:
            raise EmptyInputError("no HTML documents were given")
        if not isinstance(query, str) or not query.strip():
            msg = f"the query must be a non-empty string, got {query!r}"
            raise EmptyInputError(msg)
        # numpy integers are integers too; bools, floats (inf, nan) and strings are not.
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, numbers.Integral):
            msg = f"max_tokens must be an int, got {type(max_tokens).__name__} {max_tokens!r}"
            raise TypeError(msg)
        max_tokens = int(max_tokens)
        if max_tokens < MIN_BUDGET:
            msg = f"a budget of {max_tokens} tokens is below the minimum of {MIN_BUDGET}"
            raise BudgetTooSmallError(msg, budget=max_tokens, smallest=MIN_BUDGET)
        counter = self.counter
        roots, doc_ids, cleaned = self._clean_all(docs)
        # The whole cleaned input, written as the output is (with or without optional end tags).
        whole = "\n".join(c for c in cleaned if c)
        original_tokens = counter.count(omit_end_tags(whole) if self.omit_end_tags else whole)
        stage1_budget = self.stage1_max_tokens or (
            4 * max_tokens if self.generative else max_tokens
        )
        stage1_budget = max(stage1_budget, max_tokens)
        # Element indexes of the documents as cleaned, taken before the first in-place change
        # (narrowed tables, split paragraphs), which the block reports refer to.
        order: dict[Any, int] = {}

        def record_order() -> None:
            if not order:
                for root in roots:
                    order.update(document_order(root))

        narrowed = self._narrow(roots, query, stage1_budget, record_order)
        pieces = self._split(roots, stage1_budget, order, record_order)
        cleaned_order = order or None
        forest, costs, groups = self._forest(roots, doc_ids, self.max_words, stage1_budget)
        ids = forest.block_ids()
        # Tables and lists are also scored as a whole, in the same call (one embedding batch,
        # one BM25 index, so block and group scores are on one scale): a question about a
        # table (its columns, its extremes) may match no single row of it.
        group_ids = _containers(forest)
        # BM25 alone: a single page's title opens every block's context, where it tells the
        # blocks apart by nothing but their lengths, and takes its words' weight (IDF) to zero,
        # so a question naming the page's subject matches none of its text. Several pages keep
        # it: there it tells the pages apart.
        drop = (
            title_parts(roots[0]) if isinstance(self.scorer, BM25Scorer) and len(roots) == 1 else ()
        )
        texts = [_scoring_text(forest, i, drop=drop) for i in ids]
        texts += [_group_text(forest, g, drop=drop) for g in group_ids]
        nodes = forest.tree.nodes
        # With an embedder and the BM25 match, a split paragraph is embedded whole, as it would
        # be unsplit, and its pieces take that score (see borrow below); another scorer scores
        # each piece itself.
        borrows = isinstance(self.scorer, EmbeddingScorer) and self.lexical_weight != 0
        wholes = _pieces_by_paragraph(forest, ids, pieces) if borrows else []
        texts += [_scoring_text(forest, ids[ks[0]], text) for ks, text in wholes]
        extra: list[int | None] = [None] * (len(group_ids) + len(wholes))
        flagged = {
            i
            for i in (*ids, *group_ids)
            if self.demote_back_matter and nodes[i].metadata.get("back_matter")
        }
        # Prose in a table (a plot summary, a note) means what it says, not what its table is
        # about: it is scored on its own, like a paragraph. Back matter in a table (a layout
        # table holding a whole page) stays below the rest.
        tables = {
            i: t
            for i, t in _enclosing_tables(forest, ids, set(group_ids)).items()
            if not _is_prose(forest, i) and i not in flagged
        }
        # A row's meaning is its table's (scored as a whole); its words tell rows apart, so an
        # embedder gives rows their table's score and BM25 their own (see _score). Rows are
        # most of a data-heavy page's text: this is where the embedding time went.
        index = {g: len(ids) + k for k, g in enumerate(group_ids)}
        tags = [forest.tree.nodes[i].metadata["tag"] for i in ids]
        borrow = [
            index[tables[i]] if i in tables and tag == "tr" else None
            for i, tag in zip(ids, tags, strict=True)
        ]
        # Pieces of a paragraph take its dense score and are told apart by their words.
        for w, (ks, _) in enumerate(wholes):
            for k in ks:
                borrow[k] = len(ids) + len(group_ids) + w
        last = [i in flagged for i in (*ids, *group_ids)]
        last += [ids[ks[0]] in flagged for ks, _ in wholes]
        # A row's or piece's words are matched apart from its header (see _match).
        split = {
            k: (nodes[i].text, _context(forest, i, drop))
            for k, i in enumerate(ids)
            if borrow[k] is not None
        }
        read = self._reader(query, forest, ids, group_ids, wholes)
        all_scores = self._score(query, texts, borrow + extra, last, split, read)
        group_scores = dict(
            zip(group_ids, all_scores[len(ids) : len(ids) + len(group_ids)].tolist(), strict=True)
        )
        scores1 = _inherit_table_scores(ids, all_scores[: len(ids)], tables, group_scores)
        fit1 = fill(
            forest, ids, costs, scores1, stage1_budget, counter, len(docs), groups, group_scores
        )
        stats: dict[str, Any] = {
            "stage1_tokens": fit1.tokens,
            "renders": fit1.renders,
            "truncated": fit1.truncated,
            "scorer": getattr(self.scorer, "name", type(self.scorer).__name__),
            "narrowed_tables": [vars(c) for c in narrowed],
            "split_paragraphs": len(set(pieces.values())),
            "back_matter_blocks": sum(last[: len(ids)]),
        }
        located = positions(forest, cleaned_order)
        block_reports = reports(forest, ids, costs, fit1, scores1, None, located)
        fit = fit1
        if self.generative and fit1.tokens > max_tokens and not fit1.truncated:
            fit, reports2 = self._stage2(
                fit1, forest, ids, scores1, query, max_tokens, stats, cleaned_order
            )
            block_reports = [r for r in block_reports if not r.kept] + reports2
        block_reports.extend(
            BlockReport(-1, d, "", "", 0, None, None, -1, False, EMPTY)
            for d in range(len(docs))
            if d not in doc_ids
        )
        block_reports.sort(key=lambda r: (r.doc, r.block_id))
        stats["renders"] = fit.renders if fit is fit1 else fit1.renders + fit.renders
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
        """:meth:`prune` run in the default executor, so the event loop stays free."""
        loop = asyncio.get_running_loop()
        call = functools.partial(self.prune, html, query, max_tokens)
        return await loop.run_in_executor(None, call)

    # -- steps -----------------------------------------------------------------------------
    def _score(
        self,
        query: str,
        texts: list[str],
        borrow: Sequence[int | None] | None = None,
        last: Sequence[bool] | None = None,
        split: Mapping[int, tuple[str, str]] | None = None,
        read: Callable[[int], str] | None = None,
        dense: np.ndarray | None = None,
    ) -> np.ndarray:
        """Stage-1 scores: the scorer's, plus the weighted BM25 match for dense scorers.

        ``borrow[k] = j`` lets text ``k`` take the dense score of text ``j`` instead of being
        embedded, when the scorer is an embedding and the BM25 match is applied (it is then
        what tells such texts apart); otherwise every text is scored. ``split[k] = (own,
        shared)`` matches text ``k`` lexically as ``own``'s match plus ``shared``'s (see
        ``_match``). Texts with ``last[k]`` true (back matter) are not given to the (dense)
        scorer: they score below every other text, ordered among themselves by their lexical
        match, or equal without one. A dense scorer reads ``read(k)`` for text ``k`` where
        given (see ``read_words``); BM25 reads ``texts``. ``dense``: the scorer's scores of
        every text, when the caller has them already (see :meth:`_score_groups`).
        """
        if not texts:
            return np.zeros(0, dtype=np.float64)
        scorer = self.scorer
        lexical = isinstance(scorer, BM25Scorer)
        weight = 0.0 if lexical else self.lexical_weight
        if weight is None:
            weight = _LEXICAL_WEIGHT
        bm25: np.ndarray | None = None
        if weight > 0:
            try:
                bm25 = _match(self._bm25(), query, texts, split)
            except MissingDependencyError:
                if self.lexical_weight is not None:  # asked for explicitly
                    raise
                logger.debug("bm25s is not installed; block scores use the scorer alone")
        n = len(texts)
        back = np.zeros(n, dtype=bool) if last is None else np.asarray(last, dtype=bool)
        # The match is scaled by the best body text's: a citation repeating the question's
        # words must not shrink the lexical part of every other score. Nor must a row's two
        # added matches (see _match), where any text matched as a whole.
        body = ~back if not back.all() else np.ones(n, dtype=bool)
        if bm25 is not None and split:
            whole = body.copy()
            whole[list(split)] = False
            if (bm25[whole] > 0).any():
                body = whole
        top = float(bm25[body].max()) if bm25 is not None and body.any() else 0.0
        source: list[int | None] = [None] * n  # whose dense score text k takes
        if borrow is not None and top > 0 and isinstance(scorer, EmbeddingScorer):
            source = [b if b is not None and not back[b] else None for b in borrow]
        # A lexical scorer is cheap: it scores back matter too, to order it.
        own = [k for k in range(n) if source[k] is None and (lexical or not back[k])]
        scores = np.full(n, np.nan, dtype=np.float64)
        if lexical:  # every text (own is all of them), rows apart from their header
            scores = _match(scorer, query, texts, split)
        elif own:
            if dense is None:
                shown = [texts[k] if read is None else read(k) for k in own]
                found = scorer.score(query, shown)
            else:
                found = dense[own]
            scores[own] = np.asarray(found, dtype=np.float64)
        for k, b in enumerate(source):
            if b is not None:
                scores[k] = scores[b]
        if bm25 is not None and top > 0:
            scores = scores + weight * bm25 / top
        if back.any():
            # Their own match orders them, even when no body text matches at all.
            match = bm25 if bm25 is not None else scores if lexical else None
            count = int(back.sum())
            scores[back] = _below(scores[~back], None if match is None else match[back], count)
        return scores

    def _score_groups(self, query: str, groups: list[list[str]]) -> list[np.ndarray]:
        """:meth:`_score` of each group of texts, with one scorer call for all of them.

        Each group's lexical match is scaled on its own, as if scored alone; only the model
        pass is shared. Narrowing a page's big tables scores each table's columns: one call
        per table ran many small batches that kept one of two CPU threads idle.
        """
        dense: np.ndarray | None = None
        flat = [t for g in groups for t in g]
        if flat and not isinstance(self.scorer, BM25Scorer):
            dense = np.asarray(self.scorer.score(query, flat), dtype=np.float64)
        out: list[np.ndarray] = []
        start = 0
        for g in groups:
            part = None if dense is None else dense[start : start + len(g)]
            out.append(self._score(query, g, dense=part))
            start += len(g)
        return out

    def _bm25(self) -> BM25Scorer:
        if self._lexical is None:
            # Plural endings taken off: a block is a row, a cell, a heading, where "opponents"
            # in a question must meet "Opponent" in a header (on all 320 WTQ and NQ questions
            # this found 4 more answers over the three budgets than it lost; on long text
            # chunks it lost more, so BM25Scorer's default stays exact). Question words and
            # clitics are not matched: over all 320 questions the embedding pruner found 9 more
            # answers and lost 2, the BM25 pruner found 15 and lost 10.
            self._lexical = BM25Scorer(stem=True, questions=True)
        return self._lexical

    def _reader(
        self,
        query: str,
        forest: BlockForest,
        ids: Sequence[int],
        group_ids: Sequence[int],
        wholes: Sequence[tuple[list[int], str]] = (),
    ) -> Callable[[int], str] | None:
        """What a dense scorer reads of text ``k`` (blocks ``ids``, then groups ``group_ids``,
        then split paragraphs ``wholes``); None: the whole texts. Only the texts given to the
        scorer are windowed."""
        size = self.read_words
        if size is None or isinstance(self.scorer, BM25Scorer):
            return None
        try:
            terms = self._bm25().terms(query)
        except MissingDependencyError:  # no stopword list: every block reads its start
            terms = frozenset()
        nodes = forest.tree.nodes

        def read(k: int) -> str:
            if k >= len(ids) + len(group_ids):
                ks, whole = wholes[k - len(ids) - len(group_ids)]
                window = query_window(whole, terms, size, stem=True)
                return _scoring_text(forest, ids[ks[0]], window)
            if k >= len(ids):  # a table or list as a whole: its headings, caption, first rows
                group = _group_text(forest, group_ids[k - len(ids)])
                return query_window(group, frozenset(), min(size, _GROUP_READ_WORDS))
            window = query_window(nodes[ids[k]].text, terms, size, stem=True)
            return _scoring_text(forest, ids[k], window)

        return read

    def _clean_all(self, docs: Sequence[str | bytes]) -> tuple[list[Any], list[int], list[str]]:
        roots: list[Any] = []
        doc_ids: list[int] = []
        cleaned: list[str] = []
        errors: list[str] = []
        for d, doc in enumerate(docs):
            # Anything but text or bytes goes to the cleaner, which says what it expected.
            key = CleanedCache.key(doc, self.boilerplate) if isinstance(doc, _PAGE_TYPES) else None
            hit = None if key is None else self._cleaned.get(key)
            if hit is None:
                try:
                    root = clean_document(doc, boilerplate=self.boilerplate)
                except EmptyInputError as exc:
                    if len(docs) == 1:
                        raise
                    errors.append(f"document {d}: {exc}")
                    cleaned.append("")
                    continue
                html = serialize(root)
                if key is not None:
                    self._cleaned.put(key, doc, root, html)
            else:
                root, html = hit
            roots.append(root)
            doc_ids.append(d)
            cleaned.append(html)
        if not roots:
            msg = f"all {len(docs)} documents are empty: " + "; ".join(errors)
            raise EmptyInputError(msg)
        for err in errors:
            logger.info("skipping an empty input: %s", err)
        return roots, doc_ids, cleaned

    def _narrow(
        self, roots: Sequence[Any], query: str, budget: int, before_change: Callable[[], None]
    ) -> list[ColumnChoice]:
        """Column projection of the tables too big for ``budget`` (in place, see narrow_tables);
        what each narrowed table kept."""
        if not self.narrow_tables:
            return []
        return project_columns(
            roots,
            query,
            budget=budget,
            share=_NARROW_SHARE,
            score_groups=self._score_groups,
            match=self._bm25().score,
            count_many=self.counter.count_many,
            serialize=self._counted_html,
            before_change=before_change,
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
        if not self.split_paragraphs:
            return {}
        origin = split_long_paragraphs(
            roots,
            max(int(budget * _BLOCK_SHARE), _MIN_SPLIT_TOKENS),
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
        return omit_end_tags(html) if self.omit_end_tags else html

    def _forest(
        self, roots: Sequence[Any], doc_ids: Sequence[int], max_words: int, budget: int
    ) -> tuple[BlockForest, dict[int, int], dict[int, int]]:
        counter = self.counter
        limit = max(int(budget * _BLOCK_SHARE), _MIN_SPLIT_TOKENS)
        counted: dict[str, int] = {}
        compact = omit_end_tags if self.omit_end_tags else _same

        def too_big(tag: str, block_html: str) -> bool:
            block_html = compact(block_html)
            counted[block_html] = n = counter.count(block_html)
            # A row, item or paragraph is split only if it cannot fit at all: its pieces would
            # read badly and each would be scored without the rest.
            return n > (budget if tag in _TEXT_UNITS else limit)

        forest = build_forest(roots, max_words=max_words, too_big=too_big, doc_ids=doc_ids)
        forest.tree.metadata["omit_end_tags"] = self.omit_end_tags
        ids = forest.block_ids()
        for i in ids:
            meta = forest.tree.nodes[i].metadata
            if meta["is_leaf"]:
                meta["html"] = compact(meta["html"])
        htmls = [forest.tree.nodes[i].metadata["html"] for i in ids]
        missing = [h for h in htmls if h not in counted]
        counted.update(zip(missing, counter.count_many(missing), strict=True))
        costs = {i: counted[h] for i, h in zip(ids, htmls, strict=True)}
        # Expanded tables and lists may still be kept whole when they fit (see fill.Units).
        groups: dict[int, int] = {}
        for node in forest.tree.nodes:
            if node.metadata["tag"] in _GROUP_TAGS and not node.metadata.get("is_leaf", False):
                whole = compact(serialize_element(forest.elements[node.id]))
                cost = counted.get(whole)
                if cost is None:
                    cost = counter.count(whole)
                if cost <= budget:
                    groups[node.id] = cost
        return forest, costs, groups

    def _stage2(
        self,
        fit1: Fit,
        forest1: BlockForest,
        ids1: list[int],
        scores1: np.ndarray,
        query: str,
        max_tokens: int,
        stats: dict[str, Any],
        cleaned_order: dict[Any, int] | None,
    ) -> tuple[Fit, list[BlockReport]]:
        lm = self._lm()
        kept_docs = [(d, doc) for d, doc in enumerate(fit1.documents) if doc]
        roots = [parse_document(doc) for _, doc in kept_docs]
        forest, costs, groups = self._forest(
            roots, [d for d, _ in kept_docs], self.fine_max_words, max_tokens
        )
        ids = forest.block_ids()
        multi = len(roots) > 1
        bodies = [_body_html(root) for root in roots]
        shown = "".join(f"<div>{b}</div>" for b in bodies) if multi else bodies[0]
        if self.omit_end_tags:
            shown = omit_end_tags(shown)
        prompt = build_prompt(lm, f"<html><body>{shown}</body></html>", query)
        paths = [_prompt_path(forest, i, multi) for i in ids]
        result = path_scores(lm, prompt, paths)
        stats.update(
            prompt_tokens=result.prompt_tokens,
            prefilled_tokens=result.prefilled_tokens,
            lm_calls=result.lm_calls,
            trie_edges=result.trie_edges,
        )
        fit = fill(
            forest, ids, costs, result.scores, max_tokens, self.counter, len(fit1.documents), groups
        )
        inherited = inherit_scores(forest, ids, forest1, ids1, fit1.kept, scores1)
        # Trace the fine blocks back to the cleaned documents' elements, for the report.
        written = Renderer(forest1).written(fit1.kept)
        by_doc = dict(zip(forest1.doc_ids, zip(written, forest1.roots, strict=True), strict=True))
        sources = [by_doc[d] for d, _ in kept_docs]
        located = traced_positions(
            forest, [w for w, _ in sources], [r for _, r in sources], cleaned_order
        )
        return fit, reports(forest, ids, costs, fit, inherited, result.scores, located)


def _match(
    bm25: BM25Scorer, query: str, texts: Sequence[str], split: Mapping[int, tuple[str, str]] | None
) -> np.ndarray:
    """BM25 match of each text, in one index; a text ``k`` of ``split`` matches as its own
    words' match plus its shared context's (a table row: its cells, then its headings and
    table header).

    Scored together, a context repeated in every row would favour the rows with the fewest
    words (BM25's length norm): a ranked table's last rows would outrank its first. Apart,
    rows that match only through their header tie, and document order decides.
    """
    corpus = list(texts)
    shared: dict[str, int] = {}
    for k, (own, context) in (split or {}).items():
        corpus[k] = own
        if context:
            shared.setdefault(context, len(shared))
    found = np.asarray(bm25.score(query, corpus + list(shared)), dtype=np.float64)
    out = found[: len(texts)]
    for k, (_, context) in (split or {}).items():
        if context:
            out[k] += found[len(texts) + shared[context]]
    return out


def _below(others: np.ndarray, match: np.ndarray | None, count: int) -> np.ndarray:
    """Scores of ``count`` back-matter texts: below every score of ``others``, in the order of
    their lexical ``match`` (document order decides among equals, see fill)."""
    valid = others[~np.isnan(others)]
    floor = float(valid.min()) if len(valid) else 0.0
    if match is None:
        return np.full(count, floor - 1.0)
    match = np.nan_to_num(match, nan=0.0)
    best = float(match.max()) if len(match) else 0.0
    # In (floor - 1, floor - 0.5]: apart from the others whatever the scale of the match.
    scaled = 0.5 * match / best if best > 0 else np.zeros(len(match))
    return np.asarray(floor - 1.0 + scaled, dtype=np.float64)


def _same(html: str) -> str:
    return html


def _context(forest: BlockForest, node_id: int, drop: Sequence[str] = ()) -> str:
    """A node's scoring context, without the parts ``drop`` (in order) where they open it."""
    context: str = forest.tree.nodes[node_id].metadata.get("context") or ""
    for part in drop:
        if not context.startswith(part):
            break
        rest = context[len(part) :]
        if rest and not rest.startswith((" > ", " | ")):
            break  # a longer heading that starts with the same words
        context = rest[3:]
    return context


def _scoring_text(
    forest: BlockForest, node_id: int, text: str | None = None, *, drop: Sequence[str] = ()
) -> str:
    """A block's headings (its context, less ``drop``: see :func:`_context`), then its text
    (or ``text``, a part of it)."""
    context = _context(forest, node_id, drop)
    text = forest.tree.nodes[node_id].text if text is None else text
    return f"{context}\n{text}" if context else text


def _is_prose(forest: BlockForest, node_id: int) -> bool:
    """Whether a block inside a table is prose: more than :data:`_PROSE_WORDS` words in one
    cell (a row of many short cells is data, however wide)."""
    node = forest.tree.nodes[node_id]
    if node.metadata["words"] <= _PROSE_WORDS:
        return False
    if node.metadata["tag"] != "tr":
        return True
    cells = [c for c in forest.elements[node_id] if c.tag in ("td", "th")]
    return not cells or max(count_words(element_text(c)) for c in cells) > _PROSE_WORDS


def _pieces_by_paragraph(
    forest: BlockForest, ids: Sequence[int], pieces: Mapping[Any, Any]
) -> list[tuple[list[int], str]]:
    """The paragraphs split into blocks: the positions in ``ids`` of each one's pieces, and
    its whole text."""
    if not pieces:
        return []
    found: dict[Any, list[int]] = {}
    for k, i in enumerate(ids):
        paragraph = pieces.get(forest.elements[i])
        if paragraph is not None:
            found.setdefault(paragraph, []).append(k)
    nodes = forest.tree.nodes
    return [(ks, " ".join(nodes[ids[k]].text for k in ks)) for ks in found.values() if len(ks) > 1]


def _containers(forest: BlockForest) -> list[int]:
    """Tables and lists of the tree that are split into blocks (each is scored as a whole)."""
    return [
        n.id
        for n in forest.tree.nodes
        if n.metadata["tag"] in _GROUP_TAGS and not n.metadata.get("is_leaf", False)
    ]


def _enclosing_tables(forest: BlockForest, ids: Sequence[int], tables: set[int]) -> dict[int, int]:
    """Block id -> its nearest enclosing table, for blocks inside a table of ``tables``.

    A block is never inside a table kept whole (a leaf), so its nearest table is split and
    scored as a group: one of ``tables``.
    """
    tree = forest.tree
    out: dict[int, int] = {}
    for i in ids:
        node = tree.nodes[i]
        while node.parents:
            node = tree.nodes[node.parents[0]]
            if node.metadata["tag"] == "table":
                if node.id in tables:
                    out[i] = node.id
                break
    return out


def _inherit_table_scores(
    ids: Sequence[int], scores: np.ndarray, tables: dict[int, int], groups: dict[int, float]
) -> np.ndarray:
    """Each block inside a table (``tables``: block -> its table) scores at least as high as
    that table as a whole (``groups``: table -> its score).

    A table too big for the budget is then kept as far as it goes: the rows that match the
    question best first, then its other rows in document order, rather than a few scattered
    rows of it among blocks from elsewhere.
    """
    out = scores.copy()
    for k, i in enumerate(ids):
        table = tables.get(i)
        if table is None:
            continue
        score = groups[table]
        if score > out[k] or (np.isnan(out[k]) and not np.isnan(score)):
            out[k] = score
    return out


def _group_text(forest: BlockForest, node_id: int, *, drop: Sequence[str] = ()) -> str:
    """A table's or list's scoring text: its headings (less ``drop``) and its whole text
    (capped)."""
    context = _context(forest, node_id, drop)
    text = element_text(forest.elements[node_id])[:_MAX_GROUP_CHARS]
    return f"{context}\n{text}" if context else text


def _body_html(root: Any) -> str:
    body = root.find("body")
    return inner_html(body if body is not None else root)


def _prompt_path(forest: BlockForest, node_id: int, multi: bool) -> str:
    steps = list(forest.tree.nodes[node_id].metadata["path_indexed"])
    if multi:  # documents sit in numbered <div>s of the prompt's combined page
        pos = forest.doc_ids.index(forest.tree.nodes[node_id].metadata["doc"])
        steps = [*steps[:2], f"div{pos + 1}", *steps[2:]]
    return "".join(f"<{s}>" for s in steps)
