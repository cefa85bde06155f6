"""HtmlPageNodeParser: index nodes that are whole HTML, with nothing of the page lost."""

from __future__ import annotations

import collections
import copy
from html.parser import HTMLParser
from pathlib import Path

import pytest
from hrefine.budget import get_counter
from hrefine.errors import ConfigError
from hrefine.html.formats import markup_fragment
from hrefine.html.split import clean_page
from llama_index.core import Document, VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.node_parser import NodeParser
from llama_index.core.schema import NodeRelationship, TextNode

from llamaindex_hrefine import HtmlPageNodeParser

_VOID = {"br", "img", "hr", "wbr", "col", "area", "input", "meta", "link", "source"}


class _Balance(HTMLParser):
    """Records end tags that close nothing, and start tags left open."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.stray: list[str] = []

    def handle_starttag(self, tag: str, attrs: object) -> None:
        if tag not in _VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if self.stack and self.stack[-1] == tag:
            self.stack.pop()
        else:
            self.stray.append(tag)


def _is_whole_html(text: str) -> bool:
    parser = _Balance()
    parser.feed(text)
    parser.close()
    return not parser.stack and not parser.stray


def _words(texts: list[str]) -> collections.Counter[str]:
    from lxml import etree

    found: collections.Counter[str] = collections.Counter()
    for text in texts:
        root = etree.fromstring(f"<html><body>{text}</body></html>", etree.HTMLParser())
        found.update(w for t in root.itertext() for w in t.split())
    return found


@pytest.fixture(scope="module")
def wtq_page(shared_data: Path) -> str:
    return (shared_data / "wtq" / "pages" / "200-36.html").read_text(encoding="utf-8")


def test_is_a_node_parser() -> None:
    parser = HtmlPageNodeParser(chunk_size=128)
    assert isinstance(parser, NodeParser)
    assert HtmlPageNodeParser.class_name() == "HtmlPageNodeParser"
    data = parser.to_dict()
    assert data["chunk_size"] == 128 and data["class_name"] == "HtmlPageNodeParser"


def test_index_nodes_are_whole_html_and_lose_nothing(wtq_page: str) -> None:
    doc = Document(text=wtq_page, metadata={"url": "wiki/Catherine_Deneuve", "tags": ["wtq"]})
    before = copy.deepcopy(doc.model_dump())
    parser = HtmlPageNodeParser(chunk_size=256)
    index = VectorStoreIndex.from_documents(
        [doc], transformations=[parser], embed_model=MockEmbedding(embed_dim=8)
    )
    nodes = [n for n in index.docstore.docs.values() if isinstance(n, TextNode)]
    assert len(nodes) > 20
    counter = get_counter(None)
    for node in nodes:
        assert _is_whole_html(node.text), node.text[:120]
        assert markup_fragment(node.text) is None
        assert counter.count(node.text) <= 256
        assert node.metadata == {"url": "wiki/Catherine_Deneuve", "tags": ["wtq"]}
        assert node.metadata is not doc.metadata
        assert node.relationships[NodeRelationship.SOURCE].node_id == doc.doc_id
    # Every word of the cleaned page is in some node (headings repeated for context come on
    # top).
    root, fmt = clean_page(wtq_page)
    assert fmt == "html"
    page_words = collections.Counter(w for t in root.itertext() for w in t.split())
    assert page_words - _words([n.text for n in nodes]) == collections.Counter()
    assert doc.model_dump() == before  # the document is not changed


def test_include_metadata_false_gives_nodes_without_metadata(wtq_page: str) -> None:
    # Was: the setting was taken and had no effect (every node carried the page's metadata, a
    # blob included, into embeddings and prompts), unlike LlamaIndex's own parsers.
    from llama_index.core.node_parser import SentenceSplitter

    doc = Document(text=wtq_page, metadata={"url": "wiki/Catherine_Deneuve", "raw": "R" * 100})
    for parser in (
        HtmlPageNodeParser(chunk_size=256, include_metadata=False),
        SentenceSplitter(chunk_size=512, include_metadata=False),
    ):
        nodes = parser.get_nodes_from_documents([doc])
        assert nodes and all(node.metadata == {} for node in nodes), type(parser).__name__
    with_metadata = HtmlPageNodeParser(chunk_size=256).get_nodes_from_documents([doc])
    assert all(node.metadata == doc.metadata for node in with_metadata)


def test_pieces_inside_a_table_repeat_its_header_and_heading(wtq_page: str) -> None:
    pieces = HtmlPageNodeParser(chunk_size=200, tokenizer="regex").split_html(wtq_page)
    header = "<tr><th>Year</th><th>Title</th><th>Role</th>"
    with_rows = [p for p in pieces if "<td>" in p and "Les Parisiennes" in p]
    assert len(with_rows) == 1
    assert with_rows[0].startswith("<h2>Filmography</h2><table>" + header)
    assert sum(header in p for p in pieces) > 10


def test_whole_pages_mode_and_empty_documents(wtq_page: str) -> None:
    docs = [
        Document(text=wtq_page, id_="page"),
        Document(text="<script>var x = 1;</script>", id_="empty"),
        Document(text="# Notes\n\n| a | b |\n|---|---|\n| 1 | 2 |\n", id_="md"),
    ]
    nodes = HtmlPageNodeParser().get_nodes_from_documents(docs)
    assert [n.ref_doc_id for n in nodes] == ["page", "md"]
    assert all(_is_whole_html(n.get_content()) for n in nodes)
    assert "<tr><td>1</td><td>2</td></tr>" in nodes[1].get_content()
    assert "<script" not in nodes[0].get_content()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"mode": "sentences"}, "mode must be one of"),
        ({"mode": "blocks"}, "needs a chunk_size"),
        ({"chunk_size": 4}, "at least 16"),
        ({"input_format": "pdf"}, "input_format must be one of"),
    ],
)
def test_bad_settings_fail_at_construction(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        HtmlPageNodeParser(**kwargs)
