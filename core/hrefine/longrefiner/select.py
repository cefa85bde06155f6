"""Step 3 and the selection: global selection, local and global scores, and the exact budget.

- **Global selection** asks the model which parts of a document (by the titles of its outline,
  or ``abstract``) help answer the question; the answer is read leniently (json-repair, then
  titles found in the text). A chosen section scores 1, and each node below a section passes
  its score to its children in equal shares: ``GS(child) = GS(parent) / |children|``.
- **Local scores** rate each leaf against the question with the configured scorer (the
  embedder with the BM25 match added, as HtmlRAG does, or a cross-encoder); a section's local
  score is the mean of its children's.
- **Score** = ``w_local * LS + w_global * GS`` with the weights of step 1.
- **Selection** goes through :func:`hrefine.budget.fill`: best score first, a unit that does not
  fit is expanded into its children, the real output is counted in the caller's tokenizer, and
  what is kept comes out in document order. Several documents share one budget.
"""

from __future__ import annotations

import dataclasses
import re
import unicodedata
from collections.abc import Sequence
from typing import Any

import numpy as np

import hrefine.longrefiner.prompts as prompts
from hrefine.budget import JOIN_SLACK, TokenCounter, fill
from hrefine.errors import BudgetTooSmallError
from hrefine.longrefiner._blocks import WS
from hrefine.longrefiner.document import StructuredDocument
from hrefine.longrefiner.options import LongRefinerOptions
from hrefine.models.lexical import BM25Scorer, fuse
from hrefine.results import unit_scores

__all__ = [
    "GlobalSelection",
    "Picked",
    "Truncation",
    "global_scores",
    "local_scores",
    "parse_selection",
    "pick",
    "selection_prompt",
]

# Words of the lead shown as the abstract in the selection prompt (the outline is the point).
_ABSTRACT_WORDS = 200
_OUTLINE_PREFIX = re.compile(r"^\s*(?:sub-?section|section|title)\s*\d*\s*:\s*", re.IGNORECASE)


@dataclasses.dataclass(frozen=True)
class GlobalSelection:
    """Step 3's outcome for one document."""

    selected: tuple[int, ...] = ()
    """Ids of the chosen sections (the lead's id for ``abstract``)."""
    names: tuple[str, ...] = ()
    """The titles the model named, as it wrote them."""
    unmatched: tuple[str, ...] = ()
    """Names that matched no title of the outline."""
    raw: str | None = None
    """The model's answer as it came (None when step 3 did not run)."""
    source: str = "off"
    """``"lm"``, ``"llm"``, ``"off"`` or ``"fallback"`` (the answer could not be read)."""


def _norm(title: str) -> str:
    title = _OUTLINE_PREFIX.sub("", title)
    return WS.sub(" ", title.strip().strip("\"'`*").strip()).casefold()


def selection_prompt(
    question: str, doc: StructuredDocument, options: LongRefinerOptions, *, tuned: bool
) -> tuple[str, str]:
    """``(system, user)`` of step 3 for one document: its abstract (the lead, first 200 words)
    and outline (sections and their sub-sections), in the published layout."""
    lead = doc.abstract_id()
    abstract = " ".join(doc.node_text(lead).split()[:_ABSTRACT_WORDS]) if lead is not None else ""
    sections: list[tuple[str, list[str]]] = []
    for _, title, depth in doc.outline():
        if depth == 1 or not sections:
            sections.append((title, []))
        elif depth == 2:
            sections[-1][1].append(title)
    outline = prompts.outline_text(doc.title, sections)
    user = options.selection_user.format(abstract=abstract, outline=outline, question=question)
    system = options.selection_system
    if not tuned:
        system += prompts.SELECTION_INSTRUCTIONS
    return system, user


