"""The fixed split of the dev pages into a tuning half and a checking half."""

from __future__ import annotations

import hashlib
from pathlib import Path

from hrefine.eval.loaders import half_of, load_dataset


def test_the_rule_is_the_parity_of_the_first_sha1_byte() -> None:
    for doc_id in ("203-342", "203-124", "nq_00", "nq_02", "x"):
        even = hashlib.sha1(doc_id.encode("utf-8")).digest()[0] % 2 == 0
        assert half_of(doc_id) == ("tune" if even else "check")


def test_pages_not_questions_are_split(shared_data: Path) -> None:
    items = load_dataset("wtq", data_dir=shared_data, strict_only=True)
    by_page: dict[str, set[str]] = {}
    for it in items:
        by_page.setdefault(it.doc_id, set()).add(half_of(it.doc_id))
    assert all(len(h) == 1 for h in by_page.values())
    halves = [h.pop() for h in by_page.values()]
    # Both halves hold a fair share of WTQ's 78 pages with strict questions (42 and 36).
    assert halves.count("tune") == 42
    assert halves.count("check") == 36
