"""Evaluation harness: loaders for the shared data, metrics, baselines, a runner and reports.

Typical use::

    from hrefine.eval import run_eval
    result = run_eval("chunks-bm25", "hotpotqa", budgets=[512, 1024], limit=50)
    result.score(512)  # mean supporting-paragraph recall at 512 tokens

Any object with ``compress(document, query, max_tokens) -> str`` is a :class:`Compressor`;
LangChain compressors and LlamaIndex postprocessors are adapted by :func:`get_method`.
"""

from __future__ import annotations

from hrefine.eval.base import Compressor, FunctionCompressor
from hrefine.eval.baselines import ChunkCompressor, LeadCompressor, as_plain_text
from hrefine.eval.loaders import (
    DATASETS,
    DatasetSpec,
    DatasetUnavailableError,
    EvalItem,
    data_sha256,
    default_data_dir,
    load_dataset,
    load_jsonl,
    subset,
)
from hrefine.eval.methods import available_methods, get_method, register_method
from hrefine.eval.metrics import (
    answer_containment,
    answer_recall,
    compression_ratio,
    exact_match,
    normalize_answer,
    option_recall,
    paragraph_recall,
    token_f1,
    token_recall,
)
from hrefine.eval.results import BudgetSummary, EvalResult, ItemResult, score_output
from hrefine.eval.runner import DEFAULT_BUDGETS, evaluate_items, run_eval, run_many

__all__ = [
    "DATASETS",
    "DEFAULT_BUDGETS",
    "BudgetSummary",
    "ChunkCompressor",
    "Compressor",
    "DatasetSpec",
    "DatasetUnavailableError",
    "EvalItem",
    "EvalResult",
    "FunctionCompressor",
    "ItemResult",
    "LeadCompressor",
    "answer_containment",
    "answer_recall",
    "as_plain_text",
    "available_methods",
    "compression_ratio",
    "data_sha256",
    "default_data_dir",
    "evaluate_items",
    "exact_match",
    "get_method",
    "load_dataset",
    "load_jsonl",
    "normalize_answer",
    "option_recall",
    "paragraph_recall",
    "register_method",
    "run_eval",
    "run_many",
    "score_output",
    "subset",
    "token_f1",
    "token_recall",
]