def _names(answer: str) -> list[str] | None:
    """Titles in a list answer (a JSON list, a ``{"selected_titles": [...]}`` object, or a list
    of such objects), repaired leniently; None when the answer holds no list of strings."""
    import json_repair

    try:
        found: Any = json_repair.loads(answer)
    except Exception:  # json-repair gives up on some inputs by raising
        return None
    if isinstance(found, dict):
        found = found.get("selected_titles", found.get("titles", []))
    elif isinstance(found, list) and found and isinstance(found[0], dict):
        found = found[0].get("selected_titles", [])
    if not isinstance(found, list):
        return None
    names = [str(x) for x in found if isinstance(x, (str, int, float)) and str(x).strip()]
    return names or None


def parse_selection(answer: Any, doc: StructuredDocument, *, source: str) -> GlobalSelection:
    """Read a step-3 answer against ``doc``'s outline.

    A list answer is parsed with json-repair; failing that, every outline title (or
    ``abstract``) the answer mentions is taken. Names match titles whatever their case,
    quotes and ``SectionN:`` prefixes. An answer that names nothing known is a
    ``"fallback"``: no section is chosen, and the answer is kept.
    """
    text = answer if isinstance(answer, str) else str(answer)
    titles: dict[str, list[int]] = {}
    for node_id, title, _ in doc.outline():
        titles.setdefault(_norm(title), []).append(node_id)
    lead = doc.abstract_id()
    if lead is not None:
        titles.setdefault("abstract", []).append(lead)
    names = _names(text)
    if names is None:
        low = WS.sub(" ", text).casefold()
        names = [t for t in titles if t and re.search(rf"(?<!\w){re.escape(t)}(?!\w)", low)]
    selected: list[int] = []
    unmatched: list[str] = []
    for name in names:
        ids = titles.get(_norm(name))
        if ids is None:
            unmatched.append(name)
            continue
        selected.extend(i for i in ids if i not in selected)
    kind = source if selected else "fallback"
    return GlobalSelection(tuple(selected), tuple(names), tuple(unmatched), text, kind)


def global_scores(doc: StructuredDocument, selected: Sequence[int]) -> np.ndarray:
    """GS of every node: 1 for a chosen section, else its parent's GS split evenly among the
    parent's children (0 for the root)."""
    tree = doc.tree
    gs = np.zeros(len(tree), dtype=np.float64)
    chosen = set(selected)
    for node in tree:  # parents come before their children
        if node.id == 0:
            continue
        if node.id in chosen:
            gs[node.id] = 1.0
            continue
        parent = node.parents[0]
        gs[node.id] = gs[parent] / max(1, len(tree[parent].children))
    return gs


def _context(doc: StructuredDocument, node_id: int) -> str:
    """The section titles above a leaf, outermost first, as the scorer reads them."""
    titles: list[str] = []
    tree = doc.tree
    node = tree[node_id]
    while node.parents:
        node = tree[node.parents[0]]
        if node.kind == "section" and not node.metadata.get("abstract"):
            titles.append(str(node.metadata.get("title", "")))
    return " > ".join(t for t in reversed(titles) if t)


