"""The same RAPTOR tree on every x86-64 CPU with AVX2 and FMA (Haswell on, every AMD Zen).

UMAP and the Gaussian mixtures turn a vector's last bit into another clustering, so a tree is
the same on two machines only if every vector is: before the embedder computed in float64, an
AVX512 machine built other trees than an AVX2 one from the same paper. Each build runs in a
process of its own with torch's kernels, its matrix products, numpy's BLAS and numba's code held
to an instruction set (how another CPU computes, on this one), and the tree's digest must be the
one recorded on an AMD CPU with AVX512-BF16. (Numba compiles UMAP for a CPU without FMA with
other roundings: such a CPU can build another tree; docs/models.md says so.)
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

#: (name, environment) of each build: the CPU as found, and held to AVX2.
CPUS: list[tuple[str, dict[str, str]]] = [
    ("as found", {}),
    (
        "AVX2",
        {
            "ATEN_CPU_CAPABILITY": "avx2",
            "ONEDNN_MAX_CPU_ISA": "AVX2",
            "MKL_ENABLE_INSTRUCTIONS": "AVX2",
            "OPENBLAS_CORETYPE": "Haswell",
            "NUMBA_CPU_NAME": "haswell",
        },
    ),
]

#: The digest of :func:`tree_digest`, recorded on an AMD CPU with AVX512-BF16 as found and held
#: to AVX2 (the same).
RECORDED = "6d6d3bfdd6314d2dbbd6964c17b57b0a70e5300b68219b47461ac35cad1aba3f"


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


@pytest.mark.parametrize(("name", "forced"), CPUS, ids=[c[0] for c in CPUS])
def test_the_default_tree_is_the_one_recorded(
    shared_data: Path, name: str, forced: dict[str, str]
) -> None:
    env = {**os.environ, **forced}
    env.pop("HREFINE_EMBED_PRECISION", None)
    code = (
        "import sys; from pathlib import Path; sys.path.insert(0, sys.argv[1]); "
        "import test_same_tree_on_every_cpu as t; print(t.tree_digest(Path(sys.argv[2])))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(Path(__file__).parent), str(shared_data)],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == RECORDED, name
