"""LlamaIndex node postprocessors backed by the hrefine core."""

from __future__ import annotations

from typing import Any

from hrefine.html import MIN_BUDGET
from hrefine.html.outcome import (
    CLEANED_CACHE_HELP,
    READ_WORDS_HELP,
    SPLIT_PARAGRAPHS_HELP,
    DocumentOutcome,
    aprune_documents,
    build_pruner,
    check_query,
    prune_documents,
    pruner_key,
)
from hrefine.models import Embedder
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle
from pydantic import ConfigDict, Field, PrivateAttr

from llamaindex_hrefine._convert import (
    complete_state,
    nodes_to_html,
    outcomes_to_nodes,
    to_embedder,
)

__all__ = ["HtmlRagNodePostprocessor"]


def _query_of(query_bundle: QueryBundle | None) -> str:
    if query_bundle is None:
        msg = (
            "HtmlRagNodePostprocessor needs the query: call postprocess_nodes(nodes, "
            "query_str=...) or pass a query_bundle (query engines do this for you)"
        )
        raise ValueError(msg)
    return check_query(query_bundle.query_str)


class HtmlRagNodePostprocessor(BaseNodePostprocessor):
    """Prune the HTML held by retrieved nodes to a token budget with HtmlRAG.

    Each node's content is HTML. The pages are cleaned, split into a block tree, the blocks are
    ranked against the query (embeddings or BM25, then optionally a small generative model) and
    the best blocks that fit ``max_tokens`` are kept, as HTML with the original tags.

    Returns new ``NodeWithScore`` objects holding copies of the input nodes: the inputs are never
    mutated. Each copy's score is its best kept block score (the input score is kept in
    ``metadata["hrefine_input_score"]``); its metadata is a copy plus ``relevance_score``,
    ``hrefine_tokens``, ``hrefine_budget``, ``hrefine_budget_scope``, ``hrefine_tokenizer``,
    ``hrefine_blocks_kept``, ``hrefine_blocks_total`` and ``hrefine_dropped_documents`` (nodes
    left out because none of their blocks made the budget). These keys are excluded from the LLM
    and embed views, so they do not count against the budget in the prompt.

    The settings are those of ``langchain_hrefine.HtmlRagCompressor`` (``max_tokens``,
    ``scorer``, ``tokenizer``, ``generative``, ``lm``, ``max_words``, ``boilerplate``,
    ``omit_end_tags``, ``lexical_weight``, ``narrow_tables``, ``split_paragraphs``,
    ``demote_back_matter``, ``read_words``, ``cleaned_cache``, ``prune_together``), with
    ``embed_model`` (a LlamaIndex ``BaseEmbedding`` or an hrefine ``Embedder``) in place of
    ``embeddings``.

    Examples
    --------
    >>> from llama_index.core.schema import NodeWithScore, TextNode
    >>> post = HtmlRagNodePostprocessor(max_tokens=512, scorer="bm25")
    >>> nodes = [NodeWithScore(node=TextNode(text="<html>...</html>"), score=0.8)]
    >>> pruned = post.postprocess_nodes(nodes, query_str="who won?")  # doctest: +SKIP
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    max_tokens: int = Field(
        default=2048,
        ge=MIN_BUDGET,
        strict=True,
        description=(
            f"Token budget of the pruned HTML (all nodes together, or each node; at least "
            f"{MIN_BUDGET})."
        ),
    )
    scorer: Any = Field(
        default="embedding",
        description="'embedding', 'bm25', 'cross-encoder:<model>' or an hrefine Scorer.",
    )
    embed_model: BaseEmbedding | Embedder | None = Field(
        default=None,
        description=(
            "Embed model for the 'embedding' scorer (a LlamaIndex BaseEmbedding or an hrefine "
            "Embedder); None: hrefine's embedded all-MiniLM-L6-v2. Settings.embed_model is "
            "never read."
        ),
    )
    tokenizer: Any = Field(
        default=None,
        description=(
            "Tokenizer the budget is counted in (a tokenizer, tokenizer.json path or "
            "str -> int callable); None: hrefine's default (Llama-3.2)."
        ),
    )
    generative: bool = Field(
        default=False, description="Run the paper's generative second stage (tag-path scoring)."
    )
    lm: Any = Field(
        default=None, description="hrefine LocalLM for the generative stage; None: the default."
    )
    max_words: int = Field(default=256, gt=0, description="Largest block, in words.")
    boilerplate: bool = Field(
        default=True, description="Remove navigation, footers and other boilerplate."
    )
    omit_end_tags: bool = Field(
        default=True,
        description="Leave out optional end tags (</td>, </li>...): same page, fewer tokens.",
    )
    lexical_weight: float | None = Field(
        default=None,
        ge=0,
        allow_inf_nan=False,
        description="Weight of the BM25 match added to dense block scores; None: 0.3.",
    )
    narrow_tables: bool = Field(
        default=True,
        description="Narrow a table bigger than the budget to its best columns, every row kept.",
    )
    split_paragraphs: bool = Field(default=True, description=SPLIT_PARAGRAPHS_HELP)
    demote_back_matter: bool = Field(
        default=True,
        description="Rank references, notes, external links and 'see also' after the body.",
    )
    read_words: int | None = Field(default=None, ge=1, description=READ_WORDS_HELP)
    cleaned_cache: int = Field(default=64, ge=0, description=CLEANED_CACHE_HELP)
    prune_together: bool = Field(
        default=True,
        description=(
            "Prune all nodes against one budget, as in the paper (True), or each node to "
            "max_tokens on its own (False)."
        ),
    )

    _pruner: Any = PrivateAttr(default=None)
    _pruner_key: tuple[Any, ...] | None = PrivateAttr(default=None)

    def __init__(self, **data: Any) -> None:
        super().__init__(**data)
        # Built now, with its token counter, so that a bad setting fails at construction.
        _ = self._get_pruner().counter

    @classmethod
    def class_name(cls) -> str:
        """Stable name used by LlamaIndex serialisation."""
        return "HtmlRagNodePostprocessor"

    def __getstate__(self) -> dict[str, Any]:
        # Refuses, rather than let the copy be built without its embed model or LM.
        return complete_state(self, super().__getstate__())

    def _get_pruner(self) -> Any:
        """The core ``HtmlPruner`` for the current settings (rebuilt when a setting changed)."""
        key = pruner_key(self, self.embed_model)
        if self._pruner is None or key != self._pruner_key:
            self._pruner = build_pruner(self, to_embedder(self.embed_model))
            self._pruner_key = key
        return self._pruner

    def _finish(
        self, nodes: list[NodeWithScore], outcomes: list[DocumentOutcome]
    ) -> list[NodeWithScore]:
        counter = self._get_pruner().counter
        counts = counter.count_many([o.html for o in outcomes])
        return outcomes_to_nodes(nodes, outcomes, token_counts=counts, tokenizer=counter.name)

    def _postprocess_nodes(
        self,
        nodes: list[NodeWithScore],
        query_bundle: QueryBundle | None = None,
    ) -> list[NodeWithScore]:
        if not nodes:
            return []
        outcomes = prune_documents(
            self._get_pruner(),
            nodes_to_html(nodes),
            _query_of(query_bundle),
            self.max_tokens,
            together=self.prune_together,
        )
        return self._finish(list(nodes), outcomes)

    async def _apostprocess_nodes(
        self,
        nodes: list[NodeWithScore],
        query_bundle: QueryBundle | None = None,
    ) -> list[NodeWithScore]:
        if not nodes:
            return []
        outcomes = await aprune_documents(
            self._get_pruner(),
            nodes_to_html(nodes),
            _query_of(query_bundle),
            self.max_tokens,
            together=self.prune_together,
        )
        return self._finish(list(nodes), outcomes)
