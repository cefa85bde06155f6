"""LongRefiner under hostile input: text no tokenizer takes, scripts written without spaces,
documents passed as the wrong container, a broken structure cache, and the adapters and the
CLI fed the same. Each test pins a defect found by review (a raw library exception, an error
message as long as the document, a refinement lost to a cache entry), plus the invariants that
must hold on every odd input: all of the text in the structure, never over the budget."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hrefine._saved import content_digest
from hrefine.budget import get_counter
from hrefine.cli import main
from hrefine.errors import (
    BudgetTooSmallError,
    ConfigError,
    InputTypeError,
)
from hrefine.longrefiner import LongRefiner, coverage
from hrefine.testing import ScriptedLM

#: CJK text with no spaces and no sentence punctuation: one "word" to a whitespace splitter.
CJK_RUN = "本協議自生效日起五年內有效" * 300
STORY = "\n\n".join(
    f"Paragraph {i} tells how the river rose on day {i} and the town moved uphill."
    for i in range(12)
)


@pytest.fixture(scope="module")
def refiner() -> LongRefiner:
    return LongRefiner(scorer="bm25")


def _fake_lm() -> ScriptedLM:
    # Unusable structuring answers: the structure falls back to the paragraphs.
    return ScriptedLM(lambda prompt: "no structure here")


# -- text no tokenizer takes ------------------------------------------------------------------
@pytest.mark.parametrize(
    "document",
    ["The term \ud800 is five years.\n\nThe fee is ten dollars.", "\udc80\udfff The term."],
)
def test_lone_surrogates_in_a_document_become_replacement_characters(
    refiner: LongRefiner, document: str
) -> None:
    # Was a raw TypeError from the tokenizer ("TextEncodeInput must be Union[...]").
    result = refiner.refine("term", [document, "The term ends in May."], 100)
    doc = result.documents[0].structure
    assert "\ufffd" in doc.text and "\ud800" not in result.text
    assert coverage(doc) == 1.0
    assert get_counter().count(result.text) <= 100
    assert refiner.structure(document).text.count("\ufffd") >= 1


def test_a_mapping_or_a_set_of_documents_is_an_input_type_error(refiner: LongRefiner) -> None:
    # A dict used to be read as its keys: the refined "documents" were the key strings.
    with pytest.raises(InputTypeError, match="list of strings"):
        refiner.refine("term", {"a.txt": "The term is five years."}, 50)  # type: ignore[arg-type]
    with pytest.raises(InputTypeError, match="list of strings"):
        refiner.refine("term", {"The term is five years."}, 50)  # type: ignore[arg-type]


@pytest.mark.parametrize("titles", [5, "xy", b"xy", ["a", 3], {"a": "b"}])
def test_titles_that_are_not_a_list_of_strings_are_an_input_type_error(
    refiner: LongRefiner, titles: object
) -> None:
    # Was a raw TypeError for 5; "xy" was read as two titles, "x" and "y".
    with pytest.raises(InputTypeError, match="title"):
        refiner.refine("river", ["a river", "b"], 10, titles=titles)  # type: ignore[arg-type]


def test_titles_may_be_a_tuple_with_none_for_no_title(refiner: LongRefiner) -> None:
    result = refiner.refine("river", ["a river", "b"], 10, titles=("Rivers", None))  # type: ignore[arg-type]
    assert "river" in result.text


# -- scripts written without spaces, tiny budgets ---------------------------------------------
@pytest.mark.parametrize("budget", [1, 7, 50])
def test_cjk_without_spaces_is_cut_at_a_character_to_a_tiny_budget(
    refiner: LongRefiner, budget: int
) -> None:
    # Was BudgetTooSmallError: the whole run of characters counted as its "first word".
    for text in (CJK_RUN, "本協議自生效日起五年內有效。"):
        result = refiner.refine("協議", text, budget)
        assert result.text and text.startswith(result.text)
        assert 0 < get_counter().count(result.text) <= budget
        assert result.tokens <= budget
        assert result.trimmed == (result.text != text)


def test_a_word_too_long_for_the_budget_is_named_briefly(refiner: LongRefiner) -> None:
    # A 200,000-character word used to be quoted whole in the message.
    with pytest.raises(BudgetTooSmallError, match="raise the budget") as caught:
        refiner.refine("term", "a" * 200_000, 10)
    assert len(str(caught.value)) < 400
    assert caught.value.budget == 10 and caught.value.smallest > 10


# -- invariants on odd inputs ------------------------------------------------------------------
ODD = {
    "controls": "The\x00 term\x07 is\x1b five years.\x0c\n\nThe fee\x0b is ten dollars.\r\n",
    "whitespace": "   \n\t \u3000\u00a0\u2028 \n\nThe term is five years.\n\n\u2029  ",
    "headings only": "# Term\n## Renewal\n### Notice\n# Fees\n## Late fees\n",
    "nested clauses": "\n".join(
        f"{'.'.join(['1'] * k)} Clause at level {k}: the term is {k} years." for k in range(1, 7)
    )
    * 3,
    "broken html": "<html><body><h1>Term<p>The term is <b>five years<div></h2><table><tr>"
    "<td>fee<td>ten dollars</body>",
    "table line": "| term | five years | fee | ten dollars | " * 4000,
    "cjk": "本協議自生效日起五年內有效。" * 200 + "\n\n" + "本協議受日本法律管轄。" * 5,
    "one long paragraph": " ".join(f"word{i} of the agreement" for i in range(20_000)),
}


@pytest.mark.parametrize("name", list(ODD))
@pytest.mark.parametrize("tokenizer", [None, "cl100k_base"])
def test_odd_documents_keep_all_their_text_and_the_budget(name: str, tokenizer: str | None) -> None:
    refiner = LongRefiner(scorer="bm25", tokenizer=tokenizer)
    text = ODD[name]
    original = str(text)
    docs = [text, "  \n ", "The term is five years."]
    for budget in (1, 40):
        try:
            result = refiner.refine("What is the term? 協議", docs, budget)
        except BudgetTooSmallError:
            assert budget == 1  # only the one-token budget may be below every first word
            continue
        for refined in result.documents:
            if refined.structure.source != "empty":
                assert coverage(refined.structure) == 1.0, name
        assert get_counter(tokenizer).count(result.text) <= budget
    assert docs == [original, "  \n ", "The term is five years."]  # the caller's list untouched


# -- the structure cache -----------------------------------------------------------------------
def _cached_refiner(folder: Path) -> LongRefiner:
    return LongRefiner(scorer="bm25", llm=_fake_lm(), cache_dir=str(folder))


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[: len(data) // 2],
        lambda data: b"",
        lambda data: b"\x89PNG\r\n\x1a\n\x00\x00",
        lambda data: data.replace(b"Paragraph 3", b"Paragraph 9"),
    ],
    ids=["truncated", "empty", "binary", "edited"],
)
def test_a_damaged_cache_entry_is_rebuilt_and_noted(
    tmp_path: Path, damage: object, caplog: pytest.LogCaptureFixture
) -> None:
    first = _cached_refiner(tmp_path).refine("river day 3", STORY, 60)
    (entry,) = tmp_path.iterdir()
    manifest = entry / "tree.json"
    manifest.write_bytes(damage(manifest.read_bytes()))  # type: ignore[operator]
    # Was a PersistenceError: one bad cache file stopped every refinement of the document.
    with caplog.at_level(logging.WARNING):
        again = _cached_refiner(tmp_path).refine("river day 3", STORY, 60)
    assert again.text == first.text
    assert any("cache" in n and "structured again" in n for n in again.notes)
    assert any("structured again" in r.getMessage() for r in caplog.records)
    assert coverage(again.documents[0].structure) == 1.0
    # The entry was written again, whole: the next refiner reads it without a note.
    json.loads(manifest.read_text(encoding="utf-8"))
    third = _cached_refiner(tmp_path).refine("river day 3", STORY, 60)
    assert not any("structured again" in n for n in third.notes)


def test_a_cache_entry_without_its_tree_file_is_rebuilt(tmp_path: Path) -> None:
    _cached_refiner(tmp_path).refine("river day 3", STORY, 60)
    (entry,) = tmp_path.iterdir()
    (entry / "tree.json").unlink()
    result = _cached_refiner(tmp_path).refine("river day 3", STORY, 60)
    assert any("structured again" in n for n in result.notes)


def test_a_cache_dir_that_is_a_file_is_a_config_error(tmp_path: Path) -> None:
    a_file = tmp_path / "cache"
    a_file.write_text("not a folder", encoding="utf-8")
    # Was a raw NotADirectoryError, raised after the model had structured the document.
    with pytest.raises(ConfigError, match="cache_dir"):
        _cached_refiner(a_file)


def test_a_cache_that_cannot_be_written_does_not_lose_the_result(tmp_path: Path) -> None:
    a_file = tmp_path / "blocker"
    a_file.write_text("x", encoding="utf-8")
    refiner = _cached_refiner(a_file / "cache")  # its parent is a file: mkdir fails
    result = refiner.refine("river day 3", STORY, 60)
    assert result.text and result.tokens <= 60
    assert any("could not be cached" in n for n in result.notes)


def _forge(manifest: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    """Edit a saved structure and recompute its checksum, as a forger would."""
    data = json.loads(manifest.read_text(encoding="utf-8"))
    edit(data)
    data["content_sha256"] = content_digest(data)
    manifest.write_text(json.dumps(data), encoding="utf-8")


def _empty_second_paragraph(data: dict[str, Any]) -> None:
    node = data["tree"]["nodes"][2]
    node["text"], node["metadata"]["end"] = "", node["metadata"]["start"]


def _overlap_first_two(data: dict[str, Any]) -> None:
    first, second = data["tree"]["nodes"][1:3]
    first["metadata"]["end"] = second["metadata"]["end"]


@pytest.mark.parametrize("edit", [_empty_second_paragraph, _overlap_first_two])
def test_a_forged_cache_entry_that_loses_text_is_rebuilt(
    tmp_path: Path, edit: Callable[[dict[str, Any]], None]
) -> None:
    first = _cached_refiner(tmp_path).refine("river day 3", STORY, 10**6)
    (entry,) = tmp_path.iterdir()
    _forge(entry / "tree.json", edit)
    # Was used as is: paragraphs 2 and 3 vanished even with room for the whole story.
    again = _cached_refiner(tmp_path).refine("river day 3", STORY, 10**6)
    assert again.text == first.text and "day 3" in again.text
    assert any("does not fit the text" in n and "structured again" in n for n in again.notes)
    assert coverage(again.documents[0].structure) == 1.0
    third = _cached_refiner(tmp_path).refine("river day 3", STORY, 10**6)
    assert not any("structured again" in n for n in third.notes)


@pytest.mark.parametrize(
    ("field", "value"),
    [("notes", 5), ("notes", [1]), ("raw_outputs", "xy"), ("title", 3), ("source", None)],
)
def test_a_forged_cache_config_is_rebuilt(tmp_path: Path, field: str, value: object) -> None:
    first = _cached_refiner(tmp_path).refine("river day 3", STORY, 60)
    (entry,) = tmp_path.iterdir()
    _forge(entry / "tree.json", lambda data: data["config"].__setitem__(field, value))
    # Was a raw TypeError on every refine of the document.
    again = _cached_refiner(tmp_path).refine("river day 3", STORY, 60)
    assert again.text == first.text
    assert any("malformed config" in n and "structured again" in n for n in again.notes)
    third = _cached_refiner(tmp_path).refine("river day 3", STORY, 60)
    assert not any("structured again" in n for n in third.notes)


@pytest.mark.parametrize("damaged", [False, True])
def test_a_cache_entry_that_links_out_of_the_cache_is_never_followed(
    tmp_path: Path, damaged: bool
) -> None:
    cache, outside = tmp_path / "cache", tmp_path / "outside"
    _cached_refiner(cache).refine("river day 3", STORY, 60)
    (entry,) = cache.iterdir()
    entry.rename(outside)
    if damaged:
        (outside / "tree.json").write_text("{", encoding="utf-8")
    before = {p.name: p.read_bytes() for p in outside.iterdir()}
    entry.symlink_to(outside, target_is_directory=True)
    lm = _fake_lm()
    result = LongRefiner(scorer="bm25", llm=lm, cache_dir=str(cache)).refine(
        "river day 3", STORY, 60
    )
    # Was read through (a structure from elsewhere), and, once damaged, written through.
    assert lm.prompts, "the linked structure was used"
    assert any("is a link" in n for n in result.notes)
    assert {p.name: p.read_bytes() for p in outside.iterdir()} == before
    assert entry.is_dir() and not entry.is_symlink()
    assert json.loads((entry / "tree.json").read_text(encoding="utf-8"))["kind"]


# -- the adapters ------------------------------------------------------------------------------
def test_langchain_refuses_no_documents_and_reads_lone_surrogates() -> None:
    pytest.importorskip("langchain_core")
    import asyncio

    from langchain_core.documents import Document

    from langchain_hrefine import LongRefinerCompressor

    compressor = LongRefinerCompressor(max_tokens=30, scorer="bm25")  # type: ignore[call-arg]
    # Was a raw TypeError ("'NoneType' object is not iterable").
    with pytest.raises(InputTypeError, match="LangChain Documents"):
        compressor.compress_documents(None, "term")  # type: ignore[arg-type]
    with pytest.raises(InputTypeError, match="LangChain Documents"):
        asyncio.run(compressor.acompress_documents(None, "term"))  # type: ignore[arg-type]
    doc = Document(page_content="The term \ud800 is five years.")
    (out,) = compressor.compress_documents([doc], "term")
    assert "\ufffd" in out.page_content and doc.page_content == "The term \ud800 is five years."


def test_llamaindex_refuses_no_nodes_and_reads_lone_surrogates() -> None:
    pytest.importorskip("llama_index.core")
    import asyncio

    from llama_index.core.schema import NodeWithScore, TextNode

    from llamaindex_hrefine import LongRefinerNodePostprocessor

    post = LongRefinerNodePostprocessor(max_tokens=30, scorer="bm25")
    with pytest.raises(InputTypeError, match="list of LlamaIndex"):
        post.postprocess_nodes(None, query_str="term")  # type: ignore[arg-type]
    with pytest.raises(InputTypeError, match="list of LlamaIndex"):
        asyncio.run(post.apostprocess_nodes(None, query_str="term"))  # type: ignore[arg-type]
    node = NodeWithScore(node=TextNode(text="The term \ud800 is five years."), score=0.3)
    (out,) = post.postprocess_nodes([node], query_str="term")
    assert "\ufffd" in out.node.get_content()
    assert node.node.get_content() == "The term \ud800 is five years." and node.score == 0.3


# -- the CLI -----------------------------------------------------------------------------------
def _fails_in_one_line(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith("hrefine: error: ")
    return last


def test_cli_odd_files(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HREFINE_DEBUG", raising=False)
    base = ["-q", "term", "-n", "10", "--scorer", "bm25"]
    png = tmp_path / "scan.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01")
    assert "PNG" in _fails_in_one_line(capsys, ["refine", str(png), *base])
    # A 200,000-character word: one short line, not the word.
    word = tmp_path / "word.txt"
    word.write_text("a" * 200_000, encoding="utf-8")
    line = _fails_in_one_line(capsys, ["refine", str(word), *base])
    assert "raise the budget" in line and len(line) < 400
    # Unwritable report (its folder is a file): nothing left behind.
    doc = tmp_path / "doc.txt"
    doc.write_text("The term is five years.\n\nThe fee is ten dollars.\n", encoding="utf-8")
    report = tmp_path / "doc.txt" / "report.html"
    line = _fails_in_one_line(capsys, ["refine", str(doc), *base, "--report", str(report)])
    assert "could not write the report" in line
    assert not report.exists() and doc.is_file()
    # CJK without spaces at one token: one character or so, not an error.
    cjk = tmp_path / "cjk.txt"
    cjk.write_text(CJK_RUN, encoding="utf-8")
    out = tmp_path / "out.json"
    argv = ["refine", str(cjk), "-q", "協議", "-n", "1", "--json", "-o", str(out)]
    assert main([*argv, "--scorer", "bm25"]) == 0, capsys.readouterr().err
    got = json.loads(out.read_text(encoding="utf-8"))
    assert got["trimmed"] and got["tokens"] == 1 and CJK_RUN.startswith(got["text"])


# -- model answers -----------------------------------------------------------------------------
def test_a_model_answer_with_lone_surrogates_is_kept_writable(tmp_path: Path) -> None:
    answer = "\ud800 <section><title>\ud800</title></section> [Local] ['\ud800']"
    refiner = LongRefiner(
        scorer="bm25", llm=ScriptedLM(lambda prompt: answer), cache_dir=str(tmp_path)
    )
    result = refiner.refine("river day 3", STORY, 60)
    raw = result.documents[0].structure.raw_outputs
    # Was kept as is: the report and the JSON then failed to encode ("surrogates not allowed").
    assert raw and all("\ufffd" in r and "\ud800" not in r for r in raw)
    result.to_html().encode("utf-8")
    from hrefine.longrefiner.cli import result_dict

    json.dumps(result_dict(result), ensure_ascii=False).encode("utf-8")


def test_a_runaway_structuring_answer_gives_a_bounded_list_of_notes() -> None:
    answer = "\n".join("<section></section>" for _ in range(5000))
    result = LongRefiner(scorer="bm25", llm=ScriptedLM(lambda prompt: answer)).refine(
        "river day 3", STORY, 60
    )
    # Was one note per fault: 5,000 notes copied into every returned document's metadata.
    assert len(result.notes) < 30
    assert any("more problems" in n for n in result.notes)
    assert result.documents[0].structure.raw_outputs == [answer]  # the raw output is kept
