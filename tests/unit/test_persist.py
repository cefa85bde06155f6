from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hrefine import PersistenceError, Tree
from hrefine.persist import load_tree, save_tree


def _tree() -> Tree:
    t = Tree(metadata={"source": "unit", "lang": "日本語"})
    r = t.add_node("root ✓", kind="summary", level=1)
    a = t.add_node("a", parents=[r], weights=[0.3])
    t.add_node("b", parents=[r, a], weights=[0.7, 0.1], metadata={"tag_path": ["html", "p"]})
    t.set_embeddings([0, 1, 2], np.arange(12, dtype=np.float32).reshape(3, 4))
    return t


def test_round_trip_keeps_nodes_edges_weights_embeddings_and_arrays(tmp_path: Path) -> None:
    t = _tree()
    extra = {"attention": np.eye(3, dtype=np.float32)}
    save_tree(t, tmp_path / "t", kind="test", config={"k": 3}, arrays=extra)
    back, config, arrays = load_tree(tmp_path / "t", kind="test")
    assert back.to_dict() == t.to_dict()
    assert back.embeddings is not None and t.embeddings is not None
    np.testing.assert_array_equal(back.embeddings, t.embeddings)
    np.testing.assert_array_equal(arrays["attention"], np.eye(3))
    assert config == {"k": 3}
    mm, _, _ = load_tree(tmp_path / "t", mmap=True)
    assert mm.embeddings is not None


def test_tampered_array_is_detected(tmp_path: Path) -> None:
    save_tree(_tree(), tmp_path)
    emb = tmp_path / "embeddings.npy"
    data = bytearray(emb.read_bytes())
    data[-1] ^= 0xFF
    emb.write_bytes(bytes(data))
    with pytest.raises(PersistenceError, match="checksum"):
        load_tree(tmp_path)


def test_pickled_array_is_refused(tmp_path: Path) -> None:
    save_tree(_tree(), tmp_path)
    obj = np.array([{"evil": 1}], dtype=object)
    np.save(tmp_path / "embeddings.npy", obj, allow_pickle=True)
    manifest = json.loads((tmp_path / "tree.json").read_text())
    import hashlib

    manifest["sha256"]["embeddings"] = hashlib.sha256(
        (tmp_path / "embeddings.npy").read_bytes()
    ).hexdigest()
    (tmp_path / "tree.json").write_text(json.dumps(manifest))
    with pytest.raises(PersistenceError, match=r"plain \.npy"):
        load_tree(tmp_path)


@pytest.mark.parametrize(
    ("content", "match"),
    [
        ("{not json", "not valid JSON"),
        (json.dumps({"format": "other"}), "not an hrefine tree"),
        (json.dumps({"format": "hrefine.tree", "format_version": 99}), "format version"),
        (
            json.dumps({"format": "hrefine.tree", "format_version": 1, "tree": {"nodes": 3}}),
            "malformed",
        ),
    ],
)
def test_foreign_or_corrupted_manifest_raises_clear_error(
    tmp_path: Path, content: str, match: str
) -> None:
    (tmp_path / "tree.json").write_text(content)
    with pytest.raises(PersistenceError, match=match):
        load_tree(tmp_path)


def test_missing_directory_and_wrong_kind(tmp_path: Path) -> None:
    with pytest.raises(PersistenceError, match="not written by hrefine"):
        load_tree(tmp_path / "nothing")
    save_tree(_tree(), tmp_path, kind="raptor")
    with pytest.raises(PersistenceError, match="expected a 'garlic'"):
        load_tree(tmp_path, kind="garlic")
