"""Every conversion between LangChain and the hrefine core, in one place.

This package is the only part of ``langchain_hrefine`` that sees both worlds; each module holds
one kind of conversion:

- :mod:`~langchain_hrefine._convert.models`: LangChain ``Embeddings`` become a core
  :class:`~hrefine.models.Embedder` (and a core embedder becomes LangChain ``Embeddings``,
  :class:`HrefineEmbeddings`), and chat models, LLMs and Runnables become a core
  :class:`~hrefine.models.TextGenerator`;
- :mod:`~langchain_hrefine._convert.documents`: ``Document`` objects go in as HTML strings, as
  texts and titles (LongRefiner) or as :class:`~hrefine.raptor.Source` objects (RAPTOR,
  GARLIC), and come back as new ``Document`` objects.

Caller objects are never mutated: metadata is always copied. The names are imported from here.
"""

from __future__ import annotations

from langchain_hrefine._convert.documents import (
    as_list,
    compressed_to_documents,
    document_list,
    documents_to_html,
    documents_to_sources,
    documents_to_texts,
    nodes_to_documents,
    outcomes_to_documents,
    refined_to_documents,
    texts_to_sources,
    visited_to_documents,
)
from langchain_hrefine._convert.models import (
    HrefineEmbeddings,
    to_embedder,
    to_garlic_llm,
    to_refiner_llm,
    to_summariser,
    to_text_generator,
)

__all__ = [
    "HrefineEmbeddings",
    "as_list",
    "compressed_to_documents",
    "document_list",
    "documents_to_html",
    "documents_to_sources",
    "documents_to_texts",
    "nodes_to_documents",
    "outcomes_to_documents",
    "refined_to_documents",
    "texts_to_sources",
    "to_embedder",
    "to_garlic_llm",
    "to_refiner_llm",
    "to_summariser",
    "to_text_generator",
    "visited_to_documents",
]
