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
