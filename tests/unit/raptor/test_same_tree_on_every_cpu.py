"""The same RAPTOR tree whatever instruction set torch, the BLAS and numba compile for.

UMAP and the Gaussian mixtures turn a vector's last bit into another clustering, so a tree is
the same on two machines only if every vector is and UMAP's numba code rounds the same: before
the embedder computed in float64 and numba was held to AVX2, an AVX512 machine built other trees
than an AVX2 one from the same paper. The tree is built twice, each in a process of its own: as
found, and with torch's kernels, its matrix products, numpy's BLAS, numpy's own loops and numba
held to AVX2 (how another CPU computes, on this one), and the two must be the same. Before UMAP's
layout curve was given (``UMAP_A``/``UMAP_B``), umap fitted it with numpy's ``exp`` and ``power``,
whose AVX512 loops round otherwise than the AVX2 ones, and this paper's tree differed.
"""

from __future__ import annotations

from pathlib import Path

from fresh_process import held_to_avx2, per_cpu

#: (name, environment) of each build: the CPU as found, and held to AVX2.
CPUS: list[tuple[str, dict[str, str]]] = [
    ("as found", {}),
    ("AVX2", held_to_avx2()),
]


def tree_digest(data: Path) -> str:
    """Run in a process of its own: the digest of the default tree over one Qasper paper (each
    node's level, text and children)."""
    import hashlib

    from hrefine.eval.loaders import load_dataset
    from hrefine.raptor import RaptorTree

    document = load_dataset("leval-qasper", data_dir=data)[0].document
    tree = RaptorTree.build([document]).tree
    digest = hashlib.sha256()
    for node in tree:
        digest.update(f"{node.level}|{node.text}|{sorted(node.children)}\n".encode())
    return digest.hexdigest()


def test_the_layout_curve_is_umaps_fit() -> None:
    """The given ``a``/``b`` are what umap fits for its default spread and min_dist (the
    AVX512 and AVX2 fits differ by about 2e-10)."""
    from hrefine.raptor._numba_cache import load_umap
    from hrefine.raptor.cluster import UMAP_A, UMAP_B

    a, b = load_umap().umap_.find_ab_params(1.0, 0.1)
    assert abs(a - UMAP_A) < 1e-8
    assert abs(b - UMAP_B) < 1e-8


def test_the_default_tree_is_the_same_held_to_avx2(shared_data: Path) -> None:
    digests = per_cpu(__file__, "t.tree_digest(Path(sys.argv[2]))", CPUS, str(shared_data))
    assert len(set(digests.values())) == 1, digests
