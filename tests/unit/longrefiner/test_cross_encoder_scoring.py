"""LongRefiner's local scores from a cross-encoder (the paper uses bge-reranker-v2-m3): the
configured model reads (query, leaf) pairs and its scores decide what is kept; a model folder
loads offline. The models here are a fake pair scorer and a tiny random BERT: the point is the
plumbing, not the quality."""

from __future__ import annotations

from pathlib import Path

import pytest
from hrefine.longrefiner import LongRefiner
from lm_fixture import PairsOnly, build_tiny_cross_encoder

DOC = """# Lease

## Term
The lease runs for five years from the start date.

## Rent
The rent is paid monthly by the tenant to the landlord.

## Pets
No pets are allowed in the building at any time.
"""


def test_the_cross_encoder_reads_every_leaf_and_its_scores_decide_what_is_kept() -> None:
    model = PairsOnly()
    refiner = LongRefiner(scorer=model, lexical_weight=0, global_selection="off")
    result = refiner.refine("pets allowed building", DOC, 20)
    asked = {text for query, text in model.pairs if query == "pets allowed building"}
    assert any("No pets are allowed" in text for text in asked)
    assert any("five years" in text for text in asked)  # every leaf is scored, not a subset
    (doc,) = result.documents
    assert "No pets are allowed" in doc.text
    assert "five years" not in doc.text and result.tokens <= 20


def test_a_cross_encoder_folder_is_named_as_the_scorer(tmp_path: Path) -> None:
    folder = build_tiny_cross_encoder(tmp_path / "ce")
    refiner = LongRefiner(scorer=f"cross-encoder:{folder}", global_selection="off")
    result = refiner.refine("classic rock station", DOC, 30)
    assert result.tokens <= 30 and result.documents[0].text


def test_a_cross_encoder_that_is_not_on_disk_fails_when_made() -> None:
    from hrefine.errors import ModelNotFoundError

    with pytest.raises(ModelNotFoundError, match="cross-encoder"):
        LongRefiner(scorer="cross-encoder:hrefine-tests/no-such-model")
