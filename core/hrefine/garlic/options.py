"""GarlicOptions: every GARLIC setting, declared once for the core and (later) both adapters.

Defaults are the paper's, but for two that were measured: 128-token leaf chunks (the paper's
300 leave room for one leaf in a 512-token budget; every dev-data figure in docs/garlic.md is
of 128), the embedding term weighed 10 times, and compressors reading on past the Yes
until leaves fill the budget (``fill``). The paper's are batches of at most 8K tokens
(prompt, inputs and the expected summary together), the summary and search prompts of its
appendix (Tables 4 and 5) and stop patience 1.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar

from hrefine.errors import ConfigError, InputTypeError
from hrefine.options import (
    Options,
    check_int,
    check_ints,
    check_number,
    check_numbers,
    check_str,
    setting,
)

__all__ = ["EDGE_MODES", "SEARCH_PROMPT", "SUMMARY_PROMPT", "GarlicOptions", "one_llm"]

#: The summary prompt of the paper's Table 4. ``{points}`` is replaced by the batch's input
#: nodes, one per line; the model answers with ``*`` bullets ("summary points").
SUMMARY_PROMPT = (
    "Summary the following information. Each segment is separated by a new line symbol.\n\n"
    "{points}\n\n"
    "Split your summary into different summary points according to the semantic information "
    "in these information points. It is not necessary to generate each summary point for each "
    "information point. Gather and organize information into summary points. In each summary "
    "point, try to avoid using pronouns like he/she/they and instead use full names. Generate "
    "in the format of:\n\n* summary point\n* summary point\n* summary point\n......\n\n"
    "Do not provide any explanation and start the summary directly."
)
#: The first-turn search prompt of the paper's Table 5: the instruction, then the question,
#: then the visited nodes (appended one at a time after ``Information:``).
SEARCH_PROMPT = (
    'Can this question be answered by the following information? Response "Yes" or "No" in '
    "one word. Do not provide any explanation."
)
#: Where edge weights come from: the LM's attention (a LocalLM), or embedding similarity
#: between each summary point and its inputs (any LLM that shows no attention).
EDGE_MODES = ("auto", "attention", "embedding")


@dataclasses.dataclass(frozen=True, kw_only=True)
class GarlicOptions(Options):
    """Settings of :class:`~hrefine.garlic.GarlicGraph` (build) and
    :class:`~hrefine.garlic.GarlicSearcher` (search)."""

    adapter_excluded: ClassVar[frozenset[str]] = frozenset({"lm", "embedder", "tokenizer"})
    # RAPTOR and the adapters take the model as llm=; GARLIC takes that name too.
    aliases: ClassVar[Mapping[str, str]] = {"llm": "lm"}

    # 128, not the paper's 300: a budget of 512 holds one 300-token leaf, and chunk retrieval
    # (the baseline a user swaps out) ranks units this size.
    chunk_tokens: int = setting(128, help="Leaf size in tokens (chunks cut on sentence ends).")
    batch_tokens: int = setting(
        8192,
        help="n_s: most tokens of one summary call (prompt, input nodes and the summary).",
    )
    summary_tokens: int = setting(
        512, help="Most new tokens the model writes for one batch's summary points."
    )
    max_levels: int = setting(8, help="Most summary levels above the leaves.")
    summary_prompt: str = setting(
        SUMMARY_PROMPT, help="Summary prompt; '{points}' marks the inputs."
    )
    search_prompt: str = setting(SEARCH_PROMPT, help="First-turn search instruction (Yes/No).")
    edges: str = setting(
        "auto",
        help="Edge weights: 'attention' (a LocalLM's), 'embedding' (any LLM), or 'auto'.",
    )
    retries: int = setting(
        1, help="Extra tries of a summary call whose answer holds no summary point."
    )
    patience: int = setting(1, help="Stop the search after the LM has said Yes this many times.")
    max_steps: int = setting(64, help="Most nodes a search adds to the visited set.")
    max_tokens: int | None = setting(
        None, help="Most tokens of visited nodes (budget tokenizer); None: no limit."
    )
    fill: bool = setting(
        True,
        help="Compressors: read on past the LLM's Yes until leaf chunks fill the budget "
        "(False: the first Yes stops the search, as in the paper).",
    )
    k: int | None = setting(
        None,
        help="Most nodes a retriever returns: the k most relevant the search read, best "
        "first (None: all it read).",
    )
    # 10, not the paper's 1: with a small or no LM the attention walk is a weak guide, and on
    # every dev document (NQ, CUAD, Qasper; docs/garlic.md) 10 kept more answers on both halves.
    embedding_weight: float = setting(
        10.0,
        help="Weight of the normalised embedding similarity beside the normalised E^T a "
        "(the paper's equal weighting: 1.0).",
    )
    lexical_weight: float = setting(
        0.0,
        help="Weight of the BM25 match of a node's words (scaled by the best node's) added to "
        "its cosine in s, as RAPTOR and LongRefiner fuse them (0: cosine alone).",
    )
    seed: int = setting(0, help="Seed of any sampling (a retried summary); same seed, same graph.")
    llm_timeout: float | None = setting(
        120.0,
        help="Seconds per try of a summary or search call of a str -> str LLM; None: no limit.",
    )
    lm: Any = setting(
        None,
        help=(
            "The LLM: a LocalLM or a model name or folder such as 'qwen2.5-coder-1.5b' "
            "(attention edges), or a str -> str callable (also taken as llm); None: no model "
            "(ExtractiveGarlicLM: first sentences as summary points, embedding edges)."
        ),
    )
    embedder: Any = setting(None, help="The embedder (None: the embedded all-MiniLM-L6-v2).")
    tokenizer: Any = setting(None, help="Tokenizer of the budgets (None: Llama-3.2's).")

    def __post_init__(self) -> None:
        check_int("chunk_tokens", self.chunk_tokens, minimum=16)
        check_int("batch_tokens", self.batch_tokens, minimum=256)
        check_int("summary_tokens", self.summary_tokens, minimum=8)
        if self.chunk_tokens + self.summary_tokens >= self.batch_tokens:
            msg = (
                f"batch_tokens ({self.batch_tokens}) must exceed chunk_tokens + summary_tokens "
                f"({self.chunk_tokens + self.summary_tokens}): a batch holds at least one node "
                "and its summary"
            )
            raise ConfigError(msg)
        check_int("max_levels", self.max_levels, minimum=1)
        for name, needs in (("summary_prompt", "{points}"), ("search_prompt", None)):
            value = getattr(self, name)
            check_str(name, value)
            if needs and needs not in value:
                msg = f"{name} must contain {needs!r}, where the input nodes go"
                raise ConfigError(msg)
        if not isinstance(self.edges, str) or self.edges not in EDGE_MODES:
            msg = f"edges must be one of {', '.join(map(repr, EDGE_MODES))}, got {self.edges!r}"
            raise ConfigError(msg)
        check_ints(self, 0, "retries", "seed")
        check_ints(self, 1, "patience", "max_steps")
        check_ints(self, 1, "max_tokens", "k", none=True)
        if not isinstance(self.fill, bool):
            msg = f"fill must be True or False, got {self.fill!r}"
            raise InputTypeError(msg)
        check_numbers(self, 0.0, "embedding_weight", "lexical_weight")
        check_number("llm_timeout", self.llm_timeout, minimum=0.001, none=True)


def one_llm(lm: Any, llm: Any) -> Any:
    """The model given as ``lm=`` or as ``llm=`` (the name every method takes), or None.

    Raises
    ------
    ConfigError
        Both are given.
    """
    if lm is not None and llm is not None:
        msg = "give the model as llm= or as lm= (the same argument), not both"
        raise ConfigError(msg)
    return llm if llm is not None else lm
