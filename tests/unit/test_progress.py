"""``progress=True`` shows a long build's steps on stderr with no logging set up (#53 item 4)."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from hrefine._progress import reporter
from hrefine.garlic import GarlicGraph
from hrefine.raptor import RaptorTree
from hrefine.testing import KeywordEmbedder, ScriptedLM

TEXT = "\n\n".join(
    f"Paragraph {i} tells of the harbour, the ships and cargo number {i}. " * 4 for i in range(12)
)


@pytest.fixture(autouse=True)
def _no_logging_set_up() -> Any:
    """The root logger as a fresh interpreter has it: no handlers, WARNING."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    root.handlers.clear()
    root.setLevel(logging.WARNING)
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


def test_raptor_progress_prints_each_step_to_stderr(capfd: pytest.CaptureFixture[str]) -> None:
    RaptorTree.build(
        [TEXT],
        llm=lambda prompt: "A summary of harbours.",
        embedder=KeywordEmbedder(),
        progress=True,
        chunk_tokens=40,
    )
    err = capfd.readouterr().err
    assert "hrefine raptor" in err
    assert "leaves: embedding" in err
    assert "layer 1: summarising" in err
    assert "done:" in err.splitlines()[-1]


def test_garlic_progress_prints_each_level_to_stderr(capfd: pytest.CaptureFixture[str]) -> None:
    GarlicGraph.build(
        [TEXT[:400]], lm=ScriptedLM(["* a point"]), embedder=KeywordEmbedder(), progress=True
    )
    err = capfd.readouterr().err
    assert "hrefine garlic" in err and "level 1: summarising" in err


def test_no_progress_prints_nothing(capfd: pytest.CaptureFixture[str]) -> None:
    RaptorTree.build([TEXT], llm=lambda prompt: "A summary.", embedder=KeywordEmbedder())
    assert capfd.readouterr().err == ""


def test_a_callable_gets_the_bare_lines() -> None:
    lines: list[str] = []
    say = reporter(lines.append, "raptor")
    say("one")
    assert lines == ["one"]


def test_llamaindex_show_progress_draws_a_bar(capfd: pytest.CaptureFixture[str]) -> None:
    from llama_index.core import Document

    from llamaindex_hrefine import RaptorIndex

    RaptorIndex.from_documents(
        [Document(text=TEXT)],
        llm=lambda prompt: "A summary of harbours.",
        embed_model=KeywordEmbedder(),
        show_progress=True,
        chunk_tokens=40,
    )
    err = capfd.readouterr().err
    assert "RAPTOR tree: 4step" in err  # tqdm's bar: leaves, summaries, their vectors, done
    assert "done: 1 summary layers" in err
