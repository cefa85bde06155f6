"""Save and load trees as a directory: versioned JSON plus ``.npy`` arrays, never pickle.

Layout of a saved directory::

    tree.json        {"format": "hrefine.tree", "format_version": 1, "hrefine_version": ...,
                      "kind": ..., "config": {...}, "tree": Tree.to_dict(), "arrays": {...},
                      "sha256": {...}}
    embeddings.npy   the (n_nodes, dim) float32 matrix, when the tree has one
    <name>.npy       any extra arrays a method saves (e.g. GARLIC's attention edges)

Each array's sha256 is recorded, so a tampered or truncated file is caught on load.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from hrefine.errors import HrefineError, PersistenceError
from hrefine.tree import Tree

__all__ = ["FORMAT", "FORMAT_VERSION", "load_tree", "save_tree"]

FORMAT = "hrefine.tree"
FORMAT_VERSION = 1
_MANIFEST = "tree.json"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def save_tree(
    tree: Tree,
    path: str | os.PathLike[str],
    *,
    kind: str = "tree",
    config: Mapping[str, Any] | None = None,
    arrays: Mapping[str, np.ndarray] | None = None,
) -> Path:
    """Write ``tree`` (and optional extra arrays) into the directory ``path``.

    Parameters
    ----------
    tree:
        The tree or graph to save.
    path:
        Target directory (created; files in it are replaced).
    kind:
        What the tree is (``"html_block_tree"``, ``"raptor"``…), checked again on load.
    config:
        JSON-able constructor arguments of the owning object (never models).
    arrays:
        Extra named arrays, saved as ``<name>.npy``.
    """
    from hrefine import __version__

    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    all_arrays: dict[str, np.ndarray] = dict(arrays or {})
    if tree.embeddings is not None:
        all_arrays["embeddings"] = tree.embeddings
    sums: dict[str, str] = {}
    for name, arr in all_arrays.items():
        if not name.isidentifier():
            msg = f"array name {name!r} must be an identifier"
            raise HrefineError(msg)
        target = out / f"{name}.npy"
        np.save(target, np.asarray(arr), allow_pickle=False)
        sums[name] = _sha256(target)
    manifest = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "hrefine_version": __version__,
        "kind": kind,
        "config": dict(config or {}),
        "tree": tree.to_dict(),
        "arrays": sorted(all_arrays),
        "sha256": sums,
    }
    # Write the manifest last and atomically: a crash leaves the previous save readable.
    fd, tmp = tempfile.mkstemp(dir=out, prefix=".tree-", suffix=".json")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(manifest, fh, ensure_ascii=False)
    os.replace(tmp, out / _MANIFEST)
    return out


def load_tree(
    path: str | os.PathLike[str], *, kind: str | None = None, mmap: bool = False
) -> tuple[Tree, dict[str, Any], dict[str, np.ndarray]]:
    """Load a directory written by :func:`save_tree`.

    Returns
    -------
    tree, config, arrays
        The tree (with embeddings), the saved config and the extra arrays.

    Raises
    ------
    PersistenceError
        The directory is missing, foreign, of a newer format, of another kind, or tampered with.
    """
    src = Path(path)
    manifest_path = src / _MANIFEST
    if not manifest_path.is_file():
        msg = f"{src} holds no {_MANIFEST}; it was not written by hrefine"
        raise PersistenceError(msg)
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        msg = f"{manifest_path} is not valid JSON: {exc}"
        raise PersistenceError(msg) from exc
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        msg = f"{manifest_path} is not an hrefine tree (format={_get(manifest, 'format')!r})"
        raise PersistenceError(msg)
    version = manifest.get("format_version")
    if not isinstance(version, int) or version > FORMAT_VERSION:
        msg = (
            f"{manifest_path} has format version {version!r}; "
            f"this hrefine reads <= {FORMAT_VERSION}"
        )
        raise PersistenceError(msg)
    if kind is not None and manifest.get("kind") != kind:
        msg = f"{src} holds a {manifest.get('kind')!r}, expected a {kind!r}"
        raise PersistenceError(msg)
    arrays: dict[str, np.ndarray] = {}
    sums = manifest.get("sha256", {})
    for name in manifest.get("arrays", []):
        file = src / f"{name}.npy"
        if not file.is_file():
            msg = f"{src} lacks {file.name}, listed in its manifest"
            raise PersistenceError(msg)
        if sums.get(name) != _sha256(file):
            msg = f"{file} does not match the checksum in {_MANIFEST}: it was changed or truncated"
            raise PersistenceError(msg)
        try:
            arrays[name] = np.load(file, allow_pickle=False, mmap_mode="r" if mmap else None)
        except ValueError as exc:
            msg = f"{file} is not a plain .npy array: {exc}"
            raise PersistenceError(msg) from exc
    embeddings = arrays.pop("embeddings", None)
    try:
        tree = Tree.from_dict(manifest["tree"], embeddings=embeddings)
        tree.check_acyclic()
    except (KeyError, HrefineError) as exc:
        msg = f"{manifest_path} holds a malformed tree: {exc}"
        raise PersistenceError(msg) from exc
    return tree, dict(manifest.get("config", {})), arrays


def _get(obj: object, key: str) -> object:
    return obj.get(key) if isinstance(obj, dict) else None
