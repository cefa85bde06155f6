"""Hardening, second round (issue #55): forged numbers in saves, embedders that return NaN or
lack a name, model answers that are not text, and a GARLIC LLM that hangs. Fast: fake LLMs and
the keyword embedder."""

from __future__ import annotations

import copy
import json
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from garlic_fakes import SMALL, garlic_llm
from hrefine._saved import MAX_SAVED_INT, content_digest
from hrefine.errors import GenerationError, ModelOutputError, PersistenceError, TreeError
from hrefine.garlic import GarlicGraph, GarlicOptions, GarlicSearcher
from hrefine.longrefiner import LongRefiner
from hrefine.models import CallableEmbedder, get_embedder
from hrefine.models._checked_embed import CheckedEmbedder
from hrefine.models.text_generator import TextGenerator, answer_text
from hrefine.persist import load_tree
from hrefine.raptor import RaptorOptions, RaptorTree
from hrefine.testing import KeywordEmbedder
from hrefine.tree import Tree
from raptor_fakes import summary_of
from saved_files import forge_array

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


def _set_summary_sources(value: object) -> Any:
    def edit(manifest: dict[str, Any]) -> None:
        summaries = [n for n in manifest["tree"]["nodes"] if n["kind"] == "summary"]
        assert summaries
        for node in summaries:
            node["metadata"]["hrefine_sources"] = value

    return edit


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (lambda m: m["tree"]["metadata"].__setitem__("sources", 5), "sources is not a list"),
        (lambda m: m["tree"]["metadata"].__setitem__("empty_sources", 3), "empty sources"),
        (lambda m: m["tree"]["metadata"].__setitem__("empty_sources", ["0"]), "empty sources"),
        (_set_summary_sources(4), "not source indexes"),
        (_set_summary_sources("xy"), "not source indexes"),
        (_set_summary_sources([0, -1]), "not source indexes"),
    ],
)
def test_forged_raptor_source_lists_are_refused_on_load(
    tree: RaptorTree, emb: KeywordEmbedder, tmp_path: Path, edit: Any, match: str
) -> None:
    folder = tree.save(tmp_path / "t")
    _forge(folder, edit)
    # Was: loaded, then insert() or traversal raised a raw TypeError or ValueError.
    with pytest.raises(PersistenceError, match=f"not a valid RAPTOR tree: .*{match}"):
        RaptorTree.load(folder, embedder=emb)


@pytest.mark.parametrize(
    ("key", "value", "match"),
    [
        ("sources", 5, "sources is not a list"),
        ("sources", "xy", "sources is not a list"),
        ("edge_mode", "auto", "edge mode"),
        ("edge_mode", ["embedding"], "edge mode"),
    ],
)
def test_forged_garlic_graph_metadata_is_refused_on_load(
    graph: GarlicGraph, emb: KeywordEmbedder, tmp_path: Path, key: str, value: object, match: str
) -> None:
    folder = graph.save(tmp_path / "g")
    _forge(folder, lambda m: m["tree"]["metadata"].__setitem__(key, value))
    # Was: loaded, then the adapters' visited_with_metadata raised a raw TypeError.
    with pytest.raises(PersistenceError, match=f"not a valid GARLIC graph: .*{match}"):
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


# -- item 4: a NaN or infinite vector is refused wherever it comes from -----------------------
class ProtocolEmbedder:
    """An embedder of the core protocol (not hrefine's own): the keyword embedder's vectors,
    except that documents holding ``bad_document`` and any query when ``bad_query`` get
    ``value``."""

    name = "protocol"

    def __init__(
        self, value: float = float("nan"), *, bad_document: str = "", bad_query: bool = False
    ) -> None:
        self.inner = KeywordEmbedder(dim=64)
        self.value, self.bad_document, self.bad_query = value, bad_document, bad_query

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = self.inner.embed(texts).astype(np.float64)
        for i, text in enumerate(texts):
            if self.bad_document and self.bad_document in text:
                out[i, 0] = self.value
        return out

    def embed_query(self, text: str) -> np.ndarray:
        out = self.inner.embed_query(text).astype(np.float64)
        if self.bad_query:
            out[0] = self.value
        return out


