"""The block tree follows Algorithm 1 of the paper and keeps real tag paths."""

from __future__ import annotations

import random
import re
import string
from pathlib import Path

from hrefine.html import build_block_tree
from hrefine.html._text import _WORD, collapse_space, count_words, normalize_space
from hrefine.html.blocks import title_parts
from hrefine.html.clean import clean_document
from hrefine.tree import Tree


def _blocks(tree: Tree) -> list:
    return [n for n in tree if n.kind == "block"]


def test_small_subtrees_become_single_leaf_blocks(pages: Path) -> None:
    tree = build_block_tree((pages / "boilerplate.html").read_bytes(), max_words=256)
    assert tree.metadata["max_words"] == 256
    blocks = _blocks(tree)
    # The whole article is under 256 words: one leaf block below the transparent html/body.
    article = [b for b in blocks if b.metadata["tag"] == "main"]
    assert len(article) == 1 and article[0].metadata["is_leaf"]
    assert "Edwin Marlow" in article[0].text
    assert article[0].metadata["path"] == ["html", "body", "main"]
    assert article[0].metadata["html"].startswith("<main><article><h1>")


def test_large_nodes_are_expanded_and_their_own_text_is_a_non_leaf_block() -> None:
    words = " ".join(f"w{i}" for i in range(30))
    html = f"<div>Intro text of the div<p>{words}</p><p>{words}</p>closing words</div>"
    tree = build_block_tree(html, max_words=40)
    blocks = _blocks(tree)
    own = [b for b in blocks if not b.metadata["is_leaf"]]
    assert [b.text for b in own] == ["Intro text of the div closing words"]
    leaves = [b for b in blocks if b.metadata["is_leaf"]]
    assert [b.metadata["path_indexed"][-1] for b in leaves] == ["p1", "p2"]
    assert all(b.metadata["words"] == 30 for b in leaves)
    # Leaves hang under the div's node in the tree.
    div = own[0]
    assert {tree.nodes[c].metadata["tag"] for c in div.children} == {"p"}


def test_no_text_no_block_and_containers_keep_the_shape() -> None:
    words = " ".join("x" * 3 for _ in range(30))
    html = f"<section><div><p>{words}</p><br></div><div><p>{words}</p></div></section>"
    tree = build_block_tree(html, max_words=20)
    kinds = {n.kind for n in tree}
    assert kinds <= {"block", "container"}
    assert all(n.text for n in tree if n.kind == "block")
    assert all(not n.text for n in tree if n.kind == "container")
    assert tree.roots == [0]
    tree.check_acyclic()


def test_blocks_are_in_document_order_and_paths_use_real_tag_names(wtq: dict) -> None:
    q = wtq["questions"][0]
    tree = build_block_tree(wtq["page"](q["doc"]))
    blocks = _blocks(tree)
    orders = [b.order for b in tree.walk() if b.kind == "block"]
    assert orders == sorted(orders)
    for b in blocks:
        assert all(step.isidentifier() or "-" in step for step in b.metadata["path"])
        assert not any(any(ch.isdigit() for ch in s) and s[:1] != "h" for s in b.metadata["path"])
        assert b.metadata["words"] < 256 or not b.metadata["is_leaf"] or "<" in b.metadata["html"]


def test_table_rows_get_header_context() -> None:
    rows = "".join(f"<tr><td>Player {i}</td><td>{i * 3} goals</td></tr>" for i in range(80))
    html = "<h2>Top scorers</h2><table><caption>Season 1999</caption>"
    html += f"<tr><th>Name</th><th>Goals</th></tr>{rows}</table>"
    tree = build_block_tree(html, max_words=50)
    row_blocks = [b for b in _blocks(tree) if b.metadata["tag"] == "tr"]
    assert len(row_blocks) == 81
    assert row_blocks[5].metadata["context"] == "Top scorers | Season 1999 Name | Goals"
    # The header row: the caption before it is in the table's header context, not a label.
    assert row_blocks[0].metadata["context"] == "Top scorers"


