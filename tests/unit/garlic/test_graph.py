"""GarlicGraph: the graph the embedded SmolLM2 builds over a real HotpotQA item (attention
edges), the embedding-edge mode with a scripted LLM (batch packing, retries, parsing), bad
input and persistence."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hrefine._saved import content_digest
from hrefine.budget import get_counter
from hrefine.errors import (
    ConfigError,
    EmptyInputError,
    GenerationError,
    InputTypeError,
    ModelOutputError,
    PersistenceError,
)
from hrefine.garlic.graph import BATCH, SOURCE_ID, GarlicGraph
from hrefine.garlic.options import SUMMARY_PROMPT
from hrefine.garlic.points import parse_points
from hrefine.garlic.summarise import LocalWriter, one_line, summary_prompt
from hrefine.raptor.build import Source
from hrefine.testing import KeywordEmbedder, ScriptedLM
from hrefine.tree import NodeKind
from saved_files import array_path

SHORT = (
    "Victoria Hanley is an American young adult fantasy novelist. Her first three books are "
    "companion books to one another."
)


def inputs_of(prompt: str) -> list[str]:
    """The input lines of a summary prompt."""
    body = prompt.split("new line symbol.\n\n", 1)[1]
    return body.split("\n\nSplit your summary", 1)[0].split("\n")


def pairing_llm(prompt: str) -> str:
    """A preamble, then one bullet per two inputs (the first 12 words of the first)."""
    lines = inputs_of(prompt)
    bullets = ["* " + " ".join(lines[k].split()[:12]) for k in range(0, len(lines), 2)]
    return "Here are the summary points:\n" + "\n".join(bullets)


def vectors_of(graph: GarlicGraph) -> np.ndarray:
    """The graph's node vectors."""
    vectors = graph.tree.embeddings
    assert vectors is not None
    return vectors


def batches_of(graph: GarlicGraph, level: int) -> list[list[int]]:
    """The points of ``level`` grouped by the batch that wrote them, in batch order."""
    groups: dict[int, list[int]] = {}
    for node in graph.tree.at_level(level):
        meta = graph.tree[node].metadata[BATCH]
        assert meta[0] == level
        groups.setdefault(meta[1], []).append(node)
    return [groups[k] for k in sorted(groups)]


def check_structure(graph: GarlicGraph) -> None:
    """Weights sum to 1; each batch's points link to exactly one run of consecutive inputs,
    and the runs of a level cover the level below in document order."""
    tree = graph.tree
    for level in range(1, graph.levels + 1):
        below = tree.at_level(level - 1)
        runs: list[int] = []
        for points in batches_of(graph, level):
            inputs = tree.sort_by_order(tree[points[0]].children)
            for p in points:
                assert tree.sort_by_order(tree[p].children) == inputs
                total = sum(tree.weight(p, c) for c in inputs)
                assert total == pytest.approx(1.0, abs=1e-6)
                assert all(tree.weight(p, c) >= 0 for c in inputs)
            runs.extend(inputs)
        assert runs == below  # batches are consecutive, disjoint and cover the level
    parents, children, weights = graph.edge_arrays()
    assert len(parents) == len(children) == len(weights) == sum(1 for _ in tree.edges())
    assert all(
        tree[int(p)].level == tree[int(c)].level + 1 for p, c in zip(parents, children, strict=True)
    )


# -- the embedded SmolLM2: attention edges --------------------------------------------------


@pytest.mark.lm
def test_smollm2_builds_levels_up_to_one_batch(smol_graph: tuple[GarlicGraph, float]) -> None:
    graph, seconds = smol_graph
    stats = graph.stats
    assert stats["edge_mode"] == graph.edge_mode == "attention"
    sizes = stats["nodes_per_level"]
    assert len(sizes) == graph.levels + 1 >= 3
    assert all(a > b for a, b in itertools.pairwise(sizes))  # every level shrinks
    assert stats["stopped_by"] == "single_batch" and stats["batches_per_level"][-1] == 1
    assert stats["batches_per_level"][0] >= 2
    assert graph.top_level() == graph.tree.at_level(graph.levels)
    assert stats["calls"] == sum(stats["batches_per_level"]) and stats["retries"] == 0
    check_structure(graph)
    # Every node below the top has a parent; every node is embedded.
    top = set(graph.top_level())
    assert all(n.parents for n in graph.tree if n.id not in top)
    assert bool(np.all(graph.tree.embedding_mask))
    print(f"SmolLM2 GARLIC build: {seconds:.1f} s, {sizes} nodes per level")


