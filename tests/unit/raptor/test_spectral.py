"""RAPTOR's UMAP start (hrefine.raptor.spectral): umap's spectral layout, the same every time."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse
from hrefine.raptor.spectral import canonical_signs, spectral_start


def _ring(n: int, extra: int = 0) -> scipy.sparse.csr_matrix:
    """A connected symmetric graph: a ring of ``n`` nodes with weights that differ, plus
    ``extra`` nodes in a ring of their own (a second piece)."""
    rows, cols, vals = [], [], []
    for start, size in ((0, n), (n, extra)):
        for i in range(size):
            j = (i + 1) % size
            w = 0.5 + 0.5 * ((i * 7) % 5) / 5
            rows += [start + i, start + j]
            cols += [start + j, start + i]
            vals += [w, w]
    return scipy.sparse.csr_matrix((vals, (rows, cols)), shape=(n + extra, n + extra))


def test_signs_are_fixed_by_each_vectors_largest_entry() -> None:
    v = np.array([[0.1, -0.9], [-0.8, 0.2], [0.3, 0.0]])
    fixed = canonical_signs(v)
    assert np.array_equal(fixed, np.array([[-0.1, 0.9], [0.8, -0.2], [-0.3, -0.0]]))
    assert np.array_equal(canonical_signs(-v), fixed)  # either sign in, one sign out


def test_the_start_is_the_laplacians_eigenvectors_after_the_first() -> None:
    graph = _ring(12)
    start = spectral_start(graph, 4)
    assert start is not None and start.shape == (12, 4)
    degree = np.asarray(graph.sum(axis=0)).ravel()
    d = np.diag(1 / np.sqrt(degree))
    laplacian = np.eye(12) - d @ graph.toarray() @ d
    values = np.sort(np.linalg.eigvalsh(laplacian))
    for k in range(4):  # L v = lambda v for the 2nd to 5th smallest eigenvalues
        v = start[:, k]
        assert np.allclose(laplacian @ v, values[k + 1] * v, atol=1e-8)


def test_the_same_start_every_time_even_after_arpack_ran() -> None:
    import scipy.sparse.linalg

    graph = _ring(12)
    first = spectral_start(graph, 10)
    m = np.random.default_rng(0).normal(size=(12, 12))
    for _ in range(4):
        scipy.sparse.linalg.eigsh(scipy.sparse.csr_matrix(m + m.T), 11, ncv=12)
        again = spectral_start(graph, 10)
        assert again is not None and first is not None and np.array_equal(again, first)


@pytest.mark.parametrize(("graph", "dim"), [(_ring(8, extra=5), 3), (_ring(5), 4)])
def test_no_start_for_a_graph_in_pieces_or_too_small(graph: object, dim: int) -> None:
    assert spectral_start(graph, dim) is None


def test_arpack_path_of_a_big_layer_gives_the_dense_start(monkeypatch: pytest.MonkeyPatch) -> None:
    # Above DENSE_MAX nodes the eigenvectors come from ARPACK (its space does not run out
    # there); they must be the dense solver's, signs fixed the same way.
    import hrefine.raptor.spectral as spectral

    # Three dense blocks of 20 nodes, weakly joined: the two eigenvalues after 0 stand apart
    # from the rest, as a layer's clusters make them, so the vectors are well defined.
    rng = np.random.default_rng(1)
    w = rng.uniform(0.0, 0.02, size=(60, 60))
    for b in range(3):
        w[b * 20 : (b + 1) * 20, b * 20 : (b + 1) * 20] = rng.uniform(0.5, 1.0, size=(20, 20))
    w = (w + w.T) / 2
    np.fill_diagonal(w, 0.0)
    graph = scipy.sparse.csr_matrix(w)
    dense = spectral_start(graph, 2)
    monkeypatch.setattr(spectral, "DENSE_MAX", 10)
    sparse = spectral_start(graph, 2)
    assert dense is not None and sparse is not None
    assert np.allclose(dense, sparse, atol=1e-3)
