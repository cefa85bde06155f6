"""HtmlRagNodePostprocessor: LlamaIndex contract, copies not mutations, budgets, async parity."""

from __future__ import annotations

import pytest
from hrefine.budget import get_counter
from hrefine.errors import InputTypeError
from hrefine.testing import KeywordEmbedder
from html_pages import SlowScorer
from li_helpers import make_nodes
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle, TextNode
from loop_ticks import ticks_while

from llamaindex_hrefine import HrefineEmbedding, HtmlRagNodePostprocessor

QUERY = "how many gold medals did Norway win at the 2014 Winter Olympics"


def _post(**kwargs: object) -> HtmlRagNodePostprocessor:
    kwargs.setdefault("tokenizer", "regex")
    kwargs.setdefault("scorer", "bm25")
    return HtmlRagNodePostprocessor(**kwargs)


def _dump(nodes: list[NodeWithScore]) -> list[dict[str, object]]:
    return [n.model_dump() for n in nodes]


def test_mro_and_isinstance() -> None:
    assert BaseNodePostprocessor in HtmlRagNodePostprocessor.__mro__
    assert isinstance(_post(), BaseNodePostprocessor)


def test_class_name_is_stable_and_serialised() -> None:
    post = _post(max_tokens=300)
    assert HtmlRagNodePostprocessor.class_name() == "HtmlRagNodePostprocessor"
    data = post.to_dict()
    assert data["class_name"] == "HtmlRagNodePostprocessor"
    assert data["max_tokens"] == 300


def test_fields_have_descriptions() -> None:
    for name in ("max_tokens", "scorer", "embed_model", "tokenizer", "prune_together"):
        assert HtmlRagNodePostprocessor.model_fields[name].description


def test_empty_input_gives_empty_list_even_without_query() -> None:
    assert _post().postprocess_nodes([]) == []


def test_missing_query_is_a_clear_value_error() -> None:
    with pytest.raises(ValueError, match="needs the query"):
        _post().postprocess_nodes(make_nodes())


def test_nodes_are_not_mutated_and_outputs_are_copies() -> None:
    nodes = make_nodes()
    nodes[0].node.embedding = [0.5, 0.5]
    before = _dump(nodes)
    out = _post(max_tokens=120).postprocess_nodes(nodes, query_str=QUERY)
    assert _dump(nodes) == before
    assert out
    originals = {id(n) for n in nodes} | {id(n.node) for n in nodes}
    for item in out:
        assert id(item) not in originals
        assert id(item.node) not in originals
        assert item.node.embedding is None


def test_outputs_carry_scores_and_hidden_hrefine_metadata() -> None:
    nodes = make_nodes()
    out = _post(max_tokens=400).postprocess_nodes(nodes, QueryBundle(QUERY))
    by_id = {n.node.node_id: n for n in nodes}
    for item in out:
        src = by_id[item.node.node_id]
        meta = item.node.metadata
        assert meta["source"] == src.node.metadata["source"]
        assert meta["tags"] == src.node.metadata["tags"]
        assert meta["tags"] is not src.node.metadata["tags"]
        assert item.score == meta["relevance_score"]
        assert meta["hrefine_input_score"] == src.score
        assert meta["hrefine_budget"] == 400
        assert "tags" in item.node.excluded_llm_metadata_keys
        llm_view = item.node.get_content(metadata_mode=MetadataMode.LLM)
        assert "hrefine_" not in llm_view
        assert "relevance_score" not in llm_view
        assert "source: " in llm_view


def test_shared_budget_is_met_and_answer_kept() -> None:
    counter = get_counter("regex")
    out = _post(max_tokens=60).postprocess_nodes(make_nodes(), query_str=QUERY)
    assert [n.node.node_id for n in out] == ["node-olympics"]
    text = out[0].node.get_content(metadata_mode=MetadataMode.NONE)
    assert "Norway" in text
    assert counter.count(text) <= 60
    assert out[0].node.metadata["hrefine_dropped_documents"] == 3


def test_end_tag_and_lexical_settings_reach_the_pruner() -> None:
    compact = _post(max_tokens=400, lexical_weight=0.5)
    full = _post(max_tokens=400, omit_end_tags=False, lexical_weight=0)
    assert (
        compact._get_pruner().options.lexical_weight == 0.5
        and compact._get_pruner().options.omit_end_tags
    )
    assert (
        full._get_pruner().options.lexical_weight == 0
        and not full._get_pruner().options.omit_end_tags
    )

    def text(post: HtmlRagNodePostprocessor) -> str:
        out = post.postprocess_nodes(make_nodes(), query_str=QUERY)
        return "".join(n.node.get_content(metadata_mode=MetadataMode.NONE) for n in out)

    assert "</td>" in text(full) and "</td>" not in text(compact)


