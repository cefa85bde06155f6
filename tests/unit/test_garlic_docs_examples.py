"""The GARLIC guide (docs/garlic.md) is true to the code: its examples run, its tables are whole.

Each ```` ```python ```` block runs on its own, in a fresh namespace and an empty working folder,
with the names the guide says its examples use: ``texts`` and ``question`` from a real HotpotQA
item of the shared data (its ten paragraphs), ``llm`` the instant ``ExtractiveGarlicLM``,
``docs``/``documents`` the paragraphs as LangChain/LlamaIndex Documents, ``base_retriever`` a
LangChain retriever returning them, and ``chat_model``/``answer_llm`` the frameworks' own fake
answering models. The command-line examples use only real subcommands and flags, and the
settings table has a row for every ``GarlicOptions`` field.
"""

from __future__ import annotations

import builtins
import dataclasses
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
from hrefine.eval.garlic_method import ExtractiveGarlicLM
from hrefine.eval.loaders import hotpot_paragraph_text, load_dataset
from hrefine.garlic import GarlicOptions

REPO = Path(__file__).resolve().parents[2]
GUIDE = REPO / "docs" / "garlic.md"
TEXT = GUIDE.read_text(encoding="utf-8")
#: The HotpotQA item the picture is drawn from (tuning half).
ITEM = "5ac3165c5542995ef918c10a"

