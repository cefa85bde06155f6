"""LangChain components backed by hrefine.

``HtmlRagCompressor`` prunes retrieved HTML pages to a token budget (a
``BaseDocumentCompressor``), and ``CompressionRetriever`` chains any retriever with any
compressor. Needs ``langchain-core``: ``pip install 'hrefine[langchain]'``.
"""

from __future__ import annotations

from hrefine._optional import available
from hrefine.errors import MissingDependencyError

if not available("langchain_core"):
    raise MissingDependencyError("langchain_core", "langchain")

from langchain_hrefine.compressors import HtmlRagCompressor
from langchain_hrefine.retrievers import CompressionRetriever

__all__ = ["CompressionRetriever", "HtmlRagCompressor"]
