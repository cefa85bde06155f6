"""Building a RAPTOR tree on a real paper: layers, provenance, determinism, the reference's
defects (sequential summaries, error text stored as a summary, crashes on tiny input, an echoing
LLM that never finishes) and bad input."""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pytest
from hrefine.errors import EmptyInputError, GenerationError, InputTypeError
from hrefine.raptor import RaptorTree, Source
from hrefine.testing import KeywordEmbedder
from hrefine.tree import NodeKind
from raptor_fakes import Summariser, summary_of


def test_layers_of_summaries_over_100_token_leaves(built: RaptorTree) -> None:
    tree = built.tree
    leaves = [n for n in tree if n.kind == NodeKind.CHUNK]
    assert len(leaves) > 20
    assert all(n.metadata["hrefine_tokens"] <= 104 for n in leaves)
    assert built.layers >= 2
    # Each layer is smaller than the one below, and ends in a single root.
    sizes = built.stats["nodes_per_layer"]
    assert sizes == sorted(sizes, reverse=True) and sizes[-1] == 1
    for node in tree:
        if node.kind == NodeKind.SUMMARY:
            kids = [tree[c] for c in node.children]
            assert kids and all(k.level == node.level - 1 for k in kids)
            # The summary is what the LLM said about exactly its children, in document order.
            texts = [tree[c].text for c in tree.sort_by_order(node.children)]
            prompt = built.options.prompt.replace("{context}", "\n\n".join(texts))
            assert node.text == summary_of(prompt)
    assert bool(np.all(tree.embedding_mask))
    # One LLM call per summary: the fake was asked each time.
    assert built.stats["llm_calls"] == sum(sizes[1:]) > 0


def test_the_no_model_stand_in_makes_no_llm_calls(qasper_doc: Any, embedder: Any) -> None:
    # Its extracts were counted as LLM calls in the build statistics (and so in eval's
    # llm_calls column and the report page); no model wrote them.
    tree = RaptorTree.build([qasper_doc.document], embedder=embedder, chunk_tokens=200)
    assert tree.summariser.extractive and tree.layers >= 1
    assert tree.summariser.calls >= sum(tree.stats["nodes_per_layer"][1:])  # it did summarise
    assert tree.stats["llm_calls"] == 0


def test_leaves_point_back_into_their_document(built: RaptorTree, qasper_doc: Any) -> None:
    doc = qasper_doc.document
    covered = 0
    for node in built.tree:
        if node.kind == NodeKind.CHUNK:
            start, end = node.metadata["hrefine_start"], node.metadata["hrefine_end"]
            assert node.metadata["hrefine_source"] == 0
            assert doc[start:end].split() == node.text.split()
            covered += len(doc[start:end].split())
    assert covered == len(doc.split())  # no text lost


def test_same_seed_builds_the_same_tree(qasper_doc: Any, embedder: Any, built: RaptorTree) -> None:
    again = RaptorTree.build([qasper_doc.document], llm=Summariser(), embedder=embedder)
    assert again.tree.to_dict() == built.tree.to_dict()
    assert np.array_equal(again.tree.embeddings, built.tree.embeddings)


def test_summaries_of_a_layer_run_concurrently_and_embeddings_in_batches(
    qasper_doc: Any,
) -> None:
    llm = Summariser(delay=0.05)
    embed_calls: list[int] = []
    base = KeywordEmbedder(dim=64)

    class Counting:
        def embed(self, texts: list[str]) -> np.ndarray:
            embed_calls.append(len(texts))
            return base.embed(texts)

        def embed_query(self, text: str) -> np.ndarray:
            return base.embed_query(text)

    tree = RaptorTree.build([qasper_doc.document], llm=llm, embedder=Counting())
    first_layer = tree.stats["clusters_per_layer"][0]
    assert first_layer >= 3
    assert llm.most_in_flight >= min(first_layer, tree.options.llm_concurrency) - 1 > 1
    # One embedding call for the leaves and one per layer of summaries.
    assert len(embed_calls) == 1 + tree.layers


def test_an_llm_that_raises_is_an_error_not_a_summary(qasper_doc: Any, embedder: Any) -> None:
    llm = Summariser(fail=True)
    with pytest.raises(GenerationError, match="the service is down"):
        RaptorTree.build([qasper_doc.document], llm=llm, embedder=embedder, llm_retries=1)
    assert len(llm.prompts) % 2 == 0  # each cluster tried twice


def test_an_empty_answer_is_retried_then_kept_only_when_real(
    qasper_doc: Any, embedder: Any
) -> None:
    llm = Summariser(empty=2)
    tree = RaptorTree.build([qasper_doc.document], llm=llm, embedder=embedder, llm_retries=2)
    assert all(n.text.strip() for n in tree.tree)
    never = Summariser(empty=10_000)
    with pytest.raises(GenerationError, match="empty summary"):
        RaptorTree.build([qasper_doc.document], llm=never, embedder=embedder, llm_retries=1)


def test_an_llm_that_hangs_times_out(qasper_doc: Any, embedder: Any) -> None:
    slow = Summariser(delay=5.0)
    with pytest.raises(GenerationError, match="timed out"):
        RaptorTree.build(
            [qasper_doc.document], llm=slow, embedder=embedder, llm_timeout=0.2, llm_retries=0
        )


