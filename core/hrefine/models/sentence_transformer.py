"""The sentence-transformers implementation of the :class:`~hrefine.models.embed.Embedder`
protocol (:class:`SentenceTransformerEmbedder`).

Embeddings are L2-normalised float32 rows, so a dot product is the cosine similarity. Weights load
on first use, never in the constructor, and never from the network. The CPU fast paths
(token-budget batches, texts packed several to a row, bfloat16 linears) are in
:mod:`hrefine.models._embed_cpu`, the batch-invariant path in
:mod:`hrefine.models._embed_invariant`.
"""

from __future__ import annotations

import functools
import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np

from hrefine._optional import require
from hrefine.errors import ConfigError, ModelNotFoundError
from hrefine.models._embed_cpu import (
    PieceReader,
    check_packing,
    encode_by_tokens,
    encode_packed,
    linears_in_bf16,
    packable_pooling,
    piece_reader,
    plain_right_padded,
)
from hrefine.models._embed_invariant import (
    InvariantParts,
    encode_invariant,
    invariant_encoder,
    invariant_parts,
    small_tiles_hold,
)
from hrefine.models._embed_state import VectorCache, embed_through_cache
from hrefine.models._gate import ModelGate
from hrefine.models._local_files import require_local_model
from hrefine.models.embedder_protocol import check_max_tokens, check_query_text, check_texts

__all__ = ["PRECISIONS", "PRECISION_ENV", "SentenceTransformerEmbedder"]

logger = logging.getLogger("hrefine.models.embed")  # the logger it always wrote to

