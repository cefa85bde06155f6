from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hrefine import ConfigError, NodeKind, PersistenceError, Tree
from hrefine._saved import content_digest
from hrefine.persist import FORMAT_VERSION, load_tree, save_tree
from saved_files import array_path, forge_array


def _tree() -> Tree:
    t = Tree(metadata={"source": "unit", "lang": "日本語"})
    r = t.add_node("root ✓", kind="summary", level=1)
    a = t.add_node("a", parents=[r], weights=[0.3])
    t.add_node("b", parents=[r, a], weights=[0.7, 0.1], metadata={"tag_path": ["html", "p"]})
    t.set_embeddings([0, 1, 2], np.arange(12, dtype=np.float32).reshape(3, 4))
    return t


def _raptor_tree() -> Tree:
    """Embed leaves, add summaries (one leaf under two), a root, then more leaves."""
    rng = np.random.default_rng(0)
    t = Tree(metadata={"method": "raptor"})
    leaves = [
        t.add_node(f"chunk {k}", kind=NodeKind.CHUNK, order=k, metadata={"doc": k // 3})
        for k in range(6)
    ]
    t.set_embeddings(leaves, rng.normal(size=(6, 8)))
    s1 = t.add_node("summary 0-2", kind="summary", level=1)
    s2 = t.add_node("summary 2-3", kind="summary", level=1)
    s3 = t.add_node("summary 4-5", kind="summary", level=1, order=100)  # explicit, kept
    for s, kids, weights in [
        (s1, [0, 1, 2], [0.5, 0.3, 0.2]),
        (s2, [2, 3], [0.6, 0.4]),  # chunk 2 has two parents
        (s3, [4, 5], [1.0, 1.0]),
    ]:
        for kid, w in zip(kids, weights, strict=True):
            t.add_edge(s, kid, w)
    t.set_embeddings([s1, s2], rng.normal(size=(2, 8)))  # s3 stays unembedded
    root = t.add_node("root", kind="summary", level=2)
    for s in (s2, s3, s1):
        t.add_edge(root, s, 0.9)
    late = [t.add_node(f"chunk {k}", kind="chunk", order=k) for k in (6, 7)]
    t.add_edge(s3, late[0], 0.25)
    t.set_embeddings([late[1]], rng.normal(size=(1, 8)))
    return t


def _same_tree(a: Tree, b: Tree) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        assert (x.text, x.kind, x.level, x.order, x.metadata) == (
            y.text,
            y.kind,
            y.level,
            y.order,
            y.metadata,
        )
        assert x.order_is_derived == y.order_is_derived
        assert (x.children, x.parents) == (y.children, y.parents)
        assert isinstance(y.kind, NodeKind)
    assert list(a.edges()) == list(b.edges())
    assert a.sort_by_order(range(len(a))) == b.sort_by_order(range(len(b)))
    assert a.embeddings is not None and b.embeddings is not None
    np.testing.assert_array_equal(a.embeddings, b.embeddings)
    np.testing.assert_array_equal(a.embedding_mask, b.embedding_mask)


def test_raptor_shaped_tree_round_trips(tmp_path: Path) -> None:
    t = _raptor_tree()
    assert t.embeddings is not None and t.embeddings.shape == (12, 8)
    assert t.embedding_mask.tolist() == [True] * 8 + [False, False, False, True]
    assert t[9].order == 0 and t[6].order == 0 and t[8].order == 100  # root, s1, s3
    save_tree(t, tmp_path / "raptor", kind="raptor", config={"levels": 2})
    back, config, arrays = load_tree(tmp_path / "raptor", kind="raptor")
    _same_tree(t, back)
    assert (config, arrays) == ({"levels": 2}, {})
    assert back.weight(7, 2) == pytest.approx(0.6) and back[2].parents == (6, 7)
    # A loaded tree (memory-mapped, read-only arrays) keeps growing like a new one.
    mm, _, _ = load_tree(tmp_path / "raptor", mmap=True)
    _same_tree(t, mm)
    extra = mm.add_node("chunk 8", kind="chunk")
    mm.add_edge(8, extra)
    mm.set_embeddings([8, 9, 10, extra], np.ones((4, 8)))
    assert mm.embedding_mask.tolist() == [True] * 13 and mm[8].order == 100
    assert mm.embeddings is not None and mm.embeddings[extra].sum() == 8
    _same_tree(t, load_tree(tmp_path / "raptor")[0])  # the saved files were not written to


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
    manifest = json.loads((tmp_path / "t" / "tree.json").read_text())
    assert manifest["format_version"] == FORMAT_VERSION == 3
    assert manifest["arrays"] == ["attention", "embedding_mask", "embeddings"]
    assert np.load(array_path(tmp_path / "t", "embedding_mask")).dtype == np.bool_


def test_tree_without_embeddings_saves_no_arrays(tmp_path: Path) -> None:
    t = Tree()
    t.add_node("only")
    save_tree(t, tmp_path)
    back, _, _ = load_tree(tmp_path)
    assert back.embeddings is None and back.embedding_mask.tolist() == [False]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tree.json"]


class _BadShapeTree(Tree):
    """A tree whose matrix lost its last row (what format 1 could not catch before loading)."""

    @property
    def embeddings(self) -> np.ndarray | None:
        emb = super().embeddings
        return None if emb is None else emb[:-1]


def test_save_rejects_embeddings_that_do_not_fit_before_writing(tmp_path: Path) -> None:
    t = _BadShapeTree()
    t.add_node("a")
    t.add_node("b")
    t.set_embeddings([0, 1], np.ones((2, 4)))
    with pytest.raises(PersistenceError, match=r"2 nodes but embeddings of shape \(1, 4\)"):
        save_tree(t, tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_save_checks_array_names_and_contents_before_writing(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="reserved"):
        save_tree(_tree(), tmp_path, arrays={"embedding_mask": np.ones(3)})
    with pytest.raises(ConfigError, match="identifier"):
        save_tree(_tree(), tmp_path, arrays={"a-b": np.ones(3)})
    with pytest.raises(PersistenceError, match="Python objects"):
        save_tree(_tree(), tmp_path, arrays={"bad": np.array([{"x": 1}], dtype=object)})
    assert list(tmp_path.iterdir()) == []


def test_failed_save_leaves_the_previous_one_readable(tmp_path: Path) -> None:
    save_tree(_tree(), tmp_path)
    bad = _raptor_tree()
    bad.metadata["model"] = object()  # not JSON: found only when the manifest is written
    with pytest.raises(PersistenceError, match="JSON"):
        save_tree(bad, tmp_path, arrays={"extra": np.ones(2)})
    back, _, arrays = load_tree(tmp_path)
    assert back.to_dict() == _tree().to_dict() and arrays == {}
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp files left


def test_a_save_whose_files_fail_to_move_puts_the_moved_ones_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Was: the new embeddings.npy beside the old manifest, which no longer loaded (checksum).
    import hrefine._atomic as atomic

    save_tree(_tree(), tmp_path)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    other = _tree()
    other.set_embeddings([0, 1, 2], np.arange(12, dtype=np.float32).reshape(3, 4) * 0.5)
    real = atomic.os.replace
    calls = [0]

    def fails_second(src: Any, dst: Any) -> None:
        calls[0] += 1
        if calls[0] == 2:
            raise OSError(5, "Input/output error")
        real(src, dst)

    monkeypatch.setattr(atomic.os, "replace", fails_second)
    with pytest.raises(OSError, match="Input/output"):
        save_tree(other, tmp_path)
    monkeypatch.undo()
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before  # nothing left over
    back, _, _ = load_tree(tmp_path)
    assert back.to_dict() == _tree().to_dict()


def _write_format_1(folder: Path, emb: np.ndarray, user_mask: np.ndarray) -> None:
    """A directory as hrefine 0.1 wrote it: no mask, no derived-order flags."""
    folder.mkdir()
    sums = {}
    for name, arr in (("embeddings", emb), ("embedding_mask", user_mask)):
        np.save(folder / f"{name}.npy", arr, allow_pickle=False)
        sums[name] = hashlib.sha256((folder / f"{name}.npy").read_bytes()).hexdigest()
    tree = {
        "metadata": {"m": 1},
        "nodes": [
            {"text": "root", "kind": "section", "level": 0, "order": 5, "metadata": {}},
            {"text": "a", "kind": "block", "level": 1, "order": 9, "metadata": {"x": [1]}},
        ],
        "edges": [[0, 1, 0.5]],
    }
    manifest = {
        "format": "hrefine.tree",
        "format_version": 1,
        "hrefine_version": "0.1.0",
        "kind": "tree",
        "config": {},
        "tree": tree,
        "arrays": ["embedding_mask", "embeddings"],
        "sha256": sums,
    }
    (folder / "tree.json").write_text(json.dumps(manifest))


def test_format_1_directory_still_loads(tmp_path: Path) -> None:
    emb = np.arange(8, dtype=np.float32).reshape(2, 4)
    user_mask = np.array([3, 4])  # format 1 did not reserve the name: a method's own array
    _write_format_1(tmp_path / "v1", emb, user_mask)
    t, _, arrays = load_tree(tmp_path / "v1")
    assert [(n.order, n.order_is_derived) for n in t] == [(5, False), (9, False)]
    assert t[0].kind is NodeKind.SECTION and t.weight(0, 1) == 0.5
    assert t.embeddings is not None
    np.testing.assert_array_equal(t.embeddings, emb)
    assert t.embedding_mask.tolist() == [True, True]
    np.testing.assert_array_equal(arrays["embedding_mask"], user_mask)
    save_tree(t, tmp_path / "v2")  # and saves as format 2
    _same_tree(t, load_tree(tmp_path / "v2")[0])


def _forge(folder: Path, manifest: dict[str, Any]) -> None:
    """Write an edited manifest with its content checksum made anew (as a forger would), so
    the checks behind the checksums are the ones under test."""
    manifest["content_sha256"] = content_digest(manifest)
    (folder / "tree.json").write_text(json.dumps(manifest))


def test_load_rejects_embeddings_or_mask_that_do_not_fit(tmp_path: Path) -> None:
    save_tree(_tree(), tmp_path)
    forge_array(tmp_path, "embedding_mask", np.ones(2, dtype=bool))
    with pytest.raises(PersistenceError, match=r"mask of shape \(2,\)"):
        load_tree(tmp_path)
    forge_array(tmp_path, "embedding_mask", np.ones(3, dtype=bool))
    forge_array(tmp_path, "embeddings", np.ones((2, 4), dtype=np.float32))
    with pytest.raises(PersistenceError, match=r"shape \(2, 4\) do not fit 3 nodes"):
        load_tree(tmp_path)
    manifest = json.loads((tmp_path / "tree.json").read_text())
    manifest["arrays"].remove("embedding_mask")
    _forge(tmp_path, manifest)
    with pytest.raises(PersistenceError, match=r"no embedding_mask array"):
        load_tree(tmp_path)


def test_tampered_array_is_detected(tmp_path: Path) -> None:
    save_tree(_tree(), tmp_path)
    emb = array_path(tmp_path, "embeddings")
    data = bytearray(emb.read_bytes())
    data[-1] ^= 0xFF
    emb.write_bytes(bytes(data))
    with pytest.raises(PersistenceError, match="checksum"):
        load_tree(tmp_path)


def test_pickled_array_is_refused(tmp_path: Path) -> None:
    save_tree(_tree(), tmp_path)
    forge_array(tmp_path, "embeddings", np.array([{"evil": 1}], dtype=object))
    with pytest.raises(PersistenceError, match=r"plain \.npy"):
        load_tree(tmp_path)


@pytest.mark.parametrize(
    ("content", "match"),
    [
        ("{not json", "not valid JSON"),
        (json.dumps({"format": "other"}), "not an hrefine tree"),
        (json.dumps({"format": "hrefine.tree", "format_version": 99}), "format version"),
        (json.dumps({"format": "hrefine.tree", "format_version": 0}), "format version"),
        (
            json.dumps({"format": "hrefine.tree", "format_version": 1, "tree": {"nodes": 3}}),
            "malformed",
        ),
        (
            json.dumps(
                {
                    "format": "hrefine.tree",
                    "format_version": 1,  # format 2 would be refused first: no checksum
                    "tree": {
                        "nodes": [{"text": "a"}, {"text": "b"}],
                        "edges": [[0, 1, 1], [1, 0, 1]],
                    },
                }
            ),
            "cycle",
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
