"""Reading a saved tree's files as untrusted input (see :func:`hrefine.persist.load_tree`).

A saved folder may come from anywhere, so nothing in it is believed before it is checked: the
manifest's every field has the type :meth:`~hrefine.tree.Tree.to_dict` writes, every whole
number in it is within :data:`MAX_SAVED_INT`, a format-2 manifest carries its content checksum,
array names are identifiers and checksums hex digests (so an array's file,
:func:`array_file`, stays in the folder), no file is a symbolic
link, and a ``.npy`` header's shape and dtype are checked against the tree and the file's size
before a byte of the array is allocated. Each problem is a
:class:`~hrefine.errors.PersistenceError` that names the file and what is wrong with it.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal, cast

import numpy as np

from hrefine.errors import PersistenceError

__all__ = [
    "CONTENT_FIELDS",
    "MAX_SAVED_INT",
    "Manifest",
    "array_file",
    "content_digest",
    "file_sha256",
    "first_unsaveable_int",
    "is_count",
    "read_array",
    "read_manifest",
]

#: The manifest fields :func:`content_digest` covers: everything but the format header and the
#: digest itself (the arrays have their own sha256 each).
CONTENT_FIELDS = ("kind", "config", "tree", "arrays", "sha256")

#: The largest whole number (either sign) a saved file may hold: 2**53 - 1, the range every JSON
#: reader keeps exact (RFC 7493) and far past any count hrefine saves. A forged ``2**64`` would
#: pass a type check and then overflow the 64-bit arrays it feeds (token costs, node ids).
MAX_SAVED_INT = 2**53 - 1
# Digits of MAX_SAVED_INT: a longer literal is refused before int() reads it (Python refuses
# literals over 4,300 digits with a bare ValueError).
_MAX_DIGITS = len(str(MAX_SAVED_INT))
# Hex digits of an array's checksum in its format-3 file name (64 bits: no collision in practice).
_NAMED_DIGITS = 16
# Names the tree's own arrays are saved under.
EMBEDDINGS = "embeddings"
MASK = "embedding_mask"
# Optional node fields and the types to_dict writes them as (bool is no whole number here).
_NODE_FIELDS: dict[str, tuple[tuple[type, ...], str]] = {
    "kind": ((str,), "a string"),
    "level": ((int,), "a whole number"),
    "order": ((int, type(None)), "a whole number or null"),
    "order_derived": ((bool,), "true or false"),
    "metadata": ((dict,), "an object"),
}


@dataclass(frozen=True)
class Manifest:
    """A checked manifest: every field :func:`~hrefine.persist.load_tree` reads, typed."""

    path: Path
    version: int
    kind: object
    config: dict[str, Any]
    tree: dict[str, Any]
    arrays: list[str]
    sha256: dict[str, str]

    def file_of(self, name: str) -> str:
        """The file name array ``name`` is saved under in this manifest's format."""
        return array_file(name, self.sha256[name], self.version)

    @property
    def n_nodes(self) -> int:
        """Nodes in the saved tree (the rows its embeddings must have)."""
        return len(self.tree["nodes"])


def array_file(name: str, sha256: str, version: int) -> str:
    """The file name of array ``name`` with checksum ``sha256`` in format ``version``.

    Formats 1 and 2 name it ``<name>.npy``; format 3 adds the first 16 hex digits of its
    checksum (``embeddings-0123456789abcdef.npy``), so a save writes new files beside the old
    ones and the manifest alone switches between them: a process killed during a save leaves
    the previous save whole (an identifier has no ``-``, so the names cannot clash).
    """
    return f"{name}.npy" if version < 3 else f"{name}-{sha256[:_NAMED_DIGITS]}.npy"


def is_count(value: object) -> bool:
    """Whether ``value`` is a whole number from 0 to :data:`MAX_SAVED_INT` (not a boolean): a
    token count or an index read from storage."""
    return type(value) is int and 0 <= value <= MAX_SAVED_INT


def first_unsaveable_int(value: object) -> int | None:
    """The first whole number in ``value`` (nested dicts and lists) beyond
    :data:`MAX_SAVED_INT` either way, or None: such a number is refused on save, as on load."""
    stack, seen = [value], set()
    while stack:
        item = stack.pop()
        if isinstance(item, (dict, list, tuple)):
            if id(item) in seen:  # a cycle, which json.dumps refuses on its own
                continue
            seen.add(id(item))
            stack.extend(item.values() if isinstance(item, dict) else item)
        elif isinstance(item, int) and not isinstance(item, bool) and abs(item) > MAX_SAVED_INT:
            return item
    return None


