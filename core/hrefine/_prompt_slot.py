"""The text a filled prompt holds in its template's one slot (``{points}``, ``{context}``):
what the no-model stand-ins for a summariser read back from the prompt they are given."""

from __future__ import annotations

__all__ = ["slot_text"]


def slot_text(prompt: str, head: str, tail: str) -> str:
    """``prompt`` without the template's ``head`` before the slot and ``tail`` after it (each
    only where the prompt has it)."""
    body = prompt
    if head and body.startswith(head):
        body = body[len(head) :]
    if tail and body.endswith(tail):
        body = body[: -len(tail)]
    return body
