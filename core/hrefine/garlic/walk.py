"""The score of each node the GARLIC search could read next (the paper's equation for the walk).

Pure functions over the graph's edge arrays, so the walk's arithmetic is tested apart from any
model: :func:`candidate_scores` is what :class:`~hrefine.garlic.GarlicSearcher` ranks by.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["candidate_scores"]


def _sum_to_one(values: np.ndarray) -> np.ndarray:
    total = float(values.sum())
    return values / total if total > 0 else values


def candidate_scores(
    edges: tuple[np.ndarray, np.ndarray, np.ndarray],
    attention: np.ndarray,
    similarity: np.ndarray,
    candidates: Sequence[int],
    embedding_weight: float,
) -> np.ndarray:
    """Scores of the candidate nodes: normalised ``z = Eᵀa`` plus weighted normalised ``s``.

    Parameters
    ----------
    edges:
        ``(parents, children, weights)``: ``E[parents[k], children[k]] = weights[k]``.
    attention:
        ``a``: one value per node of the graph, 0 for unvisited nodes.
    similarity:
        ``s``: one query similarity per node (negative values already at 0).
    candidates:
        The unvisited node ids.
    embedding_weight:
        Weight of the embedding term.

    Returns
    -------
    numpy.ndarray
        ``float64`` score per candidate, in the order of ``candidates``: ``z`` and ``s`` are each
        normalised to sum 1 over the candidates (a zero vector is left at zero).
    """
    parents, children, weights = edges
    z = np.zeros(len(attention), dtype=np.float64)
    np.add.at(z, children, weights * attention[parents])
    ids = np.asarray(candidates, dtype=np.int64)
    zc = _sum_to_one(z[ids])
    sc = _sum_to_one(np.asarray(similarity, dtype=np.float64)[ids])
    return np.asarray(zc + embedding_weight * sc)