def local_scores(
    query: str,
    docs: Sequence[StructuredDocument],
    scorer: Any,
    *,
    lexical_weight: float,
) -> list[np.ndarray]:
    """LS of every node of every document, in [0, 1]: each leaf (and each section without
    children) scored against ``query`` in one scorer call, with its section titles on the first
    line; a section's LS is the mean of its children's.

    An embedding scorer's cosine gets the BM25 match (scaled by the best leaf's, weighted by
    ``lexical_weight``) added, then is divided by ``1 + lexical_weight``; BM25 alone is divided
    by the best; a cross-encoder's logits go through the logistic function.
    """
    units: list[tuple[int, int]] = []
    shown: list[str] = []
    bodies: list[str] = []
    for d, doc in enumerate(docs):
        for node in doc.tree:
            if node.id == 0 or node.children:
                continue
            body = doc.node_text(node.id)
            head = _context(doc, node.id)
            units.append((d, node.id))
            shown.append(f"{head}\n{body}" if head else body)
            bodies.append(body)
    out = [np.zeros(len(doc.tree), dtype=np.float64) for doc in docs]
    if not units:
        return out
    from hrefine.models.scorers import EmbeddingScorer

    raw = np.asarray(scorer.score(query, shown), dtype=np.float64)
    if isinstance(scorer, BM25Scorer):
        values = unit_scores(list(raw), scale="relative")
    elif isinstance(scorer, EmbeddingScorer):
        extra = float(lexical_weight)
        if extra > 0:
            raw = fuse(raw, BM25Scorer().score(query, shown), extra)
        values = unit_scores(list(raw), scale="cosine", extra=extra)
    elif raw.size and (raw.min() < 0 or raw.max() > 1):
        values = unit_scores(list(raw), scale="logit")
    else:
        values = [float(v) for v in raw]
    for (d, node_id), v in zip(units, values, strict=True):
        out[d][node_id] = 0.0 if v is None else float(v)
    for d, doc in enumerate(docs):
        ls = out[d]
        for node in reversed(doc.tree.nodes):  # children before parents
            if node.children:
                ls[node.id] = float(np.mean([ls[c] for c in node.children]))
    return out


@dataclasses.dataclass(frozen=True)
class Truncation:
    """A kept unit cut to fit the budget: it is kept (never also dropped), and its tail, the
    text past the cut, is what was left out."""

    chars_kept: int
    """Characters of the unit's text kept (a prefix of it)."""
    chars_total: int
    """Characters of the unit's whole text."""
    tokens_kept: int
    """Tokens of the kept prefix."""
    tokens_total: int
    """Tokens of the whole unit."""

    @property
    def chars_cut(self) -> int:
        """Characters of the tail left out."""
        return self.chars_total - self.chars_kept

    def note(self, node_id: int) -> str:
        """The note that reports the cut (in ``RefineResult.notes`` and the adapters')."""
        return (
            f"the budget was below every unit: the best paragraph (node {node_id}) was cut to "
            f"fit, keeping {self.tokens_kept:,} of its {self.tokens_total:,} tokens; its last "
            f"{self.chars_cut:,} of {self.chars_total:,} characters were left out"
        )


@dataclasses.dataclass(frozen=True)
class Picked:
    """What the selection kept."""

    kept: list[list[int]]
    """Per document, the ids of the kept nodes in document order (none inside another)."""
    texts: list[str]
    """Per document, the kept text (units joined by the separator; ``""`` for none kept)."""
    tokens: int
    """Tokens of the output, as counted for the budget."""
    dropped: list[dict[int, str]]
    """Per document, every node left out mapped to why (``budget.fill``'s reasons)."""
    truncated: list[dict[int, Truncation]] = dataclasses.field(default_factory=list)
    """Per document (empty: none was cut), the kept nodes cut to fit and by how much."""

    @property
    def trimmed(self) -> bool:
        """Whether the one kept unit had to be cut to fit (a budget below every unit's cost)."""
        return any(self.truncated)


def _atoms(doc: StructuredDocument) -> tuple[list[tuple[int, int]], dict[int, list[int]]]:
    """The document's smallest pieces of text, in document order: each section's heading and
    each paragraph, as ``(start, end)``; and the pieces under each node (by index)."""
    pieces: list[tuple[int, int, int]] = []  # (start, end, node id)
    for node in doc.tree:
        if node.kind == "paragraph":
            pieces.append((int(node.metadata["start"]), int(node.metadata["end"]), node.id))
        elif node.kind == "section" and node.metadata.get("heading"):
            start, end = node.metadata["heading"]
            pieces.append((int(start), int(end), node.id))
    pieces.sort()
    own: dict[int, list[int]] = {}
    for k, (_, _, node_id) in enumerate(pieces):
        own.setdefault(node_id, []).append(k)
    under: dict[int, list[int]] = {}
    for node in reversed(doc.tree.nodes):  # children before parents
        got = list(own.get(node.id, []))
        for c in node.children:
            got.extend(under[c])
        under[node.id] = got
    return [(a, b) for a, b, _ in pieces], under


