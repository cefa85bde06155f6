"""LMSession: a conversation over one KV cache of a :class:`~hrefine.models.local_lm.LocalLM`.

Each appended piece of text is pre-filled once; the attention it pays to earlier named segments can
be measured, and branches share a prefix through :meth:`LMSession.checkpoint` and
:meth:`LMSession.rollback`. A session is bound to one adapter when it opens and runs every pass
under it through :meth:`LocalLM.forward`, so it keeps its scores while other threads use the same
model under other adapters. torch is imported only when a session runs the model.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from hrefine.errors import ConfigError, EmptyInputError

if TYPE_CHECKING:
    import torch

    from hrefine.models.local_lm import AdapterChoice, LocalLM

__all__ = ["AppendResult", "ForwardResult", "LMSession"]


@dataclass(frozen=True)
class ForwardResult:
    """What one :meth:`LocalLM.forward` pass returns."""

    cache: Any
    """The KV cache with the new tokens added (pass it to the next :meth:`LocalLM.forward`)."""
    logits: torch.Tensor
    """``float32`` torch tensor of shape ``(vocab_size,)``: next-token logits after the last
    new token.
    """
    attention: dict[str, float] | None = None
    """With ``capture``: segment name → attention mass from the new tokens to that span
    (summed over its key positions, averaged over heads, layers and new tokens; spans of the
    same name are summed). ``None`` otherwise.
    """


@dataclass(frozen=True)
class AppendResult:
    """What :meth:`LMSession.append` did."""

    new_tokens: int
    """Number of tokens run through the model (and added to the cache)."""
    attention: dict[str, float] | None = None
    """With ``capture_attention=True``: segment name → attention mass from the new tokens to that
    earlier segment (summed over its key positions, averaged over heads, layers and new tokens;
    spans appended under the same name are summed). ``None`` otherwise.
    """


class LMSession:
    """A conversation over one KV cache of a :class:`LocalLM`.

    Each :meth:`append` runs only the new tokens through the model, reusing the cached keys and
    values of everything before. Open one with :meth:`LocalLM.session`. A session belongs to one
    thread at a time; many sessions may share one LocalLM across threads.

    Parameters
    ----------
    lm:
        The model the session runs on.
    adapter:
        The adapter every pass runs under (``None``: the base model), resolved now by
        :meth:`LocalLM.resolve_adapter`.

    Attributes
    ----------
    prefilled_tokens:
        Tokens run through the model by this session so far (a fork starts at 0).
    segments:
        ``(name, start, end)`` token spans of the named appends still in the cache.
    """

    def __init__(self, lm: LocalLM, *, adapter: AdapterChoice) -> None:
        self.lm = lm
        self.prefilled_tokens = 0
        self.segments: list[tuple[str, int, int]] = []
        self._ids: list[int] = []
        self._cache: Any = None
        self._logits: Any = None
        self._saved: dict[int, Any] = {}
        self._adapter = lm.resolve_adapter(adapter)

    @property
    def adapter(self) -> str | None:
        """The adapter this session runs under (``None``: the base model)."""
        return self._adapter

    @property
    def length(self) -> int:
        """Tokens currently in the cache."""
        return len(self._ids)

    @property
    def token_ids(self) -> list[int]:
        """The token ids currently in the cache."""
        return list(self._ids)

    def append(
        self, text: str, *, segment: str | None = None, capture_attention: bool = False
    ) -> AppendResult:
        """Tokenise ``text`` (no special tokens added) and pre-fill it after the cached tokens.

        Parameters
        ----------
        text:
            Text to add; special tokens written in it (e.g. from :meth:`LocalLM.chat_prompt`)
            are recognised.
        segment:
            Name of the span, recorded in :attr:`segments` for later attention capture.
        capture_attention:
            Measure the attention from the new tokens to each earlier named segment.

        Returns
        -------
        AppendResult
            Number of new tokens and, when asked, attention mass per earlier segment.
        """
        return self.append_ids(
            self.lm.encode(text), segment=segment, capture_attention=capture_attention
        )

    def append_ids(
        self, ids: Sequence[int], *, segment: str | None = None, capture_attention: bool = False
    ) -> AppendResult:
        """Pre-fill token ``ids`` after the cached tokens.

        Parameters
        ----------
        ids:
            Token ids to add.
        segment:
            Name of the span, recorded in :attr:`segments`.
        capture_attention:
            Measure the attention from the new tokens to each earlier named segment (see
            ``capture`` in :meth:`LocalLM.forward`: the pass runs the eager kernel, with no pass
            of another thread beside it).

        Returns
        -------
        AppendResult
            Number of new tokens and, when asked, attention mass per earlier segment.

        Raises
        ------
        ConfigError
            When attention is asked for under an attention kernel that returns no weights.
        """
        new = [int(i) for i in ids]
        start = self.length
        earlier = list(self.segments)
        if not new:
            return AppendResult(0, {} if capture_attention else None)
        attention = self._forward(new, earlier if capture_attention else None)
        self._ids.extend(new)
        if segment is not None:
            self.segments.append((segment, start, start + len(new)))
        return AppendResult(len(new), attention)

    def _forward(
        self, ids: list[int], segments: list[tuple[str, int, int]] | None
    ) -> dict[str, float] | None:
        result = self.lm.forward(ids, self._cache, adapter=self._adapter, capture=segments)
        self._cache = result.cache
        self._logits = result.logits
        self.prefilled_tokens += len(ids)
        return result.attention

    def _require_logits(self) -> torch.Tensor:
        if self._logits is None:
            msg = "the session is empty; append text before asking for next-token scores"
            raise EmptyInputError(msg)
        logits: torch.Tensor = self._logits
        return logits

    def next_token_logprobs(self) -> np.ndarray:
        """Log-probabilities of the next token over the whole vocabulary.

        Returns
        -------
        numpy.ndarray
            ``float32`` array of shape ``(vocab_size,)``.
        """
        import torch

        logits = self._require_logits()
        return np.asarray(torch.log_softmax(logits, dim=-1).cpu().numpy())

    def token_probs(self, token_ids: Sequence[int]) -> np.ndarray:
        """Next-token probabilities renormalised over exactly ``token_ids``.

        Parameters
        ----------
        token_ids:
            Candidate token ids.

        Returns
        -------
        numpy.ndarray
            ``float32`` array, one probability per id, summing to 1.
        """
        import torch

        logits = self._require_logits()
        ids = [int(i) for i in token_ids]
        if not ids or min(ids) < 0 or max(ids) >= logits.shape[-1]:
            msg = f"token ids must be a non-empty list in [0, {logits.shape[-1]}), got {ids[:10]}"
            raise ConfigError(msg)
        picked = logits[torch.tensor(ids, device=logits.device)]
        return np.asarray(torch.softmax(picked, dim=-1).cpu().numpy())

    def choice_probs(self, choices: Sequence[str]) -> dict[str, float]:
        """Probability of each answer text as the continuation of the session.

        Scored as in :meth:`LocalLM.choice_probs`. Probe tokens for choices sharing a prefix
        are appended and rolled back; the session ends where it was.

        Parameters
        ----------
        choices:
            Two or more distinct answer texts.

        Returns
        -------
        dict[str, float]
            Choice → probability; the values sum to 1.
        """
        names = list(choices)
        if len(names) < 2 or len(set(names)) != len(names):
            msg = f"choices must be two or more distinct texts, got {names}"
            raise ConfigError(msg)
        context = self.lm.tokenizer.decode(self._ids[-8:]) if self._ids else ""
        paths = [self.lm.answer_ids(context, c) for c in names]
        depths = []
        for i, path in enumerate(paths):
            shared = max(_common_prefix(path, other) for j, other in enumerate(paths) if j != i)
            if shared >= len(path):
                msg = (
                    f"choice {names[i]!r} tokenises to {path}, a prefix of another choice's "
                    "tokens; the choices cannot be told apart by their next tokens"
                )
                raise ConfigError(msg)
            depths.append(shared + 1)
        self._require_logits()
        base = self.checkpoint()
        logprobs: dict[tuple[int, ...], np.ndarray] = {(): self.next_token_logprobs()}
        scores = np.zeros(len(names), dtype=np.float64)
        try:
            for i, path in enumerate(paths):
                for j in range(depths[i]):
                    prefix = tuple(path[:j])
                    if prefix not in logprobs:
                        self.rollback(base)
                        self._forward(list(prefix), None)
                        self._ids.extend(prefix)
                        logprobs[prefix] = self.next_token_logprobs()
                    scores[i] += float(logprobs[prefix][path[j]])
        finally:
            self.rollback(base)
        scores = np.exp(scores - scores.max())
        scores /= scores.sum()
        return {name: float(p) for name, p in zip(names, scores, strict=True)}

    def checkpoint(self) -> int:
        """Remember the current end of the session so that :meth:`rollback` can return to it.

        Returns
        -------
        int
            The current length, to pass to :meth:`rollback`.
        """
        self._saved[self.length] = self._logits
        return self.length

    def rollback(self, length: int) -> None:
        """Crop the cache back to ``length`` tokens and restore the next-token scores there.

        Restoring is free at a :meth:`checkpoint`; elsewhere the last kept token is run again.

        Parameters
        ----------
        length:
            Number of tokens to keep, between 0 and :attr:`length`.

        Raises
        ------
        ConfigError
            When ``length`` is outside that range.
        """
        if not 0 <= length <= self.length:
            msg = f"cannot roll back to {length} tokens; the session holds {self.length}"
            raise ConfigError(msg)
        if length == self.length:
            return
        if length == 0:
            self._cache, self._logits = None, None
        elif length in self._saved:
            self._cache.crop(-(self.length - length))
            self._logits = self._saved[length]
        else:
            self._cache.crop(-(self.length - length + 1))
            self._forward([self._ids[length - 1]], None)
        self._ids = self._ids[:length]
        self.segments = [(n, s, min(e, length)) for n, s, e in self.segments if s < length]
        self._saved = {k: v for k, v in self._saved.items() if k <= length}

    def fork(self) -> LMSession:
        """Return an independent copy of this session (the cache is deep-copied).

        Returns
        -------
        LMSession
            A session with the same tokens, segments and checkpoints, and its own cache.
        """
        other = LMSession(self.lm, adapter=self._adapter)
        other._cache = copy.deepcopy(self._cache)
        other._ids = list(self._ids)
        other.segments = list(self.segments)
        other._logits = self._logits
        other._saved = dict(self._saved)
        return other


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n
