"""Every code block of README.md and docs/*.md runs as written (tests/doc_blocks.py says how).

The Python and shell blocks of each page run in order in one subprocess, in an empty folder,
with their placeholders (``page.html``, ``contract.txt``, ``mine.jsonl``, ``page_html``,
``llm``, "your model" folders, ...) filled from ``../shared/data`` by the tables of
``doc_blocks`` (FILES, NAMES, SUBSTITUTIONS). A block that cannot run offline on a CPU carries a
visible ``<!-- docs-test: skip REASON -->`` right before its fence; those are listed here and
must give a reason.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import doc_blocks as db
import pytest

ALL = [b for path in db.markdown_files() for b in db.file_blocks(path)]
RUN = [b for b in ALL if b.kind and b.skip is None]
SKIPPED = [b for b in ALL if b.kind and b.skip is not None]
#: Why a block may be skipped: each reason names one of these.
SKIP_CAUSES = ("set-up", "network", "GPU", "Ray", "model", "API key", "benchmark", "test suite")
#: At most this many skipped blocks: the point is that the examples run.
MOST_SKIPS = 21

#: Blocks that run in `make test` (measured on 2 busy cores: README's Python about 100 s of
#: CPU, the other pages 20-30 s each). The rest train adapters, build GARLIC graphs and RAPTOR
#: trees with SmolLM2 or run `hrefine demo`, and run with `-m slow` (`make test-all`).
FAST_PAGES = {"docs/quickstart.md", "docs/integrations.md", "docs/evaluation.md"}


def _fast(block: db.Block) -> bool:
    return block.file in FAST_PAGES or (block.file == "README.md" and block.kind == "python")


_RESULTS: dict[str, dict[str, Any]] = {}


def _page_results(
    page: str, kinds: str, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    """Run the page's blocks of ``kinds`` once (a subprocess); each block's outcome by id."""
    key = f"{page}|{kinds}"
    if key not in _RESULTS:
        folder = tmp_path_factory.mktemp(page.replace("/", "_").replace(".", "_"))
        work = folder / "work"
        work.mkdir()
        results = folder / "results.json"
        done = subprocess.run(
            [sys.executable, str(Path(db.__file__)), page, str(work), str(results), kinds],
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
        outcomes = json.loads(results.read_text()) if results.is_file() else []
        _RESULTS[key] = {o["id"]: o for o in outcomes}
        _RESULTS[key]["__stderr__"] = done.stderr[-3000:]
    return _RESULTS[key]


@pytest.mark.parametrize(
    "block",
    [pytest.param(b, id=b.id, marks=() if _fast(b) else pytest.mark.slow) for b in RUN],
)
def test_block_runs(block: db.Block, tmp_path_factory: pytest.TempPathFactory) -> None:
    # README's Python blocks alone in `make test`; a page's blocks all together otherwise
    kinds = "python" if block.file == "README.md" and _fast(block) else "python,bash"
    results = _page_results(block.file, kinds, tmp_path_factory)
    outcome = results.get(block.id)
    assert outcome is not None, f"the page's run stopped before {block.id}:\n" + str(
        results["__stderr__"]
    )
    assert outcome["ok"], f"{block.id} fails as written:\n{outcome['error']}"


def test_every_block_is_run_shown_or_skipped_with_a_reason(
    capsys: pytest.CaptureFixture[str],
) -> None:
    for block in ALL:
        assert block.kind or block.lang in db.SHOWN_LANGUAGES, f"{block.id}: ```{block.lang}"
    for block in SKIPPED:
        assert block.skip, f"{block.id}: a skip marker needs its reason"
        assert any(c in block.skip for c in SKIP_CAUSES), f"{block.id}: {block.skip!r}"
    assert len(SKIPPED) <= MOST_SKIPS, [(b.id, b.skip) for b in SKIPPED]
    assert len(RUN) > 3 * len(SKIPPED)
    with capsys.disabled():  # the list, in the test's output
        print(f"\n{len(RUN)} blocks run, {len(SKIPPED)} skipped:")
        for block in SKIPPED:
            print(f"  {block.id}: {block.skip}")


def test_markers_are_read_right_before_a_fence() -> None:
    text = "a\n<!-- docs-test: skip needs a GPU -->\n```bash\nhrefine x\n```\n```python\nx=1\n```\n"
    got = db.blocks(text)
    assert [(b.line, b.lang, b.skip) for b in got] == [
        (3, "bash", "needs a GPU"),
        (6, "python", None),
    ]
    with pytest.raises(ValueError, match="not right before a fence"):
        db.blocks("<!-- docs-test: skip far away -->\n\ntext\n```bash\nls\n```\n")
    with pytest.raises(ValueError, match="unknown"):
        db.blocks("<!-- docs-test: run -->\n```bash\nls\n```\n")


def test_shell_commands_are_parsed_with_pipes_and_redirections() -> None:
    code = (
        'hrefine html prune page.html -q "who?" > out.html   # a comment\n'
        "cat notes.txt | hrefine raptor build - -o n \\\n    --quiet\n"
        "hrefine html prune - -q x --json < page.html\n"
    )
    got = [(c.args, c.stdin, c.stdout) for c in db.commands(code)]
    assert got == [
        (["html", "prune", "page.html", "-q", "who?"], None, "out.html"),
        (["raptor", "build", "-", "-o", "n", "--quiet"], "notes.txt", None),
        (["html", "prune", "-", "-q", "x", "--json"], "page.html", None),
    ]
    with pytest.raises(ValueError, match="not an hrefine command"):
        db.commands("make demo\n")


def test_substitutions_make_runs_small_and_fill_model_folders() -> None:
    values = {"smollm2": "/m/smol", "minilm": "/m/mini"}
    code = (
        "hrefine train query-analysis --data qa.jsonl --out adapters/qa --steps 200\n"
        "hrefine train build-data query-analysis -o qa.jsonl\n"
        "hrefine eval -m htmlrag -d wtq -b 512 -n 40\n"
        "hrefine eval --method x --limit 50 \\\n  --name y\n"
        "hrefine raptor build d.md -o t --llm ~/models/Qwen2.5-1.5B-Instruct --quiet\n"
        'get_scorer("embedding", embedder="/models/bge-small-en-v1.5")\n'
    )
    assert db.substitute(code, values).splitlines() == [
        "hrefine train query-analysis --data qa.jsonl --out adapters/qa --steps 2",
        "hrefine train build-data query-analysis -o qa.jsonl --limit 3",
        "hrefine eval -m htmlrag -d wtq -b 512 --limit 2",
        "hrefine eval --method x --limit 2 \\",
        "  --name y",
        "hrefine raptor build d.md -o t --llm /m/smol --quiet",
        'get_scorer("embedding", embedder="/m/mini")',
    ]


def test_placeholder_names_are_read_before_they_are_assigned() -> None:
    code = "docs = f(page_html)\nfor d in docs:\n    print(d, llm)\nquestion = 'q'\n"
    assert db.names_used(code, "README.md") == ["page_html", "llm"]
