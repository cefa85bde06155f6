"""RaptorIndex while it inserts: a query run in the middle of an insert (here: while the
docstore is being written) reads a whole tree whose nodes the index struct and docstore hold,
and inserts at the same time both land.

Small texts, the keyword embedder and the fake summariser (see ``test_raptor_index.py``).
"""

from __future__ import annotations

import asyncio
from typing import Any

from hrefine.testing import KeywordEmbedder
from llama_index.core import Document, StorageContext
from llama_index.core.storage.docstore import SimpleDocumentStore
from raptor_fakes import Summariser

from llamaindex_hrefine import RaptorIndex

TEXTS = [
    "Mount Vesuvius erupted in the year 79 and buried the Roman town of Pompeii in ash. "
    "Krakatoa exploded in 1883 with a sound heard nearly five thousand kilometres away.",
    "The Nile is the longest river in Africa and flows north into the Mediterranean Sea. "
    "The Amazon carries more water than any other river on Earth.",
    "The Shinkansen opened in 1964 between Tokyo and Osaka. George Stephenson built the "
    "Rocket locomotive for the Rainhill Trials of 1829.",
]
ETNA = "Mount Etna in Sicily erupts every few years; its lava has reached the city of Catania."
SHINKANSEN = "Maglev trains float on magnets; the Shanghai maglev runs at 431 kilometres per hour."
QUESTION = "Etna lava Catania Sicily"
SETTINGS: dict[str, Any] = {"chunk_tokens": 30, "cluster_max_tokens": 200, "reduction_dim": 16}
LIMIT = 60


class ProbingDocstore(SimpleDocumentStore):
    """A docstore that runs ``probe`` (a query) before each write, once armed."""

    probe: Any = None
    answers: list[Any]

    def add_documents(self, *args: Any, **kwargs: Any) -> None:
        if self.probe is not None:
            self.answers.append(self.probe())
        super().add_documents(*args, **kwargs)

    async def async_add_documents(self, *args: Any, **kwargs: Any) -> None:
        if self.probe is not None:
            self.answers.append(await self.probe())
        await asyncio.sleep(0.005)  # yields, as a remote docstore would
        super().add_documents(*args, **kwargs)


def build() -> tuple[RaptorIndex, ProbingDocstore]:
    store = ProbingDocstore()
    store.answers = []
    index = RaptorIndex.from_documents(
        [Document(text=t, id_=f"doc{i}") for i, t in enumerate(TEXTS)],
        llm=Summariser(),
        embed_model=KeywordEmbedder(),
        storage_context=StorageContext.from_defaults(docstore=store),
        **SETTINGS,
    )
    return index, store


def texts(nodes: list[Any]) -> list[str]:
    return [n.node.get_content() for n in nodes]


def consistent(index: RaptorIndex) -> None:
    """The struct names every tree node, and the docstore holds it with the tree's text."""
    ids = index.index_struct.node_ids
    assert len(ids) == len(index.raptor_tree)
    for node, node_id in zip(index.raptor_tree.tree, ids, strict=True):
        assert index.docstore.get_node(node_id).get_content() == node.text


def test_a_query_during_an_insert_reads_the_tree_before_it() -> None:
    index, store = build()
    retriever = index.as_retriever(k=3, max_tokens=None)
    before = texts(retriever.retrieve(QUESTION))
    store.probe = lambda: texts(retriever.retrieve(QUESTION))
    index.insert(Document(text=ETNA, id_="etna"))  # was: IndexError in the probe
    store.probe = None
    assert store.answers == [before]
    assert ETNA in texts(retriever.retrieve(QUESTION))
    consistent(index)


def test_an_async_query_during_an_ainsert_reads_the_tree_before_it() -> None:
    index, store = build()
    retriever = index.as_retriever(k=3, max_tokens=None)
    before = texts(retriever.retrieve(QUESTION))

    async def probe() -> list[str]:
        return texts(await retriever.aretrieve(QUESTION))

    async def main() -> None:
        store.probe = probe
        await asyncio.wait_for(index.ainsert(Document(text=ETNA, id_="etna")), LIMIT)
        store.probe = None

    asyncio.run(main())  # was: IndexError or "doc_id ... not found" in the probe
    assert store.answers == [before]
    assert ETNA in texts(retriever.retrieve(QUESTION))
    consistent(index)


def test_concurrent_ainserts_both_land() -> None:
    index, _ = build()

    async def main() -> list[Any]:
        calls = asyncio.gather(
            index.ainsert(Document(text=ETNA, id_="etna")),
            index.ainsert(Document(text=SHINKANSEN, id_="maglev")),
            return_exceptions=True,
        )
        return list(await asyncio.wait_for(calls, LIMIT))

    assert asyncio.run(main()) == [None, None]  # was: TreeError for the second
    sources = index.raptor_tree.tree.metadata["sources"]
    assert {"etna", "maglev"} <= set(sources)
    consistent(index)


class SlowAckDocstore(SimpleDocumentStore):
    """A docstore whose async write lands at once and is acknowledged late (a remote store)."""

    written: asyncio.Event | None = None

    async def async_add_documents(self, *args: Any, **kwargs: Any) -> None:
        super().add_documents(*args, **kwargs)
        if self.written is not None:
            self.written.set()
            await asyncio.sleep(0.2)


def test_an_ainsert_cancelled_while_the_docstore_writes_still_lands_whole() -> None:
    store = SlowAckDocstore()
    index = RaptorIndex.from_documents(
        [Document(text=t, id_=f"doc{i}") for i, t in enumerate(TEXTS)],
        llm=Summariser(),
        embed_model=KeywordEmbedder(),
        storage_context=StorageContext.from_defaults(docstore=store),
        **SETTINGS,
    )
    etna = Document(text=ETNA, id_="etna")

    async def main() -> bool:
        store.written = asyncio.Event()
        task = asyncio.ensure_future(index.ainsert(etna))
        await asyncio.wait_for(store.written.wait(), LIMIT)
        task.cancel()  # the docstore holds the new nodes; the struct and tree not yet
        try:
            await task
        except asyncio.CancelledError:
            return True
        return False

    assert asyncio.run(main())  # the caller still sees its cancellation
    # was: the new leaf and summaries in the docstore, named by no struct, the tree without them
    consistent(index)
    assert "etna" in index.raptor_tree.tree.metadata["sources"]
    assert index.docstore.get_document_hash("etna") == etna.hash
    retriever = index.as_retriever(k=3, max_tokens=None)
    assert ETNA in texts(retriever.retrieve(QUESTION))
