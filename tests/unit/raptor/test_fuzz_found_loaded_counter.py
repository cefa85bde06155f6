"""Found by the fuzz run (issue #55): a tree built with a tokenizer passed to ``build`` (not
saved: models are never saved) was loaded with the default tokenizer but kept the build's token
counts, so ``retrieve(max_tokens=...)`` returned more tokens than the budget in the loaded
tree's own counter. A load by another counter counts the nodes again."""

from __future__ import annotations

from pathlib import Path

from hrefine.budget import get_counter
from hrefine.raptor import RaptorOptions, RaptorTree
from hrefine.testing import KeywordEmbedder

TEXT = (
    "The Volga's length -- about 3,530 km (2,193 mi) -- makes it Europe's longest river; "
    "its basin (1.36M km²) drains ~40% of Russia's population. "
) * 40


def test_a_tree_loaded_with_another_tokenizer_keeps_the_budget_in_its_tokens(
    tmp_path: Path,
) -> None:
    emb = KeywordEmbedder(dim=64)
    # A tokenizer object is not saved: the load counts in its own (the default) tokens.
    built = RaptorTree.build(
        [TEXT], embedder=emb, tokenizer=get_counter("regex"), reduction_dim=200
    )
    built.save(tmp_path / "t")
    loaded = RaptorTree.load(tmp_path / "t", embedder=emb)  # the default tokenizer
    assert loaded.counter.name != built.counter.name
    for budget in (150, 300, 600):
        out = loaded.retrieve("longest river", max_tokens=budget)
        assert out
        assert sum(loaded.counter.count(n.text) for n in out) <= budget
        assert all(n.tokens == loaded.counter.count(n.text) for n in out)
    # Loaded by the counter it was built with: the saved counts are used as they are.
    same = RaptorTree.load(tmp_path / "t", embedder=emb, tokenizer="regex")
    assert [n.metadata for n in same.tree] == [n.metadata for n in built.tree]


def test_a_tokenizer_given_to_build_by_name_is_saved_and_loaded(tmp_path: Path) -> None:
    # Was: build(tokenizer="regex") saved no tokenizer, so a load counted in Llama-3.2's
    # tokens, and the no-model summaries were measured in them too (unlike the same name
    # given in the options).
    emb = KeywordEmbedder(dim=64)
    built = RaptorTree.build([TEXT], embedder=emb, tokenizer="regex", reduction_dim=200)
    by_options = RaptorTree.build(
        [TEXT], RaptorOptions(tokenizer="regex", reduction_dim=200), embedder=emb
    )
    assert [n.text for n in built.tree] == [n.text for n in by_options.tree]
    built.save(tmp_path / "t")
    loaded = RaptorTree.load(tmp_path / "t", embedder=emb)
    assert loaded.counter.name == "regex"
    assert [n.metadata for n in loaded.tree] == [n.metadata for n in built.tree]
