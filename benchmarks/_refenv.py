"""Build (once, cached) isolated virtual environments for reference packages.

Reference implementations that we compare against are never our dependencies: they are installed
into their own venv under ``benchmarks/.venvs/<name>`` (gitignored) and driven through a runner
script that executes inside that venv and talks to the benchmark over files/stdin/stdout.

A venv is considered ready when its marker file ``.hrefine-ready.json`` exists and records the
same requirement list; otherwise it is (re)built. A failed build leaves ``.hrefine-failed.json``
with the reason, so the benchmark can report *why* the reference columns are missing instead of
faking them.

Usage::

    python -m benchmarks._refenv htmlrag        # build the htmlrag 0.1.1 venv
    python -m benchmarks._refenv raptor         # build the llama-index-packs-raptor 0.4.2 venv
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import venv
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["REFENVS", "RefEnv", "RefEnvError", "ensure_refenv", "refenv_versions", "venvs_dir"]

BENCH_DIR = Path(__file__).resolve().parent
READY = ".hrefine-ready.json"
FAILED = ".hrefine-failed.json"


class RefEnvError(RuntimeError):
    """The reference venv could not be built (the message says why)."""


@dataclass(frozen=True)
class RefEnv:
    """A reference venv recipe.

    Attributes
    ----------
    name:
        Folder name under ``benchmarks/.venvs``.
    steps:
        ``pip install`` argument lists, run in order (e.g. torch first so that the local CPU wheel
        is taken rather than a CUDA build pulled by a transitive requirement).
    import_check:
        Python statement run in the venv after the install; it must succeed.
    """

    name: str
    steps: tuple[tuple[str, ...], ...]
    import_check: str
    env: dict[str, str] = field(default_factory=dict)

    @property
    def fingerprint(self) -> list[list[str]]:
        return [list(s) for s in self.steps]


REFENVS: dict[str, RefEnv] = {
    "htmlrag": RefEnv(
        name="htmlrag-0.1.1",
        steps=(
            # The local CPU wheel; htmlrag requires torch and would otherwise resolve a CUDA build.
            ("torch==2.13.0",),
            ("htmlrag==0.1.1", "sentence-transformers", "transformers"),
        ),
        import_check=(
            "import htmlrag, sentence_transformers, transformers, torch; "
            "from htmlrag import clean_html, build_block_tree, EmbedHTMLPruner"
        ),
    ),
    "raptor": RefEnv(
        name="llama-index-packs-raptor-0.4.2",
        steps=(
            # The local CPU wheel first, as for htmlrag: sentence-transformers needs torch.
            ("torch==2.13.0",),
            (
                "llama-index-packs-raptor==0.4.2",
                # The newest core the pack imports with: 0.14.21 removed core.llama_pack.
                "llama-index-core==0.14.20",
                "umap-learn",
                "scikit-learn",
                "sentence-transformers",
                "transformers",
            ),
        ),
        import_check=(
            "import umap, sklearn, sentence_transformers, torch; "
            "from llama_index.packs.raptor import RaptorPack, RaptorRetriever; "
            "from llama_index.core.llms import CustomLLM; "
            "from llama_index.core.embeddings import BaseEmbedding"
        ),
    ),
}


def venvs_dir() -> Path:
    """``benchmarks/.venvs`` (created on demand)."""
    path = BENCH_DIR / ".venvs"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _python(root: Path) -> Path:
    return root / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def _run(cmd: list[str], log: Path, timeout: float) -> None:
    with log.open("a", encoding="utf-8") as fh:
        fh.write(f"$ {' '.join(cmd)}\n")
        fh.flush()
        proc = subprocess.run(
            cmd, stdout=fh, stderr=subprocess.STDOUT, timeout=timeout, check=False
        )
    if proc.returncode != 0:
        tail = log.read_text(encoding="utf-8", errors="replace").splitlines()[-15:]
        msg = f"command failed ({proc.returncode}): {' '.join(cmd)}\n" + "\n".join(tail)
        raise RefEnvError(msg)


def ensure_refenv(key: str, *, rebuild: bool = False, timeout: float = 1800.0) -> Path:
    """Return the Python interpreter of a ready reference venv, building it if needed.

    Parameters
    ----------
    key:
        A key of :data:`REFENVS` (``"htmlrag"``).
    rebuild:
        Delete the marker files and install again.
    timeout:
        Seconds allowed for each pip step.

    Returns
    -------
    Path
        The venv's ``python``.

    Raises
    ------
    RefEnvError
        The venv could not be built; the reason is also written to ``.hrefine-failed.json``.
    """
    spec = REFENVS[key]
    root = venvs_dir() / spec.name
    ready, failed = root / READY, root / FAILED
    py = _python(root)
    if not rebuild and ready.exists() and py.exists():
        try:
            if json.loads(ready.read_text())["steps"] == spec.fingerprint:
                return py
        except (ValueError, KeyError):
            pass
    if not rebuild and failed.exists():
        info = json.loads(failed.read_text())
        if info.get("steps") == spec.fingerprint:
            msg = f"reference venv {spec.name} failed before: {info.get('error', '?')}"
            raise RefEnvError(msg)
    for marker in (ready, failed):
        marker.unlink(missing_ok=True)
    root.mkdir(parents=True, exist_ok=True)
    log = root / "install.log"
    started = time.time()
    try:
        if not py.exists():
            venv.EnvBuilder(with_pip=True, clear=False).create(root)
        for step in spec.steps:
            _run([str(py), "-m", "pip", "install", *step], log, timeout)
        _run([str(py), "-c", spec.import_check], log, timeout)
    except (RefEnvError, subprocess.TimeoutExpired, OSError) as exc:
        failed.write_text(
            json.dumps({"steps": spec.fingerprint, "error": str(exc)[-4000:]}, indent=1)
        )
        if isinstance(exc, RefEnvError):
            raise
        raise RefEnvError(str(exc)) from exc
    frozen = subprocess.run(
        [str(py), "-m", "pip", "freeze"], capture_output=True, text=True, check=False
    ).stdout.split()
    ready.write_text(
        json.dumps(
            {
                "steps": spec.fingerprint,
                "built_s": round(time.time() - started, 1),
                "python": sys.version.split()[0],
                "freeze": frozen,
            },
            indent=1,
        )
    )
    return py


def refenv_versions(key: str) -> dict[str, str]:
    """``{package: version}`` of a ready reference venv (empty when not built)."""
    ready = venvs_dir() / REFENVS[key].name / READY
    if not ready.exists():
        return {}
    out = {}
    for line in json.loads(ready.read_text()).get("freeze", []):
        if "==" in line:
            name, ver = line.split("==", 1)
            out[name.lower()] = ver
    return out


if __name__ == "__main__":
    names = [a for a in sys.argv[1:] if not a.startswith("--")] or list(REFENVS)
    for name in names:
        print(name, ensure_refenv(name, rebuild="--rebuild" in sys.argv))