@pytest.mark.parametrize("value", [float("nan"), float("inf"), 1e300])
def test_a_raptor_build_refuses_an_embedder_that_returns_nan(value: float) -> None:
    embedder = ProtocolEmbedder(value, bad_document="Dogs")
    # Was: a ValueError from deep inside scikit-learn's clustering.
    with pytest.raises(ModelOutputError, match="embedder protocol returned NaN or infinite") as e:
        RaptorTree.build(
            [CAT, DOG], llm=summary_of, embedder=embedder, tokenizer="regex", reduction_dim=16
        )
    assert "Dogs bark" in str(e.value)
    assert "inf" in e.value.raw_output or "nan" in e.value.raw_output


def test_a_nan_query_vector_is_refused_not_scored(tree: RaptorTree, graph: GarlicGraph) -> None:
    embedder = ProtocolEmbedder(bad_query=True)
    loaded = RaptorTree.from_tree(copy.deepcopy(tree.tree), tree.options, embedder=embedder)
    # Was: results with score=nan.
    with pytest.raises(ModelOutputError, match="for the query"):
        loaded.retrieve("where is the cat")
    searcher = GarlicSearcher(graph, lm=garlic_llm, embedder=embedder)
    with pytest.raises(ModelOutputError, match="for the query"):
        searcher.similarities("where is the cat")


def test_a_framework_embedder_returning_inf_is_refused_and_not_cached() -> None:
    calls: list[list[str]] = []

    def embed_documents(texts: list[str]) -> list[list[float]]:
        calls.append(texts)
        return [[1.0, float("inf")] if len(calls) == 1 else [1.0, 0.0] for _ in texts]

    embedder = CallableEmbedder(embed_documents, name="hosted")
    with pytest.raises(ModelOutputError, match="embedder hosted returned NaN or infinite"):
        embedder.embed(["a text"])
    assert embedder.embed(["a text"]).tolist() == [[1.0, 0.0]]  # asked again, not cached
    assert len(calls) == 2


def test_hrefine_s_own_embedders_are_not_wrapped_and_others_are() -> None:
    own = KeywordEmbedder(dim=8)
    assert get_embedder(own) is own
    wrapped = get_embedder(ProtocolEmbedder())
    assert isinstance(wrapped, CheckedEmbedder) and wrapped.name == "protocol"
    assert get_embedder(wrapped) is wrapped
    assert wrapped.inner.value != wrapped.inner.value  # other attributes are the inner's (nan)
    assert wrapped.bad_query is False


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
@pytest.mark.parametrize("mmap", [False, True])
def test_forged_non_finite_embeddings_are_refused_on_load(
    tree: RaptorTree, tmp_path: Path, value: float, mmap: bool
) -> None:
    folder = tree.save(tmp_path / "t")
    rows = np.array(tree.tree.embeddings, dtype=np.float32)
    rows[2, 5] = value
    forge_array(folder, "embeddings", rows)
    with pytest.raises(PersistenceError, match=r"embeddings-\w+\.npy holds NaN or infinite.*row 2"):
        load_tree(folder, mmap=mmap)


def test_a_tree_never_stores_a_non_finite_vector() -> None:
    t = Tree()
    t.add_node("a")
    t.add_node("b")
    with pytest.raises(TreeError, match="row 1 holds NaN or infinite"):
        t.set_embeddings([0, 1], np.array([[1.0, 0.0], [np.nan, 1.0]]))
    # The LlamaIndex stores rebuild a tree from a dict and the nodes' vectors.
    with pytest.raises(TreeError, match="row 0 holds NaN or infinite"):
        Tree.from_dict(t.to_dict(), embeddings=np.array([[np.inf, 0.0], [1.0, 0.0]]))


