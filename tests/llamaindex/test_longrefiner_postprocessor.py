"""LongRefinerNodePostprocessor on real long documents (CUAD contracts, a Qasper paper) with the
embedded embedder: LlamaIndex contract, copies not mutations, budgets, prompt-only mode."""

from __future__ import annotations

import asyncio
import copy
import json
import pickle
from pathlib import Path
from typing import Any

import pytest
from hrefine.budget import get_counter
from hrefine.errors import BudgetTooSmallError, ConfigError, EmptyInputError, InputTypeError
from hrefine.eval.loaders import EvalItem
from hrefine.longrefiner import LongRefinerOptions
from hrefine.models import Embedder
from llama_index.core.llms import (
    CompletionResponse,
    CompletionResponseGen,
    CustomLLM,
    LLMMetadata,
)
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.postprocessor import SimilarityPostprocessor
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import MetadataMode, NodeWithScore, TextNode
from lr_data import (
    ANNOTATORS,
    CONTRACT,
    RENEWAL,
    contracts,
    cuad_item,
    has_answer,
    in_document_order,
    qasper_item,
)
from pydantic import Field, ValidationError

import llamaindex_hrefine
from llamaindex_hrefine import LongRefinerNodePostprocessor

#: A question about the paper as a whole (step 1 should call it global).
OVERVIEW = "What is this paper about, and how was its dataset built?"
#: The sections the scripted model chooses in step 3 (titles of the paper's outline).
CHOSEN = ["Data Collection", "Conclusion and Future Work"]


class ScriptedLLM(CustomLLM):
    """A LlamaIndex LLM that gives its answers in order and records each prompt."""

    answers: list[str] = Field(default_factory=list)
    prompts: list[str] = Field(default_factory=list)

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="scripted")

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        self.prompts.append(prompt)
        return CompletionResponse(text=self.answers[(len(self.prompts) - 1) % len(self.answers)])

    @llm_completion_callback()
    def stream_complete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponseGen:
        msg = "streaming is not used by LongRefiner"
        raise NotImplementedError(msg)


@pytest.fixture(scope="module")
def renewal(shared_data: Path) -> EvalItem:
    return cuad_item(shared_data, RENEWAL)


@pytest.fixture(scope="module")
def paper(shared_data: Path) -> EvalItem:
    return qasper_item(shared_data, ANNOTATORS)


@pytest.fixture(scope="module")
def corpus(shared_data: Path) -> dict[str, str]:
    return contracts(shared_data)


def _nodes(corpus: dict[str, str], paper: EvalItem) -> list[NodeWithScore]:
    """Two contracts and the paper as scored nodes, with nested metadata (to check copying)."""
    texts = {CONTRACT: corpus[CONTRACT], "cuad_02": corpus["cuad_02"], "qasper_01": paper.document}
    return [
        NodeWithScore(
            node=TextNode(
                text=text,
                id_=name,
                metadata={"source": f"{name}.txt", "tags": ["leval", name]},
                excluded_llm_metadata_keys=["tags"],
            ),
            score=0.9 - i / 10,
        )
        for i, (name, text) in enumerate(texts.items())
    ]


def _post(embedder: Embedder, **fields: Any) -> LongRefinerNodePostprocessor:
    return LongRefinerNodePostprocessor(embed_model=embedder, **fields)


def _dump(nodes: list[NodeWithScore]) -> list[dict[str, Any]]:
    return [n.model_dump() for n in nodes]


def test_is_a_node_postprocessor_with_a_stable_name() -> None:
    assert BaseNodePostprocessor in LongRefinerNodePostprocessor.__mro__
    assert "LongRefinerNodePostprocessor" in llamaindex_hrefine.__all__
    post = LongRefinerNodePostprocessor(max_tokens=300)
    assert LongRefinerNodePostprocessor.class_name() == "LongRefinerNodePostprocessor"
    data = post.to_dict()
    assert data["class_name"] == "LongRefinerNodePostprocessor" and data["max_tokens"] == 300


def test_every_refiner_setting_is_a_described_field_that_reaches_the_refiner(
    embedder: Embedder,
) -> None:
    settings = set(LongRefinerOptions.names()) - LongRefinerOptions.adapter_excluded
    fields = LongRefinerNodePostprocessor.model_fields
    assert settings <= set(fields)
    for name in (*settings, "lm", "llm", "embed_model", "tokenizer", "max_tokens", "top_n"):
        assert fields[name].description, name
    assert fields["max_tokens"].default == 2048
    post = _post(embedder, leaf_tokens=100)
    first = post.refiner
    assert first.options.leaf_tokens == 100 and first.options.embedder is embedder
    post.scorer = "bm25"
    # The embed model would be ignored by BM25: refused, as the HtmlRAG postprocessor does.
    with pytest.raises(ConfigError, match="an embedder was given with scorer='bm25'"):
        _ = post.refiner
    post.embed_model = None
    assert post.refiner is not first and post.refiner.options.scorer == "bm25"


