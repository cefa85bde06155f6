"""Save and load trees as a directory: versioned JSON plus ``.npy`` arrays, never pickle.

Layout of a saved directory::

    tree.json           {"format": "hrefine.tree", "format_version": 2, "hrefine_version": ...,
                         "kind": ..., "config": {...}, "tree": Tree.to_dict(), "arrays": [...],
                         "sha256": {...}, "content_sha256": ...}
    embeddings.npy      the (n_nodes, dim) float32 matrix, when the tree has one
    embedding_mask.npy  (n_nodes,) booleans: which rows of it were set
    <name>.npy          any extra arrays a method saves (e.g. GARLIC's attention edges)

Each array's sha256 is recorded, and one of the manifest's own content (the tree's texts,
edges, metadata and the config), so a tampered or truncated file is caught on load; format 2
always carries that checksum. Whole numbers are bounded (:data:`hrefine._saved.MAX_SAVED_INT`)
on save and on load. Everything
is checked and written to temporary files first; they replace the old files only once all were
written, the manifest last, as one change (:func:`hrefine._atomic.replace_all`: a move that
fails puts the moved files back), so a failed save leaves the previous one readable.

A saved folder is untrusted input on load: the manifest's fields are type-checked, array names
must be identifiers, links are not followed, and each ``.npy`` header is checked against the
tree and the file's size before the array is read (see :mod:`hrefine._saved`).

Format 1 (hrefine 0.1) had no mask and no derived orders: it loads with every order explicit
and, when it has embeddings, every row set.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from hrefine._atomic import discard, new_temp, replace_all
from hrefine._saved import EMBEDDINGS as _EMBEDDINGS
from hrefine._saved import MASK as _MASK
from hrefine._saved import (
    MAX_SAVED_INT,
    content_digest,
    file_sha256,
    first_unsaveable_int,
    read_array,
    read_manifest,
)
from hrefine.errors import ConfigError, HrefineError, InputTypeError, PersistenceError
from hrefine.tree import Tree

__all__ = ["FORMAT", "FORMAT_VERSION", "load_tree", "save_tree"]

FORMAT = "hrefine.tree"
FORMAT_VERSION = 2
_MANIFEST = "tree.json"


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
        The tree's embeddings do not fit its nodes, an array holds Python objects, the
        metadata or config holds a value JSON cannot store or a whole number beyond
        :data:`~hrefine._saved.MAX_SAVED_INT`, or the folder cannot be made
        (a file stands there). Nothing is written then.
    InputTypeError
        ``path`` is not a str or path.
    """
    from hrefine import __version__

    out = _folder(path)
    to_write = _arrays_to_save(tree, arrays)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # a file in the way, no permission, a read-only disk
        msg = f"cannot save the tree to {out}: {exc.strerror or exc}"
        raise PersistenceError(msg) from exc
    temps: dict[Path, Path] = {}  # temporary file -> the file it becomes
    try:
        sums: dict[str, str] = {}
        for name, arr in to_write.items():
            final = out / f"{name}.npy"
            tmp = new_temp(final)
            temps[tmp] = final
            with tmp.open("wb") as fh:
                np.save(fh, arr, allow_pickle=False)
                _sync(fh)
            sums[name] = file_sha256(tmp)
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
        too_large = first_unsaveable_int([manifest["config"], manifest["tree"]])
        if too_large is not None:
            msg = (
                f"cannot save the tree to {out}: its metadata or the config holds the whole "
                f"number {too_large}, beyond the {MAX_SAVED_INT} a saved file may hold (and "
                "load) exactly; store it as a string"
            )
            raise PersistenceError(msg)
        manifest["content_sha256"] = content_digest(manifest)
        data = _manifest_bytes(manifest)
        final = out / _MANIFEST
        tmp = new_temp(final)
        temps[tmp] = final
        with tmp.open("wb") as fh:
            fh.write(data)
            _sync(fh)
    except PersistenceError:
        discard(temps)
        raise
    except (TypeError, ValueError, RecursionError) as exc:
        discard(temps)
        msg = (
            f"cannot save the tree to {out}: its metadata or the config holds a value JSON "
            f"cannot store ({exc}); keep them to strings, numbers, booleans, lists and dicts"
        )
        raise PersistenceError(msg) from exc
    except BaseException:
        discard(temps)
        raise
    # Every file is complete: move them into place, the manifest (inserted last) last.
    replace_all(temps)
    return out


def _folder(path: object) -> Path:
    """``path`` as a Path; anything but a str or path-like is an :class:`InputTypeError`."""
    if not isinstance(path, (str, os.PathLike)):
        msg = f"the folder must be a str or a path, got {type(path).__name__}"
        raise InputTypeError(msg)
    return Path(path)


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
        with (a format-2 manifest without its content checksum counts as such), or
        malformed: a field of the wrong type, a whole number beyond
        :data:`~hrefine._saved.MAX_SAVED_INT`, an array name that is not an
        identifier, a symbolic link, a ``.npy`` header that does not fit the tree or the
        file's size (checked before the array is read), arrays that do not fit its tree.
    """
    src = _folder(path)
    manifest = read_manifest(src, _MANIFEST, FORMAT_VERSION, FORMAT)
    if kind is not None and manifest.kind != kind:
        msg = f"{src} holds a {manifest.kind!r}, expected a {kind!r}"
        raise PersistenceError(msg)
    version, n_nodes = manifest.version, manifest.n_nodes
    if version >= 2 and _EMBEDDINGS in manifest.arrays and _MASK not in manifest.arrays:
        msg = f"{src} has {_EMBEDDINGS}.npy but no {_MASK}.npy saying which rows are set"
        raise PersistenceError(msg)
    arrays = {
        name: read_array(
            src, name, manifest.sha256[name], n_nodes, check_mask=version >= 2, mmap=mmap
        )
        for name in manifest.arrays
    }
    embeddings = arrays.pop(_EMBEDDINGS, None)
    # Format 1 had no mask (every row was set) and did not reserve the name.
    mask = arrays.pop(_MASK, None) if version >= 2 else None
    try:
        tree = Tree.from_dict(manifest.tree, embeddings=embeddings, embedding_mask=mask)
        tree.check_acyclic()
    except (KeyError, HrefineError) as exc:
        msg = f"{manifest.path} holds a malformed tree: {exc}"
        raise PersistenceError(msg) from exc
    return tree, dict(manifest.config), arrays


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


def _manifest_bytes(manifest: Mapping[str, Any]) -> bytes:
    """The manifest as UTF-8 JSON; text with lone surrogates is escaped (``\\udXXX``), which
    UTF-8 cannot hold but JSON reads back as the same string."""
    try:
        return json.dumps(manifest, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(manifest, ensure_ascii=True).encode("ascii")


def _sync(fh: Any) -> None:
    """Flush ``fh`` to disk, so a crash after the files are moved cannot leave them empty."""
    fh.flush()
    os.fsync(fh.fileno())
