"""Real long documents for the LongRefiner adapter tests: CUAD contracts and a Qasper paper.

Read through :func:`hrefine.eval.loaders.load_dataset` from ``../shared/data/leval`` (or
``$HREFINE_DATA``). Each question named here has its gold answer verbatim in its document and
is kept by LongRefiner with the embedded embedder at the budgets the tests use.
"""

from __future__ import annotations

from pathlib import Path

from hrefine.eval.loaders import EvalItem, load_dataset

#: Contracts of the retrieval corpus (whole documents, 50-130 thousand characters each).
CONTRACTS = ("cuad_00", "cuad_01", "cuad_02", "cuad_04")
#: The contract and topic of the CUAD question the tests ask: its answer is one clause.
CONTRACT = "cuad_00"
RENEWAL = "Renewal Term"
EXPIRATION = "Expiration Date"
#: The paper (Zampieri et al., OLID) and a question whose answer is verbatim in one paragraph.
PAPER = "qasper_01"
ANNOTATORS = "How many annotators participated?"


def cuad_item(data: Path, topic: str, doc_id: str = CONTRACT) -> EvalItem:
    """The CUAD question about ``topic`` ("Renewal Term"...) over contract ``doc_id``."""
    (found,) = [
        it
        for it in load_dataset("cuad", data_dir=data)
        if it.doc_id == doc_id and f'"{topic}"' in it.question
    ]
    return found


def contracts(data: Path) -> dict[str, str]:
    """Text of each corpus contract, by document id."""
    out: dict[str, str] = {}
    for it in load_dataset("cuad", data_dir=data):
        if it.doc_id in CONTRACTS:
            out.setdefault(it.doc_id, it.document)
    return {d: out[d] for d in CONTRACTS}


def qasper_item(data: Path, question: str = ANNOTATORS) -> EvalItem:
    """The Qasper question ``question`` over the paper."""
    (found,) = [
        it
        for it in load_dataset("qasper", data_dir=data)
        if it.doc_id == PAPER and it.question == question
    ]
    return found


def normalize(text: str) -> str:
    """Case-folded, whitespace-collapsed text (for answer matching)."""
    return " ".join(text.casefold().split())


def has_answer(text: str, item: EvalItem) -> bool:
    """True when one of the item's answers occurs in ``text`` (case and spacing ignored)."""
    return any(normalize(a) in normalize(text) for a in item.answers)


def in_document_order(refined: str, source: str, separator: str = "\n\n") -> bool:
    """True when every kept unit of ``refined`` occurs in ``source`` (spacing ignored), each
    after the one before it."""
    flat = " ".join(source.split())
    at = 0
    for unit in refined.split(separator):
        words = " ".join(unit.split())
        if not words:
            continue
        found = flat.find(words, at)
        if found < 0:
            return False
        at = found + len(words)
    return True
