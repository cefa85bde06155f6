"""Clustering one layer of a RAPTOR tree: UMAP, a Gaussian mixture sized by BIC, soft membership.

:func:`cluster_layer` is a pure function of the layer's embeddings and token counts. As in the
paper, a global pass (UMAP with ``n_neighbors`` about ``sqrt(n)``) finds broad clusters, a local
pass (``n_neighbors`` 10) splits each of them, a node joins every cluster whose probability is
above the threshold, and a cluster whose text would not fit the summariser's context is clustered
again. Where the reference code breaks, this module decides instead:

- Identical vectors (duplicate chunks) are clustered once and their copies follow them, so
  thousands of copies neither crash UMAP nor count as evidence of a dense cluster.
- Too few distinct points for UMAP (at most ``dim + 1``) make one cluster, never a crash.
- A node whose probabilities are all under the threshold joins its most likely cluster (the
  authors' code leaves it out of every cluster, so its text never reaches a summary).
- A cluster that clustering cannot split any further but is still too long is cut into runs of
  consecutive nodes that fit.
- UMAP and the mixtures are seeded, and UMAP's spectral start is computed by
  :mod:`hrefine.raptor.spectral`, not by ARPACK: the same input gives the same clusters, build
  after build (ARPACK draws random vectors of its own when a small layer's Krylov space runs
  out, so a layer of a dozen nodes got other clusters from one build to the next).
- BLAS runs in one thread while clustering: on 10-dimensional data its threads only spin, and
  on a busy 2-core machine they made the mixtures 100x slower.
- BIC is evaluated for k = 1, 2, ... and the search stops once it has risen ``patience`` times in
  a row past its best, instead of fitting all 50 mixtures (same choice wherever BIC has one
  minimum, a fraction of the fits).
- A layer of more than ``group_size`` nodes is cut into ``ceil(n / group_size)`` groups of
  near-equal size (:func:`partition`: balanced halvings along the main direction of the
  embeddings, so similar nodes share a group), and each group is clustered as above on its own.
  Clustering one layer of ``n`` nodes costs more than ``n`` times one node's share (the global
  UMAP's ``sqrt(n)`` neighbours, mixtures searched over more points and more components): in
  groups of bounded size the build grows about linearly. A layer of at most ``group_size`` nodes
  is clustered exactly as without the bound.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hrefine._optional import require
from hrefine.errors import ConfigError
from hrefine.raptor._numba_cache import load_umap
from hrefine.raptor.spectral import spectral_start

__all__ = ["Cluster", "cluster_layer", "partition"]

#: Consecutive k whose BIC is worse than the best before the search stops.
BIC_PATIENCE = 4
#: ``n_neighbors`` of the local pass (the authors' value).
LOCAL_NEIGHBOURS = 10
#: Depth of re-clustering a cluster that is too long, before it is cut into runs.
MAX_DEPTH = 4


@dataclass(frozen=True)
class Cluster:
    """One cluster of a layer."""

    members: tuple[int, ...]
    """Positions of its nodes in the layer (ascending)."""
    weights: tuple[float, ...]
    """Each member's membership probability (1.0 where the node joined by fallback)."""


@dataclass(frozen=True)
class _Settings:
    dim: int
    threshold: float
    max_clusters: int
    max_tokens: int
    seed: int