def _bounded_int(path: Path) -> Callable[[str], int]:
    """A ``parse_int`` hook for :func:`json.loads` refusing numbers beyond MAX_SAVED_INT."""

    def parse(literal: str) -> int:
        value = int(literal) if len(literal.lstrip("-")) <= _MAX_DIGITS else None
        if value is None or abs(value) > MAX_SAVED_INT:
            shown = literal if len(literal) <= 40 else f"{literal[:20]}...({len(literal)} digits)"
            msg = (
                f"{path} holds the whole number {shown}, beyond the {MAX_SAVED_INT} "
                "a saved file may hold; it was not written by hrefine"
            )
            raise PersistenceError(msg)
        return value

    return parse


def _fail(where: Path, problem: str) -> PersistenceError:
    return PersistenceError(f"{where} {problem}")


def _open_plain(file: Path) -> IO[bytes]:
    """``file`` opened for reading, refused when it is a link or not a regular file."""
    if file.is_symlink():
        raise _fail(file, "is a symbolic link; a saved tree's files are read only as themselves")
    try:
        # O_NOFOLLOW: a link swapped in after the check above is refused too. O_NONBLOCK: a
        # named pipe does not hang the open (a regular file ignores the flag).
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        fd = os.open(file, flags)
    except OSError as exc:
        msg = f"{file} cannot be read: {exc.strerror or exc}"
        raise PersistenceError(msg) from exc
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise _fail(file, "is not a regular file")
    return os.fdopen(fd, "rb")


def content_digest(manifest: dict[str, Any]) -> str:
    """SHA-256 of the manifest's content fields as canonical JSON (sorted keys, ASCII).

    JSON numbers and strings read back to the same values, so the digest of a loaded manifest
    equals the one computed at save time unless a field was edited.
    """
    content = {key: manifest.get(key) for key in CONTENT_FIELDS}
    canonical = json.dumps(content, sort_keys=True, ensure_ascii=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("ascii")).hexdigest()


def read_manifest(src: Path, name: str, newest: int, fmt: str) -> Manifest:
    """Read and check the manifest ``src/name`` (format ``fmt``, versions 1 to ``newest``).

    Raises
    ------
    PersistenceError
        The file is missing, a link, not JSON, nested too deeply, foreign, of another version,
        or a field has the wrong type.
    """
    path = src / name
    if not path.is_symlink() and not path.exists():
        msg = f"{src} holds no {name}; it was not written by hrefine"
        raise PersistenceError(msg)
    with _open_plain(path) as fh:
        raw = fh.read()
    try:
        data = json.loads(raw.decode("utf-8"), parse_int=_bounded_int(path))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        msg = f"{path} is not valid JSON: {exc}"
        raise PersistenceError(msg) from exc
    except RecursionError as exc:
        raise _fail(path, "is nested too deeply to be a saved tree") from exc
    if not isinstance(data, dict) or data.get("format") != fmt:
        found = data.get("format") if isinstance(data, dict) else type(data).__name__
        raise _fail(path, f"is not an hrefine tree (format={found!r})")
    version = data.get("format_version")
    if type(version) is not int or not 1 <= version <= newest:
        msg = (
            f"{path} has format version {version!r}; "
            f"this hrefine reads 1 to {newest} (a newer hrefine wrote it?)"
        )
        raise PersistenceError(msg)
    recorded = data.get("content_sha256")
    if recorded is None and version >= 2:
        # Format 2 always carries one: a manifest without it had it deleted to hide an edit.
        msg = (
            f"{path} has no content checksum ('content_sha256'), which every format-{version} "
            "manifest carries; it was edited after it was saved: build and save it again"
        )
        raise PersistenceError(msg)
    if recorded is not None and recorded != content_digest(data):
        raise _fail(path, "was edited after it was saved (its content checksum does not match)")
    config = data.get("config", {})
    if not isinstance(config, dict):
        raise _fail(path, f"holds a config of type {type(config).__name__}; expected an object")
    tree = _check_tree(path, data.get("tree"))
    arrays, sums = _array_names(path, data.get("arrays", []), data.get("sha256", {}))
    return Manifest(path, version, data.get("kind"), config, tree, arrays, sums)


