"""Benchmark scripts: ``python -m benchmarks.run --quick`` runs the suite (see run.py)."""

try:  # the reference packages' own environments run scripts of this folder without hrefine
    from hrefine._numba_target import hold_to_avx2
except ImportError:  # pragma: no cover - only in a reference package's environment
    pass
else:
    # What the first UMAP of a process does, done before a script imports numba itself (bm25s
    # and the reference packages do): RAPTOR's trees are then those of every x86-64 CPU.
    hold_to_avx2()
