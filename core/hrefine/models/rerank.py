"""Cross-encoder relevance scoring (sentence-transformers ``CrossEncoder``)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from hrefine._optional import require
from hrefine.errors import ModelNotFoundError

__all__ = ["CrossEncoderScorer"]

logger = logging.getLogger(__name__)


class CrossEncoderScorer:
    """Scores (query, text) pairs with a cross-encoder such as bge-reranker.

    Parameters
    ----------
    model_name_or_path:
        Local folder or locally cached model name (never downloaded).
    device:
        Device to run on; None picks the best available.
    batch_size:
        Pairs per forward pass.
    max_length:
        Truncation length of each pair, in model tokens.
    """

    def __init__(
        self,
        model_name_or_path: str,
        *,
        device: str | None = None,
        batch_size: int = 32,
        max_length: int = 512,
    ) -> None:
        self.model_name_or_path = model_name_or_path
        self.device = device
        self.batch_size = batch_size
        self.max_length = max_length
        self.name = f"cross-encoder:{model_name_or_path}"
        self._model: Any = None

    @property
    def model(self) -> Any:
        """The loaded ``CrossEncoder`` (loaded on first access)."""
        if self._model is None:
            st = require("sentence_transformers", "models")
            from hrefine.models.device import pick_device

            device = self.device or pick_device()
            try:
                # local_files_only: never a network call, whatever HF_HUB_OFFLINE says.
                self._model = st.CrossEncoder(
                    self.model_name_or_path,
                    device=device,
                    max_length=self.max_length,
                    local_files_only=True,
                )
            except (OSError, ValueError) as exc:
                msg = (
                    f"cross-encoder {self.model_name_or_path!r} is not a local folder or a "
                    "cached model; hrefine does not download models: pass a folder, or fetch "
                    "the model into the Hugging Face cache first"
                )
                raise ModelNotFoundError(msg) from exc
            logger.info("loaded cross-encoder %s on %s", self.model_name_or_path, device)
        return self._model

    def score(self, query: str, texts: Sequence[str]) -> np.ndarray:
        """Relevance of each text to ``query`` (the model's raw logits; higher is better)."""
        if not texts:
            return np.zeros(0, dtype=np.float32)
        pairs = [(query, t) for t in texts]
        out = self.model.predict(pairs, batch_size=self.batch_size, show_progress_bar=False)
        return np.asarray(out, dtype=np.float32).reshape(len(texts), -1)[:, -1]
