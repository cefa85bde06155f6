"""Where RAPTOR's UMAP starts: umap's spectral layout, the same on every build.

umap starts its layout from the eigenvectors of the k-NN graph's normalised Laplacian, which it
asks of ARPACK (``scipy.sparse.linalg.eigsh``). On a layer of a dozen nodes, where eleven
eigenvectors of a 12 x 12 matrix are asked for, ARPACK's Krylov space runs out and it draws new
start vectors from a random state of its own, which no seed reaches and every call moves on:
the eigenvectors came back with other signs from one build to the next, and so did the layer's
clusters and the tree's summaries. :func:`spectral_start` computes the same eigenvectors with a
dense solver (ARPACK on layers too big for one, where its space does not run out) and fixes each
vector's sign, so the start depends on the graph alone.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["DENSE_MAX", "canonical_signs", "spectral_start"]

#: Most nodes whose Laplacian is decomposed densely (cubic cost; a RAPTOR layer is clustered
#: in groups far smaller than this unless ``cluster_group_size`` is None on a huge document).
DENSE_MAX = 2000


def canonical_signs(vectors: np.ndarray) -> np.ndarray:
    """``vectors`` with each column's sign chosen so that its largest entry (by absolute value,
    the first of equals) is positive: an eigenvector is only defined up to its sign."""
    rows = np.argmax(np.abs(vectors), axis=0)
    signs = np.sign(vectors[rows, np.arange(vectors.shape[1])])
    signs[signs == 0] = 1.0
    return np.asarray(vectors * signs)


def spectral_start(graph: Any, dim: int) -> np.ndarray | None:
    """The ``(n, dim)`` spectral layout of a connected fuzzy k-NN ``graph`` (a scipy sparse
    matrix, symmetric): the eigenvectors of its normalised Laplacian with the 2nd to
    ``dim + 1``-th smallest eigenvalues, signs fixed (:func:`canonical_signs`). None where
    there is no such layout to take: a graph in several pieces (umap lays those out piece by
    piece), or too few nodes for ``dim`` vectors."""
    import scipy.sparse
    import scipy.sparse.csgraph
    import scipy.sparse.linalg

    n = int(graph.shape[0])
    if dim + 1 >= n or scipy.sparse.csgraph.connected_components(graph)[0] != 1:
        return None
    degree = np.asarray(graph.sum(axis=0), dtype=np.float64).ravel()
    scale = scipy.sparse.diags(1.0 / np.sqrt(degree))
    laplacian = scipy.sparse.identity(n, dtype=np.float64) - scale @ graph @ scale
    if n <= DENSE_MAX:
        dense = laplacian.toarray()
        values, vectors = np.linalg.eigh((dense + dense.T) / 2.0)
    else:  # n well above ARPACK's Lanczos vectors: its space does not run out
        values, vectors = scipy.sparse.linalg.eigsh(
            laplacian,
            dim + 1,
            which="SM",
            ncv=max(2 * dim + 3, int(np.sqrt(n))),
            tol=1e-4,
            v0=np.ones(n),
            maxiter=n * 5,
        )
    order = np.argsort(values, kind="stable")[1 : dim + 1]
    return canonical_signs(np.asarray(vectors[:, order], dtype=np.float64))
