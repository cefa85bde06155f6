"""Every conversion between LlamaIndex and the hrefine core, in one place.

This is the only module of ``llamaindex_hrefine`` that sees both worlds: LlamaIndex embed models
become a core :class:`~hrefine.models.Embedder` (and a core embedder becomes a LlamaIndex embed
model, :class:`HrefineEmbedding`), an explicitly given LlamaIndex LLM becomes a core
:class:`~hrefine.models.TextGenerator`, and ``NodeWithScore`` objects go in as HTML strings and come
back as new ``NodeWithScore`` objects holding new nodes. Caller nodes are never mutated.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import Callable, Sequence
from typing import Any

from hrefine.errors import ConfigError, InputTypeError
from hrefine.html.outcome import DocumentOutcome, kept_with_metadata
from hrefine.models import (
    CallableEmbedder,
    Embedder,
    TextGenerator,
    as_text_generator,
    get_embedder,
)
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.llms import LLM
from llama_index.core.schema import (
    BaseNode,
    MetadataMode,
    NodeRelationship,
    NodeWithScore,
    TextNode,
)
from pydantic import PrivateAttr

__all__ = [
    "METADATA_KEYS",
    "HrefineEmbedding",
    "nodes_to_html",
    "outcomes_to_nodes",
    "pieces_to_nodes",
    "to_embedder",
    "to_text_generator",
]

logger = logging.getLogger(__name__)

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


def to_embedder(embed_model: BaseEmbedding | Embedder | None) -> Embedder | None:
    """Turn a LlamaIndex embed model into a core :class:`~hrefine.models.Embedder`.

    Parameters
    ----------
    embed_model:
        A LlamaIndex ``BaseEmbedding``, an object that already implements the core ``Embedder``
        protocol (returned as is), or None (returned as None: the core picks its default model).
        ``Settings.embed_model`` is never read.

    Returns
    -------
    Embedder or None
        An embedder whose rows are L2-normalised, that keeps vectors by text and awaits
        ``aget_text_embedding_batch``/``aget_query_embedding`` on the async path
        (:class:`~hrefine.models.CallableEmbedder`).
    """
    if embed_model is None:
        return None
    if isinstance(embed_model, HrefineEmbedding):
        return embed_model.embedder
    if isinstance(embed_model, BaseEmbedding):
        # Vectors are cached by text; the async methods run on the caller's loop on the async
        # path when the model has async code of its own (the base class's runs the sync code
        # on the loop, blocking it).
        cls = type(embed_model)
        own_async = cls._aget_text_embeddings is not BaseEmbedding._aget_text_embeddings
        own_aquery = cls._aget_query_embedding is not BaseEmbedding._aget_query_embedding
        return CallableEmbedder(
            embed_model.get_text_embedding_batch,
            embed_model.get_query_embedding,
            name=f"llamaindex:{embed_model.model_name}",
            aembed_documents=embed_model.aget_text_embedding_batch if own_async else None,
            aembed_query=embed_model.aget_query_embedding if own_aquery else None,
        )
    if isinstance(embed_model, Embedder):
        return embed_model
    msg = (
        f"cannot use {type(embed_model).__name__} as an embed model: pass a LlamaIndex "
        "BaseEmbedding, an hrefine Embedder, or None for the embedded default model"
    )
    raise InputTypeError(msg)


def to_text_generator(llm: Any, **options: Any) -> TextGenerator:
    """Turn an explicitly given LlamaIndex LLM into a core :class:`~hrefine.models.TextGenerator`.

    ``Settings.llm`` is never read: its default is a hosted model that fails without an API key,
    so hrefine only uses the LLM it is handed.

    Parameters
    ----------
    llm:
        A LlamaIndex ``LLM`` (called with ``complete``/``acomplete``), a core
        ``TextGenerator``, a ``LocalLM`` or a ``str -> str`` callable.
    **options:
        Passed to :class:`~hrefine.models.TextGenerator`.

    Returns
    -------
    TextGenerator
        The wrapped model.
    """
    if llm is None:
        msg = (
            "no LLM given: pass llm= explicitly (hrefine never falls back to Settings.llm, "
            "whose default needs an OpenAI key)"
        )
        raise ConfigError(msg)
    if isinstance(llm, TextGenerator):
        return llm
    if isinstance(llm, LLM):
        model = llm

        def _complete(prompt: str) -> str:
            return str(model.complete(prompt).text)

        async def _acomplete(prompt: str) -> str:
            return str((await model.acomplete(prompt)).text)

        options.setdefault("name", f"llamaindex:{type(llm).__name__}")
        return TextGenerator(_complete, afn=_acomplete, **options)
    if callable(llm) or hasattr(llm, "session"):  # a str -> str callable, or a LocalLM
        return as_text_generator(llm, **options)
    msg = f"cannot use {type(llm).__name__} as an LLM: pass a LlamaIndex LLM or a callable"
    raise InputTypeError(msg)


def complete_state(component: Any, state: dict[str, Any]) -> dict[str, Any]:
    """``state`` from LlamaIndex's ``BaseComponent.__getstate__``, or TypeError when it left out a
    field that does not pickle: the copy would be rebuilt without it (another embed model, or
    an object missing the field) rather than fail."""
    lost = sorted(set(component.__dict__) - set(state["__dict__"]))
    if lost:
        msg = (
            f"cannot pickle this {type(component).__name__}: {', '.join(lost)} cannot be "
            "pickled (an embedding model or LLM holding a client, a lock or a local function)"
        )
        raise InputTypeError(msg)
    return state


class HrefineEmbedding(BaseEmbedding):
    """A core :class:`~hrefine.models.Embedder` as a LlamaIndex embed model.

    Lets an index use the same embedder as hrefine (by default the embedded all-MiniLM-L6-v2,
    offline), so a ``VectorStoreIndex`` needs no hosted embedding service.

    Parameters
    ----------
    embedder:
        A core ``Embedder`` (e.g. :func:`hrefine.models.default_embedder` or
        :class:`hrefine.testing.KeywordEmbedder`); None uses the embedded default.
    **kwargs:
        Passed to ``BaseEmbedding`` (``embed_batch_size``...).
    """

    _embedder: Embedder = PrivateAttr()

    def __init__(self, embedder: Embedder | None = None, **kwargs: Any) -> None:
        resolved = get_embedder(embedder)
        kwargs.setdefault("model_name", f"hrefine:{resolved.name}")
        super().__init__(**kwargs)
        self._embedder = resolved

    @classmethod
    def class_name(cls) -> str:
        """Stable name used by LlamaIndex serialisation."""
        return "HrefineEmbedding"

    def __getstate__(self) -> dict[str, Any]:
        # LlamaIndex leaves out what does not pickle and rebuilds from the fields, which would
        # put the default embedder in place of this one, under this one's name.
        state = complete_state(self, super().__getstate__())
        if "_embedder" not in (state.get("__pydantic_private__") or {}):
            msg = (
                f"cannot pickle this HrefineEmbedding: its embedder "
                f"({type(self._embedder).__name__}) cannot be pickled"
            )
            raise InputTypeError(msg)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(embedder=state["__pydantic_private__"]["_embedder"], **state["__dict__"])  # type: ignore[misc]

    @property
    def embedder(self) -> Embedder:
        """The wrapped core embedder."""
        return self._embedder

    def _get_query_embedding(self, query: str) -> list[float]:
        return [float(x) for x in self._embedder.embed_query(query)]

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return await asyncio.to_thread(self._get_query_embedding, query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._get_text_embeddings([text])[0]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return [[float(x) for x in row] for row in self._embedder.embed(texts)]

    async def _aget_text_embedding(self, text: str) -> list[float]:
        return await asyncio.to_thread(self._get_text_embedding, text)

    async def _aget_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return await asyncio.to_thread(self._get_text_embeddings, texts)


def nodes_to_html(nodes: Sequence[NodeWithScore]) -> list[str]:
    """The HTML content of each node (without metadata), in order."""
    return [n.node.get_content(metadata_mode=MetadataMode.NONE) for n in nodes]


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
        unit="nodes",
        metadata_of=lambda i: nodes[i].node.metadata,
        input_score_of=lambda i: nodes[i].score,
        keep_input_order=keep_input_order,
    )
    out: list[NodeWithScore] = []
    for outcome, metadata in kept:
        source = nodes[outcome.index].node
        added = [k for k in METADATA_KEYS if k in metadata]
        node = source.model_copy(
            update={
                "metadata": metadata,
                "embedding": None,
                "excluded_llm_metadata_keys": _extend(source.excluded_llm_metadata_keys, added),
                "excluded_embed_metadata_keys": _extend(source.excluded_embed_metadata_keys, added),
                "relationships": copy.copy(source.relationships),
            }
        )
        node.set_content(outcome.html)
        out.append(NodeWithScore(node=node, score=outcome.relevance))
    return out


def pieces_to_nodes(
    source: BaseNode, pieces: Sequence[str], id_func: Callable[[int, BaseNode], str]
) -> list[TextNode]:
    """New ``TextNode`` objects holding ``pieces`` of ``source``'s content, as a LlamaIndex node
    parser makes them: each with a copy of ``source``'s metadata and its metadata settings
    (excluded keys, templates), a SOURCE relationship to ``source``, no embedding, and an id
    from ``id_func(i, source)``. ``source`` is not changed."""
    related = source.as_related_node_info()  # hashes the whole page: once for all pieces
    return [
        TextNode(
            id_=id_func(i, source),
            text=piece,
            metadata=dict(source.metadata),
            excluded_embed_metadata_keys=list(source.excluded_embed_metadata_keys),
            excluded_llm_metadata_keys=list(source.excluded_llm_metadata_keys),
            metadata_separator=source.metadata_separator,
            metadata_template=source.metadata_template,
            text_template=getattr(source, "text_template", TextNode().text_template),
            relationships={NodeRelationship.SOURCE: related},
        )
        for i, piece in enumerate(pieces)
    ]


def _extend(keys: Sequence[str], extra: Sequence[str]) -> list[str]:
    return list(dict.fromkeys([*keys, *extra]))
