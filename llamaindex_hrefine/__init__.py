"""LlamaIndex components backed by hrefine.

``HtmlRagNodePostprocessor`` prunes the HTML held by retrieved nodes to a token budget (a
``BaseNodePostprocessor``), and ``HrefineEmbedding`` makes an hrefine embedder (by default the
embedded all-MiniLM-L6-v2, offline) a LlamaIndex embed model, named as LlamaIndex names its
embed models (``HuggingFaceEmbedding``). ``LongRefinerNodePostprocessor`` refines long texts
(contracts, papers) held by retrieved nodes to a token budget by their sections.
``HtmlPageNodeParser`` splits HTML documents for an index into nodes that are whole HTML (never
cut mid-tag). ``RaptorIndex`` builds a RAPTOR
summary tree over documents (a ``BaseIndex``, persisted in LlamaIndex's stores) and
``RaptorRetriever`` retrieves from it. ``GarlicIndex`` builds a GARLIC graph of LLM summary
points over documents (a ``BaseIndex``, persisted in LlamaIndex's stores) and ``GarlicRetriever``
searches it, led by the LLM's Yes/No and attention. Needs ``llama-index-core``:
``pip install '.[llamaindex]'`` in a clone of hrefine.
"""

from __future__ import annotations

from hrefine._optional import available
from hrefine.errors import MissingDependencyError

if not available("llama_index.core"):
    raise MissingDependencyError("llama_index.core", "llamaindex")

from llamaindex_hrefine._convert import HrefineEmbedding
from llamaindex_hrefine.garlic import GarlicIndex, GarlicRetriever
from llamaindex_hrefine.longrefiner import LongRefinerNodePostprocessor
from llamaindex_hrefine.node_parser import HtmlPageNodeParser
from llamaindex_hrefine.postprocessors import HtmlRagNodePostprocessor
from llamaindex_hrefine.raptor import RaptorIndex, RaptorRetriever

__all__ = [
    "GarlicIndex",
    "GarlicRetriever",
    "HrefineEmbedding",
    "HtmlPageNodeParser",
    "HtmlRagNodePostprocessor",
    "LongRefinerNodePostprocessor",
    "RaptorIndex",
    "RaptorRetriever",
]
