"""Progress lines of a RAPTOR build (``progress=``): the leaves' embedding, then per layer
the clusters summarised and the summaries embedded."""

from __future__ import annotations

from hrefine._progress import Progress, reporter
from hrefine.raptor.build import EmbedWork, Grower, SummariseWork, step

__all__ = ["reported_grower"]


def reported_grower(grower: Grower, progress: Progress) -> Grower:
    """``grower``, reporting each step (:func:`hrefine._progress.reporter`): the leaves'
    embedding, then per layer the clusters summarised and the summaries embedded."""
    if not progress:
        return grower
    say = reporter(progress, "raptor")

    def reported() -> Grower:
        layer = 0
        work, stats = step(grower, None)
        while work is not None:
            if isinstance(work, SummariseWork):
                layer += 1
                say(f"layer {layer}: summarising {len(work.prompts)} clusters...")
            elif isinstance(work, EmbedWork):
                where = "leaves" if layer == 0 else f"layer {layer}"
                what = "leaves" if layer == 0 else "summaries"
                say(f"{where}: embedding {len(work.texts)} {what}...")
            work, stats = step(grower, (yield work))
        say(f"done: {len(stats.get('clusters', []))} summary layers")
        return stats

    return reported()