def _check_tree(path: Path, tree: object) -> dict[str, Any]:
    """Check that ``tree`` has the shape :meth:`~hrefine.tree.Tree.to_dict` writes."""

    def bad(what: str) -> PersistenceError:
        return _fail(path, f"holds a malformed tree: {what}")

    if not isinstance(tree, dict):
        raise bad(f"'tree' is {_kind_of(tree)}, expected an object with nodes and edges")
    if not isinstance(tree.get("metadata", {}), dict):
        raise bad(f"its metadata is {_kind_of(tree['metadata'])}, expected an object")
    nodes, edges = tree.get("nodes"), tree.get("edges")
    if not isinstance(nodes, list):
        raise bad(f"'nodes' is {_kind_of(nodes)}, expected a list")
    if not isinstance(edges, list):
        raise bad(f"'edges' is {_kind_of(edges)}, expected a list")
    for i, node in enumerate(nodes):
        if not isinstance(node, dict):
            raise bad(f"node {i} is {_kind_of(node)}, expected an object")
        if not isinstance(node.get("text"), str):
            raise bad(f"node {i}'s text is {_kind_of(node.get('text'))}, expected a string")
        for field, (types, wanted) in _NODE_FIELDS.items():
            value = node.get(field)
            if field in node and not _is(value, types):
                raise bad(f"node {i}'s {field} is {_kind_of(value)}, expected {wanted}")
    for i, edge in enumerate(edges):
        if (
            not isinstance(edge, list)
            or len(edge) != 3
            or not all(type(end) is int for end in edge[:2])
            or isinstance(edge[2], bool)
            or not isinstance(edge[2], (int, float))
        ):
            raise bad(f"edge {i} is {edge!r:.80}, expected [parent id, child id, weight]")
    return tree


def _is(value: object, types: tuple[type, ...]) -> bool:
    """Whether ``value`` is one of ``types``, JSON's way: a boolean is not a number."""
    return bool in types if isinstance(value, bool) else isinstance(value, types)


def _array_names(path: Path, names: object, sums: object) -> tuple[list[str], dict[str, str]]:
    """The manifest's array names (identifiers, each once) and their checksums."""
    if not isinstance(names, list):
        raise _fail(path, f"lists its arrays as {_kind_of(names)}; expected a list of names")
    if not isinstance(sums, dict):
        raise _fail(path, f"holds checksums as {_kind_of(sums)}; expected an object")
    for name in names:
        # An identifier has no '/', '\\', '.' or ':', so <name>.npy is a file of the folder.
        if not isinstance(name, str) or not name.isidentifier():
            msg = f"{path} lists an array named {name!r:.80}; array names are identifiers"
            raise PersistenceError(msg)
        digest = sums.get(name)
        if not isinstance(digest, str):
            raise _fail(path, f"has no sha256 for its array {name!r}")
        # Format 3 names the file after it: only hex digits keep that name in the folder.
        if len(digest) != 64 or digest.strip("0123456789abcdef"):
            raise _fail(
                path, f"holds the sha256 {digest!r:.80} for {name!r}; expected 64 hex digits"
            )
    if len(set(names)) != len(names):
        raise _fail(path, "lists an array twice")
    return list(names), {n: sums[n] for n in names}