def test_a_short_element_before_a_block_is_its_label() -> None:
    # Label and value in neighbouring elements, as on Wikipedia record pages and in <dl>s.
    filler = " ".join(f"word{i}" for i in range(60))
    long_label = " ".join(f"intro{i}" for i in range(20))
    html = (
        "<h2>Records</h2>"
        "<ul><li>Most points in a quarter</li></ul>"
        f"<dl><dd>Fiftyeight by Wilt Chamberlain on January 25, 1960. {filler}</dd></dl>"
        f"<dl><dt>Assists</dt><dd>Thirty by Scott Skiles. {filler}</dd>"
        f"<dt>Steals</dt><dd>Eleven by Larry Kenon. {filler}</dd></dl>"
        f"<div>{long_label}</div><p>Afterlong paragraph. {filler}</p>"
        f"<div>Short intro</div><br><p>Afterbreak paragraph. {filler}</p>"
        f"<p>Samekind paragraph. {filler}</p>"
        f"<ul><li>First item {filler}</li><li>Second item {filler}</li></ul>"
    )
    tree = build_block_tree(html, max_words=40)
    context = {b.text.split()[0]: b.metadata["context"] for b in _blocks(tree)}
    assert context["Fiftyeight"] == "Records | Most points in a quarter"
    assert context["Thirty"] == "Records | Assists"
    assert context["Eleven"] == "Records | Steals"
    assert context["Steals"] == "Records"  # a term is not labelled by the value before it
    assert context["Afterlong"] == "Records"  # more than 16 words: not a label
    assert context["Afterbreak"] == "Records | Short intro"  # an empty <br> is skipped
    assert context["Samekind"] == "Records"  # the same kind of element: a peer
    assert context["Second"] == "Records"  # list items are peers, not labels
    assert context["Most"] == "Records"  # the heading is in the context already, once


def test_block_tree_without_cleaning_keeps_raw_structure() -> None:
    tree = build_block_tree("<div><div><p>hello</p></div></div>", clean=False)
    assert [b.metadata["path"] for b in _blocks(tree)] == [["html", "body", "div"]]


def test_back_matter_sections_are_flagged() -> None:
    page = (
        "<html><body><h1>Alpha</h1><p>Lead paragraph.</p>"
        "<h2>Bibliography</h2><ul><li>A book she wrote.</li></ul>"
        "<h2>References [edit]</h2><ol><li>A cited source.</li></ol>"
        "<h3>Primary</h3><p>Under a subheading of the references.</p>"
        "<h2>Notes and references</h2><p>A footnote.</p>"
        "<h2>Career</h2><p>Back in the body.</p>"
        "<h2>See also ( edit )</h2><ul><li>Another page</li></ul>"
        "</body></html>"
    )
    tree = build_block_tree(page, max_words=3)
    flags = {n.text: n.metadata["back_matter"] for n in _blocks(tree)}
    body = ["Alpha", "Lead paragraph.", "Bibliography", "A book she wrote.", "Career"]
    body.append("Back in the body.")
    back = ["References [edit]", "A cited source.", "Primary", "Under a subheading of the"]
    back += ["Notes and references", "A footnote.", "See also ( edit )", "Another page"]
    assert all(not flags[t] for t in body)
    assert all(flags[next(k for k in flags if k.startswith(t))] for t in back)


def test_a_block_that_opens_with_a_heading_is_in_that_heading_section() -> None:
    cites = "".join(f"<li>Cited source {i}.</li>" for i in range(5))
    page = (
        "<html><body><h1>Notes</h1><p>A page titled Notes is content.</p>"
        "<div><p>Text before a heading.</p><h2>1 External links</h2><p>A link.</p></div>"
        "<section><h2>Career</h2><p>Worked as a clerk.</p></section>"
        f"<section><h2>References</h2><ol>{cites}</ol></section>"
        "<section><h2>History</h2><p>The town was founded in 1795.</p></section>"
        "<section><h2>See also:</h2><p>Town founded list</p></section>"
        "</body></html>"
    )
    tree = build_block_tree(page, max_words=256)
    flags = {n.text.split(" ")[0]: n.metadata["back_matter"] for n in _blocks(tree)}
    assert flags["Notes"] is False and flags["A"] is False  # an <h1> never opens back matter
    assert flags["References"] is True
    assert flags["History"] is False  # after a References section, in a section of its own
    assert flags["See"] is True
    assert flags["Text"] is False  # a block with text before its heading is not demoted
    assert flags["Career"] is False  # its own heading, not the external links before it


