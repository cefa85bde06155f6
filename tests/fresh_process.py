"""Run Python in a process of its own: for what a library reads once per process (instruction
set caps, offline variables, thread counts) and for what a fresh import must show."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path


def run_python(
    code: str, *args: str, env: Mapping[str, str] | None = None, timeout: float = 900
) -> str:
    """The last line ``code`` printed, run by this interpreter with ``args`` as
    ``sys.argv[1:]`` and ``env`` (default: this process's); a failed run fails the test with
    the tail of its stderr."""
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        env=dict(os.environ if env is None else env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1]


def call_in_process(
    test_file: str, call: str, *args: str, env: Mapping[str, str] | None = None
) -> str:
    """What ``call`` (an expression on the test module ``t`` of ``test_file``, which may read
    ``sys.argv[2:]``, that is ``args``) prints in a process of its own."""
    here = Path(test_file)
    tests = str(Path(__file__).parent)  # the test module imports helpers from here too
    code = (
        f"import sys; from pathlib import Path; sys.path[:0] = [sys.argv[1], {tests!r}]; "
        f"import {here.stem} as t; print({call})"
    )
    return run_python(code, str(here.parent), *args, env=env)


def held_to_avx2() -> dict[str, str]:
    """The environment that holds torch's own kernels, its matrix products (oneDNN, MKL),
    numpy's BLAS, numpy's own loops and numba's code to AVX2 in a new process: how an AVX2 CPU
    computes, on this one (a setting above what the CPU has falls back to its best)."""
    from hrefine._numba_target import AVX2_FEATURES

    env = {
        "ATEN_CPU_CAPABILITY": "avx2",
        "ONEDNN_MAX_CPU_ISA": "AVX2",
        "MKL_ENABLE_INSTRUCTIONS": "AVX2",
        "OPENBLAS_CORETYPE": "Haswell",
        "NUMBA_CPU_NAME": "haswell",
        "NUMBA_CPU_FEATURES": AVX2_FEATURES,
    }
    wider = numpy_avx512_targets()
    if wider:
        env["NPY_DISABLE_CPU_FEATURES"] = " ".join(wider)
    return env


def numpy_avx512_targets() -> list[str]:
    """numpy's dispatch targets above AVX2 that this CPU runs (``X86_V4``, ``AVX512_*``): the
    names ``NPY_DISABLE_CPU_FEATURES`` takes to keep numpy's own loops to AVX2. numpy only
    accepts names of features the CPU has, hence the list is asked of it."""
    from numpy._core import _multiarray_umath as umath

    return [
        name
        for name in umath.__cpu_dispatch__
        if (name == "X86_V4" or name.startswith("AVX512")) and umath.__cpu_features__.get(name)
    ]


def per_cpu(
    test_file: str, call: str, cpus: list[tuple[str, dict[str, str]]], *args: str
) -> dict[str, str]:
    """What ``call`` (see :func:`call_in_process`) prints under each ``(name, environment)`` of
    ``cpus``, each in a process of its own at the default embedder precision."""
    out = {}
    for name, forced in cpus:
        env = {**os.environ, **forced}
        env.pop("HREFINE_EMBED_PRECISION", None)
        out[name] = call_in_process(test_file, call, *args, env=env)
    return out