def test_bad_settings_fail_at_construction() -> None:
    for bad in (0, True, 2.5):
        with pytest.raises(ValidationError, match="max_tokens"):
            LongRefinerNodePostprocessor(max_tokens=bad)
    # The core's ConfigError (a ValueError) names the setting and what it takes.
    with pytest.raises(ValueError, match="global_selection must be one of"):
        LongRefinerNodePostprocessor(global_selection="always")
    with pytest.raises(InputTypeError, match="as LongRefiner's llm"):
        LongRefinerNodePostprocessor(llm="gpt-4o")


def test_no_nodes_give_no_nodes_even_without_a_query() -> None:
    assert LongRefinerNodePostprocessor().postprocess_nodes([]) == []


async def test_a_missing_query_is_a_clear_value_error(paper: EvalItem) -> None:
    nodes = [NodeWithScore(node=TextNode(text=paper.document))]
    with pytest.raises(ValueError, match="needs the query"):
        LongRefinerNodePostprocessor().postprocess_nodes(nodes)
    with pytest.raises(ValueError, match="needs the query"):
        await LongRefinerNodePostprocessor().apostprocess_nodes(nodes)


@pytest.mark.parametrize("tokenizer", [None, "cl100k_base"])
def test_shared_budget_is_met_in_the_given_tokenizer(
    embedder: Embedder,
    corpus: dict[str, str],
    paper: EvalItem,
    renewal: EvalItem,
    tokenizer: str | None,
) -> None:
    counter = get_counter(tokenizer)
    post = _post(embedder, max_tokens=500, tokenizer=tokenizer)
    out = post.postprocess_nodes(_nodes(corpus, paper), query_str=renewal.question)
    texts = [n.node.get_content(metadata_mode=MetadataMode.NONE) for n in out]
    counts = [counter.count(t) for t in texts]
    assert counts == [n.node.metadata["hrefine_tokens"] for n in out]
    assert 400 < sum(counts) <= 500
    assert counter.count("\n\n".join(texts)) <= 500
    assert {n.node.metadata["hrefine_tokenizer"] for n in out} == {counter.name}


def test_nodes_are_not_mutated_and_outputs_are_copies_in_document_order(
    embedder: Embedder, corpus: dict[str, str], paper: EvalItem, renewal: EvalItem
) -> None:
    nodes = _nodes(corpus, paper)
    nodes[0].node.embedding = [0.5, 0.5]
    before = _dump(nodes)
    out = _post(embedder, max_tokens=1024).postprocess_nodes(nodes, query_str=renewal.question)
    assert _dump(nodes) == before
    sources = {n.node.node_id: n.node.get_content() for n in nodes}
    for item in out:
        assert all(item.node is not n.node for n in nodes)
        assert item.node.embedding is None
        text = item.node.get_content(metadata_mode=MetadataMode.NONE)
        assert in_document_order(text, sources[item.node.node_id])
        assert len(text) < len(sources[item.node.node_id])


def test_outputs_carry_the_relevance_and_hidden_hrefine_metadata(
    embedder: Embedder, corpus: dict[str, str], paper: EvalItem, renewal: EvalItem
) -> None:
    nodes = _nodes(corpus, paper)
    out = _post(embedder, max_tokens=1024).postprocess_nodes(nodes, query_str=renewal.question)
    contract = next(n for n in out if n.node.node_id == CONTRACT)
    assert has_answer(contract.node.get_content(), renewal)
    meta = contract.node.metadata
    assert contract.score == meta["relevance_score"] and 0.0 < contract.score <= 1.0
    assert meta["hrefine_input_score"] == pytest.approx(0.9)
    assert meta["source"] == f"{CONTRACT}.txt" and meta["hrefine_structure"] == "numbered"
    assert meta["hrefine_method"] == "longrefiner"
    assert any("TERM" in t.upper() for t in meta["hrefine_sections_kept"])
    assert meta["hrefine_query_type"]["source"] == "off"
    assert meta["hrefine_dropped_documents"] == len(nodes) - len(out)
    for item in out:
        llm_view = item.node.get_content(metadata_mode=MetadataMode.LLM)
        embed_view = item.node.get_content(metadata_mode=MetadataMode.EMBED)
        assert "hrefine_" not in llm_view and "relevance_score" not in llm_view
        assert "hrefine_" not in embed_view
        assert "tags" not in llm_view  # the input's own exclusions are kept


def test_scores_order_the_nodes_and_compose_with_a_similarity_cutoff(
    embedder: Embedder, corpus: dict[str, str], paper: EvalItem
) -> None:
    nodes = _nodes(corpus, paper)
    out = _post(embedder, max_tokens=1500).postprocess_nodes(nodes, query_str=paper.question)
    scores = [n.score for n in out]
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]
    assert out[0].node.node_id == "qasper_01" and has_answer(out[0].node.get_content(), paper)
    best = out[0].score
    assert best is not None
    kept = SimilarityPostprocessor(similarity_cutoff=best - 1e-9).postprocess_nodes(out)
    assert [n.node.node_id for n in kept] == ["qasper_01"]