def cluster_layer(
    vectors: np.ndarray,
    tokens: Sequence[int],
    *,
    dim: int = 10,
    threshold: float = 0.1,
    max_clusters: int = 50,
    max_tokens: int = 3500,
    seed: int = 224,
    group_size: int | None = None,
) -> list[Cluster]:
    """Cluster one layer's nodes (soft: a node may be in several clusters).

    Parameters
    ----------
    vectors:
        ``(n, d)`` embeddings of the layer's nodes, in document order.
    tokens:
        Token count of each node's text (clusters are kept to ``max_tokens`` in total).
    dim:
        UMAP's target dimensions.
    threshold:
        Membership probability above which a node joins a cluster.
    max_clusters:
        Most clusters BIC may choose in one pass.
    max_tokens:
        Most tokens of text in one cluster (a single node longer than this stays alone).
    seed:
        Seed of UMAP and the mixtures.
    group_size:
        Most nodes clustered together: a larger layer is cut into groups of similar nodes
        (:func:`partition`), each clustered on its own. None: the whole layer at once.

    Returns
    -------
    list[Cluster]
        Every node is in at least one cluster; ordered by first member.
    """
    x = np.asarray(vectors, dtype=np.float64)
    n = len(x)
    if n == 0:
        return []
    cost = np.asarray(tokens, dtype=np.int64)
    settings = _Settings(dim, threshold, max_clusters, max_tokens, seed)
    limits = require("threadpoolctl", "raptor")
    # One BLAS thread: the mixtures work on 10-dimensional data, where threads only add
    # overhead, and spinning BLAS threads made each fit up to 100x slower on a busy machine.
    with limits.threadpool_limits(limits=1):
        parts = [np.arange(n)] if group_size is None else partition(x, group_size)
        groups = [g for part in parts for g in _cluster(x, part, cost, settings, depth=0)]
    # Merge duplicates (a node reached through two global clusters' local passes twice).
    seen: dict[tuple[int, ...], Cluster] = {}
    for members, weights in groups:
        order = np.argsort(members, kind="stable")
        key = tuple(int(members[i]) for i in order)
        if key not in seen:
            seen[key] = Cluster(key, tuple(float(weights[i]) for i in order))
    return sorted(seen.values(), key=lambda c: (c.members[0], len(c.members), c.members))


_Group = tuple[np.ndarray, np.ndarray]  # (member positions, weights)


