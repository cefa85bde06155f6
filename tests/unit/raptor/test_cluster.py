"""Clustering one layer: safe on tiny and duplicate inputs, seeded (and the same from one build to
the next), every node placed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hrefine.raptor import cluster_layer


def _points(n: int, dim: int = 32, seed: int = 0, groups: int = 3) -> np.ndarray:
    """``n`` unit vectors around ``groups`` well-separated centres."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(groups, dim)) * 5
    x = centres[np.arange(n) % groups] + rng.normal(size=(n, dim))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.mark.parametrize("n", [1, 2, 3, 11])
def test_tiny_layers_make_one_cluster_without_umap(n: int) -> None:
    # The authors' code crashes UMAP on clusters this small (their issue #30).
    clusters = cluster_layer(_points(n), [10] * n)
    assert [c.members for c in clusters] == [tuple(range(n))]


def test_empty_layer_has_no_clusters() -> None:
    assert cluster_layer(np.zeros((0, 8)), []) == []


def test_every_node_is_in_a_cluster_and_groups_are_found() -> None:
    x = _points(60)
    clusters = cluster_layer(x, [20] * 60)
    placed = {m for c in clusters for m in c.members}
    assert placed == set(range(60))
    assert 2 <= len(clusters) < 60
    for c in clusters:
        assert len(c.members) == len(c.weights)
        assert all(0 < w <= 1 for w in c.weights)
    # Points of different centres are not mixed (the local pass may split a centre's points).
    for c in clusters:
        groups = [m % 3 for m in c.members]
        assert max(groups.count(g) for g in range(3)) >= 0.8 * len(groups)


def test_same_seed_same_clusters_other_seed_may_differ() -> None:
    x = _points(80, seed=1, groups=4)
    first = cluster_layer(x, [20] * 80, seed=7)
    again = cluster_layer(x, [20] * 80, seed=7)
    assert first == again


def test_thousands_of_duplicates_cluster_quickly_into_runs_that_fit() -> None:
    x = np.tile(_points(1, seed=3), (3000, 1))
    clusters = cluster_layer(x, [100] * 3000, max_tokens=3500)
    # One distinct point: one cluster, cut into runs of consecutive nodes within the limit.
    assert sum(len(c.members) for c in clusters) == 3000
    assert all(len(c.members) * 100 <= 3500 for c in clusters)
    assert [c.members[0] for c in clusters] == sorted(c.members[0] for c in clusters)


def test_duplicates_among_distinct_points_follow_their_twin() -> None:
    base = _points(40, seed=4)
    x = np.vstack([base, base[:5], base[:5]])  # nodes 40..49 copy nodes 0..4
    clusters = cluster_layer(x, [10] * 50)
    for twin, original in zip(range(40, 50), list(range(5)) * 2, strict=True):
        of_twin = {i for i, c in enumerate(clusters) if twin in c.members}
        of_original = {i for i, c in enumerate(clusters) if original in c.members}
        assert of_twin == of_original


def test_a_cluster_over_the_token_limit_is_split() -> None:
    x = _points(60, groups=2)
    clusters = cluster_layer(x, [100] * 60, max_tokens=1000)
    assert all(len(c.members) * 100 <= 1000 for c in clusters)
    assert {m for c in clusters for m in c.members} == set(range(60))


def test_a_single_node_longer_than_the_limit_stays_alone() -> None:
    x = _points(30)
    tokens = [50] * 30
    tokens[4] = 5000
    clusters = cluster_layer(x, tokens, max_tokens=800)
    assert any(c.members == (4,) for c in clusters)


def _leaf_vectors(shared_data: Path, embedder: Any) -> np.ndarray:
    """The leaf embeddings of a HotpotQA question's ten paragraphs (a layer of 12 nodes: one
    where ARPACK's Krylov space runs out before 11 eigenvectors are found)."""
    from hrefine.eval.loaders import load_dataset
    from hrefine.raptor import RaptorTree

    items = {it.id: it for it in load_dataset("hotpotqa", data_dir=shared_data)}
    tree = RaptorTree.build([items["5ab7da6f55429928e1fe3928"].document], embedder=embedder)
    return np.asarray(tree.tree.embeddings[tree.tree.at_level(0)], dtype=np.float64)


def test_umap_start_does_not_depend_on_arpack(
    shared_data: Path, embedder: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # umap's default spectral start calls ARPACK (eigsh), whose own random restarts no seed
    # reaches: the clusters of one layer changed from one build to the next.
    import scipy.sparse.linalg

    def no_arpack(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("eigsh called")

    x = _leaf_vectors(shared_data, embedder)
    monkeypatch.setattr(scipy.sparse.linalg, "eigsh", no_arpack)
    assert len(cluster_layer(x, [80] * len(x))) >= 2


def test_a_small_real_layer_clusters_the_same_after_arpack_ran(
    shared_data: Path, embedder: Any
) -> None:
    import scipy.sparse
    import scipy.sparse.linalg

    x = _leaf_vectors(shared_data, embedder)
    first = cluster_layer(x, [80] * len(x))
    rng = np.random.default_rng(0)
    for _ in range(6):  # other ARPACK calls advance its hidden state between builds
        m = rng.normal(size=(12, 12))
        scipy.sparse.linalg.eigsh(scipy.sparse.csr_matrix(m + m.T), 11, ncv=12)
        assert cluster_layer(x, [80] * len(x)) == first
