"""Generative block scoring over a token tree (HtmlRAG §3.4.2, Eq. 2/3, Algorithm 3).

The model reads the HTML, the question and the instruction of the paper's Figure 4, and a block's
score is the log-probability of generating the block's tag path (``<html><body><div2><p>``),
token by token. The paths of all blocks form a trie of tokens. Walking it depth first, the
prompt is pre-filled once, each trie edge that leads to a branching point is appended once (the
KV cache of the shared prefix is reused through ``checkpoint``/``rollback``), and the model is
called only where a node has two or more children: a single child has probability 1. The
probabilities are read at the last position of the sequence, so they depend on the question.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

__all__ = ["PROMPT_TEMPLATE", "PathScores", "build_prompt", "path_scores"]

#: The user message of the paper's Figure 4; the example path uses our path format.
PROMPT_TEMPLATE = (
    "**HTML**: ```{html}```\n"
    "**Question**: **{question}**\n"
    "Your task is to identify the most relevant text piece to the given question in the HTML "
    "document. This text piece could either be a direct paraphrase to the fact, or a supporting "
    "evidence that can be used to infer the fact. The overall length of the text piece should be "
    "more than 20 words and less than 300 words. You should provide the path to the text piece "
    "in the HTML document. An example for the output is: <html><body><div2><p>Some key "
    "information..."
)


class _Session(Protocol):
    prefilled_tokens: int

    def append(self, text: str, segment: str | None = None) -> Any: ...
    def append_ids(self, ids: Sequence[int]) -> Any: ...
    def token_probs(self, candidate_ids: Sequence[int]) -> np.ndarray: ...
    def checkpoint(self) -> int: ...
    def rollback(self, length: int) -> Any: ...


@dataclass
class PathScores:
    """Log-probability of each path, with the cost of computing them.

    Attributes
    ----------
    scores:
        Sum of log token probabilities along each path (Eq. 3), in the order of the paths given.
    prompt_tokens:
        Tokens of the prompt, pre-filled once.
    prefilled_tokens:
        All tokens the model pre-filled: the prompt plus each trie edge appended once.
    lm_calls:
        Branching points the model was asked about.
    trie_edges:
        Distinct token edges in the trie.
    """

    scores: np.ndarray
    prompt_tokens: int = 0
    prefilled_tokens: int = 0
    lm_calls: int = 0
    trie_edges: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


def build_prompt(lm: Any, html: str, question: str) -> str:
    """The full prompt (chat template applied by ``lm.chat_prompt``) for Figure 4's task."""
    user = PROMPT_TEMPLATE.format(html=html, question=question)
    return str(lm.chat_prompt(user))


def encode(tokenizer: Any, text: str) -> list[int]:
    """Token ids of ``text`` without special tokens, for HF or `tokenizers` tokenizers."""
    try:
        out = tokenizer.encode(text, add_special_tokens=False)
    except TypeError:
        out = tokenizer.encode(text)
    ids = out.ids if hasattr(out, "ids") else out
    return [int(i) for i in ids]


class _Trie:
    """Token trie: node 0 is the root; ``children[n]`` maps a token id to a child node."""

    def __init__(self) -> None:
        self.children: list[dict[int, int]] = [{}]
        self.token: list[int] = [-1]
        self.parent: list[int] = [-1]

    def insert(self, ids: Sequence[int]) -> int:
        node = 0
        for tok in ids:
            nxt = self.children[node].get(tok)
            if nxt is None:
                nxt = len(self.children)
                self.children[node][tok] = nxt
                self.children.append({})
                self.token.append(tok)
                self.parent.append(node)
            node = nxt
        return node

    def path(self, node: int) -> list[int]:
        ids: list[int] = []
        while node > 0:
            ids.append(self.token[node])
            node = self.parent[node]
        return ids[::-1]


def path_scores(lm: Any, prompt: str, paths: Sequence[str]) -> PathScores:
    """Score each path by its generation log-probability after ``prompt``.

    Parameters
    ----------
    lm:
        A :class:`~hrefine.models.LocalLM` (or anything with ``tokenizer`` and ``session()``).
    prompt:
        The full prompt text (see :func:`build_prompt`).
    paths:
        Tag paths, e.g. ``"<html><body><table><tr3>"``.
    """
    trie = _Trie()
    ends = [trie.insert(encode(lm.tokenizer, p)) for p in paths]
    logp = np.zeros(len(trie.children), dtype=np.float64)  # log-prob of reaching each node
    session: _Session = lm.session()
    session.append(prompt)
    base = session.checkpoint()
    prompt_tokens = int(getattr(session, "prefilled_tokens", base))
    appended: list[int] = []  # trie tokens currently in the session after the prompt
    calls = 0
    stack = [0]
    while stack:  # depth first, so consecutive calls share the longest prefix (Algorithm 3)
        node = stack.pop()
        kids = trie.children[node]
        if not kids:
            continue
        if len(kids) == 1:
            (child,) = kids.values()
            logp[child] = logp[node]  # a single child needs no model call: probability 1
            stack.append(child)
            continue
        ids = trie.path(node)
        common = 0
        limit = min(len(ids), len(appended))
        while common < limit and ids[common] == appended[common]:
            common += 1
        if common < len(appended):
            session.rollback(base + common)
        if common < len(ids):
            session.append_ids(ids[common:])
            session.checkpoint()  # later siblings roll back here for free
        appended = ids
        candidates = list(kids)
        probs = np.asarray(session.token_probs(candidates), dtype=np.float64)
        calls += 1
        with np.errstate(divide="ignore"):
            logs = np.log(np.clip(probs, 1e-300, None))
        for tok, lp in zip(candidates, logs, strict=True):
            logp[kids[tok]] = logp[node] + lp
        stack.extend(kids[tok] for tok in reversed(candidates))
    prefilled = int(getattr(session, "prefilled_tokens", prompt_tokens))
    return PathScores(
        scores=np.asarray([logp[e] for e in ends], dtype=np.float64),
        prompt_tokens=prompt_tokens,
        prefilled_tokens=prefilled,
        lm_calls=calls,
        trie_edges=len(trie.children) - 1,
    )
