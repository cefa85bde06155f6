"""The README's Python examples run as written, offline, with the embedded models.

Each ```` ```python ```` block is executed on its own, in a fresh namespace and an empty working
folder, so a block that uses a name it does not define, a file that is not there, or an API that
changed fails here. The blocks hold their own ``assert`` lines on what they show.
"""

from __future__ import annotations

import builtins
import contextlib
import io
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"

_BLOCK_RE = re.compile(r"^```python[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)


def python_blocks(markdown: str) -> list[tuple[int, str]]:
    """The ```` ```python ```` blocks of a Markdown text, each with the line it starts on."""
    return [
        (markdown.count("\n", 0, m.start()) + 1, m.group(1)) for m in _BLOCK_RE.finditer(markdown)
    ]


BLOCKS = python_blocks(README.read_text(encoding="utf-8"))


def test_extraction_finds_every_python_block() -> None:
    sample = "text\n```python\nx = 1\n```\n```bash\nls\n```\n```python\ny = 2\n```\n"
    assert python_blocks(sample) == [(2, "x = 1\n"), (8, "y = 2\n")]


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
def test_readme_python_block_runs(
    line: int, code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # whatever a block writes lands here
    compiled = compile(code, f"README.md:{line}", "exec")
    namespace: dict[str, object] = {"__name__": "__readme__", "__builtins__": builtins}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compiled, namespace)  # the README's own examples
    assert out.getvalue().strip(), "the example printed nothing to show"
