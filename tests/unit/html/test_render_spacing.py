"""The renderer keeps apart the words a browser shows apart, and adds nothing else."""

from __future__ import annotations

import itertools
import random
import re
from typing import Any

import lxml.html
import pytest
from hrefine.budget import get_counter
from hrefine.html import HtmlPruner
from hrefine.html._text import element_text
from hrefine.html.blocks import BlockForest, build_forest
from hrefine.html.clean import clean_document
from hrefine.html.render import Renderer
from hrefine.html.tags import BLOCK_TAGS

_WORD = re.compile(r"[^\W_]+")

# Small pages, each split into a few blocks at max_words=2. An element of inline content alone
# is one block however long (it is split at sentence ends, never into its inline children), so
# the pages with kept or dropped inline children hold a block child too: mixed content, which
# is opened.
PAGES = [
    # An own text with line breaks: the lines must not run together.
    "<div>alpha<br>beta<br>gamma<p>one two three</p><p>four five six</p></div>",
    # Kept children with the parent's text between them dropped (or the other way round).
    "<div><b>Alpha Centauri</b> is near, <b>Beta Pictoris</b> is far.<p>x y z</p></div>",
    # Dropped children inside an own text, with and without white space around them.
    "<div>Alpha<b> Centauri Major </b>Beta<sup>[1]</sup>, Gamma<i>x</i>Delta<p>x y z</p></div>",
    # A wrapper left unwritten (one live child): its line break goes with it.
    "<div><b>Alpha</b><div>gone words <i>Beta</i><p>x y z</p></div></div>",
    # A dropped block between two pieces of an own text.
    "<ul><li>one two<div>three four five six</div>seven</li><li>eight nine</li></ul>",
    # Nested inline elements, an own text inside an inline element, a line break at the end.
    "<p>lead <a href='/x'>in <b>deep one</b> link<br></a>tail<br>next line</p>",
]


def _words(text: str) -> list[str]:
    return _WORD.findall(text)


def _visible(html: str) -> list[str]:
    """Words a browser shows of rendered ``html`` (line breaks and blocks separate words)."""
    if not html.strip():
        return []
    return _words(element_text(lxml.html.document_fromstring(f"<html><body>{html}</body></html>")))


def _is_subsequence(needed: list[str], have: list[str]) -> bool:
    rest = iter(have)
    return all(any(w == h for h in rest) for w in needed)


def _inline(el: Any) -> bool:
    return el is not None and isinstance(el.tag, str) and el.tag not in BLOCK_TAGS | {"br"}


def _before(el: Any) -> str:
    """The text right before ``el`` in its parent."""
    prev = el.getprevious()
    return (prev.tail if prev is not None else el.getparent().text) or ""


def _expected_words(forest: BlockForest, nid: int) -> list[str]:
    """Words of a block that must come out as whole words.

    Where the browser shows a block's text joined to the text beside it (``Apple<a>s</a>``,
    no white space between), that edge word is left out. An own-text block's text is its
    pieces (text and tails), each one's edges checked the same way (against the inline children
    between them).
    """
    node = forest.tree.nodes[nid]
    el = forest.elements[nid]
    # Whether the text outside the block runs into it on the left, on the right.
    outer_left = _inline(el) and _before(el)[-1:].isalnum()
    outer_right = _inline(el) and (el.tail or "")[:1].isalnum()
    if node.metadata["is_leaf"]:
        pieces = [(node.text, outer_left, outer_right)]
    else:
        children = list(el)
        texts = [el.text, *(child.tail for child in children)]
        pieces = [
            (
                text or "",
                _inline(children[k - 1]) if k else outer_left,
                _inline(children[k]) if k < len(children) else outer_right,
            )
            for k, text in enumerate(texts)
        ]
    out: list[str] = []
    for text, joined_left, joined_right in pieces:
        words = _words(text)
        if words and joined_left and text[0].isalnum():
            words = words[1:]
        if words and joined_right and text[-1].isalnum():
            words = words[:-1]
        out += words
    return out


def _check_words(forest: BlockForest, kept: set[int], html: str) -> None:
    shown = _visible(html)
    for nid in kept:
        if forest.tree.nodes[nid].kind == "block":
            needed = _expected_words(forest, nid)
            assert _is_subsequence(needed, shown), (forest.tree.nodes[nid].text, html)


def _forest(page: str, max_words: int = 2) -> BlockForest:
    return build_forest([clean_document(page)], max_words=max_words)