def test_per_node_budget() -> None:
    counter = get_counter("regex")
    out = _post(max_tokens=50, prune_together=False).postprocess_nodes(
        make_nodes(), query_str=QUERY
    )
    assert len(out) == 4
    for item in out:
        assert counter.count(item.node.get_content(metadata_mode=MetadataMode.NONE)) <= 50
        assert item.node.metadata["hrefine_budget_scope"] == "document"


def test_embedding_scorer_with_a_llamaindex_embed_model() -> None:
    embed_model = HrefineEmbedding(KeywordEmbedder(dim=512))
    post = _post(max_tokens=80, scorer="embedding", embed_model=embed_model)
    out = post.postprocess_nodes(
        make_nodes(), query_str="What is the frequency of the station called The Wolf?"
    )
    best = max(out, key=lambda n: n.score or 0.0)
    assert best.node.node_id == "node-radio"
    assert "WNAX-FM" in best.node.get_content()


@pytest.mark.parametrize("together", [True, False])
async def test_sync_and_async_agree(together: bool) -> None:
    post = _post(max_tokens=90, prune_together=together)
    sync = post.postprocess_nodes(make_nodes(), query_str=QUERY)
    asyn = await post.apostprocess_nodes(make_nodes(), query_str=QUERY)
    assert _dump(sync) == _dump(asyn)


async def test_async_missing_query_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="needs the query"):
        await _post().apostprocess_nodes(make_nodes())


def test_plain_text_node_passes_through_as_html_fragment() -> None:
    node = NodeWithScore(node=TextNode(text="Norway won 11 gold medals in Sochi."), score=None)
    out = _post(max_tokens=100).postprocess_nodes([node], query_str=QUERY)
    assert len(out) == 1
    assert "Norway" in out[0].node.get_content()


async def test_bare_text_nodes_are_refused_with_the_fix_named() -> None:
    # As LongRefiner's postprocessor does: not a raw AttributeError on ``.node``.
    nodes = [*make_nodes()[:1], TextNode(text="<p>Norway won 11 gold medals.</p>")]
    with pytest.raises(InputTypeError, match=r"node 1 is a TextNode.*NodeWithScore\(node="):
        _post().postprocess_nodes(nodes, query_str=QUERY)  # type: ignore[arg-type]
    with pytest.raises(InputTypeError, match="node 1 is a TextNode"):
        await _post().apostprocess_nodes(nodes, query_str=QUERY)  # type: ignore[arg-type]


async def test_async_path_does_not_block_the_event_loop() -> None:
    post = _post(scorer=SlowScorer(), max_tokens=200)
    out, ticks = await ticks_while(
        post.apostprocess_nodes(make_nodes(), query_str=QUERY), interval=0.01
    )
    assert out
    assert ticks >= 5


@pytest.mark.parametrize("together", [True, False])
def test_empty_node_is_left_out_and_reported(together: bool) -> None:
    nodes = [*make_nodes()[:2], NodeWithScore(node=TextNode(text="<div></div>", id_="empty"))]
    out = _post(max_tokens=2000, prune_together=together).postprocess_nodes(nodes, query_str=QUERY)
    assert [n.node.node_id for n in out] == ["node-olympics", "node-radio"]
    assert all(n.node.metadata["hrefine_dropped_documents"] == 1 for n in out)


def test_core_embedder_accepted_as_embed_model() -> None:
    post = _post(scorer="embedding", embed_model=KeywordEmbedder(), max_tokens=200)
    assert post.postprocess_nodes(make_nodes(), query_str=QUERY)


def test_every_pruner_setting_is_a_field_that_reaches_the_pruner() -> None:
    from hrefine.html import HtmlPrunerOptions

    settings = set(HtmlPrunerOptions.names()) - HtmlPrunerOptions.adapter_excluded
    assert settings <= set(HtmlRagNodePostprocessor.model_fields)
    post = _post(
        max_tokens=100,
        demote_back_matter=False,
        narrow_tables=False,
        split_paragraphs=False,
        cleaned_cache=3,
    )
    pruner = post._get_pruner()
    assert pruner.options.demote_back_matter is False and pruner.options.narrow_tables is False
    assert pruner.options.split_paragraphs is False
    assert pruner._cleaned.max_pages == 3
    post.demote_back_matter = True
    assert post._get_pruner() is not pruner and post._get_pruner().options.demote_back_matter


