"""Every conversion between LlamaIndex and the hrefine core, in one place.

This package is the only part of ``llamaindex_hrefine`` that sees both worlds; each module holds
one kind of conversion:

- :mod:`~llamaindex_hrefine._convert.models`: LlamaIndex embed models become a core
  :class:`~hrefine.models.Embedder` (and a core embedder becomes a LlamaIndex embed model,
  :class:`HrefineEmbedding`), and an explicitly given LlamaIndex LLM becomes a core
  :class:`~hrefine.models.TextGenerator`;
- :mod:`~llamaindex_hrefine._convert.inputs`: ``NodeWithScore`` objects go in as HTML strings
  (HtmlRAG) or as texts and titles (LongRefiner), and nodes and Documents as the sources of a
  RAPTOR tree or GARLIC graph; queries are checked;
- :mod:`~llamaindex_hrefine._convert.queries`: a ``QueryBundle``'s ``embedding`` or
  ``custom_embedding_strs`` become the query vector of a RAPTOR or GARLIC search, as
  LlamaIndex's own vector retriever reads them;
- :mod:`~llamaindex_hrefine._convert.outputs`: what the postprocessors and the node parser return,
  new ``NodeWithScore`` objects holding new nodes;
- :mod:`~llamaindex_hrefine._convert.trees`: tree nodes become docstore ``TextNode`` objects (and
  back, on loading), and retrieved RAPTOR nodes or the nodes a GARLIC search read become
  ``NodeWithScore`` objects.

Caller nodes are never mutated. The names are imported from here.
"""

from __future__ import annotations

from llamaindex_hrefine._convert.inputs import (
    QueryCheckedRetriever,
    check_query_type,
    node_list,
    nodes_to_html,
    nodes_to_texts,
    to_sources,
)
from llamaindex_hrefine._convert.models import (
    HrefineEmbedding,
    answer_llm,
    complete_state,
    to_embedder,
    to_garlic_llm,
    to_raptor_llm,
    to_refiner_llm,
    to_text_generator,
)
from llamaindex_hrefine._convert.outputs import (
    METADATA_KEYS,
    outcomes_to_nodes,
    pieces_to_nodes,
    refined_to_nodes,
)
from llamaindex_hrefine._convert.queries import abundle_vector, bundle_vector
from llamaindex_hrefine._convert.trees import (
    RAPTOR_KEYS,
    json_problem,
    nodes_to_raptor_tree,
    raptor_nodes,
    retrieved_to_nodes,
    visited_to_nodes,
)

__all__ = [
    "METADATA_KEYS",
    "RAPTOR_KEYS",
    "HrefineEmbedding",
    "QueryCheckedRetriever",
    "abundle_vector",
    "answer_llm",
    "bundle_vector",
    "check_query_type",
    "complete_state",
    "json_problem",
    "node_list",
    "nodes_to_html",
    "nodes_to_raptor_tree",
    "nodes_to_texts",
    "outcomes_to_nodes",
    "pieces_to_nodes",
    "raptor_nodes",
    "refined_to_nodes",
    "retrieved_to_nodes",
    "to_embedder",
    "to_garlic_llm",
    "to_raptor_llm",
    "to_refiner_llm",
    "to_sources",
    "to_text_generator",
    "visited_to_nodes",
]
