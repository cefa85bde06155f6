"""#55 item 2 for LlamaIndex stores: a persisted RaptorIndex or GarlicIndex names its models only
by model names; a path in its saved settings is refused on load unless the caller passes that
model, which is then used and the saved one never opened."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from garlic_fakes import SMALL, garlic_llm
from hrefine.budget import RegexCounter
from hrefine.errors import PersistenceError
from hrefine.testing import KeywordEmbedder, ScriptedLM
from llama_index.core import Document
from raptor_fakes import Summariser

from llamaindex_hrefine import GarlicIndex, RaptorIndex
from llamaindex_hrefine._tree_storage import digest

DOCS = [
    Document(text="The cat sat on the mat near the door. Michael Grant wrote about it. " * 8),
    Document(text="Dogs bark at night in the old city by the river. " * 8),
]


def _forge(index: RaptorIndex | GarlicIndex, folder: Path, **options: Any) -> str:
    """Persist ``index`` in ``folder`` and forge its saved settings (checksum made anew)."""
    index.storage_context.persist(persist_dir=str(folder))
    path = folder / "index_store.json"
    store = json.loads(path.read_text(encoding="utf-8"))
    (entry,) = store["index_store/data"].values()
    struct = json.loads(entry["__data__"])
    struct["options"].update(options)
    tree = index.raptor_tree.tree if isinstance(index, RaptorIndex) else index.garlic_graph.tree
    struct["digest"] = digest(tree, struct["options"])
    entry["__data__"] = json.dumps(struct)
    path.write_text(json.dumps(store), encoding="utf-8")
    return str(folder)


@pytest.fixture(scope="module")
def raptor() -> RaptorIndex:
    return RaptorIndex.from_documents(
        DOCS,
        llm=Summariser(),
        embed_model=KeywordEmbedder(),
        tokenizer="regex",
        chunk_tokens=40,
        cluster_max_tokens=200,
        reduction_dim=16,
    )


@pytest.fixture(scope="module")
def garlic() -> GarlicIndex:
    return GarlicIndex.from_documents(
        DOCS, llm=ScriptedLM(garlic_llm), embed_model=KeywordEmbedder(), tokenizer="regex", **SMALL
    )


@pytest.mark.parametrize("setting", ["tokenizer", "embedder"])
def test_a_raptor_store_naming_a_path_is_refused(
    raptor: RaptorIndex, tmp_path: Path, setting: str
) -> None:
    folder = _forge(raptor, tmp_path, **{setting: "/etc/passwd"})
    with pytest.raises(PersistenceError, match=f"saved {setting} '/etc/passwd'"):
        RaptorIndex.from_persist_dir(folder)


def test_a_raptor_store_loads_with_the_models_the_caller_passes(
    raptor: RaptorIndex, tmp_path: Path
) -> None:
    folder = _forge(raptor, tmp_path, tokenizer="/etc/passwd", embedder="/etc")
    index = RaptorIndex.from_persist_dir(folder, embed_model=KeywordEmbedder(), tokenizer="regex")
    assert isinstance(index.raptor_tree.counter, RegexCounter)
    assert index.as_retriever().retrieve("Who wrote about the cat?")


@pytest.mark.parametrize("setting", ["tokenizer", "embedder"])
def test_a_garlic_store_naming_a_path_is_refused(
    garlic: GarlicIndex, tmp_path: Path, setting: str
) -> None:
    folder = _forge(garlic, tmp_path, **{setting: "/etc/passwd"})
    with pytest.raises(PersistenceError, match=f"saved {setting} '/etc/passwd'"):
        GarlicIndex.from_persist_dir(folder)
    given = {"tokenizer": "regex"} if setting == "tokenizer" else {"embed_model": KeywordEmbedder()}
    index = GarlicIndex.from_persist_dir(folder, **given)
    assert index.garlic_graph.options.embedder is None
