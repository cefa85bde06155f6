"""What the README's examples print holds no heading left alone and no invented sentence (#53).

Each example block of the README runs as pasted (the blocks stand alone: ``test_readme.py``),
with the embedded models, and what it returned is read back from its namespace:

- HtmlRAG: no heading of the pruned page without text of its section after it;
- RAPTOR: every sentence returned, summaries included, is a sentence of the notes;
- GARLIC: every chunk read is text of the notes; the default (no model) graph's summary points
  are sentences of the notes, and every word of every point SmolLM2 wrote is a word of them;
- LongRefiner: every kept section heading comes with text of its section.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path
from typing import Any

import doc_blocks as db
import pytest
from html_pages import heading_pieces, lone_headings

REPO = Path(__file__).resolve().parents[2]
BLOCKS = db.python_blocks((REPO / "README.md").read_text(encoding="utf-8"))
_WORD = re.compile(r"[^\W_]+")


def _run(name: str, tmp_path: Path) -> dict[str, Any]:
    """Run the README block that imports ``name``; its namespace after the run."""
    code = next(c for _, c in BLOCKS if f"import {name}" in c)
    namespace: dict[str, Any] = {"__name__": "__readme__"}
    cwd = Path.cwd()
    os.chdir(tmp_path)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            exec(compile(code, f"README:{name}", "exec"), namespace)
    finally:
        os.chdir(cwd)
    return namespace


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)}


def test_htmlrag_example_keeps_no_heading_alone(tmp_path: Path) -> None:
    result = _run("HtmlPruner", tmp_path)["result"]
    pieces = heading_pieces(result.html)
    assert [t for lv, t in pieces if lv is not None], "the example keeps a heading with its text"
    assert lone_headings(result.html) == []


def test_raptor_example_returns_only_sentences_of_the_notes(tmp_path: Path) -> None:
    ns = _run("RaptorTree", tmp_path)
    source = " ".join(" ".join(ns["notes"]).split())
    for node in ns["hits"]:
        for sentence in re.split(r"(?<=[.!?])\s+", " ".join(node.text.split())):
            assert sentence in source, f"not in the notes: {sentence!r}"
            assert len(_WORD.findall(sentence)) >= 4, f"a title, not a sentence: {sentence!r}"


def test_garlic_example_invents_nothing(tmp_path: Path) -> None:
    ns = _run("GarlicGraph", tmp_path)
    source = " ".join(" ".join(ns["notes"]).split())
    known = _words(source)
    for name in ("result", "llm_result"):  # the no-model default, then SmolLM2's graph
        visited = ns[name].visited
        assert any(node.level == 0 for node in visited)  # source text, not only model points
        for node in visited:
            if node.level == 0 or name == "result":
                # the default's points are sentences of the notes themselves
                assert all(s in source for s in re.split(r"(?<=[.!?])\s+", node.text.strip()))
            else:
                assert _words(node.text) <= known, f"words not in the notes: {node.text!r}"


@pytest.mark.parametrize("name", ["LongRefiner", "LongRefinerCompressor"])
def test_longrefiner_examples_keep_no_heading_alone(name: str, tmp_path: Path) -> None:
    ns = _run(name, tmp_path)
    if name == "LongRefiner":
        doc = ns["result"].documents[0]
        text, headings = ns["result"].text, [t for _, t, _ in doc.structure.outline()]
    else:
        text, headings = ns["docs"][0].page_content, ["Kettle KX-2 manual", "Safety"]
        headings += ["Descaling", "Warranty"]
    paragraphs = [p.strip().lstrip("#").strip() for p in text.split("\n\n") if p.strip()]
    for i, para in enumerate(paragraphs):
        if para in headings:
            assert i + 1 < len(paragraphs) and paragraphs[i + 1] not in headings, para
