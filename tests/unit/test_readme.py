"""The README shows the core and both frameworks, in examples that stand on their own.

The README's blocks run in ``test_docs_examples.py`` (with every docs page); here each Python
block is checked to need nothing from another block or from the substitution table: every
name it reads it defines or imports itself, so it runs as pasted into a fresh interpreter.
"""

from __future__ import annotations

from pathlib import Path

import doc_blocks as db
import pytest

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"

BLOCKS = db.python_blocks(README.read_text(encoding="utf-8"))


def test_extraction_finds_every_python_block() -> None:
    sample = "text\n```python\nx = 1\n```\n```bash\nls\n```\n```python\ny = 2\n```\n"
    assert db.python_blocks(sample) == [(2, "x = 1\n"), (8, "y = 2\n")]


def test_readme_shows_the_core_and_both_frameworks() -> None:
    code = "\n".join(block for _, block in BLOCKS)
    for name in (
        "HtmlPruner",
        "HtmlRagCompressor",
        "HtmlRagNodePostprocessor",
        "RaptorTree",
        "RaptorRetriever",
        "RaptorIndex",
        "GarlicGraph",
        "GarlicSearcher",
        "LongRefiner",
        "LongRefinerCompressor",
        "LongRefinerNodePostprocessor",
    ):
        assert f"import {name}" in code or f", {name}" in code, f"no README example uses {name}"


@pytest.mark.parametrize(("line", "code"), BLOCKS, ids=[f"README.md:{n}" for n, _ in BLOCKS])
def test_readme_python_block_stands_alone(line: int, code: str) -> None:
    assert not db.unbound_names(code), f"README.md:{line} reads names it does not define"
    assert "print(" in code and "assert " in code  # it shows something and checks it


def test_unbound_names_sees_what_a_block_takes_as_given() -> None:
    code = (
        "import os\nfrom a import b as c\ndef f(x):\n    return x + y\nz = [c(q) for q in os.sep]\n"
    )
    assert db.unbound_names(code) == {"y"}