def test_top_n_and_input_order(embedder: Embedder, corpus: dict[str, str], paper: EvalItem) -> None:
    nodes = _nodes(corpus, paper)
    (top,) = _post(embedder, max_tokens=600, top_n=1).postprocess_nodes(
        nodes, query_str=paper.question
    )
    assert top.node.node_id == "qasper_01" and has_answer(top.node.get_content(), paper)
    assert top.node.metadata["hrefine_dropped_documents"] == len(nodes) - 1
    same = _post(embedder, max_tokens=1500, keep_input_order=True).postprocess_nodes(
        nodes, query_str=paper.question
    )
    order = [n.node.node_id for n in nodes]
    ids = [n.node.node_id for n in same]
    assert ids == sorted(ids, key=order.index) and len(ids) > 1


def test_prompt_only_mode_asks_a_llamaindex_llm(embedder: Embedder, paper: EvalItem) -> None:
    llm = ScriptedLLM(answers=["[Global]", json.dumps(CHOSEN)])
    post = _post(embedder, max_tokens=600, llm=llm)
    node = TextNode(text=paper.document, metadata={"title": "OLID"})
    (out,) = post.postprocess_nodes([NodeWithScore(node=node, score=0.5)], query_str=OVERVIEW)

    assert len(llm.prompts) == 2
    assert "[Global]" in llm.prompts[0] and "Title: OLID" in llm.prompts[1]
    meta = out.node.metadata
    assert meta["hrefine_query_type"]["label"] == "global"
    assert meta["hrefine_query_type"]["source"] == "llm"
    assert meta["hrefine_sections_selected"] == CHOSEN
    assert set(CHOSEN) <= set(meta["hrefine_sections_kept"])
    assert get_counter(None).count(out.node.get_content()) <= 600


def test_wrong_input_types_are_clear_errors(embedder: Embedder, paper: EvalItem) -> None:
    post = _post(embedder)
    with pytest.raises(InputTypeError, match="node 0 is a TextNode"):
        post.postprocess_nodes([TextNode(text=paper.document)], query_str="who?")  # type: ignore[list-item]
    with pytest.raises(InputTypeError, match="query must be a str"):
        post._postprocess_nodes(
            [NodeWithScore(node=TextNode(text=paper.document))],
            query_bundle=type("Bundle", (), {"query_str": 3})(),  # type: ignore[arg-type]
        )


def test_all_nodes_empty_give_no_nodes_unless_strict(embedder: Embedder) -> None:
    empty = [
        NodeWithScore(node=TextNode(text=" "), score=0.5),
        NodeWithScore(node=TextNode(text="")),
    ]
    assert _post(embedder).postprocess_nodes(empty, query_str="when does it end?") == []
    with pytest.raises(EmptyInputError, match="empty"):
        _post(embedder, strict=True).postprocess_nodes(empty, query_str="when does it end?")


def test_a_budget_of_one_token_is_a_clear_error_or_one_token(
    embedder: Embedder, corpus: dict[str, str], paper: EvalItem, renewal: EvalItem
) -> None:
    post = _post(embedder, max_tokens=1)
    with pytest.raises(BudgetTooSmallError, match="raise the budget"):
        post.postprocess_nodes(_nodes(corpus, paper), query_str=renewal.question)
    text = "The Volga is the longest river in Europe.\n\nThe Danube flows through ten countries."
    (out,) = post.postprocess_nodes([NodeWithScore(node=TextNode(text=text))], query_str="river?")
    assert out.node.get_content() == "The" and out.node.metadata["hrefine_tokens"] == 1


def test_pickles_and_deep_copies_with_the_same_output(paper: EvalItem) -> None:
    post = LongRefinerNodePostprocessor(max_tokens=300, llm=ScriptedLLM(answers=["[Local]"]))
    nodes = [NodeWithScore(node=TextNode(text=paper.document, id_="p"))]
    expected = [
        n.node.get_content() for n in post.postprocess_nodes(nodes, query_str=paper.question)
    ]
    for twin in (pickle.loads(pickle.dumps(post)), copy.deepcopy(post), post.model_copy(deep=True)):
        out = twin.postprocess_nodes(nodes, query_str=paper.question)
        assert [n.node.get_content() for n in out] == expected


def test_sync_and_async_agree(
    embedder: Embedder, corpus: dict[str, str], paper: EvalItem, renewal: EvalItem
) -> None:
    post = _post(embedder, max_tokens=500, top_n=2)
    nodes = _nodes(corpus, paper)
    sync = post.postprocess_nodes(nodes, query_str=renewal.question)
    asyn = asyncio.run(post.apostprocess_nodes(nodes, query_str=renewal.question))
    assert _dump(sync) == _dump(asyn)


def test_warmup_returns_the_postprocessor(embedder: Embedder) -> None:
    post = _post(embedder, max_tokens=64)
    assert post.warmup() is post
