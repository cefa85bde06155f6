"""Save and load trees as a directory: versioned JSON plus ``.npy`` arrays, never pickle.

Layout of a saved directory::

    tree.json           {"format": "hrefine.tree", "format_version": 2, "hrefine_version": ...,
                         "kind": ..., "config": {...}, "tree": Tree.to_dict(), "arrays": [...],
                         "sha256": {...}}
    embeddings.npy      the (n_nodes, dim) float32 matrix, when the tree has one
    embedding_mask.npy  (n_nodes,) booleans: which rows of it were set
    <name>.npy          any extra arrays a method saves (e.g. GARLIC's attention edges)

Each array's sha256 is recorded, so a tampered or truncated file is caught on load. Everything
is checked and written to temporary files first; they replace the old files only once all were
written, the manifest last, so a failed save leaves the previous one readable.

Format 1 (hrefine 0.1) had no mask and no derived orders: it loads with every order explicit
and, when it has embeddings, every row set.
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

from hrefine.errors import ConfigError, HrefineError, PersistenceError
from hrefine.tree import Tree

__all__ = ["FORMAT", "FORMAT_VERSION", "load_tree", "save_tree"]

FORMAT = "hrefine.tree"
FORMAT_VERSION = 2
_MANIFEST = "tree.json"
_EMBEDDINGS = "embeddings"
_MASK = "embedding_mask"


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

    Raises
    ------
    ConfigError
        An array name is not an identifier or is one of the reserved ``embeddings`` and
        ``embedding_mask``.
    PersistenceError
        The tree's embeddings do not fit its nodes, an array holds Python objects, or the
        metadata or config holds a value JSON cannot store. Nothing is written then.
    """
    from hrefine import __version__

    to_write = _arrays_to_save(tree, arrays)
    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    temps: dict[Path, Path] = {}  # temporary file -> the file it becomes
    try:
        sums: dict[str, str] = {}
        for name, arr in to_write.items():
            tmp = _temp(out, name, ".npy")
            temps[tmp] = out / f"{name}.npy"
            with tmp.open("wb") as fh:
                np.save(fh, arr, allow_pickle=False)
            sums[name] = _sha256(tmp)
        manifest = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "hrefine_version": __version__,
            "kind": kind,
            "config": dict(config or {}),
            "tree": tree.to_dict(),
            "arrays": sorted(to_write),
            "sha256": sums,
        }
        tmp = _temp(out, "tree", ".json")
        temps[tmp] = out / _MANIFEST
        with tmp.open("w", encoding="utf-8") as fh:
            json.dump(manifest, fh, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        _discard(temps)
        msg = (
            f"cannot save the tree to {out}: its metadata or the config holds a value JSON "
            f"cannot store ({exc}); keep them to strings, numbers, booleans, lists and dicts"
        )
        raise PersistenceError(msg) from exc
    except BaseException:
        _discard(temps)
        raise
    # Every file is complete: move them into place, the manifest (inserted last) last.
    for tmp, final in temps.items():
        os.replace(tmp, final)
    return out


def load_tree(
    path: str | os.PathLike[str], *, kind: str | None = None, mmap: bool = False
) -> tuple[Tree, dict[str, Any], dict[str, np.ndarray]]:
    """Load a directory written by :func:`save_tree` (format 1 or 2).

    Returns
    -------
    tree, config, arrays
        The tree (with embeddings and their mask), the saved config and the extra arrays.

    Raises
    ------
    PersistenceError
        The directory is missing, foreign, of a newer format, of another kind, tampered
        with, or holds arrays that do not fit its tree.
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
    if type(version) is not int or not 1 <= version <= FORMAT_VERSION:
        msg = (
            f"{manifest_path} has format version {version!r}; "
            f"this hrefine reads 1 to {FORMAT_VERSION} (a newer hrefine wrote it?)"
        )
        raise PersistenceError(msg)
    if kind is not None and manifest.get("kind") != kind:
        msg = f"{src} holds a {manifest.get('kind')!r}, expected a {kind!r}"
        raise PersistenceError(msg)
    arrays = _load_arrays(src, manifest, mmap=mmap)
    embeddings = arrays.pop(_EMBEDDINGS, None)
    # Format 1 had no mask (every row was set) and did not reserve the name.
    mask = arrays.pop(_MASK, None) if version >= 2 else None
    if version >= 2 and embeddings is not None and mask is None:
        msg = f"{src} has {_EMBEDDINGS}.npy but no {_MASK}.npy saying which rows are set"
        raise PersistenceError(msg)
    try:
        tree = Tree.from_dict(manifest["tree"], embeddings=embeddings, embedding_mask=mask)
        tree.check_acyclic()
    except (KeyError, HrefineError) as exc:
        msg = f"{manifest_path} holds a malformed tree: {exc}"
        raise PersistenceError(msg) from exc
    return tree, dict(manifest.get("config", {})), arrays


def _arrays_to_save(tree: Tree, arrays: Mapping[str, np.ndarray] | None) -> dict[str, np.ndarray]:
    """The arrays to write, checked: names, no Python objects, embeddings that fit the tree."""
    out: dict[str, np.ndarray] = {}
    for name, arr in (arrays or {}).items():
        if not isinstance(name, str) or not name.isidentifier():
            msg = f"array name {name!r} must be an identifier (it names {name}.npy)"
            raise ConfigError(msg)
        if name in (_EMBEDDINGS, _MASK):
            msg = f"array name {name!r} is reserved for the tree's own embeddings; rename it"
            raise ConfigError(msg)
        out[name] = _numeric(name, np.asarray(arr))
    embeddings = tree.embeddings
    if embeddings is None:
        return out
    mask = tree.embedding_mask
    n = len(tree)
    if embeddings.ndim != 2 or embeddings.shape[0] != n:
        msg = (
            f"cannot save: the tree has {n} nodes but embeddings of shape {embeddings.shape}; "
            f"expected ({n}, dim), one row per node"
        )
        raise PersistenceError(msg)
    if mask.shape != (n,) or mask.dtype != np.bool_:
        msg = (
            f"cannot save: the tree has {n} nodes but an embedding mask of shape {mask.shape} "
            f"and dtype {mask.dtype}; expected ({n},) booleans"
        )
        raise PersistenceError(msg)
    out[_EMBEDDINGS] = _numeric(_EMBEDDINGS, embeddings)
    out[_MASK] = mask
    return out


def _numeric(name: str, arr: np.ndarray) -> np.ndarray:
    if arr.dtype.hasobject:
        msg = (
            f"array {name!r} holds Python objects, which .npy stores only with pickle; "
            f"convert it to a numeric or string array"
        )
        raise PersistenceError(msg)
    return arr


def _load_arrays(src: Path, manifest: dict[str, Any], *, mmap: bool) -> dict[str, np.ndarray]:
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
    return arrays


def _temp(folder: Path, stem: str, suffix: str) -> Path:
    fd, name = tempfile.mkstemp(dir=folder, prefix=f".{stem}-", suffix=suffix)
    os.close(fd)
    # mkstemp makes the file private (0600); a saved tree is as readable as any other file.
    os.chmod(name, 0o644)
    return Path(name)


def _discard(temps: Mapping[Path, Path]) -> None:
    for tmp in temps:
        tmp.unlink(missing_ok=True)


def _get(obj: object, key: str) -> object:
    return obj.get(key) if isinstance(obj, dict) else None