@pytest.mark.lm
def test_attention_weights_are_measured_on_the_prompt_the_model_saw(
    smol_graph: tuple[GarlicGraph, float],
) -> None:
    from lm_fixture import load_default_lm

    graph, _ = smol_graph
    lm = load_default_lm()
    writer = LocalWriter(lm, graph.options)
    lines = [one_line(graph.tree[i].text) for i in graph.tree.at_level(0)[:3]]
    prompt = summary_prompt(graph.options.summary_prompt, lines)
    # The replayed pieces are the templated prompt generate() ran.
    assert lm.chat_prompt(prompt) == writer.head + "\n".join(lines) + writer.tail
    # Attention is not spread evenly: some point attends to one input more than the others.
    spread = [
        np.ptp([graph.tree.weight(p, c) for c in graph.tree[p].children])
        for p in graph.tree.at_level(1)
    ]
    assert max(spread) > 0.05
    assert graph.stats["attention_tokens"] > 0


@pytest.mark.lm
def test_leaves_point_back_into_their_sources(
    smol_graph: tuple[GarlicGraph, float], paragraphs: list[Source]
) -> None:
    graph, _ = smol_graph
    covered = [0] * len(paragraphs)
    for order, leaf in enumerate(graph.tree.at_level(0)):
        node = graph.tree[leaf]
        assert node.kind == NodeKind.CHUNK and node.order == order
        meta = node.metadata
        source = paragraphs[meta["hrefine_source"]]
        assert meta[SOURCE_ID] == source.id and meta["title"] == source.metadata["title"]
        text = source.text[meta["hrefine_start"] : meta["hrefine_end"]]
        assert text.split() == node.text.split()
        covered[meta["hrefine_source"]] += len(text.split())
    assert covered == [len(p.text.split()) for p in paragraphs]  # no text lost


@pytest.mark.lm
def test_same_seed_builds_the_same_graph(embedder: Any) -> None:
    from lm_fixture import load_default_lm

    lm = load_default_lm()
    first = GarlicGraph.build([SHORT], lm=lm, embedder=embedder, summary_tokens=32)
    again = GarlicGraph.build([SHORT], lm=lm, embedder=embedder, summary_tokens=32)
    assert first.tree.to_dict() == again.tree.to_dict()
    assert np.array_equal(vectors_of(first), vectors_of(again))
    # Shorter than one chunk: one leaf, still one summary level above it.
    assert first.stats["nodes_per_level"][0] == 1 and first.levels == 1
    # The same LocalLM with embedding edges writes the same points.
    other = GarlicGraph.build(
        [SHORT], lm=lm, embedder=embedder, summary_tokens=32, edges="embedding"
    )
    assert other.stats["edge_mode"] == "embedding" and other.stats["attention_tokens"] == 0
    texts = [[g.tree[i].text for i in g.top_level()] for g in (first, other)]
    assert texts[0] == texts[1]


@pytest.mark.lm
def test_saved_graph_loads_back_the_same(
    smol_graph: tuple[GarlicGraph, float], tmp_path: Path, embedder: Any
) -> None:
    graph, _ = smol_graph
    loaded = GarlicGraph.load(graph.save(tmp_path / "g"), embedder=embedder)
    assert loaded.tree.to_dict() == graph.tree.to_dict()
    assert np.array_equal(vectors_of(loaded), vectors_of(graph))
    assert loaded.options == graph.options
    for a, b in zip(loaded.edge_arrays(), graph.edge_arrays(), strict=True):
        assert np.array_equal(a, b)
    assert loaded.top_level() == graph.top_level() and loaded.edge_mode == "attention"


# -- any str -> str LLM: embedding edges ----------------------------------------------------


def test_embedding_mode_packs_batches_within_the_limit(hotpot_item: Any, embedder: Any) -> None:
    llm = ScriptedLM(pairing_llm)
    settings: dict[str, Any] = {"chunk_tokens": 64, "batch_tokens": 400, "summary_tokens": 48}
    graph = GarlicGraph.build([hotpot_item.document], lm=llm, embedder=embedder, **settings)
    counter = get_counter(None)
    room = settings["batch_tokens"] - settings["summary_tokens"]
    tree, stats = graph.tree, graph.stats
    assert stats["edge_mode"] == "embedding" and stats["calls"] == len(llm.prompts)
    assert stats["batches_per_level"][0] >= 4 and stats["stopped_by"] == "single_batch"
    check_structure(graph)
    for level in range(1, graph.levels + 1):
        below = tree.at_level(level - 1)
        for points in batches_of(graph, level):
            inputs = tree.sort_by_order(tree[points[0]].children)
            lines = [one_line(tree[i].text) for i in inputs]
            prompt = summary_prompt(SUMMARY_PROMPT, lines)
            assert prompt in llm.prompts
            assert counter.count(prompt) <= room  # never over batch_tokens
            after = below.index(inputs[-1]) + 1
            if after < len(below):  # greedy: the next node would not have fitted
                more = [*lines, one_line(tree[below[after]].text)]
                assert counter.count(summary_prompt(SUMMARY_PROMPT, more)) > room
            # The points are the bullets written (the preamble line dropped).
            assert [tree[p].text for p in points] == [
                p.text for p in parse_points(pairing_llm(prompt))
            ]
            # e_ij = max(cos, 0), normalised over the batch.
            vectors = tree.embeddings
            assert vectors is not None
            for p in points:
                cos = np.clip(vectors[inputs] @ vectors[p], 0, None)
                got = [tree.weight(p, c) for c in inputs]
                assert np.allclose(got, cos / cos.sum(), atol=1e-5)
    # Points keep document order: sorted by order, each level reads as its batches wrote it.
    for level in range(1, graph.levels + 1):
        assert tree.at_level(level) == [p for b in batches_of(graph, level) for p in b]


