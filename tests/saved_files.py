"""Where a saved tree keeps its arrays, and how a forger replaces one (for the persistence
tests): format 3 names each array's file after its checksum (:func:`hrefine._saved.array_file`),
so a test finds the file through the manifest instead of writing its name out."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np
from hrefine._saved import array_file, content_digest


def array_path(folder: Path, name: str) -> Path:
    """The file that holds array ``name`` of the save in ``folder``."""
    manifest = json.loads((folder / "tree.json").read_text(encoding="utf-8"))
    return folder / array_file(name, manifest["sha256"][name], manifest["format_version"])


def forge_array(folder: Path, name: str, content: bytes | np.ndarray) -> Path:
    """Replace array ``name`` with ``content`` (bytes as they are, an array as ``.npy``) as a
    forger would: the file under the name its checksum gives, the manifest's checksums made
    anew, so the checks behind them are the ones under test. Returns the new file."""
    old = array_path(folder, name)
    tmp = folder / f".forged-{name}"
    if isinstance(content, bytes):
        tmp.write_bytes(content)
    else:
        with tmp.open("wb") as fh:
            np.save(fh, content, allow_pickle=content.dtype.hasobject)
    digest = hashlib.sha256(tmp.read_bytes()).hexdigest()
    manifest = json.loads((folder / "tree.json").read_text(encoding="utf-8"))
    manifest["sha256"][name] = digest
    if "content_sha256" in manifest:
        manifest["content_sha256"] = content_digest(manifest)
    new = folder / array_file(name, digest, manifest["format_version"])
    old.unlink(missing_ok=True)
    os.replace(tmp, new)
    (folder / "tree.json").write_text(json.dumps(manifest), encoding="utf-8")
    return new
