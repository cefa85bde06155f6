"""Models given by name: an empty name is refused wherever a model is loaded, an embedder given
with a scorer that uses none is refused by every method's options, and a RAPTOR tree records the
embedder it was built with by name, so a load embeds queries with the same model."""

from __future__ import annotations

from pathlib import Path

import pytest
from hrefine.errors import ConfigError, PersistenceError
from hrefine.html import HtmlPrunerOptions
from hrefine.longrefiner import LongRefinerOptions
from hrefine.models._lm_name import local_lm_from
from hrefine.models.embedder_folder import default_embedder_path
from hrefine.raptor import RaptorTree
from raptor_fakes import TOPICS


@pytest.mark.parametrize("name", ["", "   "])
def test_an_empty_model_name_is_refused(name: str) -> None:
    # Was: Path("") is the working folder, so the LM "" loaded whatever was there ('.').
    with pytest.raises(ConfigError, match="generative LM's name is empty"):
        local_lm_from(name)


@pytest.mark.parametrize("options", [LongRefinerOptions, HtmlPrunerOptions])
def test_an_embedder_with_a_scorer_that_uses_none_is_refused(options: type) -> None:
    # Was: LongRefiner ignored it without a word (the HTML pruner refused it).
    with pytest.raises(ConfigError, match="an embedder was given with scorer='bm25'"):
        options(scorer="BM25", embedder="all-MiniLM-L6-v2")
    assert options(scorer="embedding", embedder="all-MiniLM-L6-v2").embedder is not None


def test_a_tree_records_the_embedder_it_was_built_with(tmp_path: Path) -> None:
    folder = str(default_embedder_path())
    docs = [" ".join(texts) for texts in TOPICS.values()]
    tree = RaptorTree.build(docs, embedder=folder, max_layers=1)
    # Was: None, so a load embedded queries with the default model whatever the build used.
    assert tree.options.embedder == folder
    saved = tree.save(tmp_path / "t")
    # A model outside the saved folder is named, not read: the load asks for it.
    with pytest.raises(PersistenceError, match="embedder"):
        RaptorTree.load(saved)
    loaded = RaptorTree.load(saved, embedder=folder)
    query = "Which volcano erupts over Catania?"
    assert loaded.retrieve(query) == tree.retrieve(query)
    # An object is not a setting (it cannot be saved): the options keep None.
    assert RaptorTree.build(docs, embedder=tree.embedder, max_layers=1).options.embedder is None


def test_a_garlic_graph_records_the_embedder_it_was_built_with(tmp_path: Path) -> None:
    from hrefine.garlic import GarlicGraph

    folder = str(default_embedder_path())
    graph = GarlicGraph.build(list(TOPICS.values()), embedder=folder)
    # Was: None, so a load embedded queries with the default model whatever the build used.
    assert graph.options.embedder == folder
    saved = graph.save(tmp_path / "g")
    with pytest.raises(PersistenceError, match="embedder"):
        GarlicGraph.load(saved)
    assert GarlicGraph.load(saved, embedder=folder).options.embedder == folder
