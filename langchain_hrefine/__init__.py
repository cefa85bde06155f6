"""LangChain components backed by hrefine.

``HtmlRagCompressor`` prunes retrieved HTML pages to a token budget (a
``BaseDocumentCompressor``), ``CompressionRetriever`` chains any retriever with any
compressor, ``LongRefinerCompressor`` refines long documents (contracts, papers) to a token
budget by their sections, and ``HrefineEmbeddings`` makes an hrefine embedder (by default the
embedded all-MiniLM-L6-v2, offline) LangChain ``Embeddings``, named as LangChain names its
embedding classes (``HuggingFaceEmbeddings``). ``RaptorRetriever`` retrieves from a RAPTOR
tree of chunks and LLM summaries of their clusters; ``GarlicRetriever`` searches a GARLIC graph
of LLM summary points, led by the LLM's Yes/No and attention, and ``GarlicCompressor`` does
the same over the retrieved documents, to a token budget. Needs ``langchain-core``:
``pip install '.[langchain]'`` in a clone of hrefine.
"""

from __future__ import annotations

from hrefine._optional import available
from hrefine.errors import MissingDependencyError

if not available("langchain_core"):
    raise MissingDependencyError("langchain_core", "langchain")

from langchain_hrefine._convert import HrefineEmbeddings
from langchain_hrefine.compressors import HtmlRagCompressor
from langchain_hrefine.garlic import GarlicCompressor, GarlicRetriever
from langchain_hrefine.longrefiner import LongRefinerCompressor
from langchain_hrefine.raptor import RaptorRetriever
from langchain_hrefine.retrievers import CompressionRetriever

__all__ = [
    "CompressionRetriever",
    "GarlicCompressor",
    "GarlicRetriever",
    "HrefineEmbeddings",
    "HtmlRagCompressor",
    "LongRefinerCompressor",
    "RaptorRetriever",
]