def test_an_echoing_llm_still_finishes(qasper_doc: Any, embedder: Any) -> None:
    # The LlamaIndex pack never finishes with a mock LLM that echoes its prompt.
    tree = RaptorTree.build([qasper_doc.document], llm=lambda p: p, embedder=embedder)
    assert 1 <= tree.layers <= tree.options.max_layers


def test_a_long_text_is_one_of_many_documents(embedder: Any) -> None:
    docs = [
        Source("Cats purr when content. They sleep for most of the day.", {"title": "cats"}, "c"),
        Source("", {"title": "empty"}, "e"),
        Source("Rust has ownership and borrowing. Its compiler checks lifetimes.", {}, "r"),
    ]
    tree = RaptorTree.build(docs, llm=Summariser(), embedder=embedder)
    leaves = [n for n in tree.tree if n.kind == NodeKind.CHUNK]
    assert [n.metadata["hrefine_source"] for n in leaves] == [0, 2]
    assert leaves[0].metadata["title"] == "cats"
    assert tree.tree.metadata["empty_sources"] == [1]
    assert tree.tree.metadata["sources"] == ["c", "e", "r"]
    assert tree.layers == 1  # two leaves summarised into one root


def test_one_short_document_is_a_tree_of_one_leaf(embedder: Any) -> None:
    llm = Summariser()
    tree = RaptorTree.build(["Only one sentence here."], llm=llm, embedder=embedder)
    assert len(tree) == 1 and tree.layers == 0 and llm.prompts == []
    (hit,) = tree.retrieve("sentence")
    assert hit.text == "Only one sentence here." and hit.layer == 0


@pytest.mark.parametrize("docs", [[], [""], ["  \n\t "], ["", "   "]])
def test_an_empty_corpus_is_a_clear_error(docs: list[str], embedder: Any) -> None:
    with pytest.raises(EmptyInputError, match="empty"):
        RaptorTree.build(docs, llm=Summariser(), embedder=embedder)


@pytest.mark.parametrize("docs", [[1, 2], [None], "a", [b"bytes"]])
def test_wrong_input_types(docs: Any, embedder: Any) -> None:
    if isinstance(docs, str):  # one string is one document
        assert RaptorTree.build(docs, llm=Summariser(), embedder=embedder).layers == 0
        return
    with pytest.raises(InputTypeError):
        RaptorTree.build(docs, llm=Summariser(), embedder=embedder)


def test_thousands_of_duplicate_chunks_build_a_small_tree(embedder: Any) -> None:
    text = "\n\n".join(["The same paragraph about tides and the moon, again."] * 2000)
    llm = Summariser()
    tree = RaptorTree.build([text], llm=llm, embedder=embedder)
    leaves = [n for n in tree.tree if n.kind == NodeKind.CHUNK]
    assert sum(len(n.text) for n in leaves) >= 2000 * 40  # nothing dropped
    assert tree.layers >= 1
    assert len(llm.prompts) < len(leaves)  # summaries cover many leaves each


def test_async_build_inside_a_running_loop(
    qasper_doc: Any, embedder: Any, built: RaptorTree
) -> None:
    async def main() -> RaptorTree:
        return await RaptorTree.abuild([qasper_doc.document], llm=Summariser(), embedder=embedder)

    tree = asyncio.run(main())  # the test drives the loop; the library never calls asyncio.run
    assert tree.tree.to_dict() == built.tree.to_dict()


def test_an_async_llm_is_awaited(embedder: Any) -> None:
    seen: list[str] = []

    async def llm(prompt: str) -> str:
        await asyncio.sleep(0)
        seen.append(prompt)
        return "A summary of two facts."

    async def main() -> RaptorTree:
        return await RaptorTree.abuild(
            ["Fact one is here.\n\nFact two is there."] * 2,
            llm=llm,
            embedder=embedder,
            chunk_tokens=8,
        )

    tree = asyncio.run(main())
    assert seen and any(n.text == "A summary of two facts." for n in tree.tree)


def test_a_long_summary_is_embedded_in_full(embedder: Any) -> None:
    from hrefine.raptor.build import EMBED_WINDOW, embed_in_full

    head = " ".join(f"alpha{i}" for i in range(EMBED_WINDOW))
    tail = " ".join(["volcanoes erupt lava and ash over the island villages"] * 30)
    full, cut = embed_in_full(embedder, [head + " " + tail, head])
    assert float(full @ cut) < 0.95  # the tail moved the vector: it was read
    assert abs(float(np.linalg.norm(full)) - 1.0) < 1e-5


def test_a_wrapped_llm_that_answers_empty_is_asked_again(embedder: Any) -> None:
    from hrefine.models.text_generator import TextGenerator

    answers = iter(["", " ", "Two facts, summarised."])
    gen = TextGenerator(lambda p: next(answers), retries=0)
    tree = RaptorTree.build(
        ["Fact one is here.\n\nFact two is there."], llm=gen, embedder=embedder, chunk_tokens=8
    )
    assert any(n.text == "Two facts, summarised." for n in tree.tree)


def test_an_object_with_an_async_call_is_awaited(embedder: Any) -> None:
    class Service:
        async def __call__(self, prompt: str) -> str:
            await asyncio.sleep(0)
            return "Both facts, summarised by a service."

    tree = RaptorTree.build(
        ["Fact one is here.\n\nFact two is there."],
        llm=Service(),
        embedder=embedder,
        chunk_tokens=8,
    )
    assert any(n.text == "Both facts, summarised by a service." for n in tree.tree)
