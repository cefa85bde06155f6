"""RAPTOR with the embedded SmolLM2-135M as its summariser: batched, real summaries."""

from __future__ import annotations

from typing import Any

import pytest
from hrefine.raptor import RaptorTree
from hrefine.tree import NodeKind
from lm_fixture import load_default_lm

pytestmark = pytest.mark.lm

TEXT = (
    "The Amazon river carries more water than any other river on Earth. It flows through Peru, "
    "Colombia and Brazil before it reaches the Atlantic Ocean.\n\n"
    "Its basin holds the largest tropical rainforest in the world, home to millions of insect "
    "species, thousands of trees and hundreds of mammals such as jaguars and river dolphins.\n\n"
    "Deforestation for cattle ranching and soy farming has removed about a fifth of the forest "
    "since 1970, and scientists warn of a tipping point beyond which it turns to savanna."
)


def test_smollm2_summarises_a_layer_in_one_batched_call(embedder: Any) -> None:
    lm = load_default_lm()
    calls: list[int] = []
    generate = lm.generate

    def counting(prompts: Any, **kwargs: Any) -> list[str]:
        calls.append(1 if isinstance(prompts, str) else len(prompts))
        assert kwargs["max_new_tokens"] == 48 and kwargs["system"]
        return generate(prompts, **kwargs)

    lm.generate = counting  # type: ignore[method-assign]
    try:
        tree = RaptorTree.build(
            [TEXT], llm=lm, embedder=embedder, chunk_tokens=40, summary_tokens=48
        )
    finally:
        del lm.generate
    summaries = [n for n in tree.tree if n.kind == NodeKind.SUMMARY]
    assert summaries and all(len(n.text.split()) >= 5 for n in summaries)
    # One generate call per layer, each with all of that layer's clusters.
    assert calls == tree.stats["clusters_per_layer"]
    words = " ".join(n.text for n in summaries).lower()
    assert any(w in words for w in ("amazon", "river", "forest", "rainforest"))
