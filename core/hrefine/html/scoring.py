"""Stage-1 scores of HtmlRAG's blocks: what each block is scored as, and how the scores combine.

Every text stage 1 scores is a :class:`ScoredItem`: a block (its headings and its text), a
table or list scored as a whole, or a split paragraph scored whole for its pieces. An item may
take another item's dense score (a table row its table's, a paragraph piece its paragraph's),
and back matter scores below everything else. :class:`BlockScorer` scores a list of items with
the configured scorer plus the weighted BM25 match, in one scorer call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from hrefine.html._text import element_text
from hrefine.html.blocks import BlockForest
from hrefine.html.options import HtmlPrunerOptions
from hrefine.html.table_scores import (
    asks_order,
    enclosing_tables,
    inherit_table_scores,
    is_prose,
    last_rows,
    neighbour_scores,
)
from hrefine.html.tags import GROUP_TAGS
from hrefine.models.lexical import BM25Scorer, query_window
from hrefine.models.scorers import EmbeddingScorer, base_scorer

# How table rows share their table's score lives in table_scores; its functions are imported
# from here too.
__all__ = [
    "BlockScorer",
    "ScoredItem",
    "asks_order",
    "inherit_table_scores",
    "last_rows",
    "neighbour_scores",
    "stage1_items",
]

# Text of a table or list scored as a whole is cut here (the embedder reads far less anyway).
_MAX_GROUP_CHARS = 200_000
# Words of a table or list scored as a whole a dense scorer reads with read_words set: its
# headings, caption, header row and first rows.
_GROUP_READ_WORDS = 30

ItemKind = Literal["block", "group", "paragraph", "text"]


def joined(heading: str, body: str) -> str:
    """A text as the scorer reads it: its headings on the first line, then the text."""
    return f"{heading}\n{body}" if heading else body


@dataclass(frozen=True, slots=True)
class ScoredItem:
    """One text that stage 1 scores."""

    kind: ItemKind
    """``"block"``, ``"group"`` (a table or list as a whole), ``"paragraph"`` (a split
    paragraph whole, scored for its pieces) or ``"text"`` (a bare text).
    """
    node: int
    """The block-tree node it scores (a paragraph: its first piece); -1 for a bare text."""
    heading: str
    """Its headings (section titles, table header)."""
    body: str
    """Its own text."""
    borrow: int | None = None
    """Index of the item whose dense score this one takes; its words are then matched apart
    from its headings (see :func:`lexical_match`).
    """
    back: bool = False
    """Back matter (references, notes...): scored below every other item."""

    @property
    def text(self) -> str:
        """What the scorer reads unless a reading window is set."""
        return joined(self.heading, self.body)


def _context(forest: BlockForest, node_id: int, drop: Sequence[str] = ()) -> str:
    """A node's scoring context, without the parts ``drop`` (in order) where they open it."""
    context: str = forest.tree.nodes[node_id].metadata.get("context") or ""
    for part in drop:
        if not context.startswith(part):
            break
        rest = context[len(part) :]
        if rest and not rest.startswith((" > ", " | ")):
            break  # a longer heading that starts with the same words
        context = rest[3:]
    return context


def _pieces_by_paragraph(
    forest: BlockForest, ids: Sequence[int], pieces: Mapping[Any, Any]
) -> list[tuple[list[int], str]]:
    """The paragraphs split into blocks: the positions in ``ids`` of each one's pieces, and
    its whole text."""
    if not pieces:
        return []
    found: dict[Any, list[int]] = {}
    for k, i in enumerate(ids):
        paragraph = pieces.get(forest.elements[i])
        if paragraph is not None:
            found.setdefault(paragraph, []).append(k)
    nodes = forest.tree.nodes
    return [(ks, " ".join(nodes[ids[k]].text for k in ks)) for ks in found.values() if len(ks) > 1]


def containers(forest: BlockForest) -> list[int]:
    """Tables and lists of the tree that are split into blocks (each is scored as a whole)."""
    return [
        n.id
        for n in forest.tree.nodes
        if n.metadata["tag"] in GROUP_TAGS and not n.metadata.get("is_leaf", False)
    ]


@dataclass(frozen=True)
class Stage1Items:
    """What :func:`stage1_items` found: the items, and the table each table block lies in."""

    items: list[ScoredItem]
    group_ids: list[int]
    tables: dict[int, int]


