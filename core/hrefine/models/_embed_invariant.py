"""Batch-invariant embedding for BERT-family encoders on the CPU.

A matrix-product kernel picks its blocking, and so the order in which it adds up a dot product,
from the shape of the call; in bfloat16 on AMX or AVX512-BF16 the choice moved a text's vector
by up to 7e-4 with the texts batched beside it. Here every per-token step runs on tiles of
:data:`ROW_TILE` tokens, a run's last tile padded with zeros (to the full tile, or to a multiple
of :data:`TILE_STEP` where :func:`small_tiles_hold` shows the kernels do not care), attention runs
per group of texts of one length, with no padding and no other text in a row, and every run is
computed on one torch thread. So each call a text's numbers go through is one whose result for
that text does not depend on what else is embedded, and its vector is the same bit for bit
alone, in any batch, in any order, fresh or cached, on one thread or several.

It is also the same on every CPU. The kernels (torch's own, built for each instruction set, and
the BLAS's matrix products) add up in orders and with approximations of their own: in float32
they moved a vector's last bits between AVX2, AVX512 and plain builds of one model, and RAPTOR's
clustering turned such bits into another tree. So the full-precision path computes in float64
and rounds each vector to float32 at the end: the kernels then differ by about 1e-15, far below
float32's spacing, and a value would have to lie that close to a rounding boundary to come out
differently. (bfloat16 linears, opt-in, are not the same across CPUs.)

Only the model's own arithmetic is reproduced (embeddings, self-attention, GELU feed-forward, layer
norms, mean or CLS pooling); :func:`invariant_parts` says whether a loaded model is one this module
computes exactly (``BertModel`` with absolute positions and GELU) and gives None otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "ROW_TILE",
    "RUN_TOKENS",
    "TILE_STEP",
    "InvariantParts",
    "encode_invariant",
    "invariant_encoder",
    "invariant_parts",
    "small_tiles_hold",
]

#: Tokens per call of every per-token step. 128 ran MiniLM's blocks as fast as 256 on 2 cores
#: (and faster than 64), with less padding in a call's last tile.
ROW_TILE = 128
#: Where the kernels give a row the same numbers in a call of any of these sizes (checked per
#: model and CPU by :func:`small_tiles_hold`), a call's last tile is cut to a multiple of this:
#: a query of 9 word pieces runs in 16 rows, not 128.
TILE_STEP = 16


@dataclass(frozen=True)
class _Layer:
    qkv_w: Any
    qkv_b: Any
    out_w: Any
    out_b: Any
    ln1: tuple[Any, Any, float]
    up_w: Any
    up_b: Any
    down_w: Any
    down_b: Any
    ln2: tuple[Any, Any, float]


@dataclass(frozen=True)
class InvariantParts:
    """The weights of a BERT encoder, laid out for :func:`encode_invariant`."""

    word: Any
    position: Any
    token_type: Any
    ln: tuple[Any, Any, float]
    layers: tuple[_Layer, ...]
    heads: int
    pooling: str
    dtype: Any  # the linears' weights' dtype: float64 (the full-precision path) or bfloat16

    @property
    def precision(self) -> str:
        """``"bfloat16"``, or ``"float32"`` for the full-precision path (float32 vectors,
        computed in float64)."""
        return "bfloat16" if self.precision_is_bf16 else "float32"

    @property
    def precision_is_bf16(self) -> bool:
        """Whether the linears multiply in bfloat16."""
        return str(self.dtype) == "torch.bfloat16"

    @property
    def act_dtype(self) -> Any:
        """The activations' dtype: float64 on the full-precision path, float32 beside
        bfloat16 linears."""
        import torch

        return torch.float32 if self.precision_is_bf16 else torch.float64


def invariant_encoder(model: Any, pooling: str | None) -> Any:
    """The ``BertModel`` inside ``model`` when this module computes it exactly (absolute
    positions, exact GELU, an encoder) and ``pooling`` is ``"mean"`` or ``"cls"``; else None."""
    if pooling not in ("mean", "cls"):
        return None
    auto = getattr(model._modules[next(iter(model._modules))], "auto_model", None)
    config = getattr(auto, "config", None)
    if type(auto).__name__ != "BertModel" or config is None:
        return None
    if getattr(config, "position_embedding_type", "absolute") != "absolute":
        return None
    if getattr(config, "hidden_act", None) != "gelu" or getattr(config, "is_decoder", False):
        return None
    return auto


def invariant_parts(model: Any, pooling: str | None, bf16: bool) -> InvariantParts | None:
    """The encoder's weights when ``model`` is a Transformer -> Pooling (``pooling``: mean or
    CLS) -> [Normalize] sentence-transformers model over a ``BertModel`` with absolute position
    embeddings and exact GELU; None for any other model. With ``bf16``, the linear layers'
    weights are bfloat16 copies (their inputs are rounded to bfloat16 and the products come
    back in float32), and everything else stays in float32. Without, everything is float64
    (the module's docstring says why)."""
    auto = invariant_encoder(model, pooling)
    if auto is None or pooling is None:
        return None
    import torch

    config = auto.config
    emb = auto.embeddings
    wdtype = torch.bfloat16 if bf16 else torch.float64
    act = torch.float32 if bf16 else torch.float64

    def w(linear: Any) -> Any:
        return linear.weight.detach().to(wdtype).contiguous()

    def b(linear: Any) -> Any:
        return linear.bias.detach().to(act).contiguous()

    def ln(norm: Any) -> tuple[Any, Any, float]:
        return (norm.weight.detach().to(act), norm.bias.detach().to(act), float(norm.eps))

    layers = []
    for layer in auto.encoder.layer:
        att = layer.attention.self
        qkv = (att.query, att.key, att.value)
        layers.append(
            _Layer(
                qkv_w=torch.cat([x.weight.detach() for x in qkv]).to(wdtype).contiguous(),
                qkv_b=torch.cat([x.bias.detach() for x in qkv]).to(act).contiguous(),
                out_w=w(layer.attention.output.dense),
                out_b=b(layer.attention.output.dense),
                ln1=ln(layer.attention.output.LayerNorm),
                up_w=w(layer.intermediate.dense),
                up_b=b(layer.intermediate.dense),
                down_w=w(layer.output.dense),
                down_b=b(layer.output.dense),
                ln2=ln(layer.output.LayerNorm),
            )
        )
    return InvariantParts(
        word=emb.word_embeddings.weight.detach().to(act),
        position=emb.position_embeddings.weight.detach().to(act),
        token_type=emb.token_type_embeddings.weight.detach().to(act),
        ln=ln(emb.LayerNorm),
        layers=tuple(layers),
        heads=int(config.num_attention_heads),
        pooling=pooling,
        dtype=wdtype,
    )


def _linear(x: Any, weight: Any, bias: Any) -> Any:
    import torch

    if weight.dtype != torch.bfloat16:
        return torch.nn.functional.linear(x, weight, bias)
    out = torch.nn.functional.linear(x.to(weight.dtype), weight).float()
    return out.add_(bias)


def _norm(x: Any, ln: tuple[Any, Any, float]) -> Any:
    import torch

    return torch.nn.functional.layer_norm(x, (x.shape[-1],), ln[0], ln[1], ln[2])


#: Word pieces a worker takes through every layer at a time: its buffers stay in the CPU's
#: caches, as a batch of the packed path did (runs of 512 and 1024 pruned 12 cold HtmlRAG
#: pages as fast as the packed path, 2048 about 7% slower). Where the texts are cut into runs
#: does not change a vector.
RUN_TOKENS = 1024


def encode_invariant(
    parts: InvariantParts,
    features: dict[str, list[list[int]]],
    small_tiles: bool,
) -> np.ndarray:
    """Unit vectors of the texts whose word-piece ids (and token type ids) ``features`` holds,
    each the same bit for bit whatever texts share the call (see the module's docstring).

    The texts, shortest first, are cut into runs of about :data:`RUN_TOKENS` word pieces (at
    least one run per worker), and each run goes through the whole model on one worker with one
    torch thread (:func:`hrefine.models.device.one_thread_map`), so the thread count does not
    change the numbers either. Every tile is :data:`ROW_TILE` rows, but with ``small_tiles`` a
    run's last one, which is cut to a multiple of :data:`TILE_STEP`.
    """
    import torch

    from hrefine.models.device import one_thread_map

    ids: Sequence[Sequence[int]] = features["input_ids"]
    types: Sequence[Sequence[int]] | None = features.get("token_type_ids")
    n = len(ids)
    dim = int(parts.word.shape[1])
    if n == 0:
        return np.zeros((0, dim), dtype=np.float32)
    order = sorted(range(n), key=lambda k: len(ids[k]))
    total = sum(len(x) for x in ids)
    share = -(-total // max(1, torch.get_num_threads()))
    size = max(ROW_TILE, min(RUN_TOKENS, share))
    runs: list[list[int]] = [[]]
    held = 0
    for k in order:
        if runs[-1] and held + len(ids[k]) > size:
            runs.append([])
            held = 0
        runs[-1].append(k)
        held += len(ids[k])

    def run(ks: list[int]) -> Any:
        return _run_texts(
            parts,
            [ids[k] for k in ks],
            None if types is None else [types[k] for k in ks],
            small_tiles,
        )

    pooled = torch.empty((n, dim), dtype=torch.float32)
    for ks, vecs in zip(runs, one_thread_map(run, runs), strict=True):
        pooled[torch.tensor(ks)] = vecs
    return pooled.numpy()


def _run_texts(
    parts: InvariantParts,
    ids: Sequence[Sequence[int]],
    types: Sequence[Sequence[int]] | None,
    small_tiles: bool,
) -> Any:
    """The unit vectors of texts sorted by length (a run of :func:`encode_invariant`), through
    every layer on the calling thread."""
    import torch

    lengths = [len(x) for x in ids]
    total = sum(lengths)
    dim = int(parts.word.shape[1])
    tiles = -(-total // ROW_TILE)
    rows = tiles * ROW_TILE
    if small_tiles:
        rows -= (rows - total) // TILE_STEP * TILE_STEP
    flat_ids = torch.zeros(rows, dtype=torch.long)
    flat_pos = torch.zeros(rows, dtype=torch.long)
    flat_types = torch.zeros(rows, dtype=torch.long)
    flat_ids[:total] = torch.tensor([t for x in ids for t in x], dtype=torch.long)
    flat_pos[:total] = torch.tensor([p for m in lengths for p in range(m)], dtype=torch.long)
    if types is not None:
        flat_types[:total] = torch.tensor([t for x in types for t in x], dtype=torch.long)
    # (length, first row, texts) of each run of texts of one length: attention reads and
    # writes each as a view.
    groups: list[tuple[int, int, int]] = []
    row = 0
    for m in lengths:
        if groups and groups[-1][0] == m:
            groups[-1] = (m, groups[-1][1], groups[-1][2] + 1)
        else:
            groups.append((m, row, 1))
        row += m
    spans = [slice(t * ROW_TILE, min(rows, (t + 1) * ROW_TILE)) for t in range(tiles)]
    heads = parts.heads
    head_dim = dim // heads
    act = parts.act_dtype
    hidden = torch.empty((rows, dim), dtype=act)
    qkv = torch.empty((rows, 3 * dim), dtype=act)
    context = torch.zeros((rows, dim), dtype=act)
    layers = parts.layers
    sdpa = torch.nn.functional.scaled_dot_product_attention
    with torch.inference_mode():
        for s in spans:
            x = parts.word[flat_ids[s]] + parts.token_type[flat_types[s]]
            x += parts.position[flat_pos[s]]
            hidden[s] = _norm(x, parts.ln)
            qkv[s] = _linear(hidden[s], layers[0].qkv_w, layers[0].qkv_b)
        for i, layer in enumerate(layers):
            for m, start, b in groups:
                view = qkv[start : start + b * m].view(b, m, 3, heads, head_dim)
                q, k, v = view.permute(2, 0, 3, 1, 4)
                context[start : start + b * m] = sdpa(q, k, v).transpose(1, 2).reshape(b * m, dim)
            after = layers[i + 1] if i + 1 < len(layers) else None
            for s in spans:
                h = _norm(_linear(context[s], layer.out_w, layer.out_b).add_(hidden[s]), layer.ln1)
                up = torch.nn.functional.gelu(_linear(h, layer.up_w, layer.up_b))
                hidden[s] = _norm(_linear(up, layer.down_w, layer.down_b).add_(h), layer.ln2)
                if after is not None:
                    qkv[s] = _linear(hidden[s], after.qkv_w, after.qkv_b)
        pooled = []
        for m, start, b in groups:
            h = hidden[start : start + b * m].view(b, m, dim)
            pooled.append(h[:, 0] if parts.pooling == "cls" else h.sum(dim=1) / m)
        # Rounded to float32 only here (the module's docstring says why).
        return torch.nn.functional.normalize(torch.cat(pooled), dim=1).float()


# Texts for :func:`small_tiles_hold`: 1 to about 100 word pieces, so that alone they run in
# tiles of every size up to ROW_TILE.
_PROBE_TEXT = (
    "Rows of one text must not move with the size of the call that carries them; "
    "the check embeds texts alone and together and compares every bit of their vectors."
)


def small_tiles_hold(parts: InvariantParts, pieces: Any) -> bool:
    """Whether cutting a call's last tile to a multiple of :data:`TILE_STEP` rows leaves every
    vector as it is with full tiles, on this CPU and for this model: texts of growing length,
    each alone in a tile of every size from :data:`TILE_STEP` to :data:`ROW_TILE` rows, against
    the same texts in full tiles. ``pieces`` reads texts to their word-piece ids."""
    texts = []
    words = _PROBE_TEXT.split() * 8
    n = 1
    for size in range(TILE_STEP, ROW_TILE + 1, TILE_STEP):
        # The shortest text that needs a tile of ``size`` rows.
        while (
            n < len(words)
            and len(pieces([" ".join(words[:n])])["input_ids"][0]) <= size - TILE_STEP
        ):
            n += 1
        texts.append(" ".join(words[:n]))
    features = pieces(texts)
    full = encode_invariant(parts, features, small_tiles=False)
    for k, text in enumerate(texts):
        alone = encode_invariant(parts, pieces([text]), small_tiles=True)
        if not np.array_equal(alone[0], full[k]):
            return False
    return True
