"""HtmlRAG's second stage: generative block scoring over a token tree (§3.4.2).

The stage-1 output is split again into finer blocks, and each block is scored by the
log-probability that a small LM, shown the HTML and the question with the instruction of the
paper's Figure 4, writes the block's tag path (``<html><body><div2><p>``). The paths' tokens form
a trie scored with one pre-filled prompt (:func:`hrefine.models.token_trie.path_scores`); the
finer blocks then fill the final budget as stage 1 filled its own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from hrefine.budget import TokenCounter
from hrefine.html._load import parse_document
from hrefine.html._locate import traced_positions
from hrefine.html.blocks import BlockForest, inner_html
from hrefine.html.fill import Fit, fill, inherit_scores, reports
from hrefine.html.render import Renderer, omit_end_tags
from hrefine.html.result import BlockReport
from hrefine.models.token_trie import path_scores

__all__ = ["PROMPT_TEMPLATE", "build_prompt", "prompt_path", "refine"]

#: The user message of the paper's Figure 4; the example path uses our path format.
PROMPT_TEMPLATE = (
    "**HTML**: ```{html}```\n"
    "**Question**: **{question}**\n"
    "Your task is to identify the most relevant text piece to the given question in the HTML "
    "document. This text piece could either be a direct paraphrase to the fact, or a supporting "
    "evidence that can be used to infer the fact. The overall length of the text piece should be "
    "more than 20 words and less than 300 words. You should provide the path to the text piece "
    "in the HTML document. An example for the output is: <html><body><div2><p>Some key "
    "information..."
)

#: ``(roots, doc ids, max_words, budget) -> (forest, block costs, group costs)``: the pruner's
#: block-tree builder, with its token counter and end-tag setting.
ForestBuilder = Callable[
    [Sequence[Any], Sequence[int], int, int], tuple[BlockForest, dict[int, int], dict[int, int]]
]


def build_prompt(lm: Any, html: str, question: str) -> str:
    """The full prompt (chat template applied by ``lm.chat_prompt``) for Figure 4's task."""
    user = PROMPT_TEMPLATE.format(html=html, question=question)
    return str(lm.chat_prompt(user))


def prompt_path(forest: BlockForest, node_id: int, multi: bool) -> str:
    """A block's tag path as the prompt's page writes it (``<html><body><div2><p>``); with
    several pages, each sits in a numbered ``<div>`` of the prompt's combined page."""
    steps = list(forest.tree.nodes[node_id].metadata["path_indexed"])
    if multi:
        pos = forest.doc_ids.index(forest.tree.nodes[node_id].metadata["doc"])
        steps = [*steps[:2], f"div{pos + 1}", *steps[2:]]
    return "".join(f"<{s}>" for s in steps)


def _body_html(root: Any) -> str:
    body = root.find("body")
    return inner_html(body if body is not None else root)


def refine(
    lm: Any,
    fit1: Fit,
    forest1: BlockForest,
    ids1: list[int],
    scores1: np.ndarray,
    query: str,
    max_tokens: int,
    *,
    fine_max_words: int,
    build_forest: ForestBuilder,
    counter: TokenCounter,
    omit_optional_end_tags: bool,
    cleaned_order: dict[Any, int] | None,
) -> tuple[Fit, list[BlockReport], dict[str, int]]:
    """Run stage 2 on the stage-1 output ``fit1`` and fill ``max_tokens``.

    Returns
    -------
    fit, reports, stats
        The final fill, a report on each fine block, and the stage's cost (prompt and
        pre-filled tokens, LM calls, trie edges).
    """
    kept_docs = [(d, doc) for d, doc in enumerate(fit1.documents) if doc]
    roots = [parse_document(doc) for _, doc in kept_docs]
    forest, costs, groups = build_forest(
        roots, [d for d, _ in kept_docs], fine_max_words, max_tokens
    )
    ids = forest.block_ids()
    multi = len(roots) > 1
    bodies = [_body_html(root) for root in roots]
    shown = "".join(f"<div>{b}</div>" for b in bodies) if multi else bodies[0]
    if omit_optional_end_tags:
        shown = omit_end_tags(shown)
    prompt = build_prompt(lm, f"<html><body>{shown}</body></html>", query)
    result = path_scores(lm, prompt, [prompt_path(forest, i, multi) for i in ids])
    stats = {
        "prompt_tokens": result.prompt_tokens,
        "prefilled_tokens": result.prefilled_tokens,
        "lm_calls": result.lm_calls,
        "trie_edges": result.trie_edges,
    }
    fit = fill(forest, ids, costs, result.scores, max_tokens, counter, len(fit1.documents), groups)
    inherited = inherit_scores(forest, ids, forest1, ids1, fit1.kept, scores1)
    # Trace the fine blocks back to the cleaned documents' elements, for the report.
    written = Renderer(forest1).written(fit1.kept)
    by_doc = dict(zip(forest1.doc_ids, zip(written, forest1.roots, strict=True), strict=True))
    sources = [by_doc[d] for d, _ in kept_docs]
    located = traced_positions(
        forest, [w for w, _ in sources], [r for _, r in sources], cleaned_order
    )
    return fit, reports(forest, ids, costs, fit, inherited, result.scores, located), stats
