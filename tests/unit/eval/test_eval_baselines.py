"""The baselines: query-blind lead, BM25 chunks and embedding chunks, under one budget."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hrefine.budget import RegexCounter, get_counter
from hrefine.errors import BudgetTooSmallError, EmptyInputError
from hrefine.eval import ChunkCompressor, Compressor, LeadCompressor, load_dataset
from hrefine.models import CallableEmbedder

FILLER = "\n\n".join(f"Paragraph {i} talks about weather and rivers at length." for i in range(60))
DOC = FILLER + "\n\nThe secret code of the vault is 4711 and nobody knows it.\n\n" + FILLER


def test_baselines_are_compressors() -> None:
    assert isinstance(LeadCompressor(), Compressor)
    assert isinstance(ChunkCompressor("bm25"), Compressor)


def test_lead_keeps_the_start_within_budget() -> None:
    lead = LeadCompressor()
    out = lead.compress(DOC, "secret code", 50)
    assert DOC.startswith(out)
    assert 45 <= lead.counter.count(out) <= 50


def test_lead_converts_html_and_reports_empty_or_tiny_budgets() -> None:
    lead = LeadCompressor(RegexCounter())
    assert lead.compress("<html><body><p>Hello world</p></body></html>", "q", 10) == "Hello world"
    with pytest.raises(EmptyInputError):
        lead.compress("<html><script>x</script></html>", "q", 10)
    with pytest.raises(BudgetTooSmallError):
        lead.compress("Hello", "q", 0)


def test_bm25_finds_the_relevant_chunk_in_document_order() -> None:
    bm25 = ChunkCompressor("bm25", chunk_tokens=32)
    out = bm25.compress(DOC, "what is the secret vault code", 64)
    assert "4711" in out
    assert bm25.counter.count(out) <= 64
    chunks, _ = bm25.chunks(DOC)
    picked = [chunks.index(p) for p in out.split("\n\n")]
    assert picked == sorted(picked)


def test_embedding_chunks_use_the_given_embedder() -> None:
    def embed(texts: list[str]) -> np.ndarray:
        return np.array([[1.0, 0.0] if "4711" in t or "vault" in t else [0.0, 1.0] for t in texts])

    comp = ChunkCompressor("embedding", embedder=CallableEmbedder(embed), chunk_tokens=32)
    assert comp.name == "embedding"
    out = comp.compress(DOC, "vault", 40)
    assert "4711" in out


def test_chunk_compressor_rejects_empty_documents_and_bad_chunk_size() -> None:
    with pytest.raises(EmptyInputError):
        ChunkCompressor("bm25").compress("   ", "q", 100)
    with pytest.raises(ValueError, match="chunk_tokens"):
        ChunkCompressor("bm25", chunk_tokens=0)


@pytest.mark.parametrize("name", ["wtq", "leval-nq", "articles"])
def test_baselines_never_exceed_budget_on_real_documents(shared_data: Path, name: str) -> None:
    counter = get_counter()
    items = load_dataset(name, shared_data, limit=2)
    for comp in (LeadCompressor(counter), ChunkCompressor("bm25", tokenizer=counter)):
        for item in items:
            for budget in (128, 512):
                out = comp.compress(item.document, item.question, budget)
                assert 0 < counter.count(out) <= budget
                assert "<div" not in out.lower()