def _render(page: str, texts: set[str]) -> str:
    """``page`` rendered with only the blocks whose text is in ``texts``."""
    forest = _forest(page)
    kept = {n.id for n in forest.tree.nodes if n.kind == "block" and n.text in texts}
    assert len(kept) == len(texts)
    return Renderer(forest).render(kept)[0]


def test_an_own_text_is_written_with_its_line_breaks() -> None:
    assert _render(PAGES[0], {"alpha beta gamma"}) == "alpha<br>beta<br>gamma"


def test_the_pruner_keeps_the_line_breaks_of_an_own_text() -> None:
    filler = " ".join(f"w{i}" for i in range(40))
    page = f"<div>alpha<br>beta<br>gamma<p>{filler}</p><p>{filler} x</p></div>"
    result = HtmlPruner(scorer="bm25", max_words=10).prune(page, "alpha beta gamma", 12)
    assert result.html == "alpha<br>beta<br>gamma"
    assert result.tokens == get_counter(None).count(result.html) <= 12


def test_kept_children_do_not_touch_when_the_text_between_them_is_dropped() -> None:
    html = _render(PAGES[1], {"Alpha Centauri", "Beta Pictoris"})
    assert html == "<b>Alpha Centauri</b> <b>Beta Pictoris</b>"


def test_the_pruner_keeps_kept_children_apart() -> None:
    filler = " ".join(["filler"] * 60)
    own = f"<b>Alpha Centauri</b> is near, <b>Beta Pictoris</b> is far. {filler}"
    page = f"<div>{own}<p>{filler}</p></div>"  # mixed content: opened into its children
    pruner = HtmlPruner(scorer="bm25", tokenizer="regex", max_words=8, split_paragraphs=False)
    result = pruner.prune(page, "Alpha Centauri Beta Pictoris", 30)
    assert result.html == "<b>Alpha Centauri</b> <b>Beta Pictoris</b>"


def test_an_own_text_does_not_run_into_itself_where_children_are_dropped() -> None:
    # A space where the dropped child held one or sat between two words; none before a comma.
    assert _render(PAGES[2], {"Alpha Beta , Gamma Delta"}) == "Alpha Beta, Gamma Delta"
    assert _render(PAGES[4], {"one two seven"}) == "<ul><li>one two seven</li></ul>"


def test_a_dropped_text_next_to_a_space_adds_nothing() -> None:
    # (The text's own spaces are written as they are.)
    html = _render(PAGES[1], {"is near, is far."})
    assert html == "is near,  is far."


def test_an_unwritten_wrapper_still_separates_its_content() -> None:
    html = _render(PAGES[3], {"Alpha", "Beta"})
    assert html == "<b>Alpha</b> <i>Beta</i>"


def test_words_of_kept_blocks_stay_whole_for_every_subset_of_blocks() -> None:
    for page in PAGES:
        forest = _forest(page)
        renderer = Renderer(forest)
        ids = forest.block_ids()
        for n in range(1, len(ids) + 1):
            for kept in itertools.combinations(ids, n):
                html = renderer.render(kept)[0]
                _check_words(forest, set(kept), html)
                # The elements written are the ones the parser finds (the <br> included).
                root = lxml.html.document_fromstring(f"<html><body>{html}</body></html>")
                parsed = [e.tag for e in root.iter() if e.tag not in ("html", "body")]
                assert parsed == [e.tag for e in renderer.written(kept)[0]], html


def test_words_of_kept_blocks_stay_whole_on_real_pages(wtq: dict[str, Any]) -> None:
    rng = random.Random(0)
    for q in wtq["questions"][:60:12]:
        forest = _forest(wtq["page"](q["doc"]).decode("utf-8", "replace"), max_words=16)
        renderer = Renderer(forest)
        ids = forest.block_ids()
        for share in (0.05, 0.3, 0.7):
            kept = {i for i in ids if rng.random() < share}
            _check_words(forest, kept, renderer.render(kept)[0])


@pytest.mark.parametrize("budget", [256, 512, 1024])
def test_budgets_are_still_met_exactly_on_real_pages(wtq: dict[str, Any], budget: int) -> None:
    pruner = HtmlPruner(scorer="bm25")
    counter = get_counter(None)
    for q in wtq["questions"][:60:6]:
        result = pruner.prune(wtq["page"](q["doc"]), q["question"], budget)
        assert result.tokens <= budget
        assert counter.count(result.html) == result.tokens
