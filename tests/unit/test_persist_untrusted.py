"""A saved folder is untrusted input: every malformed file is a PersistenceError naming it,
found before anything large is allocated (issue #41, item 11)."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hrefine import PersistenceError, Tree
from hrefine._saved import MAX_SAVED_INT, content_digest
from hrefine.persist import load_tree, save_tree
from saved_files import array_path, forge_array


def _saved(folder: Path) -> Path:
    t = Tree(metadata={"source": "unit"})
    root = t.add_node("root")
    t.add_node("a", parents=[root])
    t.add_node("b", parents=[root])
    t.set_embeddings([0, 1, 2], np.arange(12, dtype=np.float32).reshape(3, 4))
    save_tree(t, folder, arrays={"extra": np.arange(5)})
    return folder


def _manifest(folder: Path) -> dict[str, Any]:
    data = json.loads((folder / "tree.json").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def _write_manifest(folder: Path, manifest: object) -> None:
    """Write an edited manifest as a forger would: with its content checksum made anew, so the
    checks behind the checksum are the ones under test."""
    if isinstance(manifest, dict) and "content_sha256" in manifest:
        manifest = {**manifest, "content_sha256": content_digest(manifest)}
    (folder / "tree.json").write_text(json.dumps(manifest), encoding="utf-8")


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _refused(folder: Path, *matches: str, mmap: bool = False) -> str:
    with pytest.raises(PersistenceError) as info:
        load_tree(folder, mmap=mmap)
    message = str(info.value)
    for match in matches:
        assert match in message, message
    return message


def test_the_untouched_folder_loads(tmp_path: Path) -> None:
    tree, _, arrays = load_tree(_saved(tmp_path / "t"))
    assert len(tree) == 3 and arrays["extra"].tolist() == [0, 1, 2, 3, 4]


@pytest.mark.parametrize(
    "edit",
    [
        lambda m: m["tree"]["nodes"][1].__setitem__("text", "forged"),
        lambda m: m["tree"]["metadata"].__setitem__("source", "elsewhere"),
        lambda m: m["config"].__setitem__("chunk_tokens", 7),
        lambda m: m["tree"]["edges"][0].__setitem__(2, 0.5),
    ],
    ids=["node text", "tree metadata", "config", "edge weight"],
)
def test_an_edited_manifest_is_refused_by_its_content_checksum(
    tmp_path: Path, edit: Callable[[dict[str, Any]], None]
) -> None:
    folder = _saved(tmp_path / "t")
    manifest = _manifest(folder)
    assert manifest["content_sha256"] == content_digest(manifest)
    edit(manifest)
    (folder / "tree.json").write_text(json.dumps(manifest), encoding="utf-8")
    _refused(folder, "tree.json", "edited after it was saved")


def test_a_format_2_manifest_without_its_content_checksum_is_refused(tmp_path: Path) -> None:
    # Issue #55 item 1: deleting the key used to switch the edit check off.
    folder = _saved(tmp_path / "t")
    manifest = _manifest(folder)
    del manifest["content_sha256"]
    manifest["tree"]["nodes"][1]["text"] = "forged"
    (folder / "tree.json").write_text(json.dumps(manifest), encoding="utf-8")
    _refused(folder, "tree.json", "no content checksum", "content_sha256")


def test_a_format_1_manifest_without_a_content_checksum_still_loads(tmp_path: Path) -> None:
    # hrefine 0.1 wrote format 1, which had no checksum (and no embedding mask)
    folder = _saved(tmp_path / "t")
    manifest = _manifest(folder)
    for name in manifest["arrays"]:  # format 1 named the files <name>.npy
        os.replace(array_path(folder, name), folder / f"{name}.npy")
    del manifest["content_sha256"]
    manifest["format_version"] = 1
    manifest["arrays"].remove("embedding_mask")
    del manifest["sha256"]["embedding_mask"]
    (folder / "tree.json").write_text(json.dumps(manifest), encoding="utf-8")
    tree, _, _ = load_tree(folder)
    assert [n.text for n in tree] == ["root", "a", "b"]


@pytest.mark.parametrize(
    "edit",
    [
        lambda m: m["tree"]["nodes"][1]["metadata"].__setitem__("hrefine_tokens", 2**64),
        lambda m: m["tree"]["nodes"][1].__setitem__("level", 2**63),
        lambda m: m["tree"]["nodes"][1].__setitem__("order", -(2**60)),
        lambda m: m["tree"]["edges"][0].__setitem__(1, 2**64),
        lambda m: m["config"].__setitem__("chunk_tokens", 2**53),
    ],
    ids=["token count", "level", "order", "edge id", "config"],
)
def test_whole_numbers_beyond_the_saved_bound_are_refused(
    tmp_path: Path, edit: Callable[[dict[str, Any]], None]
) -> None:
    # Issue #55 item 3: 2**64 passed the type checks, then overflowed an int64 array.
    folder = _saved(tmp_path / "t")
    manifest = _manifest(folder)
    edit(manifest)
    _write_manifest(folder, manifest)
    _refused(folder, str(folder / "tree.json"), "whole number", str(MAX_SAVED_INT))


def test_a_whole_number_of_thousands_of_digits_is_refused_before_it_is_read(
    tmp_path: Path,
) -> None:
    # int() refuses literals over 4,300 digits with a bare ValueError
    folder = _saved(tmp_path / "t")
    manifest = _manifest(folder)
    manifest["config"]["k"] = 7
    text = json.dumps(manifest).replace('"k": 7', '"k": ' + "9" * 5000)
    (folder / "tree.json").write_text(text, encoding="utf-8")
    _refused(folder, "whole number 99999999999999999999...(5000 digits)")


def test_the_largest_saved_whole_number_round_trips(tmp_path: Path) -> None:
    t = Tree(metadata={"big": MAX_SAVED_INT, "small": -MAX_SAVED_INT})
    t.add_node("only")
    tree, _, _ = load_tree(save_tree(t, tmp_path / "t"))
    assert tree.metadata == {"big": MAX_SAVED_INT, "small": -MAX_SAVED_INT}


@pytest.mark.parametrize("where", ["metadata", "config"])
def test_save_refuses_a_whole_number_it_could_not_load(tmp_path: Path, where: str) -> None:
    t = Tree()
    t.add_node("only", metadata={"id": 2**63} if where == "metadata" else {})
    config = {"seed": [1, -(2**70)]} if where == "config" else {}
    with pytest.raises(PersistenceError, match="store it as a string"):
        save_tree(t, tmp_path / "t", config=config)
    assert not (tmp_path / "t" / "tree.json").exists()


@pytest.mark.parametrize("escape", ["../outside", "/abs/outside", "sub/extra", "a.b", "", "x\0"])
def test_array_names_that_are_not_identifiers_are_refused(tmp_path: Path, escape: str) -> None:
    folder = _saved(tmp_path / "t")
    # A real .npy where the name points, with a matching checksum: only the name is wrong.
    outside = tmp_path / "outside.npy"
    np.save(outside, np.ones(3))
    manifest = _manifest(folder)
    name = str(tmp_path / "outside") if escape.startswith("/") else escape
    manifest["arrays"].append(name)
    manifest["sha256"][name] = _sha(outside)
    _write_manifest(folder, manifest)
    _refused(folder, str(folder / "tree.json"), "identifiers")


def test_a_symlinked_array_is_not_followed(tmp_path: Path) -> None:
    folder = _saved(tmp_path / "t")
    elsewhere = tmp_path / "elsewhere.npy"
    extra = array_path(folder, "extra")
    os.replace(extra, elsewhere)
    extra.symlink_to(elsewhere)  # same bytes, same checksum
    _refused(folder, str(extra), "symbolic link")


def test_a_symlinked_manifest_is_not_followed(tmp_path: Path) -> None:
    folder = _saved(tmp_path / "t")
    os.replace(folder / "tree.json", tmp_path / "real.json")
    (folder / "tree.json").symlink_to(tmp_path / "real.json")
    _refused(folder, str(folder / "tree.json"), "symbolic link")


def test_an_array_that_is_a_folder_is_refused(tmp_path: Path) -> None:
    folder = _saved(tmp_path / "t")
    extra = array_path(folder, "extra")
    extra.unlink()
    extra.mkdir()
    _refused(folder, str(extra), "not a regular file")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_a_named_pipe_is_refused_without_hanging(tmp_path: Path) -> None:
    folder = _saved(tmp_path / "t")
    extra = array_path(folder, "extra")
    extra.unlink()
    os.mkfifo(extra)
    _refused(folder, str(extra), "not a regular file")
    os.replace(folder / "tree.json", tmp_path / "real.json")
    os.mkfifo(folder / "tree.json")
    _refused(folder, str(folder / "tree.json"), "not a regular file")


def _huge_header_file(path: Path, shape: tuple[int, ...], dtype: str = "<f4") -> None:
    """A .npy whose header declares ``shape`` but which holds 16 bytes of data."""
    header = {"descr": dtype, "fortran_order": False, "shape": shape}
    with path.open("wb") as fh:
        np.lib.format.write_array_header_1_0(fh, header)
        fh.write(b"\0" * 16)


@pytest.mark.parametrize("mmap", [False, True])
@pytest.mark.parametrize("name", ["extra", "embeddings"])
def test_a_huge_declared_shape_is_refused_before_allocating(
    tmp_path: Path, name: str, mmap: bool
) -> None:
    folder = _saved(tmp_path / "t")
    # 3 x 66,666,666,667 float32 is 745 GiB: loading it would be a MemoryError (or worse).
    shape = (3, 66_666_666_667)
    _huge_header_file(tmp_path / "huge.npy", shape)
    file = forge_array(folder, name, (tmp_path / "huge.npy").read_bytes())
    _refused(folder, str(file), "800000000004 bytes", "16 bytes", mmap=mmap)


def test_a_header_that_does_not_fit_the_tree_is_refused(tmp_path: Path) -> None:
    folder = _saved(tmp_path / "t")
    for name, arr, match in [
        ("embeddings", np.ones((7, 4), dtype=np.float32), "do not fit 3 nodes"),
        ("embeddings", np.array([["a"] * 4] * 3), "real numbers"),
        ("embedding_mask", np.ones(3, dtype=np.int8), "expected (3,) booleans"),
    ]:
        file = forge_array(folder, name, arr)
        _refused(folder, str(file), match)
        _saved(folder)


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"\x93NUMPY",
        b"\x93NUMPY\x03\x00" + b"\x10\x00\x00\x00" + b"{}".ljust(16),  # format 3.0
        b"\x93NUMPY\x01\x00\x10\x00" + b"{'descr': 7}".ljust(16),
        b"not an array at all",
    ],
)
def test_a_broken_npy_header_is_refused(tmp_path: Path, content: bytes) -> None:
    folder = _saved(tmp_path / "t")
    file = forge_array(folder, "extra", content)
    _refused(folder, str(file))


def test_a_deeply_nested_manifest_is_refused(tmp_path: Path) -> None:
    folder = _saved(tmp_path / "t")
    depth = 200_000
    nested = "[" * depth + "]" * depth
    text = (folder / "tree.json").read_text(encoding="utf-8")
    (folder / "tree.json").write_text(text[:-1] + f', "deep": {nested}}}', encoding="utf-8")
    _refused(folder, str(folder / "tree.json"), "nested too deeply")


@pytest.mark.parametrize("version", [0, -5, True, "2", 2.0, None, 4])
def test_format_versions_other_than_1_to_3_are_refused(tmp_path: Path, version: object) -> None:
    folder = _saved(tmp_path / "t")
    manifest = _manifest(folder)
    manifest["format_version"] = version
    _write_manifest(folder, manifest)
    _refused(folder, str(folder / "tree.json"), "format version")


def _set(*keys: Any, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(manifest: dict[str, Any]) -> None:
        target = manifest
        for key in keys[:-1]:
            target = target[key]
        target[keys[-1]] = value

    return change


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (_set("tree", value=[1, 2]), "'tree' is a list"),
        (_set("tree", value=None), "'tree' is null"),
        (_set("tree", "nodes", value={"0": {}}), "'nodes' is an object"),
        (_set("tree", "nodes", value=[1, 2, 3]), "node 0 is a number"),
        (_set("tree", "edges", value="0-1"), "'edges' is a string"),
        (_set("tree", "metadata", value=[["a", 1]]), "metadata is a list"),
        (_set("tree", "nodes", 0, "text", value=5), "node 0's text is a number"),
        (_set("tree", "nodes", 1, "kind", value=["block"]), "node 1's kind is a list"),
        (_set("tree", "nodes", 1, "level", value="1"), "node 1's level is a string"),
        (_set("tree", "nodes", 1, "level", value=True), "node 1's level is a boolean"),
        (_set("tree", "nodes", 1, "level", value=1.5), "node 1's level is a number"),
        (_set("tree", "nodes", 2, "order", value="3"), "node 2's order is a string"),
        (_set("tree", "nodes", 2, "order_derived", value=1), "order_derived is a number"),
        (_set("tree", "nodes", 2, "metadata", value=[]), "node 2's metadata is a list"),
        (_set("tree", "edges", 0, value=[0, 1]), "edge 0 is [0, 1]"),
        (_set("tree", "edges", 0, value=[0, "1", 1.0]), "edge 0 is"),
        (_set("tree", "edges", 1, value=[0, 2, True]), "edge 1 is"),
        (_set("tree", "edges", 1, value={"parent": 0}), "edge 1 is"),
        (_set("config", value=[1]), "config of type list"),
        (_set("arrays", value="extra"), "arrays as a string"),
        (_set("arrays", value=["extra", "extra"]), "an array twice"),
        (_set("arrays", value=[3]), "array named 3"),
        (_set("sha256", value=["abc"]), "checksums as a list"),
        (_set("sha256", "extra", value=None), "no sha256 for its array 'extra'"),
        (_set("tree", "edges", 0, value=[0, 9, 1.0]), "9"),  # no such node: the tree says so
    ],
)
def test_fields_of_the_wrong_type_are_refused(
    tmp_path: Path, change: Callable[[dict[str, Any]], None], match: str
) -> None:
    folder = _saved(tmp_path / "t")
    manifest = _manifest(folder)
    change(manifest)
    _write_manifest(folder, manifest)
    _refused(folder, str(folder), match)


@pytest.mark.parametrize(
    "content",
    [
        "[1, 2]",
        "null",
        '"hrefine.tree"',
        "\ud800".encode("utf-8", "surrogatepass").decode("latin-1"),
    ],
)
def test_a_manifest_that_is_not_an_object_is_refused(tmp_path: Path, content: str) -> None:
    folder = _saved(tmp_path / "t")
    (folder / "tree.json").write_text(content, encoding="latin-1")
    _refused(folder, str(folder / "tree.json"))


def test_text_with_lone_surrogates_round_trips(tmp_path: Path) -> None:
    t = Tree(metadata={"title": "caf\udce9"})
    t.add_node("half \ud83d of a pair")
    save_tree(t, tmp_path / "t")
    back, _, _ = load_tree(tmp_path / "t")
    assert back.metadata == {"title": "caf\udce9"} and back[0].text == "half \ud83d of a pair"
    (tmp_path / "t" / "tree.json").read_text(encoding="utf-8")  # valid UTF-8 on disk
