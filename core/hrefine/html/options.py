"""The settings of :class:`~hrefine.html.HtmlPruner`, declared once.

:class:`HtmlPrunerOptions` is what the pruner takes, and what LangChain's ``HtmlRagCompressor``
and LlamaIndex's ``HtmlRagNodePostprocessor`` build their fields from
(:func:`hrefine.options.adapter_model`). Measurements behind the defaults are on the HtmlRAG
docs page.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from hrefine.options import Options, check_bool, check_int, check_number, setting

__all__ = ["MIN_BUDGET", "HtmlPrunerOptions"]

#: Budgets below this many tokens raise BudgetTooSmallError: no useful HTML fits.
MIN_BUDGET = 4


@dataclass(frozen=True, kw_only=True)
class HtmlPrunerOptions(Options):
    """Settings of the HtmlRAG pruner (frozen, keyword-only, checked when made).

    Attributes
    ----------
    scorer:
        Stage-1 block scorer: ``"embedding"`` (default), ``"bm25"``,
        ``"cross-encoder:<model>"`` or an object with ``score(query, texts)``. Each block is
        scored with its headings (page title, sections, table header); ``"bm25"`` leaves a
        single page's ``<title>`` and sole ``<h1>`` out of them, as they open every block's
        headings and would take their words' weight to zero.
    embedder:
        Embedder for ``scorer="embedding"`` (default: the embedded all-MiniLM-L6-v2); objects
        with ``embed_documents``/``embed_query`` work too. The adapters set it from their own
        ``embeddings``/``embed_model`` field.
    tokenizer:
        The reader LLM's tokenizer, which counts the budget (default: Llama-3.2's): a name, a
        ``tokenizer.json`` path, a Hugging Face or tiktoken tokenizer, or a ``str -> int``.
    max_words:
        Stage-1 block granularity in words (paper: 256).
    generative:
        Run stage 2, the generative token-tree pruning, with ``lm``.
    lm:
        The :class:`~hrefine.models.LocalLM` for stage 2 (default: ``default_lm()``).
    fine_max_words:
        Stage-2 block granularity in words (paper: 128).
    stage1_max_tokens:
        Budget of stage 1; default ``max_tokens``, or ``4 * max_tokens`` when generative.
    boilerplate:
        Remove navigation, footers, cookie banners and sidebars while cleaning.
    omit_end_tags:
        Leave out the end tags HTML makes optional (``</td>``, ``</tr>``, ``</li>``, ``</p>``…)
        where they may go: the parsed page is the same and a table costs about half the
        tokens. False writes every end tag.
    lexical_weight:
        Weight of the BM25 match (scaled to [0, 1] by the page's best match) added to the
        stage-1 scores of a dense scorer (embedding, cross-encoder), so that names, dates and
        numbers of the question that an embedding blurs still count; 0 turns it off; ignored
        with ``scorer="bm25"``. The pruner's BM25 matches plural and singular forms and skips
        question words. It needs ``bm25s`` (``hrefine[models]``): without it, a weight above 0
        raises :class:`~hrefine.errors.MissingDependencyError`.
    narrow_tables:
        A table bigger than the stage-1 budget keeps every row but only some columns: its key
        column, its best-scored column and further columns best first while it fits half the
        budget; the rows the query names (up to 3) are also kept whole in a copy of the table
        placed before it (:func:`hrefine.html.columns.project_columns`).
        ``stats["narrowed_tables"]`` says what each table kept. False keeps columns as they are.
    split_paragraphs:
        A paragraph over a quarter of the stage-1 budget (at least 64 tokens), or the text of a
        container holding no block, is split at sentence ends into pieces of about equal
        length, each a block of its own (:func:`hrefine.html.paragraphs.split_long_paragraphs`).
        With an embedding scorer and the BM25 match on, the paragraph is embedded whole and its
        pieces are told apart by their own BM25 match. ``stats["split_paragraphs"]`` counts
        them. False keeps paragraphs whole.
    demote_back_matter:
        Blocks under a heading naming back matter ("References", "Notes", "External links",
        "Further reading", "See also"...) rank after every other block, ordered by their BM25
        match, and are not given to the scorer. ``stats["back_matter_blocks"]`` counts them.
    read_words:
        None (default): a dense scorer reads each block whole (to ``embed_max_tokens``). A
        number: it reads that many words after a block's headings, the block's first words or
        the window of that many holding more of the query's words
        (:func:`hrefine.models.lexical.query_window`); a table or list scored as a whole reads
        its first 30 words (at most ``read_words``). BM25 always reads whole texts.
    embed_max_tokens:
        Word pieces of each block text an hrefine embedder reads (128, what the default
        all-MiniLM-L6-v2 was trained on; the rest of a long block adds little to its vector).
        None reads up to the embedder's own limit. Embedders from other libraries read their
        own way.
    cleaned_cache:
        Pages whose cleaned tree the pruner keeps (the most recent, at most 4 million input
        characters in all), so a page pruned again for another question or budget is not
        cleaned again. 0 keeps none.
    """

    adapter_excluded: ClassVar[frozenset[str]] = frozenset({"embedder"})

    scorer: Any = setting(
        "embedding", help="'embedding', 'bm25', 'cross-encoder:<model>' or an hrefine Scorer."
    )
    embedder: Any = setting(None, help="Embedder for the 'embedding' scorer; None: the default.")
    tokenizer: Any = setting(
        None,
        help=(
            "Tokenizer the budget is counted in (a tokenizer, tokenizer.json path or "
            "str -> int callable); None: hrefine's default (Llama-3.2)."
        ),
    )
    max_words: int = setting(256, help="Largest block of the first stage, in words.")
    generative: bool = setting(
        False, help="Run the paper's generative second stage (tag-path scoring)."
    )
    lm: Any = setting(None, help="hrefine LocalLM for the generative stage; None: the default.")
    fine_max_words: int = setting(128, help="Largest block of the generative stage, in words.")
    stage1_max_tokens: int | None = setting(
        None, help="Budget of the first stage; None: the budget, or 4x it when generative."
    )
    boilerplate: bool = setting(True, help="Remove navigation, footers and other boilerplate.")
    omit_end_tags: bool = setting(
        True, help="Leave out optional end tags (</td>, </li>...): same page, fewer tokens."
    )
    lexical_weight: float = setting(
        0.3, help="Weight of the BM25 match added to dense block scores; 0: off."
    )
    narrow_tables: bool = setting(
        True, help="Narrow a table bigger than the budget to its best columns, every row kept."
    )
    split_paragraphs: bool = setting(
        True,
        help=(
            "Split a paragraph over a quarter of the budget at sentence ends, so the part that "
            "answers can be kept without the rest; False: paragraphs stay whole."
        ),
    )
    demote_back_matter: bool = setting(
        True, help="Rank references, notes, external links and 'see also' after the body."
    )
    read_words: int | None = setting(
        None,
        help=(
            "Words of a block a dense scorer reads (its start, or the window holding most of "
            "the query's words); None: whole blocks."
        ),
    )
    embed_max_tokens: int | None = setting(
        128, help="Word pieces of each block an hrefine embedder reads; None: its own limit."
    )
    cleaned_cache: int = setting(
        64,
        help=(
            "Pages whose cleaned tree is kept, so a page pruned again (another query or "
            "budget) is not cleaned again; 0 keeps none."
        ),
    )

    def __post_init__(self) -> None:
        from hrefine.models.scorers import check_scorer

        check_scorer(self.scorer)  # a misspelt name fails here, not on the first page
        check_int("max_words", self.max_words, minimum=1)
        check_int("fine_max_words", self.fine_max_words, minimum=1)
        check_int("stage1_max_tokens", self.stage1_max_tokens, minimum=MIN_BUDGET, none=True)
        check_number("lexical_weight", self.lexical_weight, minimum=0)
        check_int("read_words", self.read_words, minimum=1, none=True)
        check_int("embed_max_tokens", self.embed_max_tokens, minimum=2, none=True)
        check_int("cleaned_cache", self.cleaned_cache, minimum=0)
        for name in (
            "generative",
            "boilerplate",
            "omit_end_tags",
            "narrow_tables",
            "split_paragraphs",
            "demote_back_matter",
        ):
            check_bool(name, getattr(self, name))
