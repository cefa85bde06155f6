"""The HtmlRAG benchmark's tuning and checking halves, and the generative stage's quality.

The dev pages are split once by :func:`hrefine.eval.loaders.half_of`: settings are decided on
the tuning half and checked on the other, and the quick suite reports both. The generative
stage (SmolLM2-135M on the CPU, about 7 s a call at 512 tokens and 14 s at 1024) is measured
beside stage 1 alone on the same questions of the tuning half (a share of them in quick mode,
see ``GEN_QUALITY_QUICK`` in :mod:`benchmarks.htmlrag`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from benchmarks._htmlrag_report import M_OURS_EMBED, M_OURS_GEN

__all__ = [
    "GEN_QUALITY_BUDGETS",
    "HALF_NAMES",
    "HALVES",
    "generative_items",
    "generative_table",
    "half_items",
    "run_generative_quality",
]

HALVES = ("tune", "check")
HALF_NAMES = {"tune": "tuning half", "check": "checking half"}
#: Budgets the generative stage's quality is measured at (beside stage 1 alone).
GEN_QUALITY_BUDGETS = (512, 1024)

log = logging.getLogger("benchmarks.htmlrag")


def half_items(items: Sequence[Any], half: str) -> list[Any]:
    """The questions of ``items`` on the pages of ``half`` (``"tune"`` or ``"check"``)."""
    from hrefine.eval.loaders import half_of

    return [it for it in items if half_of(it.doc_id) == half]


def generative_items(
    items: Sequence[Any], per_page: int | None, pages: int | None, half: str = "tune"
) -> list[Any]:
    """The questions the generative stage is measured on: at most ``per_page`` per page on
    the first ``pages`` pages of ``half`` (None: no limit), in the order given."""
    taken: dict[str, int] = {}
    chosen: list[Any] = []
    for it in half_items(items, half):
        n = taken.get(it.doc_id, 0)
        if n == 0 and pages is not None and len(taken) >= pages:
            continue
        if per_page is None or n < per_page:
            taken[it.doc_id] = n + 1
            chosen.append(it)
    return chosen


def run_generative_quality(
    items: Sequence[Any],
    embedder: Any,
    max_words: int,
    fine_max_words: int,
    timed: Callable[..., dict[str, Any]],
    done: dict[str, dict[int, dict[str, Any]]] | None = None,
) -> dict[str, dict[int, dict[str, Any]]]:
    """Outputs of the two-stage pruner (``out[item id][budget]``, each ``timed``'s record) at
    :data:`GEN_QUALITY_BUDGETS`, stage 1 at 4x the budget (the default); those already in
    ``done`` (the same pruner's) are taken from it."""
    from hrefine.html import HtmlPruner
    from hrefine.models import default_lm

    gen = HtmlPruner(
        scorer="embedding",
        embedder=embedder,
        max_words=max_words,
        generative=True,
        lm=default_lm(),
        fine_max_words=fine_max_words,
    )

    def run(html: str, question: str, budget: int) -> str:
        return gen.prune(html, question, budget).html

    done = done or {}
    out: dict[str, dict[int, dict[str, Any]]] = {}
    if items:  # loads the LM (and on a fresh machine converts it) outside the timings
        gen.prune(items[0].document, items[0].question, 64)
    t0 = time.perf_counter()
    for k, it in enumerate(items, 1):
        out[it.id] = dict(done.get(it.id, {}))
        for b in GEN_QUALITY_BUDGETS:
            if b not in out[it.id]:
                out[it.id][b] = timed(run, it.document, it.question, b)
        log.info(
            "generative quality: %d/%d (%s) done, %.0f s in all",
            k,
            len(items),
            it.id,
            time.perf_counter() - t0,
        )
    return out


def generative_table(
    items: Sequence[Any],
    stage1: dict[str, dict[int, Any]],
    gen: dict[str, dict[int, Any]],
    score: Callable[..., tuple[dict[str, Any], list[Any]]],
    counter: Any,
) -> dict[str, Any]:
    """Stage 1 alone and stage 1 + 2 on the same questions, scored like every other table,
    with the mean seconds of a call of each."""
    budgets = list(GEN_QUALITY_BUDGETS)
    outs = {
        M_OURS_EMBED: {i: {b: stage1[i][b] for b in budgets} for i in gen},
        M_OURS_GEN: gen,
    }
    table, _ = score(items, outs, budgets, counter)
    for name, per in outs.items():
        table[name]["seconds"] = {
            str(b): sum(per[i][b]["seconds"] for i in per) / max(1, len(per)) for b in budgets
        }
    return {
        "questions": len(items),
        "pages": len({it.doc_id for it in items}),
        "budgets": budgets,
        "table": table,
    }