#: ``precision`` values of :class:`SentenceTransformerEmbedder`.
PRECISIONS = ("auto", "float32", "bfloat16")
#: An environment variable that, when set to ``float32`` or ``bfloat16``, is what ``"auto"``
#: takes (the test suite runs every compute path with it).
PRECISION_ENV = "HREFINE_EMBED_PRECISION"
# Word pieces embedded per pass of the batch-invariant path (bounds its buffers: about 75 MB
# for MiniLM); a text's vector does not depend on where the calls are cut.
_INVARIANT_CHUNK_TOKENS = 16_384
# Piece readers kept per embedder, one per read limit in use.
_READERS_KEPT = 8


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
        Word pieces read per text (the rest is cut off); None keeps the model's own setting. A
        call's ``max_tokens`` reads fewer, never more.
    cpu_workers:
        On the CPU path above (batch size not set), batches run this many at a time, each on
        its share of torch's threads (:func:`hrefine.models.device.cpu_map`); None: 2 when
        torch uses 2 threads or more. 1 runs them one after another on all threads. The
        batch-invariant path below ignores it: its tiles run on as many one-thread workers as
        torch has threads.
    name:
        A short name for reports; defaults to the folder name.
    precision:
        ``"float32"``, ``"bfloat16"`` or ``"auto"``. With ``"bfloat16"``, the transformer's
        linear layers (nine tenths of its work) multiply in bfloat16 with float32 results;
        embeddings, layer norms, attention and pooling stay in float32: faster where the CPU
        multiplies bfloat16 in hardware (AVX512-BF16, AMX), but the vectors move by up to
        about 1e-3 and differ from one CPU to another. ``"auto"`` (the default) is
        ``"float32"`` on every machine, unless the environment variable
        ``HREFINE_EMBED_PRECISION`` (``float32`` or ``bfloat16``) says otherwise. A copy or
        pickle of a loaded embedder keeps the precision taken, so a Ray worker computes as its
        parent did.

    Notes
    -----
    On the CPU (``batch_size`` not set), a BERT-family model with mean or CLS pooling (the
    default all-MiniLM-L6-v2 is one) is run batch-invariantly
    (:mod:`hrefine.models._embed_invariant`): a text's vector is the same bit for bit alone or
    in any batch, in any order, fresh or cached, on one thread or several, and on any CPU
    (AVX2, AVX512, AMX or none: in float32 it computes in float64 and rounds each vector, so
    the kernels' own orders of addition do not reach the result). Other models, and
    accelerators, go through batched passes whose vectors can move in the last bits with the
    texts batched beside them and from one device to another.

    ``embed``, ``embed_query`` and ``embed_query_and_documents`` take ``max_tokens``: the word
    pieces each text of that call is read to (None: the limit above). A text's vector is the
    one an embedder built with ``max_seq_length=max_tokens`` gives, and the vector cache keeps
    each limit's apart. Threads may embed with different limits at once: the model's
    ``max_seq_length`` is shared, so a pass with another limit than the running ones waits for
    them.
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
        if batch_size is not None and (
            isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1
        ):
            msg = f"batch_size must be a whole number >= 1, got {batch_size!r}"
            raise ConfigError(msg)
        cache = VectorCache(cache_size)  # checks cache_size
        if max_seq_length is not None and max_seq_length < 1:
            msg = f"max_seq_length must be >= 1 or None, got {max_seq_length}"
            raise ConfigError(msg)
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
        self._cache = cache
        self._model: Any = None
        # Turns at the model's max_seq_length, which every thread shares: passes that read
        # with one limit run side by side, another limit waits; set when the model loads.
        self._gate: ModelGate | None = None
        self._own_limit: int | None = None
        self._packing: str | bool | None = False  # False: not checked yet; None: do not pack
        self._readers: dict[int | None, PieceReader] = {}  # by read limit
        # The batch-invariant path's weights (None: the model takes the batched paths), and
        # whether it may cut a call's last tile short; set when the model loads.
        self._invariant: InvariantParts | None = None
        self._small_tiles = False
        # Held while the model loads and while the readers change, never while waiting for
        # the gate: threads that start together load the model once.
        self._setup = threading.RLock()

    def __getstate__(self) -> dict[str, Any]:
        # Pickled (or deep-copied) as its settings: the copy loads the model from the same
        # folder on first use, with an empty vector cache. A process that receives it needs
        # the folder too.
        state = dict(self.__dict__)
        if self._dtype:  # the copy computes as this one does, wherever it runs
            state["precision"] = self._dtype
        state.update(
            _model=None,
            _invariant=None,
            _small_tiles=False,
            _dtype="",
            _packing=False,
            _readers={},
            _gate=None,
            _own_limit=None,
            _cache=VectorCache(self._cache.size),
        )
        del state["_setup"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._setup = threading.RLock()

    @property
    def model(self) -> Any:
        """The loaded ``SentenceTransformer`` (loaded on first access)."""
        if self._model is None:
            with self._setup:
                if self._model is None:
                    self._load()
        return self._model

    def _load(self) -> None:
        """Load the model and set up its gate (under the setup lock)."""
        st = require("sentence_transformers", "models")
        from hrefine.models.device import pick_device

        # A folder that is not there fails here, naming it as one, before sentence-transformers
        # logs that it cannot resolve the "revision" of a path.
        require_local_model(self.model_name_or_path, "embedding model")
        device = pick_device(self.device)  # a device given is checked too
        try:
            # local_files_only: a name not in the local cache fails here, with no network
            # call (the process's HF_HUB_OFFLINE is left as the caller set it).
            model = st.SentenceTransformer(
                self.model_name_or_path, device=device, local_files_only=True
            )
        except (OSError, ValueError) as exc:
            msg = (
                f"embedding model {self.model_name_or_path!r} is not a local folder or a "
                "cached model; hrefine does not download models: pass a folder, or fetch "
                "the model into the Hugging Face cache first"
            )
            raise ModelNotFoundError(msg) from exc
        if self.max_seq_length is not None:
            model.max_seq_length = self.max_seq_length
        dtype = self.precision
        if dtype == "auto":
            # Never chosen by the CPU: bfloat16 vectors differ from float32 ones, and so would
            # what every method keeps on one machine and another.
            dtype = _precision_from_env() or "float32"
        on_cpu = model.device.type == "cpu" and self.batch_size is None
        pooling = packable_pooling(model) if on_cpu and plain_right_padded(model) else None
        parts = None
        if pooling is not None and invariant_encoder(model, pooling) is not None:
            # Batch-invariant path: its own weight copies, the model itself left in float32.
            parts = invariant_parts(model, pooling, bf16=dtype == "bfloat16")
        if parts is not None:
            dtype = parts.precision
            self._small_tiles = small_tiles_hold(parts, piece_reader(model, model.max_seq_length))
            self._invariant = parts
        elif dtype == "bfloat16":
            # Whether texts can share rows is checked in float32: in bfloat16, rounding after
            # each layer moves a vector by more than the check's tolerance.
            if self._packing is False and on_cpu and plain_right_padded(model):
                self._packing = check_packing(model, self._workers(), self.name)
            linears_in_bf16(model)
        self._dtype = dtype
        own = self._own_limit = model.max_seq_length
        self._gate = ModelGate(functools.partial(setattr, model, "max_seq_length"), own, rest=own)
        # Published only once set up: another thread may embed as soon as it sees it.
        self._model = model
        logger.info("loaded embedder %s on %s (%s)", self.name, device, dtype)

    @property
    def compute_dtype(self) -> str:
        """The precision the model runs in: ``"float32"`` or ``"bfloat16"`` (loads the model)."""
        _ = self.model
        return self._dtype

    @property
    def dimension(self) -> int:
        """Size of the vectors."""
        model = self.model
        # sentence-transformers 6 renamed the method (the old name warns).
        size = getattr(model, "get_embedding_dimension", None)
        dim = size() if size is not None else model.get_sentence_embedding_dimension()
        return int(dim) if dim is not None else int(self.embed(["x"]).shape[1])

    @property
    def read_limit(self) -> int | None:
        """Word pieces a text is read to when a call gives no ``max_tokens`` (loads the model)."""
        _ = self.model
        return self._own_limit

    def clear_cache(self) -> None:
        """Forget every cached vector (the next call embeds its texts again)."""
        self._cache.clear()

    def _workers(self) -> int:
        from hrefine.models.device import cpu_workers

        return cpu_workers(self.cpu_workers)

    def _limit_for(self, max_tokens: int | None) -> int | None:
        """The word pieces a call with ``max_tokens`` reads per text."""
        check_max_tokens(max_tokens)
        own = self.read_limit
        if max_tokens is None or (own is not None and max_tokens >= own):
            return own
        return max_tokens

    def _encode(self, texts: list[str], limit: int | None) -> np.ndarray:
        model = self.model
        if self._invariant is not None:
            return self._encode_invariant(self._invariant, texts, limit)
        batch_size = self.batch_size
        if batch_size is None:
            if model.device.type == "cpu" and plain_right_padded(model):
                pooling = self._pooling_for_packing()
                workers = self._workers()
                with self._limit_gate().hold(limit):
                    if pooling is not None:
                        pieces = self._pieces(limit)
                        return encode_packed(model, texts, pooling, pieces, limit, workers)
                    return encode_by_tokens(model, texts, workers)
            from hrefine.models.device import batch_size_for

            batch_size = batch_size_for(str(model.device))
        with self._limit_gate().hold(limit):
            vecs = model.encode(
                texts,
                batch_size=batch_size,
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
        return np.asarray(vecs, dtype=np.float32)

    def _encode_invariant(
        self, parts: InvariantParts, texts: list[str], limit: int | None
    ) -> np.ndarray:
        """The batch-invariant path, in passes of at most ``_INVARIANT_CHUNK_TOKENS`` word
        pieces (a text longer than that alone in its pass)."""
        with self._limit_gate().hold(limit):
            features = self._pieces(limit)(texts)
        ids = features["input_ids"]
        out: list[np.ndarray] = []
        start = 0
        while start < len(texts):
            end, size = start, 0
            while end < len(texts) and (
                end == start or size + len(ids[end]) <= _INVARIANT_CHUNK_TOKENS
            ):
                size += len(ids[end])
                end += 1
            part = {k: v[start:end] for k, v in features.items()}
            out.append(encode_invariant(parts, part, self._small_tiles))
            start = end
        if not out:
            return np.zeros((0, int(parts.word.shape[1])), dtype=np.float32)
        return np.vstack(out)

    def _limit_gate(self) -> ModelGate:
        """The gate of the model's read limit (made when the model loads)."""
        _ = self.model
        return cast(ModelGate, self._gate)

    def _pooling_for_packing(self) -> str | None:
        """The pooling (``"mean"`` or ``"cls"``) to pack texts into shared rows with, or None
        when this model cannot be: decided once, by comparing packed vectors to ``encode``'s."""
        if self._packing is False:
            model = self.model
            with self._limit_gate().hold(self._own_limit):  # checked at the model's own limit
                self._packing = check_packing(model, self._workers(), self.name)
        return self._packing if isinstance(self._packing, str) else None

    def _pieces(self, limit: int | None) -> PieceReader:
        """Texts -> their word-piece ids (and token type ids), unpadded, as the model reads
        them at ``limit``. The Rust tokenizer is called directly where there is one: the
        tokenizer's Python wrapper walked every id to pad and convert the batch, 4% of pruning
        a page."""
        reader = self._readers.get(limit)
        if reader is None:
            model = self.model
            with self._setup:
                reader = self._readers.get(limit)
                if reader is None:
                    if len(self._readers) >= _READERS_KEPT:
                        self._readers.pop(next(iter(self._readers)))
                    reader = self._readers[limit] = piece_reader(model, limit)
        return reader

    def _embed_full(self, full: list[str], max_tokens: int | None) -> np.ndarray:
        """Unit vectors of texts that already carry their prefix (cached per text and limit)."""
        limit = self._limit_for(max_tokens)
        return embed_through_cache(
            self._cache,
            full,
            limit,
            lambda asked: self._encode(asked, limit),
            self.name,
            lambda: self.dimension,
        )

    def embed(self, texts: Sequence[str], *, max_tokens: int | None = None) -> np.ndarray:
        """Embed documents as unit rows (cached per text).

        Parameters
        ----------
        texts:
            The documents.
        max_tokens:
            Word pieces read of each text; None: :attr:`read_limit`. A larger value than
            that reads to it.

        Returns
        -------
        numpy.ndarray
            A ``(len(texts), dim)`` float32 array with unit rows.
        """
        check_texts(texts)
        return self._embed_full([self.document_prefix + t for t in texts], max_tokens)

    def embed_query(self, text: str, *, max_tokens: int | None = None) -> np.ndarray:
        """Embed one query as a unit vector, reading at most ``max_tokens`` word pieces of it
        (None: :attr:`read_limit`)."""
        check_query_text(text)
        return self._embed_full([self.query_prefix + text], max_tokens)[0]

    def embed_query_and_documents(
        self, query: str, texts: Sequence[str], *, max_tokens: int | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`embed_query` and :meth:`embed` in one pass of the model.

        The same vectors as the two calls (with the same ``max_tokens``), but a new query rides
        in the documents' batch instead of running alone, which costs a pass of its own (about
        15 ms on 2 CPU cores, a fifth of pruning a page whose blocks are cached).
        """
        check_query_text(query)
        check_texts(texts)
        full = [self.query_prefix + query, *(self.document_prefix + t for t in texts)]
        vecs = self._embed_full(full, max_tokens)
        return vecs[0], vecs[1:]


def _precision_from_env() -> str | None:
    """What ``precision="auto"`` takes from :data:`PRECISION_ENV`, or None when it is unset."""

    value = os.environ.get(PRECISION_ENV, "").strip()
    if not value or value == "auto":
        return None
    if value not in ("float32", "bfloat16"):
        msg = f"{PRECISION_ENV} must be float32, bfloat16 or auto; got {value!r}"
        raise ConfigError(msg)
    return value