def pick(
    docs: Sequence[StructuredDocument],
    scores: Sequence[np.ndarray],
    budget: int,
    counter: TokenCounter,
    *,
    separator: str = "\n\n",
) -> Picked:
    """Keep the best-scored nodes of ``docs`` that fit ``budget`` tokens together.

    Every node but the roots is a unit; a section stands for its heading and everything below
    it, so a unit inside a kept one is never added again. The output is each document's kept
    text, pieces that follow each other in the document joined as written (a whole section
    reads as it does in the document) and separate runs joined by ``separator``; it is counted
    as the reader sees it, the documents joined by ``separator`` too. When no unit fits, the
    best leaf is cut at a word boundary to the budget (after a character, in text written
    without spaces such as Chinese or Japanese); when not even its first word fits,
    :class:`~hrefine.errors.BudgetTooSmallError` is raised.
    """
    index: list[tuple[int, int]] = [
        (d, n.id) for d, doc in enumerate(docs) for n in doc.tree if n.id
    ]
    if not index:
        return Picked([[] for _ in docs], ["" for _ in docs], 0, [{} for _ in docs])
    where = {key: i for i, key in enumerate(index)}
    texts = [docs[d].node_text(n) for d, n in index]
    costs = counter.count_many(texts)
    unit_score = np.asarray([scores[d][n] for d, n in index], dtype=np.float64)
    stride = max((len(doc.text) for doc in docs), default=0) + 1
    order = [d * stride + docs[d].extent(n)[0] for d, n in index]
    # Atoms: (document, piece index) numbered across documents.
    spans_of: list[list[tuple[int, int]]] = []
    atom_base: list[int] = []
    under_of: list[dict[int, list[int]]] = []
    total = 0
    for doc in docs:
        spans, under = _atoms(doc)
        spans_of.append(spans)
        under_of.append(under)
        atom_base.append(total)
        total += len(spans)
    atom_doc = [d for d, spans in enumerate(spans_of) for _ in spans]
    members = [frozenset(atom_base[d] + k for k in under_of[d][n]) for d, n in index]
    # Every node is ranked, as in the paper: a paragraph that scores better than its section
    # is taken before it, and a section taken later adds only what it holds beyond its kept
    # parts (members). A section that does not fit is expanded into its children.
    children: dict[int, list[int]] = {}
    for i, (d, n) in enumerate(index):
        node = docs[d].tree[n]
        if node.children:
            children[i] = [where[(d, c)] for c in node.children]
    candidates = list(range(len(index)))
    sep_cost = counter.count(separator) if separator else 0

    def render(kept: frozenset[int]) -> list[str]:
        runs: list[list[list[int]]] = [[] for _ in docs]  # per doc: runs of piece indices
        for atom in sorted(kept):
            d = atom_doc[atom]
            k = atom - atom_base[d]
            if runs[d] and runs[d][-1][-1] == k - 1:
                runs[d][-1].append(k)
            else:
                runs[d].append([k])
        out: list[str] = []
        for d, doc_runs in enumerate(runs):
            spans = spans_of[d]
            text = docs[d].text
            out.append(separator.join(text[spans[r[0]][0] : spans[r[-1]][1]] for r in doc_runs))
        return out

    def measure(kept: frozenset[int]) -> tuple[list[str], int]:
        out = render(kept)
        present = [t for t in out if t]
        tokens = sum(counter.count_many(present)) + sep_cost * max(0, len(present) - 1)
        return out, max(tokens, counter.count(separator.join(present)) if present else 0)

    done = fill(
        costs,
        unit_score,
        budget,
        measure,
        order=order,
        children=children,
        candidates=candidates,
        members=members,
        separator_cost=sep_cost,
        slack=JOIN_SLACK,
        allow_empty=True,
        nested=True,
    )
    dropped: list[dict[int, str]] = [{} for _ in docs]
    for i, why in done.dropped.items():
        d, n = index[i]
        dropped[d][n] = why
    if done.output is None:
        return _trimmed(docs, index, texts, unit_score, budget, counter, dropped)
    kept: list[list[int]] = [[] for _ in docs]
    for i in sorted(done.selected, key=lambda i: order[i]):
        d, n = index[i]
        kept[d].append(n)
    out = list(done.output)
    # The fill kept the larger of two measures (parts and separators, or the joined text), so
    # it never passes the budget; the result reports the joined text's own count.
    present = [t for t in out if t]
    return Picked(kept, out, counter.count(separator.join(present)) if present else 0, dropped)


