"""Fuzz cases of RAPTOR, GARLIC and LongRefiner, and the properties each call must keep
(issue #55).

:class:`MethodFuzz` runs one case of a family at a time (:meth:`MethodFuzz.case`) and returns
what broke, as :class:`~benchmarks._fuzzcases.Finding` objects:

- ``crash``: an exception that is not an :class:`~hrefine.errors.HrefineError`, or no error
  for arguments that must be refused (a query that is no text or blank, a budget that is not a
  whole number of at least 1);
- ``over_budget``: RAPTOR's retrieved nodes, GARLIC's visited nodes past the top level, or
  LongRefiner's output over the budget (counted again with the method's own counter);
- ``lost``: text dropped without a reason: a non-blank character of a document in no leaf
  (RAPTOR and GARLIC), in no paragraph or heading of a LongRefiner structure, or a node that
  LongRefiner neither kept nor listed in ``dropped``.

Models are cheap: the keyword embedder (the real one every ``embed_every``-th build), the
extractive summariser or a scripted LLM whose answers are hostile now and then, the BM25
scorer. Trees and graphs are kept in small pools, so most cases are queries of a pooled one.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Sequence
from typing import Any

from hrefine.testing import KeywordEmbedder

from benchmarks._fuzz_inputs import (
    call,
    random_budget,
    random_docs,
    random_method_query,
    repro,
    uncovered,
)
from benchmarks._fuzzcases import Finding

__all__ = ["FAMILIES", "MethodFuzz", "fake_llm"]

FAMILIES = ("raptor", "garlic", "longrefiner")
_POOL = 6
_HOSTILE_ANSWERS = (
    "", "   \n", "{'points': ['a', 'b']}", '{"points": []}', "None", "\ud800 lone",
    "* " * 500, "word " * 3_000, "Yes", "No", "maybe", "YES!", "\x00\x01", "<p>html</p>",
    "* a point\n* another point", "1. first\n2. second", "\u65e5\u672c\u8a9e * \u70b9",
)  # fmt: skip


def fake_llm(rng: random.Random, hostile: float) -> Any:
    """A ``str -> str`` LLM: GARLIC bullets and a Yes/No by a word of the query, a few words of
    the prompt otherwise; with probability ``hostile`` per call a hostile answer or an error."""
    seed = rng.randrange(2**32)
    state = random.Random(seed)

    def answer(prompt: str) -> str:
        r = state.random()
        if r < hostile * 0.15:
            raise ConnectionError("the fake service is down")
        if r < hostile:
            return state.choice(_HOSTILE_ANSWERS)
        if "Information:" in prompt:
            return state.choice(("Yes", "No", "No."))
        lines = [ln for ln in prompt.split("\n") if ln.strip()][1:-3]
        if lines:
            return "\n".join("* " + " ".join(ln.split()[:12]) for ln in lines[::2][:8])
        return " ".join(prompt.split()[:30]) or "summary"

    return answer


def _chars(docs: Any) -> int:
    items = docs if isinstance(docs, list) else [docs]
    return sum(len(d) for d in items if isinstance(d, (str, bytes)))


def _bad_query(query: Any) -> bool:
    return not isinstance(query, str) or not query.strip()


def _bad_budget(budget: Any, none_ok: bool) -> bool:
    if budget is None:
        return not none_ok
    return isinstance(budget, bool) or not isinstance(budget, int) or budget < 1


def _leaf_loss(tree: Any, docs: Any, where: str) -> list[Finding]:
    """Non-blank characters of a document in none of its leaves (RAPTOR and GARLIC)."""
    from hrefine.raptor.build import END, SOURCE, START, as_sources

    sources = as_sources(docs)
    first = len(tree.metadata.get("sources", [])) - len(sources)
    spans: dict[int, list[tuple[int, int]]] = {}
    for leaf in tree.leaves:
        meta = tree[leaf].metadata
        spans.setdefault(int(meta[SOURCE]), []).append((int(meta[START]), int(meta[END])))
    found = []
    for i, source in enumerate(sources):
        missing = uncovered(source.text, spans.get(first + i, []))
        if missing:
            found.append(Finding("lost", where, f"document {i}: {missing} chars in no leaf"))
    return found


class MethodFuzz:
    """The pools and models of the method families; one :meth:`case` per fuzz case.

    Parameters
    ----------
    texts:
        Real documents (bytes) to cut and mutate.
    embed_every:
        Every this many-th build uses the embedded embedder (0: never).
    umap:
        Whether builds may be large enough to reach UMAP (its first use compiles for ~1 min).
    """

    def __init__(self, texts: Sequence[bytes], *, embed_every: int = 50, umap: bool = True) -> None:
        self.texts = texts
        self.embed_every = embed_every
        self.umap = umap
        self.keyword = KeywordEmbedder(dim=64)
        self.raised: Counter[str] = Counter()
        self.sources: Counter[str] = Counter()
        self.calls: Counter[str] = Counter()
        self._builds = 0
        self._trees: list[Any] = []
        self._graphs: list[Any] = []
        self._refiners: dict[tuple[str | None, bool], Any] = {}

    def case(self, family: str, rng: random.Random) -> tuple[list[Finding], str]:
        """Run one case of ``family`` (one of :data:`FAMILIES`): findings and a reproducer."""
        return getattr(self, f"_{family}")(rng)  # type: ignore[no-any-return]

    def _embedder(self) -> Any:
        self._builds += 1
        if self.embed_every and self._builds % self.embed_every == 0:
            return None  # the embedded all-MiniLM-L6-v2
        return self.keyword

    # -- RAPTOR ----------------------------------------------------------------------------
    def _raptor(self, rng: random.Random) -> tuple[list[Finding], str]:
        r = rng.random()
        if r < 0.2 or not self._trees:
            return self._raptor_build(rng)
        tree = rng.choice(self._trees)
        if r < 0.27:
            kind, docs = random_docs(rng, self.texts, most=2)
            self.sources[f"raptor insert {kind}"] += 1
            found: list[Finding] = []
            ok, _ = call("raptor insert", lambda: tree.insert(docs), self.raised, found)
            self.calls["raptor insert"] += 1
            if ok:
                found += _leaf_loss(tree.tree, docs, "raptor insert")
            return found, repro(insert=docs)
        return self._raptor_retrieve(rng, tree)

    def _raptor_build(self, rng: random.Random) -> tuple[list[Finding], str]:
        from hrefine.raptor import RaptorTree

        kind, docs = random_docs(rng, self.texts)
        self.sources[f"raptor build {kind}"] += 1
        settings: dict[str, Any] = {
            # Small leaves of a long text make hundreds of nodes: UMAP, and seconds a build.
            "chunk_tokens": rng.choice((8, 16, 64, 100) if _chars(docs) < 3_000 else (64, 100)),
            "max_layers": rng.randint(0, 3),
            # Without UMAP (the quick test), a dimension above any layer's size: one cluster.
            "reduction_dim": (
                (rng.randint(2, 10) if rng.random() < 0.3 else 200) if self.umap else 1_000_000
            ),
            "llm_retries": 0,
            "tokenizer": rng.choice(("regex", None)),
            "max_clusters": rng.choice((1, 2, 5, 50)),
        }
        llm = fake_llm(rng, rng.choice((0.0, 0.3, 1.0))) if rng.random() < 0.4 else None
        embedder = self._embedder()
        found: list[Finding] = []
        ok, tree = call(
            "raptor build",
            lambda: RaptorTree.build(docs, llm=llm, embedder=embedder, **settings),
            self.raised,
            found,
        )
        self.calls["raptor build"] += 1
        if ok:
            found += _leaf_loss(tree.tree, docs, "raptor build")
            self._trees = [*self._trees, tree][-_POOL:]
        return found, repro(docs=docs, settings=settings, llm=llm is not None)

    def _raptor_retrieve(self, rng: random.Random, tree: Any) -> tuple[list[Finding], str]:
        query = random_method_query(rng)
        budget = random_budget(rng, (None, 8, 16, 64, 256, 1024, 10**6))
        k = rng.choice((None, 1, 3, 10, 10, 10, 10, 10, 10, 1, 3, None, 0, -1, 2.5, "3"))
        mode = rng.choice(("collapsed", "traversal", "collapsed", "Traversal", "other", None))
        extra = rng.choice(
            ({}, {}, {"lexical_weight": 0.0}, {"summary_rank": "below"}, {"summary_rank": "free"})
        )
        self.sources["raptor retrieve"] += 1
        self.calls["raptor retrieve"] += 1
        found: list[Finding] = []
        ok, out = call(
            "raptor retrieve",
            lambda: tree.retrieve(query, mode=mode, k=k, max_tokens=budget, **extra),
            self.raised,
            found,
        )
        where = "raptor retrieve"
        text = repro(query=query, max_tokens=budget, k=k, mode=mode, extra=extra)
        if not ok:
            return found, text
        if _bad_query(query) or _bad_budget(budget, none_ok=True):
            return [Finding("crash", where, "no error for a bad query or budget")], text
        if isinstance(budget, int):
            spent = sum(tree.counter.count(n.text) for n in out)
            if spent > budget or sum(n.tokens for n in out) > budget:
                found.append(Finding("over_budget", where, f"{spent} tokens > budget {budget}"))
        # Traversal keeps k per layer.
        if isinstance(k, int) and str(mode).lower() == "traversal":
            most: Any = k * (tree.layers + 1)
        else:
            most = k
        if isinstance(most, int) and len(out) > most:
            found.append(Finding("over_budget", where, f"{len(out)} nodes > k {k}"))
        if any(not math.isfinite(n.score) or not 0 <= n.relevance <= 1 for n in out):
            found.append(Finding("crash", where, "score not finite or relevance out of [0, 1]"))
        return found, text

    # -- GARLIC ----------------------------------------------------------------------------
    def _garlic(self, rng: random.Random) -> tuple[list[Finding], str]:
        if rng.random() < 0.2 or not self._graphs:
            return self._garlic_build(rng)
        return self._garlic_search(rng, rng.choice(self._graphs))

    def _garlic_build(self, rng: random.Random) -> tuple[list[Finding], str]:
        from hrefine.garlic import GarlicGraph

        kind, docs = random_docs(rng, self.texts)
        self.sources[f"garlic build {kind}"] += 1
        settings: dict[str, Any] = {
            "chunk_tokens": rng.choice((16, 64, 300)),
            "batch_tokens": rng.choice((256, 400, 2048)),
            "summary_tokens": rng.choice((8, 48, 200)),
            "max_levels": rng.randint(1, 3),
            "retries": 0,
            "tokenizer": rng.choice(("regex", None)),
        }
        llm = fake_llm(rng, rng.choice((0.0, 0.0, 0.3, 1.0)))
        embedder = self._embedder()
        found: list[Finding] = []
        ok, graph = call(
            "garlic build",
            lambda: GarlicGraph.build(docs, llm=llm, embedder=embedder, **settings),
            self.raised,
            found,
        )
        self.calls["garlic build"] += 1
        if ok:
            found += _leaf_loss(graph.tree, docs, "garlic build")
            self._graphs = [*self._graphs, graph][-_POOL:]
        return found, repro(docs=docs, settings=settings)

    def _garlic_search(self, rng: random.Random, graph: Any) -> tuple[list[Finding], str]:
        from hrefine.garlic import GarlicSearcher
        from hrefine.garlic.search import STOP_REASONS

        query = random_method_query(rng)
        budget = random_budget(rng, (None, 16, 64, 256, 1024, 10**6))
        steps = rng.choice((None, 1, 4, 64, None, 1, 4, 64, 0, -2))
        fill = rng.choice((None, None, None, None, None, 64, 512, 64, 512, 0))
        llm = fake_llm(rng, rng.choice((0.0, 0.3, 1.0)))
        self.sources["garlic search"] += 1
        self.calls["garlic search"] += 1
        where = "garlic search"
        text = repro(query=query, max_tokens=budget, max_steps=steps, fill_tokens=fill)
        found: list[Finding] = []

        def search() -> Any:
            searcher = GarlicSearcher(graph, llm=llm, llm_timeout=None)
            return searcher, searcher.search(
                query, max_tokens=budget, max_steps=steps, fill_tokens=fill
            )

        ok, out = call(where, search, self.raised, found)
        if not ok:
            return found, text
        if _bad_query(query) or _bad_budget(budget, none_ok=True):
            return [Finding("crash", where, "no error for a bad query or budget")], text
        searcher, result = out
        if isinstance(budget, int) and any(v.step > 0 for v in result.visited):
            spent = sum(searcher.counter.count(v.text) for v in result.visited)
            if spent > budget:
                found.append(Finding("over_budget", where, f"{spent} tokens > budget {budget}"))
        if result.stopped_by not in STOP_REASONS:
            found.append(Finding("crash", where, f"stopped by {result.stopped_by!r}"))
        if any(not 0 <= v.similarity <= 1 for v in result.visited):
            found.append(Finding("crash", where, "similarity out of [0, 1]"))
        return found, text

    # -- LongRefiner -----------------------------------------------------------------------
    def _refiner(self, rng: random.Random) -> tuple[Any, bool]:
        from hrefine.longrefiner import LongRefiner

        tokenizer = rng.choice(("regex", None))
        with_llm = rng.random() < 0.3
        key = (tokenizer, with_llm)
        if key not in self._refiners:
            llm = fake_llm(rng, 0.5) if with_llm else None
            settings = {"llm": llm, "llm_retries": 0, "llm_timeout": None} if with_llm else {}
            self._refiners[key] = LongRefiner(scorer="bm25", tokenizer=tokenizer, **settings)
        return self._refiners[key], with_llm

    def _longrefiner(self, rng: random.Random) -> tuple[list[Finding], str]:
        refiner, with_llm = self._refiner(rng)
        kind, docs = random_docs(rng, self.texts)
        query = random_method_query(rng)
        budget = random_budget(rng, (1, 8, 32, 128, 512, 2048, 10**6))
        self.sources[f"longrefiner {kind}"] += 1
        self.calls["longrefiner refine" + (" llm" if with_llm else "")] += 1
        where = "longrefiner"
        text = repro(query=query, docs=docs, max_tokens=budget, llm=with_llm)
        found: list[Finding] = []
        ok, result = call(where, lambda: refiner.refine(query, docs, budget), self.raised, found)
        if not ok:
            return found, text
        if _bad_query(query) or _bad_budget(budget, none_ok=False):
            return [Finding("crash", where, "no error for a bad query or budget")], text
        spent = refiner.counter.count(result.text)
        if spent > budget or result.tokens > budget:
            found.append(Finding("over_budget", where, f"{spent} tokens > budget {budget}"))
        return found + _refine_loss(result, where), text


def _refine_loss(result: Any, where: str) -> list[Finding]:
    """Text of a document in no paragraph or heading, or a node neither kept (nor inside a kept
    section) nor given a reason in ``dropped``."""
    from hrefine.longrefiner import coverage

    found: list[Finding] = []
    for doc in result.documents:
        tree = doc.structure.tree
        if doc.structure.text and coverage(doc.structure) < 1.0:
            share = coverage(doc.structure)
            found.append(Finding("lost", where, f"structure holds {share:.3f} of the text"))
        kept = set(doc.kept)
        for node in tree:
            if node.id == 0 or node.id in kept or node.id in doc.dropped:
                continue
            if not set(tree.ancestors(node.id)) & kept:
                found.append(Finding("lost", where, f"{node.kind} neither kept nor dropped"))
                break
    return found
