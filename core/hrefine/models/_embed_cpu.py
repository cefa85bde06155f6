"""The CPU fast paths of :class:`~hrefine.models.embed.SentenceTransformerEmbedder`.

Three ways to embed faster on the CPU than ``model.encode`` with a fixed batch size, each giving
``encode``'s vectors:

- batches cut by word pieces rather than by text count (:func:`encode_by_tokens`);
- several texts packed into one row of the transformer, each with its own positions and
  attending only to itself (:func:`encode_packed`), for models that pass :func:`check_packing`;
- the transformer's linear layers multiplying in bfloat16 (:func:`linears_in_bf16`).

Every function takes the loaded ``SentenceTransformer``; torch is imported inside them.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Sequence
from functools import lru_cache
from itertools import pairwise
from typing import Any

import numpy as np

__all__ = [
    "CPU_BATCH_TOKENS",
    "PieceReader",
    "batch_bounds",
    "check_packing",
    "encode_by_tokens",
    "encode_packed",
    "gather",
    "linears_in_bf16",
    "pack_rows",
    "packable_pooling",
    "piece_reader",
    "plain_right_padded",
    "run_rows",
]

logger = logging.getLogger(__name__)

#: On the CPU (batch size not set), texts are embedded in length-sorted batches of about this
#: many word pieces, padding included: many short texts (table rows) share one pass and long
#: ones go a few at a time. On 2 cores this embeds the HtmlRAG pages' blocks 15-20% faster than
#: fixed batches of 8, with the same vectors (to 2e-7).
CPU_BATCH_TOKENS = 512
# Texts tokenised at once (bounds the padded id tensors on huge pages).
TOKENIZE_CHUNK = 2048
# Texts of different lengths for the one-off check that packed rows give encode()'s vectors.
PACKING_PROBE = (
    "Packed rows must give every text the vector it gets alone.",
    "a",
    "Table: Year | Team | Goals",
    "The check runs once per model, on the first call that would pack texts into rows.",
)

#: Texts -> their unpadded word-piece ids (``input_ids``, and ``token_type_ids`` where the
#: model has them), one list per text.
PieceReader = Callable[[list[str]], dict[str, list[list[int]]]]


def plain_right_padded(model: Any) -> bool:
    """Whether :func:`encode_by_tokens` gives ``encode``'s vectors: no default prompt (encode
    would add it) and padding on the right (the batches are cut from the left)."""
    if getattr(model, "default_prompt_name", None):
        return False
    tokenizer = getattr(model, "tokenizer", None)
    return getattr(tokenizer, "padding_side", "right") == "right"


def packable_pooling(model: Any) -> str | None:
    """``"mean"`` or ``"cls"`` for a Transformer → Pooling (mean or CLS) [→ Normalize] model whose
    transformer takes position ids and a 4-d mask (SDPA or eager attention); None otherwise."""
    modules = list(model._modules.values())
    if len(modules) not in (2, 3) or type(modules[0]).__name__ != "Transformer":
        return None
    if len(modules) == 3 and type(modules[2]).__name__ != "Normalize":
        return None
    pooling = modules[1]
    if type(pooling).__name__ != "Pooling":
        return None
    mode = getattr(pooling, "pooling_mode", None)
    if mode is None:  # sentence-transformers before 6: one flag per mode
        flags = [k for k, v in vars(pooling).items() if k.startswith("pooling_mode_") and v]
        mode = {"pooling_mode_mean_tokens": "mean", "pooling_mode_cls_token": "cls"}.get(
            flags[0] if len(flags) == 1 else ""
        )
    auto = getattr(modules[0], "auto_model", None)
    config = getattr(auto, "config", None)
    if mode not in ("mean", "cls") or auto is None or config is None:
        return None
    if getattr(config, "_attn_implementation", None) not in ("sdpa", "eager"):
        return None
    if "position_ids" not in inspect.signature(auto.forward).parameters:
        return None
    return str(mode)


def check_packing(model: Any, workers: int, name: str) -> str | None:
    """The pooling to pack texts into shared rows with (:func:`packable_pooling`), or None when
    packed rows do not give the probe texts the vectors of :func:`encode_by_tokens`."""
    pooling = packable_pooling(model)
    if pooling is not None:
        probe = list(PACKING_PROBE)
        limit = model.max_seq_length
        packed = encode_packed(model, probe, pooling, piece_reader(model, limit), limit, workers)
        alone = encode_by_tokens(model, probe, workers)
        if not np.allclose(packed, alone, atol=1e-4):
            logger.info("%s: packing changes the vectors; texts are not packed", name)
            pooling = None
    return pooling


def piece_reader(model: Any, limit: int | None) -> PieceReader:
    """A function from texts to unpadded ``input_ids`` (and ``token_type_ids``) lists, cut to
    ``limit`` word pieces as the model's own tokenisation cuts them at that ``max_seq_length``.

    It calls a copy of the model's Rust tokenizer (the text lower-cased first when the model
    says so), truncating at ``limit``. A model without one (or a ``limit`` of None) goes through
    its own tokenisation, padding taken off, which cuts at the model's ``max_seq_length`` when
    called: the caller sets that to ``limit`` first. The packing check (:func:`check_packing`)
    compares the vectors either gives with those of the model's own path.
    """
    first = model._modules[next(iter(model._modules))]
    backend = getattr(getattr(first, "tokenizer", None), "backend_tokenizer", None)
    lower = bool(getattr(first, "do_lower_case", False))
    if backend is None or not limit:
        tokenize = getattr(model, "preprocess", None) or model.tokenize

        def by_model(texts: list[str]) -> dict[str, list[list[int]]]:
            features = tokenize(texts)
            lengths = features["attention_mask"].sum(dim=1).tolist()
            return {
                k: [row[:n] for row, n in zip(v.tolist(), lengths, strict=True)]
                for k, v in features.items()
                if k in ("input_ids", "token_type_ids")
            }

        return by_model
    from tokenizers import Tokenizer

    rust = Tokenizer.from_str(backend.to_str())
    rust.no_padding()
    rust.enable_truncation(max_length=int(limit))

    def by_rust(texts: list[str]) -> dict[str, list[list[int]]]:
        encodings = rust.encode_batch([t.lower() for t in texts] if lower else texts)
        return {
            "input_ids": [e.ids for e in encodings],
            "token_type_ids": [e.type_ids for e in encodings],
        }

    return by_rust


def encode_by_tokens(model: Any, texts: list[str], workers: int) -> np.ndarray:
    """``model.encode``'s unit vectors, in batches cut by word pieces rather than by text count
    (:data:`CPU_BATCH_TOKENS` each), run ``workers`` at a time. Texts are cut at the model's
    ``max_seq_length``."""
    import torch

    from hrefine.models.device import cpu_map

    model.eval()  # as encode() does
    # ``preprocess`` in sentence-transformers 5+, ``tokenize`` before.
    tokenize = getattr(model, "preprocess", None) or model.tokenize
    placed: list[tuple[np.ndarray, np.ndarray]] = []  # (text positions, their vectors)
    for start in range(0, len(texts), TOKENIZE_CHUNK):
        part = texts[start : start + TOKENIZE_CHUNK]
        features = tokenize(part)
        lengths = features["attention_mask"].sum(dim=1)
        order = torch.argsort(lengths, descending=True, stable=True)
        widths = lengths[order].tolist()
        batches = [
            (order[a:b], widths[a])  # padded to its first, longest text
            for a, b in batch_bounds(widths, CPU_BATCH_TOKENS, workers)
        ]

        def run(batch: tuple[Any, int], features: Any = features) -> np.ndarray:
            idx, width = batch
            inputs = {
                k: v[idx][:, :width] if torch.is_tensor(v) and v.dim() == 2 else v
                for k, v in features.items()
            }
            with torch.inference_mode():
                vecs = model(inputs)["sentence_embedding"]
            return torch.nn.functional.normalize(vecs.float(), dim=1).numpy()

        found = cpu_map(run, batches, workers)
        placed += [(start + idx.numpy(), v) for (idx, _), v in zip(batches, found, strict=True)]
    return gather(len(texts), placed)


def encode_packed(
    model: Any,
    texts: list[str],
    pooling: str,
    pieces: PieceReader,
    limit: int | None,
    workers: int,
) -> np.ndarray:
    """Embed with several texts per row of the transformer.

    Each text keeps its own positions and attends only to itself (a block-diagonal mask),
    so its vector is the one it gets alone, while a batch carries almost no padding: on
    the HtmlRAG pages a length-sorted batch was 13% padding, and tiny texts ran in
    batches too small to use the CPU well. ``pieces`` reads at most ``limit`` word pieces of
    a text, and a row is ``limit`` wide (or as wide as the longest text, without a limit).
    """
    from hrefine.models.device import cpu_map

    model.eval()
    placed: list[tuple[np.ndarray, np.ndarray]] = []  # (text positions, their vectors)
    for start in range(0, len(texts), TOKENIZE_CHUNK):
        part = texts[start : start + TOKENIZE_CHUNK]
        features = pieces(part)
        lengths = [len(ids) for ids in features["input_ids"]]
        width = max(limit or 0, max(lengths))
        rows = pack_rows(lengths, width)
        rows.sort(key=lambda row: -sum(lengths[k] for k in row))
        widths = [sum(lengths[k] for k in row) for row in rows]
        batches = [
            (rows[a:b], widths[a])  # a batch is as wide as its first (widest) row
            for a, b in batch_bounds(widths, CPU_BATCH_TOKENS, workers)
        ]

        def run(
            batch: tuple[list[list[int]], int],
            features: dict[str, list[list[int]]] = features,
            lengths: list[int] = lengths,
        ) -> np.ndarray:
            return run_rows(model, features, lengths, batch[0], batch[1], pooling)

        found = cpu_map(run, batches, workers)
        placed += [
            (np.asarray([start + k for row in batch for k in row]), v)
            for (batch, _), v in zip(batches, found, strict=True)
        ]
    return gather(len(texts), placed)


def pack_rows(lengths: Sequence[int], width: int) -> list[list[int]]:
    """Indices of texts grouped into rows of at most ``width`` word pieces: best fit, longest
    texts first (each text alone fits, as ``width`` is at least the longest)."""
    order = sorted(range(len(lengths)), key=lambda k: -lengths[k])
    rows: list[list[int]] = []
    by_room: list[list[int]] = [[] for _ in range(width + 1)]  # room left -> rows
    for k in order:
        need = lengths[k]
        for room in range(need, width + 1):
            if by_room[room]:
                r = by_room[room].pop()
                break
        else:
            r, room = len(rows), width
            rows.append([])
        rows[r].append(k)
        by_room[room - need].append(r)
    return rows


@lru_cache(maxsize=1)
def _bf16_linear() -> type:
    """``torch.nn.Linear`` with bfloat16 weights that takes and gives its input's dtype."""
    import torch

    class Bf16Linear(torch.nn.Linear):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            out = torch.nn.functional.linear(x.to(torch.bfloat16), self.weight, self.bias)
            return out.to(x.dtype)

    return Bf16Linear


