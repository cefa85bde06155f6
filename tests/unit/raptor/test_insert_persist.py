"""Insert re-summarises only affected ancestors; saved trees round-trip and are checked."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hrefine.errors import GenerationError, PersistenceError
from hrefine.eval.loaders import load_dataset
from hrefine.raptor import RaptorTree
from hrefine.tree import NodeKind
from raptor_fakes import Summariser, summary_of
from saved_files import array_path


@pytest.fixture
def fresh(built: RaptorTree) -> RaptorTree:
    """A private copy of the session's tree, with a recording summariser."""
    tree = RaptorTree(
        copy.deepcopy(built.tree), built.options, llm=Summariser(), embedder=built.embedder
    )
    return tree


def _consistent(tree: RaptorTree) -> None:
    """Every summary is the summariser's answer for exactly its children, and is embedded."""
    t = tree.tree
    for node in t:
        if node.kind == NodeKind.SUMMARY:
            texts = [t[c].text for c in t.sort_by_order(node.children)]
            assert node.text == summary_of(
                tree.options.prompt.replace("{context}", "\n\n".join(texts))
            )
    assert bool(np.all(t.embedding_mask))


def test_insert_places_new_leaves_and_resummarises_only_their_ancestors(
    fresh: RaptorTree, shared_data: Path
) -> None:
    before = {n.id: n.text for n in fresh.tree}
    new_doc = load_dataset("qasper", data_dir=shared_data)[-1].document[:1500]
    llm = fresh.summariser.generator._fn.__wrapped__  # the recording Summariser
    fresh.insert([new_doc])
    tree = fresh.tree
    new_leaves = [n for n in tree if n.id >= len(before) and n.kind == NodeKind.CHUNK]
    assert new_leaves and all(n.metadata["hrefine_source"] == 1 for n in new_leaves)
    for leaf in new_leaves:
        assert leaf.parents  # placed under a first-layer summary
    changed = {i for i, text in before.items() if tree[i].text != text}
    affected = {a for leaf in new_leaves for a in tree.ancestors(leaf.id)}
    assert changed <= affected
    assert len(llm.prompts) == len(affected)  # one summary per affected node, no more
    _consistent(fresh)
    assert tree.metadata["sources"] == [None, None]
    hits = fresh.retrieve(new_doc.split(".")[0], k=None, max_tokens=500)
    assert any(1 in h.sources for h in hits)


def test_a_failed_insert_leaves_the_tree_as_it_was(fresh: RaptorTree) -> None:
    snapshot = fresh.tree.to_dict()
    broken = (
        RaptorTree(
            fresh.tree,
            fresh.options,
            llm=Summariser(fail=True),
            embedder=fresh.embedder,
            llm_retries=0,
        )
        if False
        else None
    )
    fresh._summariser = None
    fresh._llm = Summariser(fail=True)
    with pytest.raises(GenerationError):
        fresh.insert(["A new paragraph about support vector machines and their kernels."])
    assert fresh.tree.to_dict() == snapshot
    assert broken is None


def test_insert_into_a_tree_of_one_leaf_grows_layers(embedder: Any) -> None:
    tree = RaptorTree.build(["Whales are mammals."], llm=Summariser(), embedder=embedder)
    tree.insert(["Sharks are fish.", "Dolphins are mammals too."])
    assert tree.layers == 1 and len([n for n in tree.tree if n.kind == NodeKind.CHUNK]) == 3
    _consistent(tree)


def test_save_and_load_give_the_same_answers(
    built: RaptorTree, tmp_path: Path, qasper_doc: Any
) -> None:
    built.save(tmp_path / "t")
    files = sorted(p.name for p in (tmp_path / "t").iterdir())
    assert all(name.endswith((".json", ".npy")) for name in files)  # never a pickle
    loaded = RaptorTree.load(tmp_path / "t", embedder=built.embedder, llm=Summariser())
    assert loaded.options == built.options.replace(llm=None, embedder=None, tokenizer=None)
    for mode in ("collapsed", "traversal"):
        assert loaded.retrieve(qasper_doc.question, mode=mode, max_tokens=800, k=None) == (
            built.retrieve(qasper_doc.question, mode=mode, max_tokens=800, k=None)
        )


def test_an_edited_or_truncated_save_is_refused(built: RaptorTree, tmp_path: Path) -> None:
    folder = built.save(tmp_path / "t")
    vectors = array_path(folder, "embeddings")
    vectors.write_bytes(vectors.read_bytes()[:-100])
    with pytest.raises(PersistenceError):
        RaptorTree.load(folder, embedder=built.embedder)
    folder = built.save(tmp_path / "u")
    manifest = json.loads((folder / "tree.json").read_text())
    manifest["kind"] = "html_block_tree"
    (folder / "tree.json").write_text(json.dumps(manifest))
    with pytest.raises(PersistenceError):
        RaptorTree.load(folder, embedder=built.embedder)


def test_a_saved_tree_whose_summary_lost_its_children_is_refused(
    built: RaptorTree, tmp_path: Path
) -> None:
    folder = built.save(tmp_path / "t")
    manifest = json.loads((folder / "tree.json").read_text())
    manifest["tree"]["edges"] = []
    (folder / "tree.json").write_text(json.dumps(manifest))
    with pytest.raises(PersistenceError):
        RaptorTree.load(folder, embedder=built.embedder)


def test_two_inserts_at_once_never_lose_one_silently(fresh: RaptorTree) -> None:
    import threading

    from hrefine.errors import TreeError

    slow = RaptorTree(fresh.tree, fresh.options, llm=Summariser(delay=0.3), embedder=fresh.embedder)
    outcomes: list[str] = []

    def insert(text: str) -> None:
        try:
            slow.insert([text])
            outcomes.append("added")
        except TreeError:
            outcomes.append("refused")

    threads = [
        threading.Thread(target=insert, args=(f"A new note {i} about kernels and margins.",))
        for i in range(2)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    added = outcomes.count("added")
    assert added >= 1 and sorted(outcomes) in (["added", "added"], ["added", "refused"])
    leaves = [n for n in slow.tree if n.kind == NodeKind.CHUNK]
    assert len(leaves) == len([n for n in fresh.tree if n.kind == NodeKind.CHUNK]) + added
