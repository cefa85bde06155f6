"""How a :class:`~hrefine.models.local_lm.LocalLM` writes text as tokens: the chat template
around a prompt, a prompt's ids, and an answer's ids as they follow a context."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hrefine.errors import ConfigError, EmptyInputError

if TYPE_CHECKING:
    from hrefine.models.local_lm import LocalLM

__all__ = ["answer_token_ids", "chat_prompt_text", "prompt_ids"]


def chat_prompt_text(tok: Any, user: str, *, system: str | None = None) -> str:
    """:meth:`LocalLM.chat_prompt <hrefine.models.local_lm.LocalLM.chat_prompt>` with the
    tokenizer ``tok`` (see there)."""
    if not getattr(tok, "chat_template", None):
        return f"{system}\n\n{user}\n" if system else f"{user}\n"
    messages = [{"role": "user", "content": user}]
    if system:
        messages.insert(0, {"role": "system", "content": system})
    try:
        text = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    except Exception:  # templates that reject a system role: fold it into the user turn
        if not system:
            raise
        merged = [{"role": "user", "content": f"{system}\n\n{user}"}]
        text = tok.apply_chat_template(merged, tokenize=False, add_generation_prompt=True)
    return str(text)


def prompt_ids(lm: LocalLM, prompt: str, *, chat: bool, system: str | None) -> list[int]:
    """The token ids of a prompt: in the chat template (with its own special tokens), or as
    plain text after the system line."""
    if chat:
        text = lm.chat_prompt(prompt, system=system)
        # A chat template writes its own special tokens; add none on top.
        has_template = bool(getattr(lm.tokenizer, "chat_template", None))
        ids = lm.encode(text, add_special_tokens=not has_template)
    else:
        text = f"{system}\n\n{prompt}" if system else prompt
        ids = lm.encode(text, add_special_tokens=True)
    if not ids:
        msg = f"the prompt {prompt!r} gives no tokens; expected some text"
        raise EmptyInputError(msg)
    return ids


def answer_token_ids(encode: Callable[[str], list[int]], context: str, choice: str) -> list[int]:
    """:meth:`LocalLM.answer_ids <hrefine.models.local_lm.LocalLM.answer_ids>` with the
    tokenizer's ``encode`` (see there)."""
    if not choice:
        msg = "a choice is the empty string; expected non-empty answer texts"
        raise ConfigError(msg)
    tail = context[-48:]
    if tail:
        before = encode(tail)
        after = encode(tail + choice)
        if len(after) > len(before) and after[: len(before)] == before:
            return after[len(before) :]
    return encode(choice)
