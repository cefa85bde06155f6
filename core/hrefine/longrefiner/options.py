"""LongRefinerOptions: every LongRefiner setting, declared once for the core and both adapters.

Defaults follow the paper where it is specific (the published prompts, 8-token anchors, the
local score of a section as the mean of its children's, a global score split evenly among a
section's children) and our measurements where it is not (leaf size, the BM25 weight). With no
model given, the steps that need one are off: the structure comes from the document's markup
and every query weighs local and global scores evenly. A model turns each step on unless its
switch says otherwise.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import hrefine.longrefiner.prompts as prompts
from hrefine.errors import ConfigError, InputTypeError
from hrefine.options import Options, check_int, check_ints, check_number, check_str, setting

__all__ = ["STEP_SWITCHES", "STRUCTURE_SOURCES", "LongRefinerOptions"]

#: Where a document's structure comes from: ``"auto"`` (its markup when it has any, else the
#: model when one is given, else paragraphs), or one source forced.
STRUCTURE_SOURCES = ("auto", "markup", "model", "paragraphs")
#: Values of the switches of the two query-time model steps.
STEP_SWITCHES = ("auto", "on", "off")


@dataclasses.dataclass(frozen=True, kw_only=True)
class LongRefinerOptions(Options):
    """Settings of :class:`~hrefine.longrefiner.LongRefiner`."""

    adapter_excluded: ClassVar[frozenset[str]] = frozenset({"lm", "llm", "embedder", "tokenizer"})

    lm: Any = setting(
        None,
        help=(
            "A LocalLM (or its folder or name) for the three model steps: choice probabilities "
            "for query analysis, generation for structuring and global selection."
        ),
    )
    llm: Any = setting(
        None,
        help=(
            "Any text LLM (a str -> str callable, sync or async) for the prompt-only mode: the "
            "steps parse its text answers. Used when no lm is given."
        ),
    )
    structure: str = setting(
        "auto",
        help="'auto' (markup, else the model, else paragraphs), 'markup', 'model' or 'paragraphs'.",
    )
    query_analysis: str = setting(
        "auto", help="Step 1: 'auto' (on when a model is given), 'on' or 'off'."
    )
    global_selection: str = setting(
        "auto", help="Step 3: 'auto' (on when a model is given), 'on' or 'off'."
    )
    global_weight: float = setting(
        0.5,
        help=(
            "Weight of the global score when query analysis is off (the local score gets "
            "1 - this); with it on, softmax(P_local, P_global) sets both."
        ),
    )
    scorer: Any = setting(
        "embedding",
        help=(
            "Local scorer of leaves: 'embedding', 'bm25', 'cross-encoder:<path or name>' (the "
            "paper uses bge-reranker-v2-m3), or an object with score(query, texts)."
        ),
    )
    lexical_weight: float = setting(
        0.5,
        help="Weight of the BM25 match (scaled by the best leaf's) added to an embedding score.",
    )
    leaf_tokens: int = setting(
        120, help="Longest leaf in budget tokens; a longer paragraph is cut at sentence ends."
    )
    min_leaf_tokens: int = setting(
        24, help="Shorter paragraphs of one section are joined with the next (up to leaf_tokens)."
    )
    anchor_tokens: int = setting(
        8, help="Tokens kept at each end of an abbreviated paragraph (the published format's k)."
    )
    window_tokens: int = setting(
        6000, help="Most document tokens (the LM's) structured in one model call."
    )
    structure_max_new_tokens: int = setting(
        2048, help="Most tokens the model may write for one window's skeleton."
    )
    selection_max_new_tokens: int = setting(
        128, help="Most tokens the model may write for one global selection answer."
    )
    query_analysis_adapter: str | None = setting(
        None, help="Folder of a LoRA adapter for step 1 (e.g. the authors' Query-Analysis one)."
    )
    structuring_adapter: str | None = setting(
        None, help="Folder of a LoRA adapter for step 2 (document structuring)."
    )
    selection_adapter: str | None = setting(
        None, help="Folder of a LoRA adapter for step 3 (global selection)."
    )
    cache_dir: str | None = setting(
        None,
        help=(
            "Folder where model-made structures are kept by document hash (safe format); "
            "None keeps them in memory only."
        ),
    )
    separator: str = setting("\n\n", help="Text placed between kept units in the output.")
    llm_concurrency: int = setting(4, help="Most prompt-only LLM calls in flight at once.")
    llm_retries: int = setting(1, help="Extra tries of a prompt-only LLM call that failed.")
    llm_timeout: float | None = setting(120.0, help="Seconds per LLM call; None: no limit.")
    max_input_chars: int = setting(
        20_000_000, help="Longest document accepted, in characters (a clear error past it)."
    )
    analysis_system: str = setting(prompts.ANALYSIS_SYSTEM, help="Step 1 system message.")
    analysis_user: str = setting(prompts.ANALYSIS_USER, help="Step 1 user message ({question}).")
    structure_system: str = setting(prompts.STRUCTURE_SYSTEM, help="Step 2 system message.")
    structure_user: str = setting(
        prompts.STRUCTURE_USER, help="Step 2 user message ({doc_content})."
    )
    selection_system: str = setting(prompts.SELECTION_SYSTEM, help="Step 3 system message.")
    selection_user: str = setting(
        prompts.SELECTION_USER, help="Step 3 user message ({abstract}, {outline}, {question})."
    )
    embedder: Any = setting(None, help="Embedder of the 'embedding' scorer (None: the embedded).")
    tokenizer: Any = setting(None, help="Tokenizer of the budget (None: Llama-3.2's).")

    def __post_init__(self) -> None:
        _choice("structure", self.structure, STRUCTURE_SOURCES)
        _choice("query_analysis", self.query_analysis, STEP_SWITCHES)
        _choice("global_selection", self.global_selection, STEP_SWITCHES)
        check_number("global_weight", self.global_weight, minimum=0.0)
        if self.global_weight > 1:
            msg = f"global_weight must be in [0, 1], got {self.global_weight}"
            raise ConfigError(msg)
        from hrefine.models.scorers import canonical_scorer, check_embedder_scorer

        check_embedder_scorer(self.embedder, canonical_scorer(self.scorer))
        check_number("lexical_weight", self.lexical_weight, minimum=0.0)
        check_int("leaf_tokens", self.leaf_tokens, minimum=8)
        check_int("min_leaf_tokens", self.min_leaf_tokens, minimum=0)
        if self.min_leaf_tokens > self.leaf_tokens:
            msg = (
                f"min_leaf_tokens ({self.min_leaf_tokens}) must not exceed leaf_tokens "
                f"({self.leaf_tokens})"
            )
            raise ConfigError(msg)
        check_ints(self, 1, "anchor_tokens", "llm_concurrency", "max_input_chars")
        check_int("window_tokens", self.window_tokens, minimum=256)
        check_int("structure_max_new_tokens", self.structure_max_new_tokens, minimum=16)
        check_int("selection_max_new_tokens", self.selection_max_new_tokens, minimum=4)
        for name in ("query_analysis_adapter", "structuring_adapter", "selection_adapter"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                msg = f"{name} must be a folder path (str) or None, got {type(value).__name__}"
                raise InputTypeError(msg)
        if self.cache_dir is not None and not isinstance(self.cache_dir, str):
            kind = type(self.cache_dir).__name__
            msg = f"cache_dir must be a folder path (str) or None, got {kind}"
            raise InputTypeError(msg)
        check_str("separator", self.separator)
        check_int("llm_retries", self.llm_retries, minimum=0)
        check_number("llm_timeout", self.llm_timeout, minimum=0.001, none=True)
        for name, needs in (
            ("analysis_user", "{question}"),
            ("structure_user", "{doc_content}"),
            ("selection_user", "{question}"),
        ):
            value = getattr(self, name)
            if not isinstance(value, str) or needs not in value:
                msg = f"{name} must be a string containing {needs!r}, got {value!r}"
                raise ConfigError(msg)
        for name in ("analysis_system", "structure_system", "selection_system"):
            if not isinstance(getattr(self, name), str):
                msg = f"{name} must be a string"
                raise InputTypeError(msg)
        if self.lm is not None and self.llm is not None:
            msg = "give lm (a LocalLM) or llm (any text LLM), not both"
            raise ConfigError(msg)

    @property
    def has_model(self) -> bool:
        """Whether a model is configured (the model steps' ``"auto"`` turns them on)."""
        return self.lm is not None or self.llm is not None


def _choice(name: str, value: object, allowed: tuple[str, ...]) -> None:
    if not isinstance(value, str) or value not in allowed:
        msg = f"{name} must be one of {', '.join(map(repr, allowed))}, got {value!r}"
        raise ConfigError(msg)
