"""A process killed outright in the middle of a save leaves a folder that loads: the previous
save until the new manifest is in place, the new one after (format 3 names each array's file
after its checksum, so the new arrays never overwrite the files the old manifest names)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hrefine import PersistenceError, Tree
from hrefine.persist import load_tree, save_tree
from saved_files import array_path


def _tree(scale: float) -> Tree:
    t = Tree(metadata={"scale": scale})
    root = t.add_node("root")
    t.add_node("a", parents=[root])
    t.add_node("b", parents=[root])
    t.set_embeddings([0, 1, 2], np.arange(12, dtype=np.float32).reshape(3, 4) * scale)
    return t


# Saves the tree of scale 2 over the folder's save, and dies (os._exit: no exception, no
# clean-up, as kill -9) at the Nth call of os.replace or os.unlink (argv[3]) the save makes.
_KILLED_SAVE = """
import os, sys
import numpy as np
import hrefine._atomic as atomic
from hrefine import Tree
from hrefine.persist import save_tree

t = Tree(metadata={"scale": 2.0})
root = t.add_node("root")
t.add_node("a", parents=[root])
t.add_node("b", parents=[root])
t.set_embeddings([0, 1, 2], np.arange(12, dtype=np.float32).reshape(3, 4) * 2.0)
real, calls, die_at = getattr(os, sys.argv[3]), [0], int(sys.argv[2])

def dies(*args):
    calls[0] += 1
    if calls[0] == die_at:
        os._exit(9)
    real(*args)

setattr(os, sys.argv[3], dies)
save_tree(t, sys.argv[1], arrays={"extra": np.arange(4) * 2})
print("finished")
"""


def _killed_at(folder: Path, call: int, function: str = "replace") -> None:
    """Run the save of :data:`_KILLED_SAVE` over ``folder`` and kill it at the ``call``-th
    call of ``os.<function>``."""
    done = subprocess.run(
        [sys.executable, "-c", _KILLED_SAVE, str(folder), str(call), function],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 9, done.stderr[-2000:]


@pytest.mark.parametrize("rename", [1, 2, 3])
def test_a_save_killed_before_its_manifest_moves_leaves_the_previous_one(
    tmp_path: Path, rename: int
) -> None:
    # Was: the new embeddings.npy beside the old manifest (same file name), so a save killed
    # between two moves left a folder whose checksums refused it: the previous save was lost.
    save_tree(_tree(1.0), tmp_path, arrays={"extra": np.arange(4)})
    # Renames 1-2 move the two arrays that changed (the mask did not: its file stays), 3 the
    # manifest: killed at 3, the manifest never moved.
    _killed_at(tmp_path, rename)
    back, _, arrays = load_tree(tmp_path)
    assert back.metadata["scale"] == 1.0 and arrays["extra"].tolist() == [0, 1, 2, 3]
    assert back.embeddings is not None
    np.testing.assert_array_equal(back.embeddings, _tree(1.0).embeddings)


@pytest.mark.parametrize("removal", [1, 2, 3, 4])
def test_a_save_killed_while_removing_files_is_one_whole_save(tmp_path: Path, removal: int) -> None:
    save_tree(_tree(1.0), tmp_path, arrays={"extra": np.arange(4)})
    # Removals: the unchanged mask's temporary file (before the manifest moves), the old
    # manifest's backup, then the two old arrays (after it moved).
    _killed_at(tmp_path, removal, "unlink")
    back, _, arrays = load_tree(tmp_path)
    scale = 1.0 if removal == 1 else 2.0
    assert back.metadata["scale"] == scale
    assert arrays["extra"].tolist() == (np.arange(4) * scale).tolist()
    if removal > 1:  # an old array the new manifest does not name is still there
        assert len(list(tmp_path.glob("*.npy"))) > 3


def test_files_no_manifest_names_are_removed_by_the_next_save(tmp_path: Path) -> None:
    save_tree(_tree(1.0), tmp_path, arrays={"extra": np.arange(4)})
    _killed_at(tmp_path, 3)  # two new arrays moved in, then killed: orphans beside the save
    assert len(list(tmp_path.glob("*.npy"))) == 5
    save_tree(_tree(3.0), tmp_path)
    names = sorted(p.name for p in tmp_path.iterdir())
    manifest = json.loads((tmp_path / "tree.json").read_text(encoding="utf-8"))
    assert names == sorted(
        ["tree.json", *(array_path(tmp_path, n).name for n in manifest["arrays"])]
    )
    assert load_tree(tmp_path)[0].metadata["scale"] == 3.0


def test_saving_again_keeps_only_the_files_of_the_last_save(tmp_path: Path) -> None:
    for scale in (1.0, 2.0, 1.0, 4.0):
        save_tree(_tree(scale), tmp_path, arrays={"extra": np.arange(3) * scale})
    assert len(list(tmp_path.glob("*.npy"))) == 3
    back, _, arrays = load_tree(tmp_path)
    assert back.metadata["scale"] == 4.0 and arrays["extra"].tolist() == [0, 4, 8]


def test_an_unchanged_array_keeps_its_file(tmp_path: Path) -> None:
    save_tree(_tree(1.0), tmp_path, arrays={"extra": np.arange(4)})
    mask = array_path(tmp_path, "embedding_mask")
    save_tree(_tree(2.0), tmp_path, arrays={"extra": np.arange(4)})
    # The same mask and extra array: the same names, and the new manifest names them.
    assert array_path(tmp_path, "embedding_mask") == mask and mask.exists()
    assert load_tree(tmp_path)[0].metadata["scale"] == 2.0


def test_a_format_2_folder_saved_over_loses_its_old_files(tmp_path: Path) -> None:
    save_tree(_tree(1.0), tmp_path, arrays={"extra": np.arange(4)})
    manifest = json.loads((tmp_path / "tree.json").read_text(encoding="utf-8"))
    for name in manifest["arrays"]:  # as hrefine 0.2 (format 2) left the folder
        os.replace(array_path(tmp_path, name), tmp_path / f"{name}.npy")
    manifest["format_version"] = 2
    from hrefine._saved import content_digest

    manifest["content_sha256"] = content_digest(manifest)
    (tmp_path / "tree.json").write_text(json.dumps(manifest), encoding="utf-8")
    assert load_tree(tmp_path)[0].metadata["scale"] == 1.0  # format 2 still loads
    (tmp_path / "notes.npy").write_bytes(b"a user's own file")
    save_tree(_tree(2.0), tmp_path)
    left = sorted(p.name for p in tmp_path.glob("*.npy"))
    assert "extra.npy" not in left and "embeddings.npy" not in left
    assert "notes.npy" in left  # never named by a manifest: not hrefine's to remove
    assert load_tree(tmp_path)[0].metadata["scale"] == 2.0


@pytest.mark.parametrize("digest", ["../../etc/passwd", "AB" * 32, "0" * 63, "g" * 64])
def test_a_checksum_that_is_not_hex_is_refused(tmp_path: Path, digest: str) -> None:
    # Format 3 builds a file name from it: only 64 hex digits keep that name in the folder.
    save_tree(_tree(1.0), tmp_path, arrays={"extra": np.arange(4)})
    manifest = json.loads((tmp_path / "tree.json").read_text(encoding="utf-8"))
    manifest["sha256"]["extra"] = digest
    from hrefine._saved import content_digest

    manifest["content_sha256"] = content_digest(manifest)
    (tmp_path / "tree.json").write_text(json.dumps(manifest), encoding="utf-8")
    with pytest.raises(PersistenceError, match="64 hex digits"):
        load_tree(tmp_path)
