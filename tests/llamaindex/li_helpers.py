"""Test helpers for the LlamaIndex adapter: small HTML pages as nodes. Offline, deterministic."""

from __future__ import annotations

from html_pages import PAGES
from llama_index.core.schema import NodeWithScore, TextNode


def make_nodes() -> list[NodeWithScore]:
    """One scored TextNode per page, with nested metadata (to check it is copied, not shared)."""
    return [
        NodeWithScore(
            node=TextNode(
                text=html,
                id_=f"node-{name}",
                metadata={"source": f"{name}.html", "tags": ["wiki", name]},
                excluded_llm_metadata_keys=["tags"],
            ),
            score=1.0 - i / 10,
        )
        for i, (name, html) in enumerate(PAGES.items())
    ]
