"""The settings of :class:`~hrefine.html.HtmlPruner`, declared once.

:class:`HtmlPrunerOptions` is what the pruner takes, and what LangChain's ``HtmlRagCompressor``
and LlamaIndex's ``HtmlRagNodePostprocessor`` build their fields from
(:func:`hrefine.options.adapter_model`). Measurements behind the defaults are on the HtmlRAG
docs page.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, ClassVar

from hrefine.errors import ConfigError, InputTypeError
from hrefine.html._load import DEFAULT_MAX_INPUT_BYTES
from hrefine.html.formats import check_input_format
from hrefine.options import (
    Options,
    check_bool,
    check_int,
    check_ints,
    check_model_name,
    check_number,
    setting,
)

__all__ = ["DEFAULT_BUDGET", "MIN_BUDGET", "HtmlPrunerOptions"]

#: Budgets below this many tokens raise BudgetTooSmallError: no useful HTML fits.
MIN_BUDGET = 4

#: The token budget the adapters and ``hrefine html prune`` use when none is given.
DEFAULT_BUDGET = 2048


@dataclass(frozen=True, kw_only=True)
class HtmlPrunerOptions(Options):
    """Settings of the HtmlRAG pruner (frozen, keyword-only, checked when made)."""

    adapter_excluded: ClassVar[frozenset[str]] = frozenset({"embedder"})

    scorer: Any = setting(
        "embedding",
        help="'embedding', 'bm25', 'cross-encoder:<model>', an hrefine Scorer or a cross-encoder.",
    )
    """Stage-1 block scorer: ``"embedding"`` (default), ``"bm25"``,
    ``"cross-encoder:<model>"`` (names in any case; a misspelt one fails with the nearest
    name), an object with ``score(query, texts)``, or a cross-encoder object
    (sentence-transformers' ``CrossEncoder``, LangChain's ``HuggingFaceCrossEncoder``).
    Each block is scored with its headings (page title, sections, table header);
    ``"bm25"`` leaves a single page's ``<title>`` and sole ``<h1>`` out of them, as they
    open every block's headings and would take their words' weight to zero.
    """
    embedder: Any = setting(None, help="Embedder for the 'embedding' scorer; None: the default.")
    """Embedder for ``scorer="embedding"`` (default: the embedded all-MiniLM-L6-v2); objects
    with ``embed_documents``/``embed_query`` work too. The adapters set it from their own
    ``embeddings``/``embed_model`` field. Given with another scorer, it is a
    :class:`~hrefine.errors.ConfigError` (it would be ignored).
    """
    tokenizer: Any = setting(
        None,
        help=(
            "Tokenizer the budget is counted in (a tokenizer, tokenizer.json path, Hugging Face "
            "or tiktoken name, or str -> int callable); None: hrefine's default (Llama-3.2)."
        ),
    )
    """The reader LLM's tokenizer, which counts the budget (default: Llama-3.2's): a Hugging
    Face name, a ``tokenizer.json`` path, a tiktoken encoding or model name
    (``"cl100k_base"``, ``"gpt-4o"``), a Hugging Face tokenizer, a ``tiktoken.Encoding``,
    or a ``str -> int``.
    """
    max_words: int = setting(256, help="Largest block of the first stage, in words.")
    """Stage-1 block granularity in words (paper: 256)."""
    generative: bool = setting(
        False, help="Run the paper's generative second stage (tag-path scoring)."
    )
    """Run stage 2, the generative token-tree pruning, with ``lm``."""
    lm: Any = setting(
        None,
        help="LocalLM, model folder or cached name for the generative stage; None: the default.",
    )
    """The :class:`~hrefine.models.LocalLM` for stage 2 (default: ``default_lm()``), or a
    local model folder or a name in the Hugging Face cache, which the pruner loads as a
    ``LocalLM`` (looked for when the pruner is made; never downloaded).
    """
    generative_adapter: str | None = setting(
        None,
        help=(
            "Folder of a LoRA adapter of lm (from `hrefine train html-pruner`) the generative "
            "stage runs under; None: the base model."
        ),
    )
    """Folder of a LoRA adapter of ``lm`` that stage 2 runs under, e.g. one trained by
    ``hrefine train html-pruner`` on the same base model; None: the base model. It is
    loaded into the LM on first use (the LM's default adapter stays as it was), and needs
    ``generative=True``.
    """
    fine_max_words: int = setting(128, help="Largest block of the generative stage, in words.")
    """Stage-2 block granularity in words (paper: 128)."""
    stage1_max_tokens: int | None = setting(
        None, help="Budget of the first stage; None: the budget, or 4x it when generative."
    )
    """Budget of stage 1; default ``max_tokens``, or ``4 * max_tokens`` when generative.
    Whatever stage 1 keeps, the output holds at most ``max_tokens``: when the generative stage
    does not run (it is off, or a block had to be cut to fit stage 1), the blocks are filled
    again at ``max_tokens``. :func:`hrefine.train.html_data.html_pruner_examples` reads it as
    the page the generative stage is trained on."""
    boilerplate: bool = setting(True, help="Remove navigation, footers and other boilerplate.")
    """Remove navigation, footers, cookie banners and sidebars while cleaning."""
    omit_end_tags: bool = setting(
        True, help="Leave out optional end tags (</td>, </li>...): same page, fewer tokens."
    )
    """Leave out the end tags HTML makes optional (``</td>``, ``</tr>``, ``</li>``, ``</p>``…)
    where they may go: the parsed page is the same and a table costs about half the
    tokens. False writes every end tag.
    """
    lexical_weight: float = setting(
        0.3, help="Weight of the BM25 match added to dense block scores; 0: off."
    )
    """Weight of the BM25 match (scaled to [0, 1] by the page's best match) added to the
    stage-1 scores of a dense scorer (embedding, cross-encoder), so that names, dates and
    numbers of the question that an embedding blurs still count; 0 turns it off; ignored
    with ``scorer="bm25"``. The pruner's BM25 matches plural and singular forms and skips
    question words. It needs ``bm25s`` (``hrefine[models]``): without it, a weight above 0
    raises :class:`~hrefine.errors.MissingDependencyError`.
    """
    narrow_tables: bool = setting(
        True, help="Narrow a table bigger than the budget to its best columns, every row kept."
    )
    """A table bigger than the stage-1 budget keeps every row but only some columns: its key
    column, its best-scored column and further columns best first while it fits half the
    budget; the rows the query names (up to 3) are also kept whole in a copy of the table
    placed before it (:func:`hrefine.html.columns.project_columns`).
    ``stats["narrowed_tables"]`` says what each table kept. False keeps columns as they are.
    """
    split_paragraphs: bool = setting(
        True,
        help=(
            "Split a paragraph over a quarter of the budget at sentence ends, so the part that "
            "answers can be kept without the rest; False: paragraphs stay whole."
        ),
    )
    """A paragraph over a quarter of the stage-1 budget (at least 64 tokens), or the text of a
    container holding no block, is split at sentence ends into pieces of about equal
    length, each a block of its own (:func:`hrefine.html.paragraphs.split_long_paragraphs`).
    With an embedding scorer and the BM25 match on, the paragraph is embedded whole and its
    pieces are told apart by their own BM25 match. ``stats["split_paragraphs"]`` counts
    them. False keeps paragraphs whole.
    """
    demote_back_matter: bool = setting(
        True, help="Rank references, notes, external links and 'see also' after the body."
    )
    """Blocks under a heading naming back matter ("References", "Notes", "External links",
    "Further reading", "See also"...) rank after every other block, ordered by their BM25
    match, and are not given to the scorer. ``stats["back_matter_blocks"]`` counts them.
    """
    read_words: int | None = setting(
        None,
        help=(
            "Words of a block a dense scorer reads (its start, or the window holding most of "
            "the query's words); None: whole blocks."
        ),
    )
    """None (default): a dense scorer reads each block whole (to ``embed_max_tokens``). A
    number: it reads that many words after a block's headings, the block's first words or
    the window of that many holding more of the query's words
    (:func:`hrefine.models.lexical.query_window`); a table or list scored as a whole reads
    its first 30 words (at most ``read_words``). BM25 always reads whole texts.
    """
    embed_max_tokens: int | None = setting(
        128, help="Word pieces of each block an hrefine embedder reads; None: its own limit."
    )
    """Word pieces of each block text an hrefine embedder reads (128, what the default
    all-MiniLM-L6-v2 was trained on; the rest of a long block adds little to its vector).
    None reads up to the embedder's own limit. Embedders from other libraries read their
    own way.
    """
    window_words: int | None = setting(
        None,
        help=(
            "A dense scorer reads a longer block in windows of this many words and takes the"
            " best (every word read); None: each block read once, to embed_max_tokens."
        ),
    )
    input_format: str = setting(
        "auto", help="How inputs are read: 'auto' (per document), 'html', 'markdown' or 'text'."
    )
    """How each input is read: ``"auto"`` (default) tells HTML, Markdown and plain text apart
    per document (:func:`hrefine.html.formats.detect_format`; a page with a doctype,
    ``<html>``/``<body>`` or HTML tags is HTML); ``"html"``, ``"markdown"`` or ``"text"``
    read every input so. Markdown (CommonMark with pipe tables, raw HTML in it shown as
    text) and plain text (paragraphs, line breaks as ``<br>``, ``- ``/``1. `` lines as
    lists) are written as HTML before cleaning (:func:`hrefine.html.formats.to_html`), so a
    Markdown table prunes as a table, its header kept with its rows.
    ``stats["input_formats"]`` gives the format of each input document.
    """
    neighbour_rows: bool = setting(
        True,
        help=(
            "For 'after X' / 'before X' questions, the rows around a table's best-matching "
            "row score just below it."
        ),
    )
    """When the question asks for what comes before or after something (after, before,
    prior, next, previous...: :func:`hrefine.html.scoring.asks_order`), the rows right
    before and after a table's best-matching row (one that matches the question by its own
    words, above its table as a whole) score just below it, so they are kept with it:
    "who played after X", "the one prior to X". False: those rows take no part of it.
    """
    keep_last_rows: bool = setting(
        True, help="A table kept in part keeps its last row too (the latest, the last place)."
    )
    """A table too big for the budget, kept as far as it goes (its best-matching rows, then
    its rows in document order), keeps its last row before its other rows: the latest
    entry, the last place, the end of a list of seasons or episodes. False: its first rows
    only.
    """
    record_tables: bool = setting(
        False,
        help=(
            "Score each row of an infobox-like table (a header cell and a value per row) on "
            "its own, never the whole table for what it describes."
        ),
    )
    """A record table, one thing's fields a row each (a Wikipedia infobox: most rows one
    header cell and one value, :func:`hrefine.html.columns.is_record_table`), is split
    into its rows whatever its size; each row is scored on its own rather than taking the
    table's score, and the table is never kept whole for the score of what it describes.
    False (default) treats it as any other table. Off because it did not hold on pages
    it was not tuned on: on the tuning half of the dev pages it found 2, 1 and 1 more WTQ
    answers at 512, 1024 and 2048 tokens and 1 more NQ answer at 1024; on the checking
    half it lost 1 WTQ answer at 512 and 1 NQ answer at 512 and at 1024.
    """
    cleaned_cache: int = setting(
        64,
        help=(
            "Pages whose cleaned tree is kept, so a page pruned again (another query or "
            "budget) is not cleaned again; 0 keeps none."
        ),
    )
    """Pages whose cleaned tree the pruner keeps (the most recent, at most 4 million input
    characters in all), so a page pruned again for another question or budget is not
    cleaned again. 0 keeps none.
    """
    max_input_bytes: int | None = setting(
        DEFAULT_MAX_INPUT_BYTES,
        help="Largest input document read, in bytes (a str in UTF-8); None: no limit.",
    )
    """The largest input document read, in bytes (a str counted in UTF-8; default 64 MiB,
    several times the biggest real pages). A bigger one raises
    :class:`~hrefine.errors.HtmlParseError` (the error for an input the pruner cannot
    read as a page, as a PDF or other binary file does) before any work is spent on it.
    None: no limit.
    """

    def __post_init__(self) -> None:
        from hrefine.models.scorers import canonical_scorer, check_embedder_scorer

        # A misspelt name fails here, not on the first page; "BM25" is kept as "bm25".
        object.__setattr__(self, "scorer", canonical_scorer(self.scorer))
        check_embedder_scorer(self.embedder, self.scorer)
        _check_lm(self.lm)
        _check_adapter(self.generative_adapter, self.generative)
        if isinstance(self.generative_adapter, os.PathLike):
            object.__setattr__(self, "generative_adapter", os.fspath(self.generative_adapter))
        check_ints(self, 1, "max_words", "fine_max_words")
        check_int("stage1_max_tokens", self.stage1_max_tokens, minimum=MIN_BUDGET, none=True)
        check_number("lexical_weight", self.lexical_weight, minimum=0)
        check_ints(self, 1, "read_words", "max_input_bytes", none=True)
        check_int("embed_max_tokens", self.embed_max_tokens, minimum=2, none=True)
        check_int("window_words", self.window_words, minimum=8, none=True)
        check_int("cleaned_cache", self.cleaned_cache, minimum=0)
        check_input_format(self.input_format)
        for name in (
            "generative",
            "boilerplate",
            "omit_end_tags",
            "narrow_tables",
            "split_paragraphs",
            "demote_back_matter",
            "record_tables",
            "keep_last_rows",
            "neighbour_rows",
        ):
            check_bool(name, getattr(self, name))


def _check_lm(lm: Any) -> None:
    """``lm`` is None, a model folder or name (loaded by the pruner), or LocalLM-like: an
    object with the ``chat_prompt`` and ``session`` the generative stage calls."""
    if lm is None or isinstance(lm, os.PathLike):
        return
    if isinstance(lm, str):
        check_model_name("lm", lm)
        return
    # Looked up on the class: a LocalLM's properties would load the model.
    if all(callable(getattr(type(lm), m, None)) for m in ("chat_prompt", "session")):
        return
    msg = (
        f"cannot use {type(lm).__name__} as the generative stage's lm: pass an hrefine "
        "LocalLM, a local model folder or a name in the Hugging Face cache (loaded as a "
        "LocalLM), or None for the embedded SmolLM2; a chat model or LLM client cannot "
        "score tag paths"
    )
    raise InputTypeError(msg)


def _check_adapter(adapter: Any, generative: Any) -> None:
    """``generative_adapter`` is None, or a folder path given with ``generative=True``."""
    if adapter is None:
        return
    if not isinstance(adapter, (str, os.PathLike)):
        msg = (
            "generative_adapter must be the folder of a LoRA adapter (a path) or None, got "
            f"{type(adapter).__name__} {adapter!r}"
        )
        raise InputTypeError(msg)
    if not str(os.fspath(adapter)).strip():
        msg = "generative_adapter is an empty string; give an adapter folder, or None"
        raise ConfigError(msg)
    if generative is not True:
        msg = (
            f"generative_adapter={os.fspath(adapter)!r} was given with generative=False, which "
            "runs no LM; set generative=True to prune with the adapter, or leave it out"
        )
        raise ConfigError(msg)
