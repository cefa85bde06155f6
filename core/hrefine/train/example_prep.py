"""The examples of a training run prepared for the model: the held-out split by document
(:func:`split_examples`) and each example's token ids under the LM's chat template, cut to
``max_length`` from the prompt side (:func:`tokenize`)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from hrefine.train._loss import Tokenized
from hrefine.train.examples import Example

__all__ = ["split_examples", "tokenize"]

# Prompt tokens always kept at the start when a prompt is cut (the chat template's opening).
_HEAD = 16
# Fewest prompt tokens an example keeps; a target that leaves less room is dropped.
_MIN_PROMPT = 32


def split_examples(
    examples: Sequence[Example], fraction: float, seed: int
) -> tuple[list[Example], list[Example]]:
    """``(train, held out)``: whole documents (``Example.group``) go to the held-out part when
    the hash of ``seed`` and their id falls below ``fraction``; with two or more documents and
    ``fraction > 0``, at least one is held out and at least one is trained on. An example with
    no group is a document of its own (keyed by its text, so the split does not depend on the
    order of the file)."""
    if fraction <= 0:
        return list(examples), []

    def h(group: str) -> float:
        digest = hashlib.sha1(f"{seed}:{group}".encode()).digest()
        return int.from_bytes(digest[:4], "big") / 2**32

    keys = [_group_key(e) for e in examples]
    groups = sorted(set(keys), key=h)
    held = {g for g in groups if h(g) < fraction}
    if len(groups) >= 2:
        if not held:
            held = {groups[0]}
        if len(held) == len(groups):
            held.discard(groups[-1])
    return (
        [e for e, k in zip(examples, keys, strict=True) if k not in held],
        [e for e, k in zip(examples, keys, strict=True) if k in held],
    )


def _group_key(example: Example) -> str:
    """The example's document: its group, or, with none, its own text (a NUL first, so that no
    group name can be the same key)."""
    if example.group:
        return example.group
    text = "\0".join((example.system or "", example.user, example.target))
    return "\0" + hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()


def tokenize(lm: Any, example: Example, max_length: int) -> Tokenized | None:
    """An example's ids under ``lm``'s chat template, cut to ``max_length`` from the prompt
    side; None when the target alone leaves fewer than 32 tokens for the prompt."""
    text = lm.chat_prompt(example.user, system=example.system)
    has_template = bool(getattr(lm.tokenizer, "chat_template", None))
    prompt = lm.encode(text, add_special_tokens=not has_template)
    # The target as the model writes it right after the prompt (LocalLM.choice_probs reads
    # the labels the same way), then the end of the turn so that generation stops there.
    target = list(lm.answer_ids(text, example.target))
    eos = lm.tokenizer.eos_token_id
    if eos is not None:
        target.append(int(eos))
    room = max_length - len(target)
    if room < _MIN_PROMPT:
        return None
    cut = max(0, len(prompt) - room)
    if cut:
        prompt = prompt[:_HEAD] + prompt[_HEAD + cut :]
    return Tokenized(prompt, target, cut)