def _kind_of(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    kinds = {dict: "an object", list: "a list", str: "a string", int: "a number"}
    return kinds.get(type(value), "a number" if isinstance(value, float) else type(value).__name__)


def read_array(
    src: Path, manifest: Manifest, name: str, *, check_mask: bool, mmap: bool
) -> np.ndarray:
    """Load array ``name`` of ``manifest`` from ``src`` (its file: :meth:`Manifest.file_of`)
    after checking its checksum and its header.

    The tree's own arrays must fit its nodes: ``embeddings`` as ``(n_nodes, dim)``
    real numbers, ``embedding_mask`` (when ``check_mask``: format 2 on) as ``(n_nodes,)``
    booleans. Every array's header must declare exactly the bytes the file holds, so nothing
    larger than the file is ever allocated.

    Raises
    ------
    PersistenceError
        The file is missing, a link, changed since it was saved, not a plain ``.npy`` array,
        of a shape or dtype that does not fit, or embeddings with a NaN or infinite value.
    """
    if not name.isidentifier():  # read_manifest refuses these; checked here again
        msg = f"array name {name!r:.80} in {src} is not an identifier"
        raise PersistenceError(msg)
    sha256, n_nodes = manifest.sha256[name], manifest.n_nodes
    file = src / manifest.file_of(name)
    if not file.is_symlink() and not file.exists():
        msg = f"{src} lacks {file.name}, listed in its manifest"
        raise PersistenceError(msg)
    if not file.is_symlink() and file.resolve().parent != src.resolve():
        raise _fail(file, f"lies outside {src}; a saved tree's files stay in its folder")
    with _open_plain(file) as fh:
        if _sha256(fh) != sha256:
            msg = f"{file} does not match the checksum in its manifest: it was changed or truncated"
            raise PersistenceError(msg)
        shape, fortran, dtype = _header(fh, file)
        data_start = fh.tell()
        _check_fit(file, name, shape, dtype, n_nodes, check_mask=check_mask)
        needed = math.prod(shape) * dtype.itemsize
        held = os.fstat(fh.fileno()).st_size - data_start
        if needed != held:
            msg = (
                f"{file} declares a {dtype} array of shape {shape} ({needed} bytes) but holds "
                f"{held} bytes of data; it is not a plain .npy array as hrefine saves them"
            )
            raise PersistenceError(msg)
        order: Literal["C", "F"] = "F" if fortran else "C"
        if mmap and needed:
            # Mapped from the file already checked, not opened again by name.
            mapped = np.memmap(
                cast(Any, fh), dtype=dtype, mode="r", offset=data_start, shape=shape, order=order
            )
            _check_finite(file, name, mapped)
            return mapped
        fh.seek(0)
        try:
            arr = np.lib.format.read_array(fh, allow_pickle=False)
        except ValueError as exc:
            msg = f"{file} is not a plain .npy array: {exc}"
            raise PersistenceError(msg) from exc
    _check_finite(file, name, arr)
    return arr


def _check_finite(file: Path, name: str, arr: np.ndarray) -> None:
    """The embeddings must be finite: a NaN or infinite row scores NaN against every query."""
    if name != EMBEDDINGS:
        return
    finite = np.isfinite(arr).all(axis=1) if arr.size else None
    if finite is not None and not finite.all():
        row = int(np.flatnonzero(~finite)[0])
        raise _fail(file, f"holds NaN or infinite values (row {row}); embeddings must be finite")


def _sha256(fh: IO[bytes]) -> str:
    digest = hashlib.sha256()
    for chunk in iter(lambda: fh.read(1 << 20), b""):
        digest.update(chunk)
    fh.seek(0)
    return digest.hexdigest()


def file_sha256(path: Path) -> str:
    """The hex SHA-256 of a file's bytes, read a megabyte at a time."""
    with path.open("rb") as fh:
        return _sha256(fh)


def _header(fh: IO[bytes], file: Path) -> tuple[tuple[int, ...], bool, np.dtype[Any]]:
    """The shape, Fortran order and dtype a ``.npy`` header declares (numpy's bounded reader)."""
    fmt = np.lib.format
    try:
        version = fmt.read_magic(fh)
        if version == (1, 0):
            shape, fortran, dtype = fmt.read_array_header_1_0(fh)
        elif version == (2, 0):
            shape, fortran, dtype = fmt.read_array_header_2_0(fh)
        else:
            msg = f"{file} is .npy format {version}; hrefine saves and reads 1.0 and 2.0"
            raise PersistenceError(msg)
    except ValueError as exc:
        msg = f"{file} is not a plain .npy array: {exc}"
        raise PersistenceError(msg) from exc
    if dtype.hasobject:
        msg = f"{file} is not a plain .npy array: it holds Python objects, which need pickle"
        raise PersistenceError(msg)
    return tuple(shape), bool(fortran), dtype


def _check_fit(
    file: Path,
    name: str,
    shape: tuple[int, ...],
    dtype: np.dtype[Any],
    n: int,
    *,
    check_mask: bool,
) -> None:
    """The tree's own arrays must fit its nodes (checked on the header, before loading)."""
    if name == EMBEDDINGS and (len(shape) != 2 or shape[0] != n):
        msg = (
            f"{file}: embeddings of shape {shape} do not fit {n} nodes; "
            f"expected ({n}, dim), one row per node"
        )
        raise PersistenceError(msg)
    if name == EMBEDDINGS and dtype.kind not in "biuf":
        msg = f"{file}: embeddings of dtype {dtype}; expected real numbers (float32)"
        raise PersistenceError(msg)
    if name == MASK and check_mask and (shape != (n,) or dtype != np.bool_):
        msg = (
            f"{file}: embedding mask of shape {shape} and dtype {dtype} does not fit {n} "
            f"nodes; expected ({n},) booleans"
        )
        raise PersistenceError(msg)
