"""Examples as token batches, and the loss on their target tokens.

The loss is taken only where the model predicts a target token, and the output layer runs only
there: for a small model its vocabulary matrix is a large share of the work.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Sequence
from typing import Any

__all__ = ["Tokenized", "evaluate", "make_batch", "token_losses"]


@dataclasses.dataclass
class Tokenized:
    """One example as token ids: ``prompt`` then ``target`` (the loss is on ``target``)."""

    prompt: list[int]
    target: list[int]
    cut: int = 0  # prompt tokens removed to fit max_length


def make_batch(items: Sequence[Tokenized], pad: int, device: str) -> dict[str, Any]:
    """Right-padded ids, attention mask and labels (-100 outside the targets)."""
    import torch

    width = max(len(t.prompt) + len(t.target) for t in items)
    ids = torch.full((len(items), width), pad, dtype=torch.long)
    mask = torch.zeros((len(items), width), dtype=torch.long)
    labels = torch.full((len(items), width), -100, dtype=torch.long)
    for r, t in enumerate(items):
        seq = t.prompt + t.target
        ids[r, : len(seq)] = torch.tensor(seq)
        mask[r, : len(seq)] = 1
        labels[r, len(t.prompt) : len(seq)] = torch.tensor(t.target)
    return {"input_ids": ids.to(device), "attention_mask": mask.to(device), "labels": labels}


def _target_logits(model: Any, batch: dict[str, Any], mask: Any) -> Any:
    """Logits at the positions that predict a target token: the decoder runs on the whole
    sequence, the output layer (a large matrix for a small model) only where the loss is."""
    base = model.get_base_model()
    head = base.get_output_embeddings()
    decoder = base.get_decoder() if hasattr(base, "get_decoder") else None
    if head is None or decoder is None or getattr(base.config, "final_logit_softcapping", None):
        logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
        return logits.logits[:, :-1][mask]
    hidden = decoder(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
    return head(hidden.last_hidden_state[:, :-1][mask])


def token_losses(model: Any, batch: dict[str, Any], autocast: Any) -> tuple[Any, Any, Any]:
    """Each target token's loss, whether the model's top token is that token, and the row
    (example) it belongs to."""
    import torch

    device = batch["input_ids"].device
    labels = batch["labels"].to(device)[:, 1:]
    mask = labels != -100
    ctx = (
        torch.autocast(device_type="cuda", dtype=autocast)
        if autocast is not None
        else contextlib.nullcontext()
    )
    with ctx:
        logits = _target_logits(model, batch, mask)
    logits = logits.float()
    wanted = labels[mask]
    losses = torch.nn.functional.cross_entropy(logits, wanted, reduction="none")
    rows = mask.nonzero()[:, 0]
    return losses, logits.argmax(-1) == wanted, rows


def evaluate(
    model: Any, items: Sequence[Tokenized], batch_size: int, pad: int, device: str, autocast: Any
) -> dict[str, float]:
    """Loss per target token, token accuracy and exact share of ``items`` (no gradients)."""
    import torch

    was_training = model.training
    model.eval()
    loss = tokens = right = exact = 0.0
    with torch.no_grad():
        for i in range(0, len(items), batch_size):
            chunk = items[i : i + batch_size]
            losses, ok, rows = token_losses(model, make_batch(chunk, pad, device), autocast)
            loss += float(losses.sum())
            tokens += float(losses.numel())
            right += float(ok.sum())
            wrong = torch.zeros(len(chunk), dtype=torch.bool, device=ok.device)
            wrong[rows[~ok]] = True
            exact += float((~wrong).sum())
    if was_training:
        model.train()
    n = max(tokens, 1.0)
    return {"loss": loss / n, "token_accuracy": right / n, "exact": exact / max(len(items), 1)}