# -- item 11: an embedder without the protocol's name -----------------------------------------
class Nameless:
    """The protocol's methods, no ``name``."""

    def __init__(self) -> None:
        self.inner = KeywordEmbedder(dim=32)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self.inner.embed(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self.inner.embed_query(text)


def test_an_embedder_without_a_name_is_named_after_its_class() -> None:
    assert get_embedder(Nameless()).name == "Nameless"
    story = "\n\n".join(
        f"Paragraph {i} tells how the river rose on day {i} and the town moved uphill."
        for i in range(12)
    )
    # Was: a raw AttributeError from LongRefiner's embedding scorer.
    refiner = LongRefiner(scorer="embedding", embedder=Nameless(), tokenizer="regex")
    assert "day 3" in refiner.refine("river day 3", story, 60).text
    raptor = RaptorTree.build(
        [CAT, DOG], llm=summary_of, embedder=Nameless(), tokenizer="regex", reduction_dim=16
    )
    assert raptor.retrieve("cat mat", k=1)[0].score > 0


# -- item 10: one check of model answers for every method -------------------------------------
class Counting:
    """An LLM that answers ``answer`` (whatever it is) and records its prompts."""

    def __init__(self, answer: object) -> None:
        self.answer, self.prompts = answer, list[str]()
        self.__name__ = "structured"

    def __call__(self, prompt: str) -> Any:
        self.prompts.append(prompt)
        return self.answer


@pytest.mark.parametrize(
    "answer",
    [{"points": ["The cat sat.", "A dog barked."]}, ["The cat sat."], ("The cat sat.",), {"a"}],
    ids=["dict", "list", "tuple", "set"],
)
def test_a_structured_answer_is_refused_alike_by_garlic_and_raptor(answer: object) -> None:
    emb = KeywordEmbedder(dim=64)
    garlic_llm_ = Counting(answer)
    # Was: GARLIC stored "{'points': [...]}" as a summary point.
    with pytest.raises(GenerationError, match="LLM structured returned") as garlic_error:
        GarlicGraph.build([CAT, DOG], lm=garlic_llm_, embedder=emb, tokenizer="regex", **SMALL)
    raptor_llm = Counting(answer)
    with pytest.raises(GenerationError, match="LLM structured returned") as raptor_error:
        RaptorTree.build(
            [CAT, DOG], llm=raptor_llm, embedder=emb, tokenizer="regex", reduction_dim=16
        )
    kind = type(answer).__name__
    assert f"returned {kind}, not text" in str(garlic_error.value)
    assert f"returned {kind}, not text" in str(raptor_error.value)
    for llm in (garlic_llm_, raptor_llm):  # refused at once: no prompt is asked again
        assert llm.prompts and len(llm.prompts) == len(set(llm.prompts))


def test_an_answer_object_that_would_print_as_its_repr_is_refused() -> None:
    class Answer:  # no __str__ of its own: str() is "<...Answer object at 0x...>"
        text = "The cat sat."

    with pytest.raises(GenerationError, match="returned Answer, not text"):
        answer_text(Answer(), "odd-llm")
    with pytest.raises(GenerationError, match="returned dict, not text"):
        TextGenerator(lambda prompt: {"text": "x"}, retries=0, name="odd-llm").generate("p")


# -- item 12: GARLIC's LLM calls have a timeout -----------------------------------------------
def test_garlic_gives_up_on_a_hanging_llm_after_llm_timeout() -> None:
    release = threading.Event()

    def hanging(prompt: str) -> str:
        release.wait(60)  # hangs until the test ends
        return garlic_llm(prompt)

    emb = KeywordEmbedder(dim=64)
    started = time.perf_counter()
    try:
        # Was: 120 s a try, 3 tries.
        with pytest.raises(GenerationError, match=r"timed out after 0\.05s"):
            GarlicGraph.build(
                [CAT, DOG], lm=hanging, embedder=emb, tokenizer="regex", llm_timeout=0.05, **SMALL
            )
        assert time.perf_counter() - started < 20
    finally:
        release.set()


def test_garlic_search_calls_use_llm_timeout(graph: GarlicGraph) -> None:
    release = threading.Event()

    def hanging(prompt: str) -> str:
        release.wait(60)
        return "Yes"

    try:
        searcher = GarlicSearcher(graph, lm=hanging, llm_timeout=0.05)
        with pytest.raises(GenerationError, match=r"timed out after 0\.05s"):
            searcher.search("Who wrote about the cat?")
    finally:
        release.set()
    assert GarlicOptions().llm_timeout == RaptorOptions().llm_timeout == 120.0


def test_the_adapters_take_an_embedder_without_a_name_and_check_its_vectors() -> None:
    from langchain_hrefine._convert import to_embedder as langchain_embedder
    from llamaindex_hrefine._convert import to_embedder as llamaindex_embedder

    own = KeywordEmbedder(dim=8)
    for convert in (langchain_embedder, llamaindex_embedder):
        # Was: InputTypeError, the protocol check wanting a name.
        converted = convert(Nameless())
        assert converted is not None and converted.name == "Nameless"
        assert convert(own) is own
        nan_embedder = convert(ProtocolEmbedder(bad_query=True))
        assert nan_embedder is not None
        with pytest.raises(ModelOutputError, match="for the query"):
            nan_embedder.embed_query("where")