@pytest.mark.parametrize(
    ("llm", "settings", "stopped_by"),
    [
        (pairing_llm, {"max_levels": 1}, "max_levels"),
        (lambda p: "\n".join(f"* {line}" for line in inputs_of(p)), {}, "no_shrink"),
    ],
)
def test_the_build_stops_where_levels_stop_helping(
    hotpot_item: Any,
    embedder: Any,
    llm: Any,
    settings: dict[str, Any],
    stopped_by: str,
) -> None:
    graph = GarlicGraph.build(
        [hotpot_item.document],
        lm=ScriptedLM(llm),
        embedder=embedder,
        chunk_tokens=64,
        batch_tokens=400,
        summary_tokens=48,
        **settings,
    )
    assert graph.levels == 1 and graph.stats["stopped_by"] == stopped_by
    assert graph.stats["batches_per_level"][0] > 1
    assert graph.tree.metadata["stopped_by"] == stopped_by
    check_structure(graph)


def test_a_node_too_long_for_any_batch_is_summarised_alone(hotpot_item: Any, embedder: Any) -> None:
    # 300-token leaves and the prompt's own ~120 tokens overflow a 352-token room.
    llm = ScriptedLM(pairing_llm)
    graph = GarlicGraph.build(
        [hotpot_item.document],
        lm=llm,
        embedder=embedder,
        chunk_tokens=300,
        batch_tokens=400,
        summary_tokens=48,
    )
    first = graph.stats["batches_per_level"][0]
    assert graph.stats["oversized_batches"] >= 1 and first == graph.stats["nodes_per_level"][0]
    assert all(len(graph.tree[p].children) == 1 for p in graph.tree.at_level(1))


def test_a_garbled_answer_is_asked_again(embedder: Any) -> None:
    llm = ScriptedLM(["", "* Victoria Hanley writes young adult fantasy."])
    graph = GarlicGraph.build([SHORT], lm=llm, embedder=embedder)
    assert graph.stats["calls"] == 2 and graph.stats["retries"] == 1
    assert [graph.tree[i].text for i in graph.top_level()] == [
        "Victoria Hanley writes young adult fantasy."
    ]


def test_still_garbled_after_retries_is_a_generation_error(embedder: Any) -> None:
    raw = "***\n- \n"
    llm = ScriptedLM(["", raw])
    with pytest.raises(GenerationError, match="batch 1 of 1 at level 1") as info:
        GarlicGraph.build([SHORT], lm=llm, embedder=embedder, retries=1)
    cause = info.value.__cause__
    assert isinstance(cause, ModelOutputError) and cause.raw_output == raw
    assert len(llm.prompts) == 2


def test_an_answer_without_bullets_gives_its_lines_as_points(embedder: Any) -> None:
    answer = "Summary:\nVictoria Hanley writes fantasy.\n\nHer first three books are companions."
    graph = GarlicGraph.build([SHORT], lm=ScriptedLM([answer]), embedder=embedder)
    assert [graph.tree[i].text for i in graph.top_level()] == [
        "Victoria Hanley writes fantasy.",
        "Her first three books are companions.",
    ]
    # One leaf, shorter than a chunk: one summary level, each point over it.
    (leaf,) = graph.tree.at_level(0)
    assert graph.levels == 1 and sorted(graph.tree[leaf].parents) == graph.top_level()
    assert all(graph.tree.weight(p, leaf) == pytest.approx(1.0) for p in graph.top_level())


@pytest.mark.parametrize(
    ("answer", "points"),
    [
        ("* one\n* two", ["one", "two"]),
        ("Here you go:\n- one\n• two\n1. three\n2) four", ["one", "two", "three", "four"]),
        ("* a long point\n  that wraps\n* next", ["a long point that wraps", "next"]),
        ("**Bold heading**\nA line.", ["**Bold heading**", "A line."]),
        ("* same\n* same\n* other", ["same", "other"]),
        ("", []),
        ("***\n- \n  \n", []),
        ("Summary:", []),
    ],
)
def test_summary_points_are_parsed(answer: str, points: list[str]) -> None:
    parsed = parse_points(answer)
    assert [p.text for p in parsed] == points
    for p in parsed:  # each span holds its point's words
        assert " ".join(answer[p.start : p.end].split()).endswith(p.text)


