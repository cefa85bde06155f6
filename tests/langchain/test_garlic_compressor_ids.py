"""GarlicCompressor keeps its inputs' ids, as HtmlRagCompressor and LongRefinerCompressor do."""

from __future__ import annotations

import json
from pathlib import Path

from langchain_core.documents import Document

from langchain_hrefine import GarlicCompressor


def test_returned_chunks_and_single_document_points_keep_the_input_id(
    shared_data: Path,
) -> None:
    with (shared_data / "hotpotqa" / "questions.jsonl").open() as f:
        q = json.loads(f.readline())
    docs = [
        Document(page_content="".join(p["sentences"]), metadata={"title": p["title"]}, id=f"d{i}")
        for i, p in enumerate(q["paragraphs"][:3])
    ]
    paper = (shared_data / "leval" / "qasper" / "docs" / "qasper_17.txt").read_text()[:6000]
    docs.append(Document(page_content=paper, metadata={"title": "paper"}, id="paper"))
    by_title = {d.metadata["title"]: d.id for d in docs}
    out = GarlicCompressor(max_tokens=600, fill=False).compress_documents(docs, q["question"])
    kinds = {"chunk": 0, "one": 0, "many": 0}
    for d in out:
        sources = d.metadata["hrefine_sources"]
        if d.metadata["hrefine_kind"] == "chunk":
            assert d.id == by_title[d.metadata["title"]] == sources[0]
            kinds["chunk"] += 1
        elif len(sources) == 1:
            assert d.id == sources[0]
            kinds["one"] += 1
        else:
            assert d.id is None
            kinds["many"] += 1
    assert all(kinds.values()), kinds
    assert [d.id for d in docs] == ["d0", "d1", "d2", "paper"]  # inputs untouched
