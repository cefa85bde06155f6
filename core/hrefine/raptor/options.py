"""RaptorOptions: every RAPTOR setting, declared once for the core and both adapters.

Defaults are the paper's (and its authors' code): 100-token leaves, UMAP to 10 dimensions, a
Gaussian mixture whose size BIC picks among at most 50, soft membership above 0.1, summaries of
about 100 tokens from the appendix D prompt, at most 5 layers, clusters re-clustered when their
text passes 3,500 tokens. Retrieval defaults to the collapsed tree. One default departs from
the paper: retrieval returns leaves only (``summary_rank="off"``), the best measured on every
dev dataset with the embedded models (docs/raptor.md).
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from hrefine.errors import ConfigError
from hrefine.options import Options, check_int, check_ints, check_number, check_str, setting

__all__ = ["DEFAULT_PROMPT", "DEFAULT_SYSTEM_PROMPT", "MODES", "RaptorOptions"]

#: The summarisation prompt of the paper's appendix D; ``{context}`` is replaced by the texts.
DEFAULT_PROMPT = (
    "Write a summary of the following, including as many key details as possible: {context}:"
)
#: The system message of the same prompt (used where the LLM takes one: a LocalLM).
DEFAULT_SYSTEM_PROMPT = "You are a Summarizing Text Portal"
#: Retrieval modes.
MODES = ("collapsed", "traversal")
#: How summaries rank against the leaves they summarise (see ``RaptorOptions.summary_rank``).
SUMMARY_RANKS = ("free", "below", "off")


@dataclasses.dataclass(frozen=True, kw_only=True)
class RaptorOptions(Options):
    """Settings of :class:`~hrefine.raptor.RaptorTree` (build and retrieval)."""

    adapter_excluded: ClassVar[frozenset[str]] = frozenset({"llm", "embedder", "tokenizer"})

    chunk_tokens: int = setting(100, help="Leaf size in tokens (chunks cut on sentence ends).")
    summary_tokens: int = setting(
        100, help="Most new tokens per summary (a local LM's limit; an API LLM is asked by prompt)."
    )
    max_layers: int = setting(5, help="Most summary layers above the leaves.")
    reduction_dim: int = setting(10, help="Dimensions UMAP reduces embeddings to before the GMM.")
    membership_threshold: float = setting(
        0.1, help="A node joins every cluster whose GMM probability is above this (soft clusters)."
    )
    max_clusters: int = setting(50, help="Most clusters BIC may choose per clustering pass.")
    cluster_max_tokens: int = setting(
        3500,
        help="A cluster whose text is longer than this is clustered again (summariser context).",
    )
    cluster_group_size: int | None = setting(
        1000,
        help=(
            "A layer of more nodes than this is cut into groups of similar nodes, each clustered"
            " on its own, so build time grows about linearly; None: the whole layer at once."
        ),
    )
    seed: int = setting(224, help="Seed of UMAP and the Gaussian mixtures (same seed, same tree).")
    prompt: str = setting(DEFAULT_PROMPT, help="Summary prompt; '{context}' marks the texts.")
    system_prompt: str | None = setting(
        DEFAULT_SYSTEM_PROMPT, help="System message for LLMs that take one (a local LM)."
    )
    mode: str = setting("collapsed", help="Retrieval: 'collapsed' (all layers) or 'traversal'.")
    k: int | None = setting(
        10, help="Most nodes returned (collapsed) or kept per layer (traversal); None: no limit."
    )
    max_tokens: int | None = setting(
        None, help="Token budget of the returned nodes together; None: only k limits them."
    )
    lexical_weight: float = setting(
        0.5,
        help="Weight of the BM25 match (scaled by the best node's) added to each node's cosine.",
    )
    summary_rank: str = setting(
        "off",
        help=(
            "'off': only leaves are returned (a traversal still walks down through the"
            " summaries); 'below': a summary never ranks above the best node it summarises;"
            " 'free': summaries rank by their own score (the paper)."
        ),
    )
    llm_concurrency: int = setting(16, help="Most summary calls in flight at once.")
    llm_retries: int = setting(
        2, help="Extra tries of a summary call that failed or came back empty."
    )
    llm_timeout: float | None = setting(120.0, help="Seconds per summary call; None: no limit.")
    llm: Any = setting(
        None,
        help=(
            "The summariser: a callable, LocalLM, TextGenerator, or a model name or folder "
            "such as 'qwen2.5-coder-1.5b' (None: extractive)."
        ),
    )
    embedder: Any = setting(None, help="The embedder (None: the embedded all-MiniLM-L6-v2).")
    tokenizer: Any = setting(None, help="Tokenizer of every token count (None: Llama-3.2's).")

    def __post_init__(self) -> None:
        check_int("chunk_tokens", self.chunk_tokens, minimum=8)
        check_ints(self, 1, "summary_tokens", "max_clusters", "llm_concurrency")
        check_ints(self, 0, "max_layers", "seed", "llm_retries")
        check_int("reduction_dim", self.reduction_dim, minimum=2)
        check_number("membership_threshold", self.membership_threshold, minimum=0.0)
        if self.membership_threshold >= 1:
            msg = f"membership_threshold must be below 1, got {self.membership_threshold}"
            raise ConfigError(msg)
        check_int("cluster_max_tokens", self.cluster_max_tokens, minimum=self.chunk_tokens)
        check_int("cluster_group_size", self.cluster_group_size, minimum=2, none=True)
        check_str("prompt", self.prompt)
        check_str("system_prompt", self.system_prompt, none=True)
        if "{context}" not in self.prompt:
            msg = "prompt must contain '{context}', where the texts to summarise go"
            raise ConfigError(msg)
        check_mode(self.mode)
        check_ints(self, 1, "k", "max_tokens", none=True)
        check_number("lexical_weight", self.lexical_weight, minimum=0.0)
        if self.summary_rank not in SUMMARY_RANKS:
            msg = (
                f"summary_rank must be one of {', '.join(map(repr, SUMMARY_RANKS))}, "
                f"got {self.summary_rank!r}"
            )
            raise ConfigError(msg)
        check_number("llm_timeout", self.llm_timeout, minimum=0.001, none=True)


def check_mode(mode: object) -> str:
    """``mode`` if it is a retrieval mode; raises :class:`ConfigError` naming the valid ones."""
    if not isinstance(mode, str) or mode.lower() not in MODES:
        msg = f"mode must be one of {', '.join(map(repr, MODES))}, got {mode!r}"
        raise ConfigError(msg)
    return mode.lower()