_BLOCK = re.compile(r"^```(\w+)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)


def blocks(language: str) -> list[tuple[int, str]]:
    """The guide's fenced blocks in ``language``, each with the line it starts on."""
    return [
        (TEXT.count("\n", 0, m.start()) + 1, m.group(2))
        for m in _BLOCK.finditer(TEXT)
        if m.group(1) == language
    ]


PYTHON = blocks("python")


@pytest.fixture(scope="module")
def item(shared_data: Path) -> Any:
    (found,) = [it for it in load_dataset("hotpotqa", data_dir=shared_data) if it.id == ITEM]
    return found


@pytest.fixture(scope="module")
def names(item: Any) -> dict[str, Any]:
    """What the guide's examples take as given."""
    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document as LCDocument
    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from langchain_core.retrievers import BaseRetriever
    from llama_index.core import Document as LIDocument
    from llama_index.core.llms import MockLLM

    paragraphs = [(p["title"], hotpot_paragraph_text(p)) for p in item.extra["paragraphs"]]
    docs = [LCDocument(page_content=t, metadata={"title": n}, id=n) for n, t in paragraphs]

    class Paragraphs(BaseRetriever):
        """A LangChain retriever that returns the item's paragraphs."""

        def _get_relevant_documents(
            self, query: str, *, run_manager: CallbackManagerForRetrieverRun
        ) -> list[LCDocument]:
            return [d.model_copy(deep=True) for d in docs]

    return {
        "texts": [text for _, text in paragraphs],
        "question": item.question,
        "llm": ExtractiveGarlicLM(),
        "docs": docs,
        "documents": [LIDocument(text=t, id_=n, metadata={"title": n}) for n, t in paragraphs],
        "base_retriever": Paragraphs(),
        "chat_model": FakeListChatModel(responses=["John Waters"]),
        "answer_llm": MockLLM(max_tokens=16),
    }


def test_the_guide_has_python_bash_and_the_picture() -> None:
    assert len(PYTHON) >= 4
    assert blocks("bash")
    assert "<!--" not in TEXT  # no note left for a later edit
    assert "(img/garlic-graph.png)" in TEXT
    assert (REPO / "docs" / "img" / "garlic-graph.png").is_file()


@pytest.mark.parametrize(("line", "code"), PYTHON, ids=[f"garlic.md:{n}" for n, _ in PYTHON])
def test_python_example_runs(
    line: int,
    code: str,
    names: dict[str, Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)  # whatever an example saves lands here
    namespace: dict[str, Any] = {"__name__": "__garlic_docs__", "__builtins__": builtins}
    namespace.update(names)
    exec(compile(code, f"docs/garlic.md:{line}", "exec"), namespace)  # the guide's own example
    capsys.readouterr()
    # every example ends with something to show: a search, its nodes, or an answer
    shown = [namespace.get(n) for n in ("result", "found", "kept", "answer", "nodes", "response")]
    assert any(v for v in shown if v is not None), "the example produced nothing"


def test_the_python_example_shows_a_trace_and_a_report(
    names: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    line, code = PYTHON[0]
    namespace: dict[str, Any] = {"__builtins__": builtins, **names}
    exec(compile(code, f"docs/garlic.md:{line}", "exec"), namespace)
    result, filled = namespace["result"], namespace["filled"]
    assert result.trace and result.visited and result.stopped_by
    assert filled.stopped_by in ("filled", "exhausted", "max_steps")
    assert sum(v.level == 0 for v in filled.visited) > 0
    assert "<!DOCTYPE html>" in (tmp_path / "search.html").read_text(encoding="utf-8")
    assert (tmp_path / "paragraphs.garlic" / "tree.json").is_file()


def test_the_compressor_example_keeps_within_its_budget(
    names: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hrefine.budget import get_counter

    monkeypatch.chdir(tmp_path)
    (line, code) = next((n, c) for n, c in PYTHON if "GarlicCompressor(max_tokens=512" in c)
    namespace: dict[str, Any] = {"__builtins__": builtins, **names}
    exec(compile(code, f"docs/garlic.md:{line}", "exec"), namespace)
    counter = get_counter(None)
    kept = namespace["kept"]
    assert kept and 0 < sum(counter.count(d.page_content) for d in kept) <= 512
    order = [d.metadata["hrefine_node_id"] for d in kept]
    assert any(d.metadata["hrefine_kind"] == "chunk" for d in kept)
    assert len(set(order)) == len(order)  # each node once


def _cli_options() -> dict[str, set[str]]:
    import typer
    from hrefine.garlic.cli import garlic_app

    group = typer.main.get_command(garlic_app)
    out: dict[str, set[str]] = {}
    for name, command in group.commands.items():  # type: ignore[attr-defined]
        flags = {o for p in command.params for o in (*p.opts, *p.secondary_opts)}
        out[name] = flags
    return out


def test_command_line_examples_use_real_subcommands_and_flags() -> None:
    known = _cli_options()
    commands = [
        shlex.split(line.split("#", 1)[0])
        for _, block in blocks("bash")
        for line in block.splitlines()
        if "hrefine garlic" in line
    ]
    assert {"build", "query"} <= {c[c.index("garlic") + 1] for c in commands}
    for words in commands:
        words = words[words.index("hrefine") :]
        sub = words[2]
        assert sub in known, f"no subcommand {sub!r}"
        for word in words[3:]:
            if word.startswith("-") and word != "-":
                assert word in known[sub], f"hrefine garlic {sub} has no option {word}"
    # the prose names only real flags too
    for flag in re.findall(r"`(--[a-z-]+)", TEXT):
        assert any(flag in flags for flags in known.values()), f"no CLI option {flag}"


def test_settings_table_has_every_option_with_its_default() -> None:
    table = TEXT.split("## Choosing the settings", 1)[1].split("\n## ", 1)[0]
    rows = {
        m.group(1): m.group(2).strip()
        for m in re.finditer(r"^\| `(\w+)` \| ([^|]+) \|", table, re.M)
    }
    fields = {f.name: f.default for f in dataclasses.fields(GarlicOptions)}
    assert set(rows) == set(fields), "the settings table and GarlicOptions differ"
    for name, default in fields.items():
        shown = rows[name].replace(",", "")
        if isinstance(default, bool) or default is None or isinstance(default, (int, float)):
            assert shown.strip('`"') == str(default), f"{name}: table says {rows[name]}"
        elif name in ("summary_prompt", "search_prompt"):
            assert "paper" in shown
        else:
            assert shown.strip("`") == repr(default).replace("'", '"'), name


def test_prompt_only_section_matches_the_search_module() -> None:
    import hrefine.garlic.search as search

    doc = search.__doc__ or ""
    section = TEXT.split("### Chat models and APIs", 1)[1].split("\n## ", 1)[0]
    # the module states what the mode drops; the guide says each of them
    for dropped in ("attention", "position", "P(Yes)", "KV cache"):
        assert dropped in doc
        assert dropped in section, f"the guide's prompt-only section does not mention {dropped}"


def test_the_measured_section_quotes_the_committed_benchmark() -> None:
    import json

    result = json.loads((REPO / "benchmarks" / "results" / "garlic.json").read_text("utf-8"))
    block = result["datasets"]["hotpotqa (SmolLM2 subset)"]
    measured = TEXT.split("## Measured", 1)[1]
    row = block["table"]["garlic (SmolLM2-135M)"]
    kept = [f"{row['both_kept'][b]:.2f}" for b in ("512", "1024")]
    assert f"| garlic (SmolLM2-135M) | {kept[0]} | {kept[1]} |" in measured
    assert f"on the first {block['n_questions']} HotpotQA questions" in measured
    for budget, cost in block["costs"]["garlic (SmolLM2-135M)"]["search"].items():
        if not budget.isdigit():
            continue
        pre, full = cost["prefilled_tokens"], cost["recompute_tokens"]
        assert f"| {int(budget)} | {pre:,} | {full:,} | {round(100 * (1 - pre / full))}% |" in (
            measured
        )
