"""No library module over 500 lines (issue #56): a long module is split by idea, not grown."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("core/hrefine", "langchain_hrefine", "llamaindex_hrefine")
MAX_LINES = 500


def test_no_library_module_is_over_500_lines() -> None:
    files = [p for pkg in PACKAGES for p in sorted((REPO / pkg).rglob("*.py"))]
    assert len(files) > 100  # the packages were found
    long = {
        str(p.relative_to(REPO)): n
        for p in files
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}, f"modules over {MAX_LINES} lines: {long}"