def stage1_items(
    forest: BlockForest,
    ids: Sequence[int],
    pieces: Mapping[Any, Any],
    *,
    drop: Sequence[str],
    demote: bool,
    paragraphs_whole: bool,
) -> Stage1Items:
    """The items of stage 1: every block of ``ids``, then every table and list scored as a
    whole, then (``paragraphs_whole``) each split paragraph whole.

    Parameters
    ----------
    pieces:
        Paragraph piece element -> its paragraph element (see ``split_paragraphs``).
    drop:
        Heading parts left out of every context (a single page's title, for BM25).
    demote:
        Mark back matter (``demote_back_matter``).
    paragraphs_whole:
        A split paragraph is scored whole and its pieces take that dense score (an embedder
        with the BM25 match on: the match tells the pieces apart).
    """
    nodes = forest.tree.nodes
    group_ids = containers(forest)
    wholes = _pieces_by_paragraph(forest, ids, pieces) if paragraphs_whole else []
    flagged = {i for i in (*ids, *group_ids) if demote and nodes[i].metadata.get("back_matter")}
    # Prose in a table (a plot summary, a note) means what it says, not what its table is
    # about: it is scored on its own, like a paragraph. Back matter in a table (a layout
    # table holding a whole page) stays below the rest.
    # A record's rows (an infobox's fields, see record_tables) say what they are themselves.
    tables = {
        i: t
        for i, t in enclosing_tables(forest, ids, set(group_ids)).items()
        if not is_prose(forest, i) and i not in flagged and not nodes[t].metadata.get("record")
    }
    # A row's meaning is its table's (scored as a whole); its words tell rows apart, so an
    # embedder gives rows their table's score and BM25 their own. Rows are most of a
    # data-heavy page's text: this is where the embedding time went.
    index = {g: len(ids) + k for k, g in enumerate(group_ids)}
    borrow: list[int | None] = [
        index[tables[i]] if i in tables and nodes[i].metadata["tag"] == "tr" else None for i in ids
    ]
    # Pieces of a paragraph take its dense score and are told apart by their words.
    for w, (ks, _) in enumerate(wholes):
        for k in ks:
            borrow[k] = len(ids) + len(group_ids) + w
    items = [
        ScoredItem(
            "block",
            i,
            _context(forest, i, drop),
            nodes[i].text,
            borrow=borrow[k],
            back=i in flagged,
        )
        for k, i in enumerate(ids)
    ]
    items += [
        ScoredItem(
            "group",
            g,
            _context(forest, g, drop),
            element_text(forest.elements[g])[:_MAX_GROUP_CHARS],
            back=g in flagged,
        )
        for g in group_ids
    ]
    items += [
        ScoredItem(
            "paragraph", ids[ks[0]], _context(forest, ids[ks[0]]), text, back=ids[ks[0]] in flagged
        )
        for ks, text in wholes
    ]
    return Stage1Items(items, group_ids, tables)


def lexical_match(bm25: BM25Scorer, query: str, items: Sequence[ScoredItem]) -> np.ndarray:
    """BM25 match of each item, in one index. An item that borrows its dense score matches as
    its own words' match plus its headings' (a table row: its cells, then its headings and
    table header).

    Scored together, a context repeated in every row would favour the rows with the fewest
    words (BM25's length norm): a ranked table's last rows would outrank its first. Apart,
    rows that match only through their header tie, and document order decides.
    """
    corpus = [it.text for it in items]
    shared: dict[str, int] = {}
    for k, it in enumerate(items):
        if it.borrow is not None:
            corpus[k] = it.body
            if it.heading:
                shared.setdefault(it.heading, len(shared))
    found = np.asarray(bm25.score(query, corpus + list(shared)), dtype=np.float64)
    out = found[: len(items)]
    for k, it in enumerate(items):
        if it.borrow is not None and it.heading:
            out[k] += found[len(items) + shared[it.heading]]
    return out


def _below(others: np.ndarray, match: np.ndarray | None, count: int) -> np.ndarray:
    """Scores of ``count`` back-matter texts: below every score of ``others``, in the order of
    their lexical ``match`` (document order decides among equals, see fill)."""
    valid = others[~np.isnan(others)]
    floor = float(valid.min()) if len(valid) else 0.0
    if match is None:
        return np.full(count, floor - 1.0)
    match = np.nan_to_num(match, nan=0.0)
    best = float(match.max()) if len(match) else 0.0
    # In (floor - 1, floor - 0.5]: apart from the others whatever the scale of the match.
    scaled = 0.5 * match / best if best > 0 else np.zeros(len(match))
    return np.asarray(floor - 1.0 + scaled, dtype=np.float64)


