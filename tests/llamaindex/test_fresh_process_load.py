"""A saved RaptorIndex or GarlicIndex loaded with ``load_index_from_storage`` in a fresh process.

LlamaIndex finds a stored index's classes in registries that only importing
``llamaindex_hrefine`` fills (it has no plugin hook). Without that import the load must say what
to import (it was ``KeyError: 'hrefine_raptor'``); with it, the index loads as any other does,
and so does a store written with the earlier type name.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from garlic_fakes import garlic_llm
from hrefine.testing import KeywordEmbedder, ScriptedLM
from llama_index.core import Document
from raptor_fakes import Summariser

from llamaindex_hrefine import GarlicIndex, RaptorIndex

TEXTS = [
    "The Nile is the longest river in Africa and flows north into the Mediterranean Sea. "
    "Farmers in Egypt have depended on the yearly Nile flood for thousands of years.",
    "Mount Vesuvius erupted in the year 79 and buried the Roman town of Pompeii in ash. "
    "Pliny the Younger watched the eruption from across the bay and described it in letters.",
]


def _saved(kind: str, folder: Path) -> Path:
    docs = [Document(text=t, id_=f"doc-{i}") for i, t in enumerate(TEXTS)]
    index: RaptorIndex | GarlicIndex
    if kind == "raptor":
        index = RaptorIndex.from_documents(
            docs, llm=Summariser(), embed_model=KeywordEmbedder(), reduction_dim=16
        )
    else:
        index = GarlicIndex.from_documents(
            docs, llm=ScriptedLM(garlic_llm), embed_model=KeywordEmbedder(), chunk_tokens=32
        )
    index.storage_context.persist(persist_dir=str(folder))
    return folder


def _load_in_fresh_process(folder: Path, *, first: str = "") -> subprocess.CompletedProcess[str]:
    code = textwrap.dedent(
        f"""
        import sys
        {first}
        from hrefine.testing import KeywordEmbedder
        from llama_index.core import StorageContext, load_index_from_storage
        storage = StorageContext.from_defaults(persist_dir={str(folder)!r})
        index = load_index_from_storage(storage, embed_model=KeywordEmbedder())
        print(type(index).__name__, len(index.index_struct.node_ids))
        """
    )
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False
    )


@pytest.mark.parametrize("kind", ["raptor", "garlic"])
def test_loading_without_the_import_says_what_to_import(kind: str, tmp_path: Path) -> None:
    out = _load_in_fresh_process(_saved(kind, tmp_path))
    assert out.returncode != 0
    # Was KeyError: 'hrefine_raptor', which names nothing to import.
    assert "import llamaindex_hrefine" in out.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize("kind", ["raptor", "garlic"])
def test_loading_after_the_import_works_in_a_fresh_process(kind: str, tmp_path: Path) -> None:
    folder = _saved(kind, tmp_path)
    out = _load_in_fresh_process(folder, first="import llamaindex_hrefine")
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split()[0] == f"{kind.capitalize()}Index"
    # A store written with the earlier type name still loads.
    store = folder / "index_store.json"
    data = json.loads(store.read_text(encoding="utf-8"))
    for entry in data["index_store/data"].values():
        entry["__type__"] = f"hrefine_{kind}"
    store.write_text(json.dumps(data), encoding="utf-8")
    again = _load_in_fresh_process(folder, first="import llamaindex_hrefine")
    assert again.returncode == 0, again.stderr[-2000:]
    assert again.stdout == out.stdout
