"""RAPTOR fixtures: a real Qasper paper and one tree built per session."""

from __future__ import annotations

from typing import Any

import pytest
from hrefine.raptor import RaptorTree
from raptor_fakes import Summariser


@pytest.fixture(scope="session")
def qasper_doc(shared_data: Any) -> Any:
    from hrefine.eval.loaders import load_dataset

    items = load_dataset("qasper", data_dir=shared_data)
    return items[0]


@pytest.fixture(scope="session")
def built(qasper_doc: Any, embedder: Any) -> RaptorTree:
    """A tree over one real paper, built with the real embedder and the instant summariser."""
    return RaptorTree.build([qasper_doc.document], llm=Summariser(), embedder=embedder)
