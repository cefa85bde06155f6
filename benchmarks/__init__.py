"""Benchmark scripts: ``python -m benchmarks.run --quick`` runs the suite (see run.py)."""
