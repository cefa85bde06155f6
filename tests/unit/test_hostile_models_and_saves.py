"""Hardening, second round (issue #55): forged numbers in saves, embedders that return NaN or
lack a name, model answers that are not text, and a GARLIC LLM that hangs. Fast: fake LLMs and
the keyword embedder."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from garlic_fakes import SMALL, garlic_llm
from hrefine._saved import MAX_SAVED_INT, content_digest
from hrefine.errors import PersistenceError
from hrefine.garlic import GarlicGraph, GarlicOptions
from hrefine.raptor import RaptorOptions, RaptorTree
from hrefine.testing import KeywordEmbedder
from raptor_fakes import summary_of

CAT = "The cat sat on the mat near the door. Michael Grant wrote about it. " * 12
DOG = "Dogs bark at night in the old city by the river. " * 12
TOKENS = "hrefine_tokens"


@pytest.fixture(scope="module")
def emb() -> KeywordEmbedder:
    return KeywordEmbedder(dim=64)


@pytest.fixture(scope="module")
def tree(emb: KeywordEmbedder) -> RaptorTree:
    return RaptorTree.build(
        [CAT, DOG], llm=summary_of, embedder=emb, tokenizer="regex", reduction_dim=16
    )


@pytest.fixture(scope="module")
def graph(emb: KeywordEmbedder) -> GarlicGraph:
    return GarlicGraph.build([CAT, DOG], lm=garlic_llm, embedder=emb, tokenizer="regex", **SMALL)


def _forge(folder: Path, edit: Any) -> None:
    """Edit ``folder``'s manifest as a forger would: with its content checksum made anew."""
    manifest = json.loads((folder / "tree.json").read_text(encoding="utf-8"))
    edit(manifest)
    manifest["content_sha256"] = content_digest(manifest)
    (folder / "tree.json").write_text(json.dumps(manifest), encoding="utf-8")


# -- item 3: every whole number read on load is bounded ----------------------------------------
def test_a_forged_huge_token_count_is_refused_on_load_not_at_retrieve(
    tree: RaptorTree, emb: KeywordEmbedder, tmp_path: Path
) -> None:
    folder = tree.save(tmp_path / "t")
    _forge(folder, lambda m: m["tree"]["nodes"][0]["metadata"].__setitem__(TOKENS, 2**64))
    # Was: loaded, then retrieve() raised a raw OverflowError building the int64 costs.
    with pytest.raises(PersistenceError, match="whole number 18446744073709551616"):
        RaptorTree.load(folder, embedder=emb, max_tokens=50)


def test_a_forged_huge_setting_is_refused_on_load(
    graph: GarlicGraph, emb: KeywordEmbedder, tmp_path: Path
) -> None:
    folder = graph.save(tmp_path / "g")
    _forge(folder, lambda m: m["config"].__setitem__("max_tokens", 2**64))
    with pytest.raises(PersistenceError, match="whole number"):
        GarlicGraph.load(folder, embedder=emb)


@pytest.mark.parametrize("options", [RaptorOptions, GarlicOptions])
def test_saved_settings_from_a_framework_store_are_bounded(options: Any) -> None:
    # The LlamaIndex indices keep their settings in the index store, not in tree.json.
    with pytest.raises(PersistenceError, match="the whole number 18446744073709551616"):
        options.from_saved({"k": 2**64}, "index store")
    assert options.from_saved({"k": MAX_SAVED_INT}, "index store").k == MAX_SAVED_INT


@pytest.mark.parametrize("value", [2**64, MAX_SAVED_INT + 1, -1, True, 2.0])
def test_a_node_graph_from_a_framework_store_needs_bounded_token_counts(
    tree: RaptorTree, graph: GarlicGraph, value: object
) -> None:
    for cls, built in ((RaptorTree, tree), (GarlicGraph, graph)):
        nodes = copy.deepcopy(built.tree)
        nodes[0].metadata[TOKENS] = value
        with pytest.raises(PersistenceError, match="node 0 has no token count"):
            cls.from_tree(nodes, built.options, embedder=built.embedder, where="the store")
