"""Generation log-probabilities of many token paths, sharing the model's work on their prefixes.

Given a prompt and a set of texts the model could write next (HtmlRAG's tag paths such as
``<html><body><div2><p>``), :func:`path_scores` gives each text's log-probability as the
model's continuation (HtmlRAG §3.4.2, Eq. 2/3, Algorithm 3). The texts' tokens form a trie.
Walking it depth first, the prompt is pre-filled once, each trie edge that leads to a branching
point is appended once (the KV cache of the shared prefix is reused through ``checkpoint`` and
``rollback``), and the model is asked only where a node has two or more children: a single
child has probability 1. Probabilities are read at the last position of the sequence, so they
depend on everything in the prompt.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

__all__ = ["PathScores", "encode", "path_scores"]


class _Session(Protocol):
    prefilled_tokens: int

    def append(self, text: str, segment: str | None = None) -> Any: ...
    def append_ids(self, ids: Sequence[int]) -> Any: ...
    def token_probs(self, candidate_ids: Sequence[int]) -> np.ndarray: ...
    def checkpoint(self) -> int: ...
    def rollback(self, length: int) -> Any: ...


@dataclass
class PathScores:
    """Log-probability of each path, with the cost of computing them."""

    scores: np.ndarray
    """Sum of log token probabilities along each path (Eq. 3), in the order of the paths given."""
    prompt_tokens: int = 0
    """Tokens of the prompt, pre-filled once."""
    prefilled_tokens: int = 0
    """All tokens the model pre-filled: the prompt plus each trie edge appended once."""
    lm_calls: int = 0
    """Branching points the model was asked about."""
    trie_edges: int = 0
    """Distinct token edges in the trie."""


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
        The full prompt text, chat template applied.
    paths:
        The continuations to score, e.g. tag paths ``"<html><body><table><tr3>"``.

    Returns
    -------
    PathScores
        One log-probability per path, and what computing them cost.
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
