"""A synthetic pruning result with any number of blocks, built without pruning.

Pruning a page of 200,000 blocks takes minutes; the report only needs the cleaned page and
block reports that point into it, which are written here directly, in the shapes a real
result has (headings, paragraphs, list items and table rows; a few kept, ranked by score).
"""

from __future__ import annotations

import random

from hrefine.html import BlockReport, PruneResult

# Blocks per section: a heading, a paragraph, three list items and four table rows.
_PER_SECTION = 9


def many_blocks_result(n_blocks: int, *, kept: int = 40, seed: int = 7) -> PruneResult:
    """A one-page result of about ``n_blocks`` blocks (a multiple of 9), ``kept`` of them kept."""
    rng = random.Random(seed)
    parts = ["<html><head><title>Season results</title></head><body>"]
    # Elements in document order: html, head, title, body, then each section's.
    element = 4
    found: list[tuple[str, str, int]] = []  # tag path, text, element index
    for s in range((n_blocks + _PER_SECTION - 1) // _PER_SECTION):
        heading = f"Section {s}"
        para = f"Team {s} played in city {s % 97} during the season of {1900 + s % 120}."
        items = [f"Player {s}-{k} scored {rng.randint(0, 40)}" for k in range(3)]
        rows = [
            [f"{s}-{r}", f"Team {rng.randint(1, 999)}", str(rng.randint(0, 99))] for r in range(4)
        ]
        parts.append(f"<h2>{heading}</h2><p>{para}</p><ul>")
        found.append(("html>body>h2", heading, element))
        found.append(("html>body>p", para, element + 1))
        element += 3  # h2, p, ul
        for item in items:
            parts.append(f"<li>{item}</li>")
            found.append(("html>body>ul>li", item, element))
            element += 1
        parts.append("</ul><table>")
        element += 1
        for row in rows:
            parts.append("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>")
            found.append(("html>body>table>tr", " ".join(row), element))
            element += 1 + len(row)
        parts.append("</table>")
    parts.append("</body></html>")
    scores = [rng.random() for _ in found]
    order = sorted(range(len(found)), key=lambda i: -scores[i])
    rank = [0] * len(found)
    for r, i in enumerate(order):
        rank[i] = r
    blocks = [
        BlockReport(
            block_id=i,
            doc=0,
            tag_path=path,
            text=text,
            tokens=len(text.split()) + 4,
            stage1_score=scores[i],
            stage2_score=None,
            rank=rank[i],
            kept=rank[i] < kept,
            reason=None if rank[i] < kept else "over_budget",
            element=el,
        )
        for i, (path, text, el) in enumerate(found)
    ]
    tokens = sum(b.tokens for b in blocks if b.kept)
    html = "".join(
        f"<p>{b.text}</p>" for b in sorted((b for b in blocks if b.kept), key=lambda b: b.rank)
    )
    return PruneResult(
        html=html,
        documents=[html],
        blocks=blocks,
        query="how many wins did team 512 have?",
        budget=tokens,
        tokens=tokens,
        original_tokens=sum(b.tokens for b in blocks),
        cleaned=["".join(parts)],
        tokenizer="synthetic",
        stats={"scorer": "synthetic"},
    )