def partition(x: np.ndarray, size: int) -> list[np.ndarray]:
    """The rows of ``x`` cut into ``ceil(n / size)`` groups of similar rows, none over ``size``.

    Each cut halves a group (in proportion, for an odd number of groups to make) at the
    median of its rows' projections on their first principal direction, so the groups differ
    in size by at most one. Deterministic: the direction's sign is fixed, ties go by position.
    Costs ``O(n d^2 log(n / size))``.

    Returns
    -------
    list[np.ndarray]
        Row positions of each group, ascending; one group of every row when ``n <= size``.
    """
    if size < 1:
        msg = f"group size must be at least 1, got {size}"
        raise ConfigError(msg)
    n = len(x)
    return _halve(np.asarray(x, dtype=np.float64), np.arange(n), max(1, -(-n // size)))


def _halve(x: np.ndarray, ids: np.ndarray, parts: int) -> list[np.ndarray]:
    if parts <= 1 or len(ids) <= 1:
        return [ids]
    left_parts = parts // 2
    cut = round(len(ids) * left_parts / parts)
    rows = x[ids] - x[ids].mean(axis=0)
    _, vecs = np.linalg.eigh(rows.T @ rows)
    direction = vecs[:, -1]
    direction = direction * (1.0 if direction[np.argmax(np.abs(direction))] >= 0 else -1.0)
    order = np.lexsort((ids, rows @ direction))
    left, right = np.sort(ids[order[:cut]]), np.sort(ids[order[cut:]])
    return _halve(x, left, left_parts) + _halve(x, right, parts - left_parts)


def _cluster(
    x: np.ndarray, ids: np.ndarray, cost: np.ndarray, s: _Settings, *, depth: int
) -> list[_Group]:
    """Global then local clustering of the nodes ``ids`` (rows of ``x``)."""
    out: list[_Group] = []
    for g_members, g_weights in _soft_clusters(x[ids], s, neighbours=None):
        members = ids[g_members]
        for l_members, l_weights in _soft_clusters(x[members], s, neighbours=LOCAL_NEIGHBOURS):
            out.append((members[l_members], g_weights[l_members] * l_weights))
    return [piece for group in out for piece in _fit(x, group, cost, s, depth=depth)]


def _fit(
    x: np.ndarray, group: _Group, cost: np.ndarray, s: _Settings, *, depth: int
) -> list[_Group]:
    """``group``, clustered again (or cut into runs) while its text is over ``max_tokens``."""
    members, weights = group
    if len(members) <= 1 or int(cost[members].sum()) <= s.max_tokens:
        return [group]
    if depth < MAX_DEPTH:
        parts = _cluster(x, members, cost, s, depth=depth + 1)
        if len(parts) > 1:
            return parts
    return _runs(members, weights, cost, s.max_tokens)


def _runs(members: np.ndarray, weights: np.ndarray, cost: np.ndarray, limit: int) -> list[_Group]:
    """Cut ``members`` (in document order) into runs of consecutive nodes within ``limit``."""
    order = np.argsort(members, kind="stable")
    runs: list[_Group] = []
    start, used = 0, 0
    for pos, i in enumerate(order):
        c = int(cost[members[i]])
        if pos > start and used + c > limit:
            runs.append((members[order[start:pos]], weights[order[start:pos]]))
            start, used = pos, 0
        used += c
    runs.append((members[order[start:]], weights[order[start:]]))
    return runs


def _soft_clusters(x: np.ndarray, s: _Settings, *, neighbours: int | None) -> list[_Group]:
    """One UMAP + GMM pass over the rows of ``x``: soft clusters of row positions.

    Identical rows are clustered once and share their representative's memberships.
    """
    n = len(x)
    unique, inverse = np.unique(np.round(x, 6), axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    m = len(unique)
    if m <= s.dim + 1:
        return [(np.arange(n), np.ones(n))]
    reduced = _reduce(unique, s, neighbours=neighbours)
    probs = _mixture_probabilities(reduced, s)
    member = probs > s.threshold
    # A node under the threshold everywhere joins its most likely cluster, not none.
    lonely = np.asarray(~member.any(axis=1), dtype=bool)
    member[lonely, probs[lonely].argmax(axis=1)] = True
    groups: list[_Group] = []
    for k in range(probs.shape[1]):
        rows = np.flatnonzero(member[inverse, k])
        if len(rows):
            weights = np.where(lonely[inverse[rows]], 1.0, probs[inverse[rows], k])
            groups.append((rows, weights))
    return groups


#: The layout curve umap fits for its defaults (``find_ab_params(spread=1.0, min_dist=0.1)``),
#: given so that it is not fitted on each machine: the fit runs on numpy's ``exp`` and
#: ``power``, whose AVX512 and AVX2 loops differ in the last bit, and 500 epochs of layout
#: turned the ~2e-10 that made in ``a`` and ``b`` into other clusters. These are the AVX512
#: fit's values (the trees this project recorded); a test checks them against umap's fit.
UMAP_A = 1.5769434602697652
UMAP_B = 0.8950608778515733


def _reduce(x: np.ndarray, s: _Settings, *, neighbours: int | None) -> np.ndarray:
    """UMAP of ``x`` (more than ``dim + 1`` distinct rows) to ``dim`` dimensions, seeded."""
    umap = load_umap()
    m = len(x)
    n_neighbors = int((m - 1) ** 0.5) if neighbours is None else neighbours
    n_neighbors = max(2, min(n_neighbors, m - 1))
    components = min(s.dim, m - 2)
    with warnings.catch_warnings():
        # A seeded UMAP runs in one thread and says so.
        warnings.simplefilter("ignore")
        # umap's own spectral start asks ARPACK, whose random restarts no seed reaches
        # (hrefine.raptor.spectral): the same layout, computed so that it is the same every
        # time, and scaled with a little seeded noise as umap scales its own. A graph in
        # pieces starts from the PCA of the points (its signs fixed too).
        rng = np.random.RandomState(s.seed)
        graph = umap.umap_.fuzzy_simplicial_set(x, n_neighbors, rng, "cosine")[0]
        start = spectral_start(graph, components)
        init: Any = "pca" if start is None else umap.umap_.noisy_scale_coords(start, rng)
        reducer = umap.UMAP(
            n_neighbors=n_neighbors,
            n_components=components,
            metric="cosine",
            random_state=s.seed,
            init=init,
            a=UMAP_A,
            b=UMAP_B,
        )
        return np.asarray(reducer.fit_transform(x), dtype=np.float64)


def _mixture_probabilities(x: np.ndarray, s: _Settings) -> np.ndarray:
    """Membership probabilities ``(n, k)`` of the Gaussian mixture whose k has the lowest BIC."""
    mixture = require("sklearn.mixture", "raptor")
    m = len(x)
    best_bic, best_model, worse = np.inf, None, 0
    for k in range(1, min(s.max_clusters, m) + 1):
        model = mixture.GaussianMixture(n_components=k, random_state=s.seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # convergence warnings on small, tight clusters
            model.fit(x)
        bic = float(model.bic(x))
        if bic < best_bic:
            best_bic, best_model, worse = bic, model, 0
        else:
            worse += 1
            if worse >= BIC_PATIENCE:
                break
    assert best_model is not None  # k = 1 always fits
    return np.asarray(best_model.predict_proba(x), dtype=np.float64)
