"""Stage 2: token-tree path scoring with a shared, pre-filled prefix (paper §3.4.2)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hrefine.html import HtmlPruner
from hrefine.html.generative import PROMPT_TEMPLATE, build_prompt
from hrefine.models.token_trie import encode, path_scores

PATHS = [
    "<html><body><h1>",
    "<html><body><p1>",
    "<html><body><p2>",
    "<html><body><table><tr1>",
    "<html><body><table><tr2>",
    "<html><body><table><tr3>",
    "<html><body><ul><li>",
]


def _page() -> str:
    rows = "".join(
        f"<tr><td>Season {y}</td><td>{w} wins</td><td>{d} draws</td></tr>"
        for y, w, d in [(1990, 10, 4), (1991, 12, 2), (1992, 8, 9), (1993, 15, 1)]
    )
    paras = "".join(
        f"<p>{' '.join(f'Paragraph {k} talks about club history item {i}.' for i in range(12))}</p>"
        for k in range(6)
    )
    return f"<h1>Frem football club</h1>{paras}<table>{rows}</table><ul><li>Founded 1886</li></ul>"


def test_scores_are_log_probabilities_of_whole_paths(fake_lm: Any) -> None:
    result = path_scores(fake_lm, "PROMPT about question A", PATHS)
    assert result.scores.shape == (len(PATHS),)
    assert np.all(result.scores <= 0)
    # Probabilities of sibling branches sum to one at every branching point, so the paths'
    # probabilities sum to one as well (no path here is a prefix of another).
    assert np.exp(result.scores).sum() == pytest.approx(1.0)


def test_generative_scores_change_when_the_question_changes(fake_lm: Any) -> None:
    a = path_scores(fake_lm, build_prompt(fake_lm, "<p>x</p>", "who won in 1991?"), PATHS)
    b = path_scores(fake_lm, build_prompt(fake_lm, "<p>x</p>", "when was it founded?"), PATHS)
    assert not np.allclose(a.scores, b.scores)


def test_probabilities_are_read_after_the_prompt_and_path_prefix(fake_lm: Any) -> None:
    prompt = build_prompt(fake_lm, "<p>x</p>", "q")
    result = path_scores(fake_lm, prompt, PATHS)
    prompt_len = len(encode(fake_lm.tokenizer, prompt))
    assert result.prompt_tokens == prompt_len
    # Every model call reads the last position of prompt + path prefix, never position 0.
    assert fake_lm.calls and min(fake_lm.calls) >= prompt_len


def test_token_tree_prefills_each_shared_prefix_once(fake_lm: Any) -> None:
    paths = [f"<html><body><div{d}><table><tr{r}>" for d in range(1, 6) for r in range(1, 30)]
    prompt = build_prompt(fake_lm, "<p>" + "long html " * 2000 + "</p>", "q")
    result = path_scores(fake_lm, prompt, paths)
    # prefilled ≈ prompt + distinct token-tree edges (each edge appended once at most)
    assert result.prompt_tokens <= result.prefilled_tokens
    assert result.prefilled_tokens <= result.prompt_tokens + result.trie_edges
    # Re-encoding the prompt for every scored node (the reference's way) would cost this:
    naive = result.prompt_tokens * result.lm_calls
    assert result.prefilled_tokens < naive / 5


def test_single_child_nodes_need_no_model_call(fake_lm: Any) -> None:
    result = path_scores(fake_lm, "p", ["<html><body><main><article><p>"])
    assert result.lm_calls == 0
    assert result.scores.tolist() == [0.0]  # probability 1
    assert result.prefilled_tokens == result.prompt_tokens


def test_prompt_follows_the_paper_figure_4(fake_lm: Any) -> None:
    prompt = build_prompt(fake_lm, "<p>hello</p>", "what is it?")
    assert "**HTML**: ```<p>hello</p>```" in prompt
    assert "**Question**: **what is it?**" in prompt
    assert "provide the path to the text piece" in prompt
    assert PROMPT_TEMPLATE.startswith("**HTML**")


def test_generative_pruning_end_to_end_with_a_scripted_lm(fake_lm: Any) -> None:
    pruner = HtmlPruner(scorer="bm25", generative=True, lm=fake_lm, fine_max_words=20)
    result = pruner.prune(_page(), "how many draws in 1992?", 80)
    assert 0 < result.tokens <= 80
    assert result.stats["stage1_tokens"] > 80  # stage 1 kept 4x the budget
    assert result.stats["prefilled_tokens"] >= result.stats["prompt_tokens"] > 0
    scored = [b for b in result.blocks if b.stage2_score is not None]
    assert scored and all(b.stage2_score <= 0 for b in scored)
    assert any(b.stage1_score is not None for b in scored)  # inherited from stage 1
    assert all(b.kept == (b.reason is None) for b in result.blocks)
    assert "<tr" not in result.html or "</table>" in result.html


def test_generative_stage_skipped_when_stage1_fits(fake_lm: Any) -> None:
    pruner = HtmlPruner(scorer="bm25", generative=True, lm=fake_lm)
    result = pruner.prune("<p>short page</p>", "q", 100)
    assert result.html == "<p>short page</p>"
    assert "prefilled_tokens" not in result.stats


def test_several_documents_in_the_generative_stage(fake_lm: Any) -> None:
    pruner = HtmlPruner(scorer="bm25", generative=True, lm=fake_lm, fine_max_words=20)
    result = pruner.prune([_page(), _page().replace("Frem", "Vejle")], "draws", 90)
    assert result.tokens <= 90
    assert len(result.documents) == 2


@pytest.mark.lm
def test_real_lm_scores_depend_on_the_question() -> None:
    from hrefine.errors import ModelNotFoundError
    from hrefine.models import default_lm

    try:
        lm = default_lm()
        lm.tokenizer  # noqa: B018 - loads the model files
    except (ModelNotFoundError, ImportError) as exc:
        pytest.skip(f"embedded LM not available: {exc}")
    html = (
        "<html><body>"
        + "".join(
            f"<p>{t}</p>"
            for t in [
                "The club was founded in 1886.",
                "Its stadium holds 9,000.",
                "The coach is Jens Nielsen.",
                "Colours are red and blue.",
            ]
        )
        + "</body></html>"
    )
    paths = [f"<html><body><p{i}>" for i in range(1, 5)]
    a = path_scores(lm, build_prompt(lm, html, "When was the club founded?"), paths)
    b = path_scores(lm, build_prompt(lm, html, "Who is the coach?"), paths)
    assert not np.allclose(a.scores, b.scores)
    assert a.prefilled_tokens < 2 * a.prompt_tokens
