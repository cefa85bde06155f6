"""The instruction set numba compiles UMAP for: AVX2 and FMA on every x86-64 CPU that has them.

UMAP's layout optimiser and its neighbour searches are numba code compiled with fast-math, so
LLVM may reorder their sums to suit the vector width. Compiled for an AVX512 CPU they round
otherwise than for an AVX2 one, and the same vectors made other RAPTOR trees on the two
machines (``tests/unit/raptor/test_cluster_groups.py``'s layer of 90 points: 18 of its 21
clusters changed). :func:`hold_to_avx2` has numba compile for the x86-64-v3 feature set (AVX2,
FMA, BMI...) on any CPU that has it, as it does natively on an AVX2 CPU, so an AVX512 machine
builds the trees an AVX2 one does.

It works through numba's own settings, ``NUMBA_CPU_NAME`` and ``NUMBA_CPU_FEATURES``, which
numba reads when it is first imported. So it runs before hrefine imports anything that imports
numba: umap (:mod:`hrefine.raptor._numba_cache`) and bm25s, whose stopword list the BM25 scorer
reads (:mod:`hrefine.models.lexical`; a BM25 score before the first RAPTOR build used to import
numba unheld). The settings are set only when numba has not been imported yet
in the process, neither is set already (the user's choice wins), the CPU is x86-64 and it has
every feature of the set. Elsewhere (an ARM CPU, a CPU without AVX2 or FMA, numba imported
first) numba compiles for the CPU as it is, and a tree may differ from an AVX2 machine's.
The cost: numba code of the process runs without AVX512 (UMAP's share of a RAPTOR build is
small). ``HREFINE_NUMBA_AVX2=0`` turns it off.
"""

from __future__ import annotations

import logging
import os
import platform
import sys

__all__ = ["AVX2_FEATURES", "ENV_SWITCH", "hold_to_avx2"]

logger = logging.getLogger(__name__)

#: Set to 0 / off / false / no to let numba compile for the CPU as it is.
ENV_SWITCH = "HREFINE_NUMBA_AVX2"
#: The x86-64-v3 features numba compiles for, and the AVX512 ones it must not use.
_HAVE = [
    "64bit",
    "avx",
    "avx2",
    "bmi",
    "bmi2",
    "cmov",
    "cx16",
    "f16c",
    "fma",
    "fxsr",
    "lzcnt",
    "mmx",
    "movbe",
    "popcnt",
    "sahf",
    "sse",
    "sse2",
    "sse3",
    "sse4.1",
    "sse4.2",
    "ssse3",
    "xsave",
]
_WITHOUT = [
    "avx512f",
    "avx512bw",
    "avx512dq",
    "avx512vl",
    "avx512cd",
    "avx512vnni",
    "avx512bf16",
    "avx512vbmi",
]
AVX2_FEATURES = ",".join([*(f"+{f}" for f in _HAVE), *(f"-{f}" for f in _WITHOUT)])


def hold_to_avx2() -> bool:
    """Have numba compile for AVX2 and FMA (see the module's docstring); returns whether the
    settings are now numba's for this process."""
    if os.environ.get("NUMBA_CPU_NAME") == "haswell" and (
        os.environ.get("NUMBA_CPU_FEATURES") == AVX2_FEATURES
    ):
        return True
    if os.environ.get(ENV_SWITCH, "").strip().lower() in {"0", "off", "false", "no"}:
        return False
    if "NUMBA_CPU_NAME" in os.environ or "NUMBA_CPU_FEATURES" in os.environ:
        return False  # the user's own choice
    if platform.machine().lower() not in {"x86_64", "amd64"}:
        return False
    if "numba" in sys.modules:
        logger.info("numba was imported before hrefine: UMAP compiles for this CPU as it is")
        return False
    try:
        import llvmlite.binding as llvm

        host = llvm.get_host_cpu_features()
    except (ImportError, RuntimeError):  # pragma: no cover - llvmlite comes with numba
        return False
    if not all(host.get(feature, False) for feature in _HAVE):
        return False
    os.environ["NUMBA_CPU_NAME"] = "haswell"
    os.environ["NUMBA_CPU_FEATURES"] = AVX2_FEATURES
    return True
