"""Progress lines of a RAPTOR build (``progress=``): the leaves' embedding, then per layer
the clusters summarised and the summaries embedded."""

from __future__ import annotations

from typing import Any

from hrefine._progress import Progress, reporter
from hrefine.raptor.build import EmbedWork, Grower, SummariseWork

__all__ = ["reported_grower"]


def reported_grower(grower: Grower, progress: Progress) -> Grower:
    """``grower``, reporting each step (:func:`hrefine._progress.reporter`): the leaves'
    embedding, then per layer the clusters summarised and the summaries embedded."""
    if not progress:
        return grower
    say = reporter(progress, "raptor")

    def reported() -> Grower:
        answer: Any = None
        layer = 0
        while True:
            try:
                work = grower.send(answer)
            except StopIteration as stop:
                say(f"done: {len(stop.value.get('clusters', []))} summary layers")
                return dict(stop.value)
            if isinstance(work, SummariseWork):
                layer += 1
                say(f"layer {layer}: summarising {len(work.prompts)} clusters...")
            elif isinstance(work, EmbedWork):
                where = "leaves" if layer == 0 else f"layer {layer}"
                what = "leaves" if layer == 0 else "summaries"
                say(f"{where}: embedding {len(work.texts)} {what}...")
            answer = yield work

    return reported()
