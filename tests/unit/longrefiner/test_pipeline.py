"""LongRefiner end to end on real documents: the three steps with and without a model, the
structure cache, exact budgets, and bad input."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import numpy as np
import pytest
from hrefine.budget import get_counter
from hrefine.errors import (
    ConfigError,
    EmptyInputError,
    HtmlParseError,
    InputTypeError,
    ModelNotFoundError,
)
from hrefine.eval.loaders import EvalItem, load_dataset
from hrefine.eval.metrics import answer_containment
from hrefine.longrefiner import LongRefiner, coverage
from hrefine.longrefiner.markup import paragraph_spans
from hrefine.longrefiner.skeleton import skeleton_from_spans
from hrefine.models import Embedder
from hrefine.testing import ScriptedLM


@pytest.fixture(scope="module")
def cuad(shared_data: Path) -> list[EvalItem]:
    return load_dataset("leval-cuad", shared_data)


@pytest.fixture(scope="module")
def quality(shared_data: Path) -> list[EvalItem]:
    return load_dataset("leval-quality", shared_data)


@pytest.fixture(scope="module")
def refiner(embedder: Embedder) -> LongRefiner:
    return LongRefiner(embedder=embedder)


def test_every_leval_document_is_structured_without_losing_text(
    shared_data: Path, refiner: LongRefiner
) -> None:
    seen = 0
    for folder in sorted((shared_data / "leval").iterdir()):
        for path in sorted((folder / "docs").glob("*")) if folder.is_dir() else []:
            doc = refiner.structure(path.read_text(encoding="utf-8"))
            assert coverage(doc) == 1.0, path.name
            seen += 1
    assert seen >= 45


def test_a_contract_is_refined_to_the_budget_without_a_model(
    cuad: list[EvalItem], refiner: LongRefiner
) -> None:
    item = next(it for it in cuad if "Expiration Date" in it.question)
    counter = get_counter()
    result = refiner.refine(item.question, item.document, 512)
    assert result.analysis.source == "off" and result.analysis.w_global == 0.5
    (doc,) = result.documents
    assert doc.structure.source == "numbered" and len(doc.structure.outline()) > 5
    assert result.tokens <= 512 and counter.count(result.text) <= 512
    assert answer_containment(result.text, item.answers, mode=item.answer_mode) == 1.0
    # Kept units come in document order and are the document's own text.
    starts = [doc.structure.extent(n)[0] for n in doc.kept]
    assert starts == sorted(starts)
    for n in doc.kept:
        assert doc.structure.node_text(n) in item.document or n == 0
    assert set(result.timings) >= {"analysis", "structure", "selection", "scoring", "fill", "total"}
    assert doc.selection.source == "off"


def test_prompt_only_mode_reads_text_answers(cuad: list[EvalItem], embedder: Embedder) -> None:
    item = next(it for it in cuad if "Expiration Date" in it.question)
    probe = LongRefiner(embedder=embedder).structure(item.document)
    law = next(t for _, t, _ in probe.outline() if "termination" in t.lower())

    def answer(prompt: str) -> str:
        if "**Document outline**" in prompt:
            return json.dumps([law])
        return "query_type: [Global]"

    llm = ScriptedLM(answer)
    refiner = LongRefiner(embedder=embedder, llm=llm)
    result = refiner.refine(item.question, item.document, 1024)
    assert result.analysis.source == "llm" and result.analysis.label == "global"
    assert result.analysis.w_global == pytest.approx(0.7310585786)
    (doc,) = result.documents
    assert doc.selection.source == "llm"
    chosen = doc.selection.selected
    assert [doc.structure.tree[i].metadata["title"] for i in chosen] == [law]
    assert doc.global_[chosen[0]] == 1.0
    # The chosen section (or all of its paragraphs) made it into the output.
    assert doc.structure.node_text(chosen[0]).split("\n")[-1] in result.text
    assert len(llm.prompts) == 2  # one question for step 1, one outline for step 3


def test_an_unreadable_answer_falls_back_and_says_so(
    cuad: list[EvalItem], embedder: Embedder
) -> None:
    item = cuad[0]
    refiner = LongRefiner(embedder=embedder, llm=ScriptedLM(["I am not sure.", "Sorry, no idea."]))
    result = refiner.refine(item.question, item.document, 512)
    assert result.analysis.source == "fallback" and result.analysis.raw == "I am not sure."
    assert result.documents[0].selection.source == "fallback"
    assert any("global selection named no section" in n for n in result.notes)
    assert result.tokens <= 512


def _skeleton_of(text: str, sections: int = 3) -> str:
    """A well-formed skeleton of ``text``'s paragraphs in ``sections`` sections (words as
    tokens), as a structuring model would write it."""
    from hrefine.longrefiner.spans import Span

    spans = paragraph_spans(text)
    size = max(1, len(spans) // sections)
    titled = [
        Span(s.start, s.end, () if k == 0 else (f"Part {1 + (k - 1) // size}",))
        for k, s in enumerate(spans)
    ]
    vocab: dict[str, int] = {}
    words: list[str] = []

    def encode(t: str) -> list[int]:
        ids = []
        for w in t.split():
            if w not in vocab:
                vocab[w] = len(words)
                words.append(w)
            ids.append(vocab[w])
        return ids

    return skeleton_from_spans(text, titled, encode, lambda ids: " ".join(words[i] for i in ids))


def test_a_model_structures_a_story_that_has_no_markup(
    quality: list[EvalItem], embedder: Embedder, tmp_path: Path
) -> None:
    story = quality[0].document
    skeleton = _skeleton_of(story)
    llm = ScriptedLM(lambda prompt: skeleton if "chapters" in prompt else "[Local]")
    refiner = LongRefiner(
        embedder=embedder,
        llm=llm,
        window_tokens=100_000,
        cache_dir=str(tmp_path),
        global_selection="off",
    )
    doc = refiner.structure(story)
    assert doc.source == "model" and coverage(doc) == 1.0
    assert [t for _, t, _ in doc.outline()][:2] == ["Part 1", "Part 2"]
    assert doc.raw_outputs == [skeleton]
    calls = len(llm.prompts)
    # Cached by document hash: in memory, and on disk for a new refiner.
    assert refiner.structure(story) is doc and len(llm.prompts) == calls
    again = LongRefiner(
        embedder=embedder,
        llm=llm,
        window_tokens=100_000,
        cache_dir=str(tmp_path),
        global_selection="off",
    )
    cached = again.structure(story)
    assert len(llm.prompts) == calls
    assert cached.source == "model" and [n.text for n in cached.tree] == [n.text for n in doc.tree]


def test_garbage_structure_falls_back_to_paragraphs_and_keeps_the_output(
    quality: list[EvalItem], embedder: Embedder
) -> None:
    story = quality[1].document
    refiner = LongRefiner(
        embedder=embedder,
        llm=ScriptedLM(["<section: Oops> zzqx vvkj wwpl qqzr </sec"], cycle=True),
        structure="model",
        query_analysis="off",
        global_selection="off",
    )
    doc = refiner.structure(story)
    assert doc.source == "paragraphs" and coverage(doc) == 1.0
    assert doc.raw_outputs and doc.raw_outputs[0].startswith("<section: Oops>")
    assert any("used the document's paragraphs structure" in n for n in doc.notes)


def test_long_documents_are_structured_in_windows(
    quality: list[EvalItem], embedder: Embedder
) -> None:
    story = quality[0].document
    llm = ScriptedLM(lambda prompt: "garbage", cycle=False)
    refiner = LongRefiner(embedder=embedder, llm=llm, structure="model", window_tokens=1000)
    refiner.structure(story)
    counter = get_counter()
    assert len(llm.prompts) >= counter.count(story) // 1000
    assert all(counter.count(p) < 1400 for p in llm.prompts)


def test_async_refine_matches_sync(cuad: list[EvalItem], refiner: LongRefiner) -> None:
    item = cuad[0]
    sync = refiner.refine(item.question, item.document, 700)
    result = asyncio.run(refiner.arefine(item.question, item.document, 700))
    assert result.text == sync.text


def test_several_documents_share_the_budget_and_empty_ones_are_skipped(
    cuad: list[EvalItem], refiner: LongRefiner
) -> None:
    docs = [
        cuad[0].document,
        "   ",
        next(it.document for it in cuad if it.doc_id != cuad[0].doc_id),
    ]
    result = refiner.refine(cuad[0].question, docs, 800)
    assert [d.index for d in result.documents] == [0, 1, 2]
    assert result.documents[1].text == "" and result.documents[1].structure.source == "empty"
    assert any("document 1 has no text" in n for n in result.notes)
    assert sum(d.tokens for d in result.documents) <= 800
    assert get_counter().count(result.text) <= 800
    with pytest.raises(EmptyInputError):
        refiner.refine("q", ["", " \n "], 100)


def test_bad_input_gets_clear_errors(refiner: LongRefiner) -> None:
    with pytest.raises(InputTypeError):
        refiner.refine("q", [b"ok", 3], 100)  # type: ignore[list-item]
    with pytest.raises(InputTypeError, match="list of strings"):
        refiner.refine("q", 5, 100)  # type: ignore[arg-type]
    # Bytes are one document, decoded as a page's bytes are: not as UTF-8 with the rest lost.
    assert refiner.refine("term", b"The term is five years.", 50).text == "The term is five years."
    french = "Le contrat est régi par le droit français, « sans délai »."
    for encoding in ("latin-1", "utf-16", "cp1252"):
        assert refiner.refine("droit", french.encode(encoding), 50).text == french
    with pytest.raises(HtmlParseError):
        refiner.refine("q", b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj", 50)
    with pytest.raises(ConfigError, match="at least 1"):
        refiner.refine("q", "text", 0)
    # A numpy integer is a whole number (was refused as "not a whole number, got int64").
    assert refiner.refine("term", "The term is five years.", np.int64(50)).budget == 50
    with pytest.raises(EmptyInputError):
        refiner.refine("  ", "text", 10)
    with pytest.raises(ConfigError, match="max_input_chars"):
        LongRefiner(max_input_chars=10).refine("q", "x" * 11, 10)
    with pytest.raises(ConfigError, match="needs a model"):
        LongRefiner(structure="model")
    with pytest.raises(ConfigError, match="needs a model"):
        LongRefiner(query_analysis="on")
    with pytest.raises(ConfigError, match="one of"):
        LongRefiner(structure="xml")
    with pytest.raises(ConfigError, match="need lm"):
        LongRefiner(structuring_adapter="/nope")


def test_odd_documents(refiner: LongRefiner) -> None:
    counter = get_counter()
    # One huge paragraph (no line breaks): cut into leaves at sentence ends.
    huge = " ".join(f"Clause {i} sets out term number {i} of this deal." for i in range(400))
    result = refiner.refine("What does clause 217 set out?", huge, 200)
    assert "Clause 217 sets out term number 217" in result.text and result.tokens <= 200
    # CJK text without spaces.
    cjk = "本協議自生效日起五年內有效。" * 40 + "\n\n" + "本協議受日本法律管轄。" * 5
    result = refiner.refine("哪國法律管轄本協議？", cjk, 60)
    assert result.tokens <= 60 and result.text and result.text in cjk
    # A budget of one token: the best paragraph cut to one token, or a clear error.
    result = refiner.refine("term", "The term is five years.", 1)
    assert result.trimmed and counter.count(result.text) <= 1 and result.text == "The"
    # A document with no paragraphs at all: one line.
    assert refiner.refine("term", "The term is five years.", 50).text == "The term is five years."


@pytest.mark.lm
def test_query_analysis_reads_the_local_lm_choice_probabilities(embedder: Embedder) -> None:
    from lm_fixture import load_default_lm

    refiner = LongRefiner(embedder=embedder, lm=load_default_lm(), global_selection="off")
    found = refiner.analyze("Summarise the whole story and its themes.")
    assert found.source == "lm"
    assert found.p_local + found.p_global == pytest.approx(1.0)
    assert found.w_local + found.w_global == pytest.approx(1.0)
    assert 0.2689 <= found.w_global <= 0.7311


def test_one_base_model_serves_the_three_adapters(tmp_path: Path, embedder: Embedder) -> None:
    from hrefine.models import LocalLM
    from lm_fixture import build_tiny_adapter, build_tiny_lm

    base = build_tiny_lm(tmp_path / "base")
    paths = {n: str(build_tiny_adapter(base, tmp_path / n, seed=i)) for i, n in enumerate("abc")}
    lm = LocalLM(str(base))
    seen: list[object] = []
    plain_generate = lm.generate

    def spy(*args: object, **kwargs: object) -> list[str]:
        seen.append(kwargs.get("adapter"))
        return plain_generate(*args, **kwargs)  # type: ignore[arg-type]

    lm.generate = spy  # type: ignore[method-assign]
    refiner = LongRefiner(
        embedder=embedder,
        lm=lm,
        query_analysis="off",
        structure="model",
        structuring_adapter=paths["a"],
        selection_adapter=paths["b"],
        query_analysis_adapter=paths["c"],
        structure_max_new_tokens=16,
        selection_max_new_tokens=8,
    )
    text = "w1 w2 w3 w4 w5 w6 w7 w8 w9 w10.\n\nw11 w12 w13 w14 w15 w16 w17 w18 w19 w20."
    result = refiner.refine("w3 w4", text, 50)
    assert sorted(lm.adapters) == ["global_selection", "query_analysis", "structuring"]
    assert lm.active_adapter is None  # loading did not change the base model's default
    assert "structuring" in seen
    assert result.tokens <= 50
    with pytest.raises(ModelNotFoundError):
        LongRefiner(lm=LocalLM(str(base)), structuring_adapter=str(tmp_path / "missing"))._lm()


def test_windows_of_several_documents_go_to_the_model_together(
    quality: list[EvalItem], embedder: Embedder
) -> None:
    other = next(it.document for it in quality if it.doc_id != quality[0].doc_id)
    stories = [quality[0].document, other, quality[0].document]
    seen_batches: list[int] = []

    def answer(prompt: str) -> str:
        return "zzqx vvkj"  # unmatchable: each falls back to paragraphs

    llm = ScriptedLM(answer)
    refiner = LongRefiner(embedder=embedder, llm=llm, structure="model", window_tokens=2000)
    generator = refiner._text_llm()
    plain_batch = generator.batch

    def spy(prompts: list[str]) -> list[str]:
        seen_batches.append(len(prompts))
        return plain_batch(prompts)

    generator.batch = spy
    docs = refiner.structure_many(stories)
    counter = get_counter()
    windows = sum(-(-counter.count(s) // 2000) for s in stories[:2])
    # One batch for the call; the story given twice is asked once, and both get its structure.
    assert len(seen_batches) == 1 and windows <= seen_batches[0] <= windows + 2
    assert docs[0] is docs[2] and all(d is not None and coverage(d) == 1.0 for d in docs)


def test_async_refine_awaits_an_async_llm(cuad: list[EvalItem], embedder: Embedder) -> None:
    item = next(it for it in cuad if "Expiration Date" in it.question)
    calls: list[str] = []

    async def llm(prompt: str) -> str:
        calls.append(prompt)
        await asyncio.sleep(0)
        return "[Local]" if "Document outline" not in prompt else '["abstract"]'

    refiner = LongRefiner(embedder=embedder, llm=llm)
    result = asyncio.run(refiner.arefine(item.question, item.document, 600))
    assert result.analysis.source == "llm" and result.analysis.label == "local"
    assert result.documents[0].selection.source == "llm" and len(calls) == 2
    assert result.tokens <= 600


def test_markdown_headings_name_the_structure_without_their_markup() -> None:
    from hrefine.longrefiner.markup import markup_spans
    from hrefine.longrefiner.options import LongRefinerOptions
    from hrefine.longrefiner.pipeline import lift_single_root
    from hrefine.longrefiner.select import selection_prompt

    refiner = LongRefiner(structure="markup")
    sections = (
        "## Alpha\n\nThe alpha river rises in the hills and runs east to the sea.\n\n"
        "## Beta\n\nThe beta river is shorter and joins the alpha at the old mill.\n"
    )
    # No single top heading: the first heading names the document, as its section does.
    doc = refiner.structure(sections)
    assert doc.title == "Alpha" and [t for _, t, _ in doc.outline()] == ["Alpha", "Beta"]
    _, user = selection_prompt(
        "Where does the alpha river rise?", doc, LongRefinerOptions(), tuned=True
    )
    assert "Title: Alpha\nSection1: Alpha\nSection2: Beta\n" in user and "#" not in user
    # One top heading holding the others is the title (its closing hashes go too).
    lifted = refiner.structure("# Rivers of the Vale ##\n\nA short guide.\n\n" + sections)
    assert lifted.title == "Rivers of the Vale"
    assert [t for _, t, _ in lifted.outline()] == ["Alpha", "Beta"]
    # An HTML page's <h1> the same way, and a title given by the caller wins.
    page = "<html><body><h1>Rivers  of the <b>Vale</b></h1><h2>Alpha</h2><p>Hills.</p>"
    page += "<h2>Beta</h2><p>Mill.</p></body></html>"
    assert refiner.structure(page).title == "Rivers of the Vale"
    assert refiner.structure(sections, title="Guide").title == "Guide"
    plain, spans, _ = markup_spans("# Top\n\nLead.\n\n## A\n\nText a.\n\n## B\n\nText b.\n")
    lifted_spans, title = lift_single_root(plain, spans)
    assert title == "Top" and {s.path for s in lifted_spans if s.path} == {("A",), ("B",)}


def test_tokens_is_the_count_of_the_text_returned(shared_data: Path) -> None:
    # Was an upper bound (parts plus separators): 29 for a text of 28 tokens, where a
    # separator and the full stop before it make one token.
    leval = shared_data / "leval"
    docs = [
        (leval / "cuad" / "docs" / "cuad_00.txt").read_text(encoding="utf-8"),
        (leval / "cuad" / "docs" / "cuad_01.txt").read_text(encoding="utf-8"),
        (leval / "nq" / "docs" / "nq_00.html").read_text(encoding="utf-8"),
    ]
    query = json.loads((leval / "cuad" / "questions.jsonl").read_text("utf-8").splitlines()[0])
    refiner = LongRefiner(scorer="bm25")
    for budget in (30, 200, 800):
        result = refiner.refine(query["question"], docs, budget)
        assert result.tokens == refiner.counter.count(result.text) <= budget