class BlockScorer:
    """The stage-1 scorer of a pruner: its model scorer plus the weighted BM25 match.

    Parameters
    ----------
    options:
        The pruner's options (``scorer``, ``embedder``, ``embed_max_tokens``,
        ``lexical_weight``, ``read_words``).
    """

    def __init__(self, options: HtmlPrunerOptions) -> None:
        self.options = options
        self._scorer: Any = None
        self._lexical: BM25Scorer | None = None

    @property
    def scorer(self) -> Any:
        """The model scorer (resolved on first use)."""
        if self._scorer is None:
            from hrefine.models.scorers import WindowedScorer, get_scorer

            spec = self.options.scorer
            if spec == "bm25":  # the pruner's own, stemming (see bm25)
                self._scorer = self.bm25()
            else:
                self._scorer = get_scorer(
                    spec, embedder=self.options.embedder, max_tokens=self.options.embed_max_tokens
                )
                if self.options.window_words is not None:
                    self._scorer = WindowedScorer(self._scorer, self.options.window_words)
        return self._scorer

    @property
    def lexical(self) -> bool:
        """Whether the model scorer is BM25 itself."""
        return isinstance(self.scorer, BM25Scorer)

    def bm25(self) -> BM25Scorer:
        """The pruner's BM25: plural endings taken off (a block is a row, a cell, a heading,
        where "opponents" in a question must meet "Opponent" in a header), question words and
        clitics not matched. Both found more answers than they lost over all 320 WTQ and NQ
        questions (see the HtmlRAG docs page); on long chunks they lost, so the scorer's
        defaults stay exact."""
        if self._lexical is None:
            self._lexical = BM25Scorer(stem=True, questions=True)
        return self._lexical

    def reader(self, query: str) -> Callable[[ScoredItem], str] | None:
        """What a dense scorer reads of an item with ``read_words`` set (None: its text)."""
        size = self.options.read_words
        if size is None or self.lexical:
            return None
        terms = self.bm25().terms(query)

        def read(item: ScoredItem) -> str:
            if item.kind == "group":  # a table or list as a whole: headings, caption, first rows
                return query_window(item.text, frozenset(), min(size, _GROUP_READ_WORDS))
            window = query_window(item.body, terms, size, stem=True)
            return joined(item.heading, window)

        return read

    def score(
        self,
        query: str,
        items: Sequence[ScoredItem],
        *,
        read: Callable[[ScoredItem], str] | None = None,
        dense: np.ndarray | None = None,
    ) -> np.ndarray:
        """Stage-1 scores of ``items``: the scorer's, plus the weighted BM25 match for dense
        scorers.

        An item that borrows takes the dense score of the item it names instead of being
        scored, when the scorer is an embedding and the BM25 match is applied (it is then what
        tells such items apart); otherwise every item is scored. Back-matter items are not
        given to a dense scorer: they score below every other item, ordered among themselves
        by their lexical match, or equal without one. A dense scorer reads ``read(item)`` where
        given; BM25 reads whole texts. ``dense``: the scorer's scores of every item, when the
        caller has them already (see :meth:`score_groups`).
        """
        n = len(items)
        if not n:
            return np.zeros(0, dtype=np.float64)
        scorer = self.scorer
        lexical = isinstance(scorer, BM25Scorer)
        weight = 0.0 if lexical else float(self.options.lexical_weight)
        # Needs bm25s (its stopword list): without it this raises, naming the extra, rather
        # than leave the lexical part out of every score.
        bm25 = lexical_match(self.bm25(), query, items) if weight > 0 else None
        back = np.fromiter((it.back for it in items), dtype=bool, count=n)
        # The match is scaled by the best body text's: a citation repeating the question's
        # words must not shrink the lexical part of every other score. Nor must a row's two
        # added matches (see lexical_match), where any text matched as a whole.
        body = ~back if not back.all() else np.ones(n, dtype=bool)
        borrows = [k for k, it in enumerate(items) if it.borrow is not None]
        if bm25 is not None and borrows:
            whole = body.copy()
            whole[borrows] = False
            if (bm25[whole] > 0).any():
                body = whole
        top = float(bm25[body].max()) if bm25 is not None and body.any() else 0.0
        source: list[int | None] = [None] * n  # whose dense score item k takes
        if top > 0 and isinstance(base_scorer(scorer), EmbeddingScorer):
            source = [
                it.borrow if it.borrow is not None and not back[it.borrow] else None for it in items
            ]
        # A lexical scorer is cheap: it scores back matter too, to order it.
        own = [k for k in range(n) if source[k] is None and (lexical or not back[k])]
        scores = np.full(n, np.nan, dtype=np.float64)
        if lexical:  # every item, rows apart from their header
            scores = lexical_match(scorer, query, items)
        elif own:
            if dense is None:
                shown = [items[k].text if read is None else read(items[k]) for k in own]
                found = scorer.score(query, shown)
            else:
                found = dense[own]
            scores[own] = np.asarray(found, dtype=np.float64)
        for k, b in enumerate(source):
            if b is not None:
                scores[k] = scores[b]
        if bm25 is not None and top > 0:
            scores = scores + weight * bm25 / top
        if back.any():
            # Their own match orders them, even when no body text matches at all.
            match = bm25 if bm25 is not None else scores if lexical else None
            count = int(back.sum())
            scores[back] = _below(scores[~back], None if match is None else match[back], count)
        return scores

    def score_groups(self, query: str, groups: list[list[str]]) -> list[np.ndarray]:
        """:meth:`score` of each group of bare texts, with one scorer call for all of them.

        Each group's lexical match is scaled on its own, as if scored alone; only the model
        pass is shared. Narrowing a page's big tables scores each table's columns: one call
        per table ran many small batches that kept one of two CPU threads idle.
        """
        dense: np.ndarray | None = None
        flat = [t for g in groups for t in g]
        if flat and not self.lexical:
            dense = np.asarray(self.scorer.score(query, flat), dtype=np.float64)
        out: list[np.ndarray] = []
        start = 0
        for g in groups:
            part = None if dense is None else dense[start : start + len(g)]
            items = [ScoredItem("text", -1, "", t) for t in g]
            out.append(self.score(query, items, dense=part))
            start += len(g)
        return out