# Characters of an over-long first word quoted in BudgetTooSmallError's message.
_SHOWN_CHARS = 40


def _cut_wide(text: str, counter: TokenCounter, budget: int) -> str:
    """The longest prefix of ``text``'s first word that ends after a wide character (CJK,
    most emoji) and fits ``budget``; ``""`` when none does.

    Chinese and Japanese are written without spaces, so a word-boundary cut finds no boundary
    in a whole sentence; each wide character is a boundary there, as a space is elsewhere.
    """
    word = text.lstrip()
    end = 0
    while end < len(word) and not word[end].isspace():
        end += 1
    ends = [i + 1 for i in range(end) if unicodedata.east_asian_width(word[i]) in "WF"]
    if not ends:
        return ""
    # Token counts grow with the prefix (all but always): a binary search, then a real check.
    lo, hi = 0, len(ends)  # ends[:lo] fit; ends[hi:] do not
    while lo < hi:
        mid = (lo + hi) // 2
        if counter.count(word[: ends[mid]]) <= budget:
            lo = mid + 1
        else:
            hi = mid
    for k in range(lo - 1, -1, -1):
        piece = word[: ends[k]]
        if counter.count(piece) <= budget:
            return piece
    return ""


def _trimmed(
    docs: Sequence[StructuredDocument],
    index: list[tuple[int, int]],
    texts: list[str],
    unit_score: np.ndarray,
    budget: int,
    counter: TokenCounter,
    dropped: list[dict[int, str]],
) -> Picked:
    """The best-scored leaf cut at a word boundary (or after a wide character: see
    :func:`_cut_wide`) to ``budget`` (no unit fits whole)."""
    from hrefine.eval.text import truncate_to_tokens

    leaves = [i for i, (d, n) in enumerate(index) if not docs[d].tree[n].children]
    best = max(leaves, key=lambda i: (np.nan_to_num(unit_score[i], nan=-np.inf), -i))
    cut = truncate_to_tokens(texts[best], counter, budget) or _cut_wide(
        texts[best], counter, budget
    )
    if not cut:
        first = texts[best].split()[0] if texts[best].split() else texts[best]
        smallest = counter.count(first)
        # A "word" may be a whole paragraph (no spaces): the message names its start only.
        shown = first if len(first) <= _SHOWN_CHARS else first[:_SHOWN_CHARS] + "..."
        msg = (
            f"budget of {budget} tokens is too small for even the first word of the best "
            f"paragraph ({shown!r}, {len(first):,} characters, is {smallest} tokens); "
            "raise the budget"
        )
        raise BudgetTooSmallError(msg, budget=budget, smallest=smallest)
    d, n = index[best]
    out = ["" for _ in docs]
    out[d] = cut
    kept: list[list[int]] = [[] for _ in docs]
    kept[d] = [n]
    # The cut unit is kept, not dropped: its tail is reported by the truncation record.
    dropped[d].pop(n, None)
    tokens = counter.count(cut)
    truncated: list[dict[int, Truncation]] = [{} for _ in docs]
    whole = texts[best]
    truncated[d][n] = Truncation(len(cut), len(whole), tokens, int(counter.count(whole)))
    return Picked(kept, out, tokens, dropped, truncated=truncated)