def test_progress_gets_a_line_per_level(embedder: Any) -> None:
    lines: list[str] = []
    GarlicGraph.build(
        [SHORT], lm=ScriptedLM(["* a point"]), embedder=embedder, progress=lines.append
    )
    assert lines == ["level 1: summarising 1 nodes in 1 batches"]


# -- bad input ------------------------------------------------------------------------------


@pytest.mark.parametrize("documents", [[], ["", "  \n\t "]])
def test_no_text_is_an_empty_input_error(documents: list[str], embedder: Any) -> None:
    with pytest.raises(EmptyInputError, match="empty"):
        GarlicGraph.build(documents, lm=ScriptedLM(["* x"]), embedder=embedder)


def test_bad_arguments_are_refused(embedder: Any) -> None:
    with pytest.raises(InputTypeError, match="documents"):
        GarlicGraph.build(42, lm=ScriptedLM(["* x"]), embedder=embedder)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="edges='attention' needs a LocalLM"):
        GarlicGraph.build([SHORT], lm=ScriptedLM(["* x"]), embedder=embedder, edges="attention")


def test_empty_documents_among_others_are_skipped(embedder: Any) -> None:
    docs = [Source("", id="blank"), Source(SHORT, {"k": 1}, id="hanley")]
    graph = GarlicGraph.build(docs, lm=ScriptedLM(["* a point"]), embedder=embedder)
    (leaf,) = graph.tree.at_level(0)
    meta = graph.tree[leaf].metadata
    assert (meta["hrefine_source"], meta[SOURCE_ID], meta["k"]) == (1, "hanley", 1)
    assert graph.tree.metadata["empty_sources"] == [0]


@pytest.mark.parametrize("doc", ["\u200b\u200b", "--- *** ---", "\U0001f600\U0001f600 \U0001f44d"])
def test_a_document_with_no_letter_builds_without_a_model(doc: str) -> None:
    # Was a GenerationError telling to "use a model that follows the summary prompt".
    graph = GarlicGraph.build([doc], embedder=KeywordEmbedder(), tokenizer="regex")
    assert graph.stats["retries"] == 0
    assert [graph.tree[i].text for i in graph.top_level()] == [doc]
    assert graph.tree[graph.tree.at_level(0)[0]].text == doc


def test_no_letter_points_from_an_llm_are_still_retried() -> None:
    llm = ScriptedLM(["* \u200b", "* \u200b"])
    with pytest.raises(GenerationError, match="no summary point"):
        GarlicGraph.build(["\u200b"], lm=llm, embedder=KeywordEmbedder(), retries=1)


def test_a_tampered_save_is_a_persistence_error(tmp_path: Path, embedder: Any) -> None:
    graph = GarlicGraph.build([SHORT], lm=ScriptedLM(["* a\n* b"]), embedder=embedder)
    folder = graph.save(tmp_path / "g")
    assert GarlicGraph.load(folder).tree.to_dict() == graph.tree.to_dict()
    # An edited array fails its checksum.
    array = array_path(folder, "embeddings")
    data = bytearray(array.read_bytes())
    data[-1] ^= 0xFF
    array.write_bytes(bytes(data))
    with pytest.raises(PersistenceError):
        GarlicGraph.load(folder)
    # An edited text or weight fails the manifest's content checksum.
    folder = graph.save(tmp_path / "h")
    manifest = folder / "tree.json"
    saved = json.loads(manifest.read_text())
    for path, value in ((("nodes", 0, "text"), "forged text"), (("edges", 0, 2), 0.5)):
        edited = json.loads(json.dumps(saved))
        edited["tree"][path[0]][path[1]][path[2]] = value
        manifest.write_text(json.dumps(edited))
        with pytest.raises(PersistenceError, match="edited after it was saved"):
            GarlicGraph.load(folder)
    # A forger who also rewrites the checksum still meets the graph's own checks.
    edited = json.loads(json.dumps(saved))
    edited["tree"]["edges"][0][2] = 0.5
    edited["content_sha256"] = content_digest(edited)
    manifest.write_text(json.dumps(edited))
    with pytest.raises(PersistenceError, match="do not sum to 1"):
        GarlicGraph.load(folder)


def test_a_saved_raptor_tree_is_not_a_garlic_graph(tmp_path: Path, embedder: Any) -> None:
    from hrefine.raptor import RaptorTree

    tree = RaptorTree.build([SHORT], llm=ScriptedLM(["a summary"], cycle=True), embedder=embedder)
    with pytest.raises(PersistenceError, match="'garlic'"):
        GarlicGraph.load(tree.save(tmp_path / "r"))