def test_headings_outside_any_block_still_set_the_context() -> None:
    # A wordless heading ("* * *") sits in a child that is not a block, and an <h4> inside a
    # leaf block: both open sections for the blocks after them.
    words = " ".join(f"w{i}" for i in range(30))
    page = (
        f"<html><body><h2>Alpha</h2><p>{words} one</p><div><h3>* * *</h3></div>"
        f"<p>{words} two</p><div><div><h4>Inner</h4><p>x y</p></div><p>{words} three</p></div>"
        f"<p>{words} four</p></body></html>"
    )
    tree = build_block_tree(page, max_words=8)
    context = {n.text.split()[-1]: n.metadata["context"] for n in _blocks(tree)}
    assert context["one"] == "Alpha"
    assert context["two"] == "Alpha > * * *"
    assert context["y"] == "Alpha > * * *"  # the block holding the heading: before it
    assert context["three"].startswith("Alpha > * * * > Inner")
    assert context["four"] == "Alpha > * * * > Inner"
    orders = [n.order for n in sorted(_blocks(tree), key=lambda n: n.id)]
    assert len(set(orders)) == len(orders)


def test_words_split_by_unwrapped_inline_tags_count_once() -> None:
    # "92<span>FS</span>" is one word on the page; unwrapping the span must not make it two.
    page = "<html><body><ul><li>Beretta 92<span>FS</span> Pistol</li></ul></body></html>"
    tree = build_block_tree(page)
    (block,) = _blocks(tree)
    assert block.text == "Beretta 92FS Pistol"
    assert block.metadata["words"] == 3


def test_word_count_of_ascii_text_matches_the_unicode_rule() -> None:
    # ASCII text takes a byte-table path; it must count what the regex counts everywhere.
    rng = random.Random(7)
    alphabet = string.printable + "__--"
    for _ in range(2000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        assert count_words(text) == len(_WORD.findall(text)), text
    assert count_words("snake_case and kebab-case, 3.14 x2") == 8
    assert count_words("東京 タワー café") == 6  # not ASCII: every CJK character is a word


def test_word_count_of_mixed_script_text_matches_the_unicode_rule() -> None:
    # Latin text with a few other characters takes a path that splits on ASCII separators and
    # reads only the runs with other characters with the regex; text mostly in another script
    # goes to the regex whole. Both must count what the regex counts.
    rng = random.Random(11)
    other = "–’é ñ Ж 東タ\u00a0\u3000\u200b\U00020001\x85\u2028½²"
    for ascii_share in (20, 2):  # mostly ASCII (the byte path), then mostly other characters
        alphabet = "abcdefgh Z9_-.,()" * ascii_share + other
        for _ in range(3000):
            text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60)))
            assert count_words(text) == len(_WORD.findall(text)), repr(text)
    assert count_words("The 2013 season – with café owners’ support") == 7
    assert count_words("Москва является столицей") == 3
    assert count_words("東京は日本") == 5


def test_whitespace_collapse_matches_the_regex_rule() -> None:
    # collapse_space and normalize_space split with str.split(); \s must be what they split on.
    rng = random.Random(5)
    space = re.compile(r"\s+")
    alphabet = "ab .\t\n\r\x0b\x0c\x1c\x1f\x85\xa0\u1680\u2000\u200b\u2028\u3000\ufeffé東"
    for _ in range(5000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 30)))
        assert collapse_space(text) == space.sub(" ", text), repr(text)
        assert normalize_space(text) == space.sub(" ", text).strip(), repr(text)


def test_title_parts_are_the_title_and_a_sole_h1() -> None:
    one = clean_document(
        "<title>Glasgow  Airport</title><h1>Glasgow\nAirport</h1><p>Text here.</p>"
    )
    assert title_parts(one) == ("Glasgow Airport", "Glasgow Airport")
    two = clean_document("<title>T</title><h1>One</h1><p>a b</p><h1>Two</h1><p>c d</p>")
    assert title_parts(two) == ("T",)  # two <h1>s are sections, not the page's title
    assert title_parts(clean_document("<p>No title at all.</p>")) == ()
