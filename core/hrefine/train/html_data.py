"""Examples for HtmlRAG's generative pruner (stage 2): the tag path of the block that holds
the answer.

For one page and one question with a known answer, the page goes through the pruner's first
stage (the embedding scorer, 4x the final budget ``max_tokens``) exactly as it does before
stage 2 at inference.
Its output is split into the finer blocks of stage 2 (``fine_max_words``), and the prompt is the
one stage 2 scores paths after (:func:`hrefine.html.generative.build_prompt`'s user message, the
page written as it is there). The target is the tag path of the block containing the answer, in
the format :func:`hrefine.html.generative.prompt_path` gives it (``<html><body><table1><tr2>``).
When several blocks contain the answer, the one sharing most words with the question is taken
(the first on a tie); a question whose answer did not survive stage 1 gives no example.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from hrefine.eval.loaders import EvalItem
from hrefine.train.answers import contains_answers, question_overlap
from hrefine.train.examples import Example

__all__ = ["html_pruner_examples"]


def html_pruner_examples(
    items: Iterable[EvalItem],
    *,
    max_tokens: int = 128,
    fine_max_words: int = 128,
    pruner: Any = None,
    skipped: Counter[str] | None = None,
) -> list[Example]:
    """Build pruner examples from HTML pages with questions and answers.

    Parameters
    ----------
    items:
        Questions over HTML pages (``doc_format="html"``), with gold answers. Items marked
        ``strict=False`` (WTQ answers that are computed, not written on the page) are skipped.
    max_tokens:
        The final budget of the pruner run being imitated; stage 1 keeps the pruner's
        ``stage1_max_tokens`` (default ``4 * max_tokens``), and that is the page stage 2 sees.
    fine_max_words:
        Largest block of stage 2 (the pruner's ``fine_max_words``).
    pruner:
        The :class:`~hrefine.html.HtmlPruner` whose first stage and block builder are used
        (default: one with default settings, the embedded embedder).
    skipped:
        Counts of skipped items by reason, filled in when given.

    Returns
    -------
    list[Example]
        One example per usable question.
    """
    from hrefine.html import HtmlPruner
    from hrefine.html._load import parse_document
    from hrefine.html.blocks import inner_html
    from hrefine.html.generative import PROMPT_TEMPLATE, prompt_path
    from hrefine.html.render import omit_end_tags

    pruner = pruner if pruner is not None else HtmlPruner()
    skipped = skipped if skipped is not None else Counter()
    stage1_tokens = max(pruner.options.stage1_max_tokens or 4 * max_tokens, max_tokens)
    out: list[Example] = []
    for item in items:
        if item.doc_format != "html":
            skipped["not_html"] += 1
            continue
        if not item.answers or item.extra.get("strict") is False:
            skipped["answer_not_verbatim"] += 1
            continue
        result = pruner.prune(item.document, item.question, stage1_tokens)
        kept = [d for d in result.documents if d]
        if len(kept) != 1:
            skipped["stage1_empty"] += 1
            continue
        root = parse_document(kept[0])
        # The pruner's own block builder, so the blocks are the ones stage 2 scores.
        forest, _, _ = pruner.block_forest([root], [0], fine_max_words, max_tokens)
        ids = forest.block_ids()
        nodes = forest.tree.nodes
        hits = [
            i for i in ids if contains_answers(nodes[i].text, item.answers, mode=item.answer_mode)
        ]
        if not hits:
            skipped["answer_not_in_stage1"] += 1
            continue
        best = max(
            hits, key=lambda i: (question_overlap(item.question, nodes[i].text), -ids.index(i))
        )
        body = root.find("body")
        shown = inner_html(body if body is not None else root)
        if pruner.options.omit_end_tags:
            shown = omit_end_tags(shown)
        html = f"<html><body>{shown}</body></html>"
        out.append(
            Example(
                task="html-pruner",
                user=PROMPT_TEMPLATE.format(html=html, question=item.question),
                target=prompt_path(forest, best, False),
                group=f"{item.dataset}:{item.doc_id}",
                meta={
                    "dataset": item.dataset,
                    "id": item.id,
                    "candidates": len(hits),
                    "blocks": len(ids),
                    "block_text": nodes[best].text,
                },
            )
        )
    return out