def test_misspelt_settings_and_budgets_that_cannot_work_are_rejected() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="max_token"):
        HtmlRagNodePostprocessor(max_token=100)
    for bad in (2, True, "512"):
        with pytest.raises(ValidationError, match="max_tokens"):
            HtmlRagNodePostprocessor(max_tokens=bad)


def test_embedding_pickles_with_its_own_embedder_or_refuses() -> None:
    import pickle

    from hrefine.models import CallableEmbedder

    embedding = HrefineEmbedding(KeywordEmbedder(dim=64))
    twin = pickle.loads(pickle.dumps(embedding))
    assert isinstance(twin.embedder, KeywordEmbedder) and twin.model_name == "hrefine:keyword"
    assert twin.get_query_embedding("gold medals") == embedding.get_query_embedding("gold medals")
    local = HrefineEmbedding(CallableEmbedder(lambda texts: [[1.0, 0.0] for _ in texts]))
    with pytest.raises(TypeError, match="cannot pickle"):
        pickle.dumps(local)


def test_postprocessor_pickles_and_deep_copies_with_the_same_output() -> None:
    import copy
    import pickle

    post = _post(
        scorer="embedding", embed_model=HrefineEmbedding(KeywordEmbedder()), max_tokens=200
    )
    expected = [n.node.get_content() for n in post.postprocess_nodes(make_nodes(), query_str=QUERY)]
    for twin in (pickle.loads(pickle.dumps(post)), copy.deepcopy(post), post.model_copy(deep=True)):
        out = twin.postprocess_nodes(make_nodes(), query_str=QUERY)
        assert [n.node.get_content() for n in out] == expected


def test_metadata_that_cannot_be_deep_copied_is_shared() -> None:
    import threading

    lock = threading.Lock()
    nodes = make_nodes()
    nodes[0].node.metadata["client"] = lock
    out = _post(max_tokens=400).postprocess_nodes(nodes, query_str=QUERY)
    first = next(n for n in out if n.node.node_id == nodes[0].node.node_id)
    assert first.node.metadata["client"] is lock
    assert "hrefine_tokens" not in nodes[0].node.metadata


def test_scores_are_in_unit_range_and_compose_with_similarity_postprocessor() -> None:
    from llama_index.core.postprocessor import SimilarityPostprocessor

    nodes = make_nodes()
    post = _post(max_tokens=5000, scorer="embedding", embed_model=None, tokenizer="regex")
    out = post.postprocess_nodes(nodes, query_str=QUERY)
    scores = [n.score for n in out]
    assert all(s is not None and 0.0 <= s <= 1.0 for s in scores)
    assert scores == sorted(scores, reverse=True)  # most relevant first
    assert out[0].node.metadata["source"] == "olympics.html"
    assert all(isinstance(n.node.metadata["hrefine_raw_score"], float) for n in out)
    # A cut-off after it keeps the page that answers, and only pages that relate to the query.
    kept = SimilarityPostprocessor(similarity_cutoff=0.3).postprocess_nodes(out)
    assert kept and kept[0].node.metadata["source"] == "olympics.html"
    assert len(kept) < len(out)


def test_top_n_and_input_order() -> None:
    nodes = make_nodes()
    top = _post(max_tokens=200, top_n=2).postprocess_nodes(nodes, query_str=QUERY)
    assert len(top) == 2 and top[0].node.metadata["source"] == "olympics.html"
    assert sum(n.node.metadata["hrefine_tokens"] for n in top) <= 200
    same = _post(max_tokens=5000, keep_input_order=True).postprocess_nodes(nodes, query_str=QUERY)
    order = [n.node.metadata["source"] for n in nodes]
    assert [n.node.metadata["source"] for n in same] == [
        s for s in order if s in {n.node.metadata["source"] for n in same}
    ]


def test_all_nodes_empty_gives_no_nodes_unless_strict() -> None:
    from hrefine.errors import EmptyInputError

    empty = [NodeWithScore(node=TextNode(text=" "), score=0.5)]
    assert _post().postprocess_nodes(empty, query_str=QUERY) == []
    with pytest.raises(EmptyInputError):
        _post(strict=True).postprocess_nodes(empty, query_str=QUERY)


def test_warmup_returns_the_postprocessor() -> None:
    post = _post(scorer="embedding", embed_model=KeywordEmbedder())
    assert post.warmup() is post
    assert post.warmup() is post
