"""LlamaIndex components backed by hrefine.

``HtmlRagNodePostprocessor`` prunes the HTML held by retrieved nodes to a token budget (a
``BaseNodePostprocessor``). Needs ``llama-index-core``: ``pip install 'hrefine[llamaindex]'``.
"""

from __future__ import annotations

from hrefine._optional import available
from hrefine.errors import MissingDependencyError

if not available("llama_index.core"):
    raise MissingDependencyError("llama_index.core", "llamaindex")

from llamaindex_hrefine.postprocessors import HtmlRagNodePostprocessor

__all__ = ["HtmlRagNodePostprocessor"]
