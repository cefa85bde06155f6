"""End to end in LlamaIndex: a RaptorIndex over a real Qasper paper, queried, stored, grown.

The tree is built once per module with the real embedded embedder and the instant, deterministic
summariser of ``raptor_fakes`` (so the test needs no LLM); answers come from ``MockLLM``, which
echoes its prompt, so a response shows exactly what the answering LLM was given.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from e2e_helpers import ANSWER_MARGIN, answer_lead
from hrefine.eval.loaders import EvalItem, load_dataset
from hrefine.models import Embedder
from llama_index.core import Document, Settings, StorageContext, load_index_from_storage
from llama_index.core.llms import MockLLM
from llama_index.core.schema import MetadataMode
from llama_index.core.tools import QueryEngineTool, RetrieverTool
from raptor_fakes import Summariser

from llamaindex_hrefine import RaptorIndex

PAPER = "qasper_08"  # stance detection on Chinese Facebook posts
OTHER_PAPER = "qasper_03"
#: A question whose answer chunk leads every other chunk by a margin (checked below), so the
#: last bits of a vector cannot move it out of the retrieved set.
QUESTION = "What topic is covered in the Chinese Facebook data? "
ANSWER = "anti-nuclear-power"
BUDGET = 1024


def _paper(shared_data: Path, doc_id: str) -> tuple[Document, list[EvalItem]]:
    items = [i for i in load_dataset("qasper", data_dir=shared_data) if i.doc_id == doc_id]
    doc = Document(text=items[0].document, id_=doc_id, metadata={"paper": doc_id})
    return doc, items


@pytest.fixture(scope="module")
def paper(shared_data: Path) -> Document:
    doc, items = _paper(shared_data, PAPER)
    assert any(i.question == QUESTION and ANSWER in i.answers for i in items)
    return doc


@pytest.fixture(scope="module")
def index(paper: Document, embedder: Embedder) -> RaptorIndex:
    return RaptorIndex.from_documents([paper], llm=Summariser(), embed_model=embedder)


def test_the_answer_chunk_leads_by_a_margin(index: RaptorIndex) -> None:
    assert answer_lead(index.raptor_tree, QUESTION, ANSWER) >= ANSWER_MARGIN


def _text(nodes: list[Any]) -> str:
    return "\n".join(n.node.get_content(metadata_mode=MetadataMode.NONE) for n in nodes)


def test_query_engine_puts_the_answer_chunk_in_the_prompt(
    index: RaptorIndex, paper: Document
) -> None:
    assert index.raptor_tree.layers >= 1
    engine = index.as_query_engine(llm=MockLLM(), max_tokens=BUDGET)
    response = engine.query(QUESTION)

    sources = response.source_nodes
    assert sum(n.node.metadata["hrefine_tokens"] for n in sources) <= BUDGET
    leaves = [n for n in sources if n.node.metadata["hrefine_kind"] == "chunk"]
    holding = [
        n
        for n in leaves
        if ANSWER in paper.text[n.node.metadata["hrefine_start"] : n.node.metadata["hrefine_end"]]
    ]
    assert holding, "the chunk with the answer was not retrieved"
    assert holding[0].node.ref_doc_id == PAPER
    assert holding[0].node.metadata["paper"] == PAPER
    assert ANSWER in str(response)  # MockLLM echoes its prompt: the chunk reached the LLM
    assert "hrefine_" not in str(response)  # provenance keys stay out of the prompt
    # Leaves only by default; asked for, summaries compete with them for the budget.
    assert all(n.node.metadata["hrefine_layer"] == 0 for n in sources)
    free = index.as_query_engine(llm=MockLLM(), max_tokens=BUDGET, summary_rank="free")
    assert any(n.node.metadata["hrefine_layer"] >= 1 for n in free.query(QUESTION).source_nodes)
    assert Settings._llm is None  # type: ignore[attr-defined]
    assert Settings._embed_model is None  # type: ignore[attr-defined]


def test_traversal_mode_answers_too(index: RaptorIndex) -> None:
    walk = index.as_retriever(mode="traversal", k=3, summary_rank="free").retrieve(QUESTION)
    layers = [n.node.metadata["hrefine_layer"] for n in walk]
    assert set(layers) == set(range(index.raptor_tree.layers + 1))
    # Leaves only by default, from the same walk down the summaries.
    leaves = index.as_retriever(mode="traversal", k=3).retrieve(QUESTION)
    assert leaves and all(n.node.metadata["hrefine_layer"] == 0 for n in leaves)
    reached = {n.node.node_id for n in walk if n.node.metadata["hrefine_layer"] == 0}
    assert reached & {n.node.node_id for n in leaves}
    response = index.as_query_engine(llm=MockLLM(), mode="traversal", k=5).query(QUESTION)
    assert response.source_nodes


def test_persist_and_load_round_trip(
    index: RaptorIndex, embedder: Embedder, tmp_path: Path
) -> None:
    index.storage_context.persist(persist_dir=str(tmp_path))
    loaded = load_index_from_storage(
        StorageContext.from_defaults(persist_dir=str(tmp_path)), embed_model=embedder
    )
    assert isinstance(loaded, RaptorIndex)
    for kwargs in ({"max_tokens": BUDGET}, {"mode": "traversal", "k": 2}):
        want = index.as_retriever(**kwargs).retrieve(QUESTION)
        got = loaded.as_retriever(**kwargs).retrieve(QUESTION)
        assert [(n.node.node_id, n.score, n.node.get_content()) for n in got] == [
            (n.node.node_id, n.score, n.node.get_content()) for n in want
        ]
    assert loaded.ref_doc_info.keys() == index.ref_doc_info.keys() == {PAPER}


def test_aretrieve_inside_a_running_loop(index: RaptorIndex) -> None:
    retriever = index.as_retriever(max_tokens=BUDGET)

    async def ask() -> list[Any]:
        # two queries at once on one loop: the embedding runs in an executor, not on the loop
        first, second = await asyncio.gather(
            retriever.aretrieve(QUESTION),
            retriever.aretrieve("How many posts does the corpus hold?"),
        )
        assert second
        return first

    nodes = asyncio.run(ask())
    assert _text(nodes) == _text(retriever.retrieve(QUESTION))
    assert ANSWER in _text(nodes)


def test_retriever_and_query_engine_as_agent_tools(index: RaptorIndex) -> None:
    retriever_tool = RetrieverTool.from_defaults(
        retriever=index.as_retriever(max_tokens=BUDGET),
        name="paper_search",
        description="Search the paper; returns its passages and summaries.",
    )
    output = retriever_tool.call(QUESTION)
    assert ANSWER in output.content
    assert "hrefine_" not in output.content

    engine_tool = QueryEngineTool.from_defaults(
        query_engine=index.as_query_engine(llm=MockLLM(), max_tokens=BUDGET),
        name="paper_answers",
        description="Answer questions about the paper.",
    )
    assert ANSWER in engine_tool.call(QUESTION).content


def test_insert_a_second_paper_resummarises_only_its_ancestors(
    index: RaptorIndex, embedder: Embedder, shared_data: Path, tmp_path: Path
) -> None:
    index.storage_context.persist(persist_dir=str(tmp_path))
    llm = Summariser()
    grown = RaptorIndex.from_persist_dir(str(tmp_path), llm=llm, embed_model=embedder)
    before = {n.id: n.text for n in grown.raptor_tree.tree}
    other, items = _paper(shared_data, OTHER_PAPER)

    grown.insert(other)

    tree = grown.raptor_tree.tree
    new_leaves = [n.id for n in tree if n.id not in before and n.level == 0]
    above = {a for leaf in new_leaves for a in tree.ancestors(leaf)}
    changed = {i for i, text in before.items() if tree[i].text != text}
    made = {n.id for n in tree if n.id not in before and n.level > 0}
    assert new_leaves and changed
    assert changed | made <= above
    assert len(llm.prompts) == len(changed) + len(made)
    assert len(llm.prompts) < sum(1 for n in tree if n.level > 0)  # a rebuild: every one
    assert set(grown.ref_doc_info) == {PAPER, OTHER_PAPER}
    # a question on the new paper finds its text
    got = grown.as_retriever(k=5).retrieve(items[0].question)
    assert any(OTHER_PAPER in n.node.metadata["hrefine_sources"] for n in got)