def linears_in_bf16(model: Any) -> None:
    """Turn every ``torch.nn.Linear`` of ``model`` into a bfloat16 one, so the layers between
    them (norms, attention, pooling) stay in float32. The weights are converted once, here:
    ``torch.autocast`` converted them on every call, which made a batch on 2 CPU threads slower
    than in float32."""
    import torch

    cls = _bf16_linear()
    for module in model.modules():
        if type(module) is torch.nn.Linear:
            module.to(torch.bfloat16)
            module.__class__ = cls


def gather(n: int, placed: Sequence[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """The ``(n, dim)`` vectors of batches that each cover the text positions given with them."""
    dim = placed[0][1].shape[1] if placed else 0
    out = np.zeros((n, dim), dtype=np.float32)
    for positions, vecs in placed:
        out[positions] = vecs
    return out


def batch_bounds(widths: Sequence[int], tokens: int, workers: int) -> list[tuple[int, int]]:
    """``(start, end)`` of consecutive batches of rows of ``widths`` (longest first), none
    over ``tokens`` word pieces with the padding to its first (widest) row (but a row alone).

    One worker: each batch is filled to that. Several: there are as many batches, rounded up
    to a multiple of the workers, with about equal word pieces each, so that no thread is
    left running a last batch alone.
    """
    n = len(widths)
    serial: list[tuple[int, int]] = []  # batches filled one after another
    i = 0
    while i < n:
        step = max(1, tokens // max(widths[i], 1))
        serial.append((i, min(n, i + step)))
        i += step
    if workers <= 1 or not serial:
        return serial
    count = min(n, -(-len(serial) // workers) * workers)
    total = sum(widths)
    cuts = [0]
    seen = 0
    for k, w in enumerate(widths[:-1]):
        seen += w
        # Cut after row k once this batch holds its share (and leave a row for each after
        # it), or when the next row would take it, padded, over ``tokens``.
        share = (
            seen >= total * len(cuts) / count
            and len(cuts) < count
            and n - (k + 1) >= count - len(cuts)
        )
        if share or widths[cuts[-1]] * (k + 2 - cuts[-1]) > tokens:
            cuts.append(k + 1)
    cuts.append(n)
    return list(pairwise(cuts))


def run_rows(
    model: Any,
    features: dict[str, Any],
    lengths: Sequence[int],
    rows: Sequence[Sequence[int]],
    width: int,
    pooling: str,
) -> np.ndarray:
    """Unit vectors of the texts of ``rows`` (in row order), each row one transformer input."""
    import torch

    auto = model._modules[next(iter(model._modules))].auto_model
    ids: Sequence[Sequence[int]] = features["input_ids"]
    types: Sequence[Sequence[int]] | None = features.get("token_type_ids")
    cols: dict[str, list[list[int]]] = {"ids": [], "pos": [], "types": [], "seg": []}
    slot = 0
    for row in rows:
        r_ids: list[int] = []
        r_pos: list[int] = []
        r_types: list[int] = []
        r_seg: list[int] = []
        for k in row:
            n = lengths[k]
            r_ids += ids[k][:n]
            r_pos += range(n)
            if types is not None:
                r_types += types[k][:n]
            r_seg += [slot] * n
            slot += 1
        pad = width - len(r_ids)
        cols["ids"].append(r_ids + [0] * pad)
        cols["pos"].append(r_pos + [0] * pad)
        cols["types"].append(r_types + [0] * (width - len(r_types)))
        cols["seg"].append(r_seg + [-1] * pad)  # -1: padding
    input_ids = torch.tensor(cols["ids"], dtype=torch.long)
    positions = torch.tensor(cols["pos"], dtype=torch.long)
    type_ids = torch.tensor(cols["types"], dtype=torch.long)
    segment = torch.tensor(cols["seg"], dtype=torch.long)
    # A token sees the tokens of its own text; a padding position sees itself only (a query
    # that sees nothing would turn into NaN).
    allowed = (segment[:, :, None] == segment[:, None, :]) & (segment[:, :, None] >= 0)
    allowed |= torch.eye(width, dtype=torch.bool)
    mask = allowed[:, None]
    if auto.config._attn_implementation == "eager":
        mask = torch.zeros(mask.shape).masked_fill(~mask, torch.finfo(torch.float32).min)
    kwargs: dict[str, Any] = {
        "input_ids": input_ids,
        "attention_mask": mask,
        "position_ids": positions,
    }
    if types is not None:
        kwargs["token_type_ids"] = type_ids
    with torch.inference_mode():
        hidden = auto(**kwargs).last_hidden_state.float()
    flat = hidden.reshape(-1, hidden.shape[-1])
    seg = segment.reshape(-1)
    if pooling == "cls":
        starts = torch.ones_like(seg, dtype=torch.bool)
        starts[1:] = seg[1:] != seg[:-1]
        pooled = flat[starts & (seg >= 0)]
    else:
        real = seg >= 0
        pooled = torch.zeros((slot, flat.shape[1]), dtype=flat.dtype)
        pooled.index_add_(0, seg[real], flat[real])
        pooled /= torch.bincount(seg[real], minlength=slot).clamp(min=1)[:, None]
    return torch.nn.functional.normalize(pooled, dim=1).numpy()
