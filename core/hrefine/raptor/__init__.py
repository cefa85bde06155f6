"""RAPTOR: recursive abstractive processing for tree-organised retrieval (Sarthi et al., 2024).

Documents are cut into ~100-token leaves, embedded, clustered (UMAP, then a Gaussian mixture
sized by BIC, soft membership) and each cluster summarised (by default without a model: the
leading sentences of its texts, :class:`ExtractiveSummariser`; or by an LLM); the summaries
are embedded and clustered again, layer after layer. A query is answered from the collapsed
tree (every layer ranked together, to a token budget) or by traversal (top ``k`` per layer from
the roots down).

Needs the ``raptor`` extra (umap-learn, scikit-learn) to build; loading and querying a saved
tree do not.
"""

from hrefine.raptor.build import Source
from hrefine.raptor.cluster import Cluster, cluster_layer
from hrefine.raptor.extractive import ExtractiveSummariser
from hrefine.raptor.options import DEFAULT_PROMPT, DEFAULT_SYSTEM_PROMPT, RaptorOptions
from hrefine.raptor.raptor_tree import RaptorTree
from hrefine.raptor.retrieve import RetrievedNode
from hrefine.raptor.summarise import summary_prompt

__all__ = [
    "DEFAULT_PROMPT",
    "DEFAULT_SYSTEM_PROMPT",
    "Cluster",
    "ExtractiveSummariser",
    "RaptorOptions",
    "RaptorTree",
    "RetrievedNode",
    "Source",
    "cluster_layer",
    "summary_prompt",
]
