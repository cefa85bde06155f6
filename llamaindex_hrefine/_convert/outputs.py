"""The nodes the LlamaIndex postprocessors and node parser return: new ``NodeWithScore``
objects holding copies of the input nodes with the pruned or refined text (HtmlRAG,
LongRefiner), and new ``TextNode`` pieces of a page. The hrefine metadata keys are hidden from the
LLM and embed views; caller nodes are never mutated."""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

from hrefine.html.outcome import DocumentOutcome, kept_with_metadata
from hrefine.longrefiner.outcome import METADATA_KEYS as REFINER_KEYS
from hrefine.longrefiner.outcome import DocumentOutcome as RefineOutcome
from hrefine.longrefiner.outcome import kept_with_metadata as refined_with_metadata
from llama_index.core.schema import BaseNode, NodeRelationship, NodeWithScore, TextNode

__all__ = [
    "METADATA_KEYS",
    "extend_keys",
    "hidden_copy",
    "outcomes_to_nodes",
    "pieces_to_nodes",
    "refined_to_nodes",
]


#: Metadata keys written on every returned node; they are excluded from the LLM and embed views.
METADATA_KEYS = (
    "relevance_score",
    "hrefine_raw_score",
    "hrefine_input_format",
    "hrefine_failed_documents",
    "hrefine_method",
    "hrefine_tokens",
    "hrefine_budget",
    "hrefine_budget_scope",
    "hrefine_tokenizer",
    "hrefine_blocks_kept",
    "hrefine_blocks_total",
    "hrefine_dropped_documents",
    "hrefine_input_score",
    "hrefine_stage2_score",
)


def outcomes_to_nodes(
    nodes: Sequence[NodeWithScore],
    outcomes: Sequence[DocumentOutcome],
    *,
    token_counts: Sequence[int],
    tokenizer: str,
    keep_input_order: bool = False,
) -> list[NodeWithScore]:
    """The new ``NodeWithScore`` objects a postprocessor returns for ``nodes`` (most relevant
    first, or in input order), from one outcome per input and each outcome's token count under
    the pruner's ``tokenizer``.

    Nodes with nothing kept are left out and counted in every output's
    ``hrefine_dropped_documents``. Each output holds a copy of its input node with the pruned
    HTML as content, no stale embedding, and a copied metadata dict plus the hrefine keys
    (:func:`hrefine.html.outcome.kept_with_metadata`), hidden from the LLM and embed views so
    they do not eat the budget; its score is the best kept block's, in [0, 1] (the raw score is
    ``hrefine_raw_score``, the input score ``hrefine_input_score``).
    """
    kept = kept_with_metadata(
        outcomes,
        token_counts,
        tokenizer=tokenizer,
        keep_input_order=keep_input_order,
        **_inputs(nodes),
    )
    return [
        _scored_copy(nodes[o.index].node, m, METADATA_KEYS, o.html, o.relevance) for o, m in kept
    ]


def _inputs(nodes: Sequence[NodeWithScore]) -> dict[str, Any]:
    """How the core's ``kept_with_metadata`` reads the input nodes: their metadata and score."""
    return {
        "unit": "nodes",
        "metadata_of": lambda i: nodes[i].node.metadata,
        "input_score_of": lambda i: nodes[i].score,
    }


def hidden_copy(source: BaseNode, metadata: dict[str, Any], keys: Sequence[str]) -> BaseNode:
    """A new node like ``source`` with ``metadata`` (no embedding), the hrefine ``keys`` it has
    hidden from the LLM and embed views (``source`` is untouched)."""
    added = [k for k in keys if k in metadata]
    return source.model_copy(
        update={
            "metadata": metadata,
            "embedding": None,
            "excluded_llm_metadata_keys": extend_keys(source.excluded_llm_metadata_keys, added),
            "excluded_embed_metadata_keys": extend_keys(source.excluded_embed_metadata_keys, added),
            "relationships": copy.copy(source.relationships),
        }
    )


def _scored_copy(
    source: BaseNode, metadata: dict[str, Any], keys: Sequence[str], text: str, score: Any
) -> NodeWithScore:
    """A :func:`hidden_copy` of ``source`` holding ``text``, scored ``score``."""
    node = hidden_copy(source, metadata, keys)
    node.set_content(text)
    return NodeWithScore(node=node, score=score)


def pieces_to_nodes(
    source: BaseNode,
    pieces: Sequence[str],
    id_func: Callable[[int, BaseNode], str],
    *,
    include_metadata: bool = True,
) -> list[TextNode]:
    """New ``TextNode`` objects holding ``pieces`` of ``source``'s content, as a LlamaIndex node
    parser makes them: each with a copy of ``source``'s metadata (none without
    ``include_metadata``, the node parser setting) and its metadata settings (excluded keys,
    templates), a SOURCE relationship to ``source``, no embedding, and an id from
    ``id_func(i, source)``. ``source`` is not changed."""
    related = source.as_related_node_info()  # hashes the whole page: once for all pieces
    return [
        TextNode(
            id_=id_func(i, source),
            text=piece,
            metadata=dict(source.metadata) if include_metadata else {},
            excluded_embed_metadata_keys=list(source.excluded_embed_metadata_keys),
            excluded_llm_metadata_keys=list(source.excluded_llm_metadata_keys),
            metadata_separator=source.metadata_separator,
            metadata_template=source.metadata_template,
            text_template=getattr(source, "text_template", TextNode().text_template),
            relationships={NodeRelationship.SOURCE: related},
        )
        for i, piece in enumerate(pieces)
    ]


def extend_keys(keys: Sequence[str], extra: Sequence[str]) -> list[str]:
    """``keys`` and then the ``extra`` ones they lack, in order."""
    return list(dict.fromkeys([*keys, *extra]))


def refined_to_nodes(
    nodes: Sequence[NodeWithScore],
    outcomes: Sequence[RefineOutcome],
    *,
    keep_input_order: bool = False,
) -> list[NodeWithScore]:
    """The new ``NodeWithScore`` objects a LongRefiner postprocessor returns for ``nodes`` (most
    relevant first, or in input order), from one outcome per input.

    Nodes with nothing kept are left out and counted in every output's
    ``hrefine_dropped_documents``. Each output holds a copy of its input node with the refined
    text as content, no stale embedding, and a copied metadata dict plus the hrefine keys
    (:func:`hrefine.longrefiner.outcome.kept_with_metadata`), hidden from the LLM and embed
    views so they do not eat the budget; its score is the relevance in [0, 1] (the input score
    is ``hrefine_input_score``).
    """
    kept = refined_with_metadata(outcomes, keep_input_order=keep_input_order, **_inputs(nodes))
    return [
        _scored_copy(nodes[o.index].node, m, REFINER_KEYS, o.text, o.relevance) for o, m in kept
    ]
