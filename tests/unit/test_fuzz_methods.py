"""The fuzz run of RAPTOR, GARLIC, LongRefiner and saved folders (issue #55), seeded and short:
about 50 cases of each family must find no crash, no output over budget and no silent loss.
Cheap models only (keyword embedder, scripted LLMs, BM25) and no UMAP: well under a minute."""

from __future__ import annotations

import dataclasses
import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from benchmarks._fuzz_inputs import load_texts
from benchmarks._fuzz_methods import FAMILIES, MethodFuzz
from benchmarks._fuzz_persist import PersistFuzz
from benchmarks._fuzzcases import Finding

CASES = 50
#: Cases of the planted-bug check: enough for the planted faults to be met.
PLANTED = 12


def _run(
    family: str, case: Any, seed: int, cases: int = CASES
) -> tuple[Counter[str], dict[str, str]]:
    rng = random.Random(f"{seed}:{family}")
    broken: Counter[str] = Counter()
    examples: dict[str, str] = {}
    for _ in range(cases):
        found: list[Finding]
        found, repro = case(rng)
        for f in found:
            key = f"{f.kind}: {f.where}: {f.detail}"
            broken[key] += 1
            examples.setdefault(key, repro)
    return broken, examples


@pytest.fixture(scope="module")
def texts(shared_data: Path) -> list[bytes]:
    return load_texts(shared_data, per_set=3)


@pytest.mark.parametrize("family", FAMILIES)
def test_fifty_cases_of_a_method_break_nothing(family: str, texts: list[bytes]) -> None:
    fuzz = MethodFuzz(texts, embed_every=0, umap=False)
    broken, examples = _run(family, lambda rng: fuzz.case(family, rng), seed=55)
    assert not broken, examples
    assert sum(fuzz.calls.values()) == CASES
    assert sum(fuzz.raised.values()) > 0  # hostile arguments were refused on purpose


def test_fifty_saved_folders_break_nothing(texts: list[bytes], tmp_path: Path) -> None:
    fuzz = PersistFuzz(texts, tmp_path)
    broken, examples = _run("persistence", fuzz.case, seed=55)
    assert not broken, examples
    assert fuzz.raised["PersistenceError"] > 0  # damaged folders were refused


def test_the_fuzz_reports_a_raw_exception_and_a_budget_overrun(
    texts: list[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    from hrefine.longrefiner import LongRefiner
    from hrefine.raptor import RaptorTree

    fuzz = MethodFuzz(texts, embed_every=0, umap=False)

    def broken_retrieve(self: Any, *args: Any, **kwargs: Any) -> Any:
        raise KeyError("planted")

    monkeypatch.setattr(RaptorTree, "retrieve", broken_retrieve)
    broken, _ = _run("raptor", lambda rng: fuzz.case("raptor", rng), seed=1, cases=PLANTED)
    assert any(k.startswith("crash: raptor retrieve: KeyError") for k in broken)

    real = LongRefiner.refine

    def padded(self: Any, query: Any, docs: Any, budget: Any, **kw: Any) -> Any:
        result = real(self, query, docs, budget, **kw)
        padded_docs = [
            dataclasses.replace(d, text=d.text + " padding" * 50) for d in result.documents
        ]
        return dataclasses.replace(result, documents=padded_docs)

    monkeypatch.setattr(LongRefiner, "refine", padded)
    broken, _ = _run(
        "longrefiner", lambda rng: fuzz.case("longrefiner", rng), seed=1, cases=PLANTED
    )
    assert any(k.startswith("over_budget: longrefiner") for k in broken)


def test_workers_share_the_cases_and_their_counts_add_up(shared_data: Path) -> None:
    # Two spawned workers: worker 0 draws the cases a one-process run starts with.
    from benchmarks import fuzz

    one = fuzz.run(6, seed=3, data=shared_data)
    both = fuzz.run_workers(12, seed=3, workers=2)
    assert both["workers"] == 2 and both["cases"] == 12
    assert sum(both["families"].values()) == 12
    assert all(both["families"][k] >= v for k, v in one["families"].items())
    assert both["metrics"] == {"no_crash": 1.0, "within_budget": 1.0, "no_silent_loss": 1.0}


def test_merge_adds_counts_and_keeps_the_first_reproducer() -> None:
    from benchmarks.fuzz import merge

    def part(families: dict[str, int], broken: dict[str, int], repro: str) -> dict[str, Any]:
        return {
            "seed": 0,
            "cases": sum(families.values()),
            "crashes": sum(v for k, v in broken.items() if k.startswith("crash")),
            "over_budget": 0,
            "unaccounted": 0,
            "lost": 0,
            "sunk_batches": 0,
            "families": families,
            "sources": {},
            "calls": {},
            "raised_on_purpose": {},
            "crashes_by_type": {},
            "broken": broken,
            "examples": {k: repro for k in broken},
            "seconds": {"raptor": 1.5},
            "metrics": {"no_crash": 0.0 if broken else 1.0},
        }

    got = merge(
        [part({"raptor": 2}, {}, "a"), part({"raptor": 1, "garlic": 3}, {"crash: x: E": 1}, "b")],
        wall=2.0,
    )
    assert got["cases"] == 6 and got["families"] == {"garlic": 3, "raptor": 3}
    assert got["crashes"] == 1 and got["examples"] == {"crash: x: E": "b"}
    assert got["metrics"] == {"no_crash": 0.0} and got["seconds"] == {"raptor": 3.0}
    assert got["cases_per_s"] == 3.0 and got["workers"] == 2
