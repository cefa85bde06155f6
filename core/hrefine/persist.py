"""Save and load trees as a directory: versioned JSON plus ``.npy`` arrays, never pickle.

Layout of a saved directory::

    tree.json                  {"format": "hrefine.tree", "format_version": 3,
                                "hrefine_version": ..., "kind": ..., "config": {...},
                                "tree": Tree.to_dict(), "arrays": [...], "sha256": {...},
                                "content_sha256": ...}
    embeddings-<sha>.npy       the (n_nodes, dim) float32 matrix, when the tree has one
    embedding_mask-<sha>.npy   (n_nodes,) booleans: which rows of it were set
    <name>-<sha>.npy           any extra arrays a method saves (e.g. GARLIC's attention edges)

``<sha>`` is the first 16 hex digits of the file's sha256 (formats 1 and 2 named the files
``<name>.npy``). Each array's sha256 is recorded, and one of the manifest's own content (the
tree's texts, edges, metadata and the config), so a tampered or truncated file is caught on
load; format 2 on always carries that checksum. Whole numbers are bounded
(:data:`hrefine._saved.MAX_SAVED_INT`) on save and on load.

Everything is checked and written to temporary files first, then moved into place, the
manifest last (:func:`hrefine._atomic.replace_all`: a move that fails puts the moved files
back). Because an array's file is named after its content, the new arrays never overwrite the
files the old manifest names: until the manifest's own move (one rename) the folder holds the
previous save whole, and after it the new one. So a save that fails, or a process killed
outright in the middle of one, leaves the previous save readable. The files no manifest names
any more are removed after the manifest is in place (or by the next save, if that removal was
cut short).

A saved folder is untrusted input on load: the manifest's fields are type-checked, array names
must be identifiers, links are not followed, and each ``.npy`` header is checked against the
tree and the file's size before the array is read (see :mod:`hrefine._saved`).

Format 1 (hrefine 0.1) had no mask and no derived orders: it loads with every order explicit
and, when it has embeddings, every row set.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from hrefine._atomic import discard, new_temp, replace_all
from hrefine._saved import EMBEDDINGS as _EMBEDDINGS
from hrefine._saved import MASK as _MASK
from hrefine._saved import (
    MAX_SAVED_INT,
    array_file,
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
FORMAT_VERSION = 3
_MANIFEST = "tree.json"
# What a save killed outright may leave: a format-3 array file, or a temporary file or backup
# of an array or the manifest.
_LEFT_BY_A_SAVE = re.compile(
    r"[^\W\d]\w*-[0-9a-f]{16}\.npy"
    r"|\.(?:tree\.json|[^\W\d]\w*(?:-[0-9a-f]{16})?\.npy)-[0-9a-f]{12}\.(?:tmp|old)"
)


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
        Extra named arrays, saved as ``<name>-<sha>.npy`` (see the module docstring).

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
    previous = _files_named(out)
    temps: dict[Path, Path] = {}  # temporary file -> the file it becomes
    unchanged: set[Path] = set()  # array files already there with the same content
    try:
        sums: dict[str, str] = {}
        for name, arr in to_write.items():
            tmp = new_temp(out / f"{name}.npy")
            temps[tmp] = tmp  # until its checksum names it
            with tmp.open("wb") as fh:
                np.save(fh, arr, allow_pickle=False)
                _sync(fh)
            sums[name] = file_sha256(tmp)
            final = out / array_file(name, sums[name], FORMAT_VERSION)
            if _holds(final, sums[name]):  # unchanged since the last save: the file stays
                del temps[tmp]
                discard([tmp])
                unchanged.add(final)
            else:
                temps[tmp] = final
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
    _remove_unnamed(out, previous, {*temps.values(), *unchanged})
    return out


def _holds(file: Path, sha256: str) -> bool:
    """Whether ``file`` is a plain file (not a link) whose content has checksum ``sha256``."""
    if file.is_symlink() or not file.is_file():
        return False
    try:
        return file_sha256(file) == sha256
    except OSError:
        return False


def _files_named(folder: Path) -> set[Path]:
    """The array files the manifest in ``folder`` names now (none when there is no readable
    one): the old files a save may remove once its own manifest is in place."""
    try:
        data = json.loads((folder / _MANIFEST).read_bytes())
        version, sums = int(data["format_version"]), data["sha256"]
        return {
            folder / array_file(n, sums[n], version) for n in data["arrays"] if n.isidentifier()
        }
    except (OSError, ValueError, TypeError, KeyError, AttributeError, RecursionError):
        return set()  # nothing of a folder whose manifest cannot be read is taken as old


def _remove_unnamed(folder: Path, previous: set[Path], kept: set[Path]) -> None:
    """Remove the files of the previous save that the new manifest does not name, and what a
    save killed outright left: its arrays (``<identifier>-<16 hex digits>.npy``), temporary
    files and backups (:mod:`hrefine._atomic`'s ``.<file>-<12 hex digits>.tmp|.old``).

    Only names hrefine writes are removed, never a user's own files. A file that cannot be
    removed stays: the new save is complete either way. One save at a time per folder: a
    second one running beside it would lose its temporary files.
    """
    stale = set(previous)
    for file in folder.iterdir():
        if _LEFT_BY_A_SAVE.fullmatch(file.name):
            stale.add(file)
    for file in stale - kept:
        if file.parent == folder and not file.is_symlink():
            with contextlib.suppress(OSError):
                file.unlink()


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
    version = manifest.version
    if version >= 2 and _EMBEDDINGS in manifest.arrays and _MASK not in manifest.arrays:
        msg = f"{src} has an {_EMBEDDINGS} array but no {_MASK} array saying which rows are set"
        raise PersistenceError(msg)
    arrays = {
        name: read_array(src, manifest, name, check_mask=version >= 2, mmap=mmap)
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
            msg = f"array name {name!r} must be an identifier (it names its .npy file)"
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
