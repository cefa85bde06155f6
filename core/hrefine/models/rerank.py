"""Cross-encoder relevance scoring: a model named by the user (:class:`CrossEncoderScorer`) or a
cross-encoder object from another library (:class:`PairScorer`)."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from hrefine._optional import require
from hrefine.errors import InputTypeError, ModelNotFoundError
from hrefine.models._local_files import require_local_model

__all__ = ["CrossEncoderScorer", "PairScorer", "pair_method"]

logger = logging.getLogger(__name__)


class CrossEncoderScorer:
    """Scores (query, text) pairs with a cross-encoder such as bge-reranker.

    Parameters
    ----------
    model_name_or_path:
        Local folder or locally cached model name (never downloaded). It is looked for on
        disk here, so a missing model fails when the scorer is made, not at its first call.
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
        require_local_model(model_name_or_path, "cross-encoder")
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

            device = pick_device(self.device)  # a device given is checked too
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


def _positional(method: Callable[..., Any]) -> int | None:
    """How many positional arguments ``method`` takes (None: any number, or unknown)."""
    try:
        params = inspect.signature(method).parameters.values()
    except (TypeError, ValueError):  # no signature to read
        return None
    kinds = [p.kind for p in params]
    if inspect.Parameter.VAR_POSITIONAL in kinds:
        return None
    return sum(
        k in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        for k in kinds
    )


def pair_method(obj: Any) -> str | None:
    """The method that scores ``(query, text)`` pairs on a cross-encoder object, or None.

    ``"score"`` for an object whose ``score`` takes the pairs alone (LangChain's
    ``HuggingFaceCrossEncoder`` and other ``BaseCrossEncoder``), ``"predict"`` for one with
    ``predict(pairs)`` and no ``score(query, texts)`` (sentence-transformers' ``CrossEncoder``).
    None for an hrefine :class:`~hrefine.models.scorers.Scorer` (``score(query, texts)``) and
    for anything else. Duck-typed: no framework is imported.
    """
    score = getattr(obj, "score", None)
    if callable(score):
        return "score" if _positional(score) == 1 else None
    if callable(getattr(obj, "predict", None)):
        return "predict"
    return None


def _model_name(model: Any) -> str:
    name = getattr(model, "model_name", None)  # LangChain's HuggingFaceCrossEncoder
    if not isinstance(name, str):
        config = getattr(model, "config", None)  # sentence-transformers' CrossEncoder
        name = getattr(config, "_name_or_path", None)
    return name if isinstance(name, str) and name else type(model).__name__


class PairScorer:
    """A cross-encoder object from another library as a :class:`~hrefine.models.Scorer`.

    Parameters
    ----------
    model:
        An object scoring ``(query, text)`` pairs: sentence-transformers' ``CrossEncoder``
        (``predict(pairs)``), LangChain's ``HuggingFaceCrossEncoder`` (``score(pairs)``), or
        anything with either method (see :func:`pair_method`). Its scores are used as they
        come (for a model with several outputs, the last one: the "relevant" class).
    name:
        A name for reports; default ``"cross-encoder:<the model's name>"``.

    Raises
    ------
    InputTypeError
        ``model`` has neither method.
    """

    def __init__(self, model: Any, *, name: str | None = None) -> None:
        method = pair_method(model)
        if method is None:
            msg = (
                f"cannot use {type(model).__name__} as a cross-encoder: it has neither "
                "predict(pairs) nor score(pairs); pass a sentence-transformers CrossEncoder, "
                "a LangChain HuggingFaceCrossEncoder, or an hrefine Scorer"
            )
            raise InputTypeError(msg)
        self.model = model
        self._call: Callable[..., Any] = getattr(model, method)
        # sentence-transformers shows a progress bar per call unless told not to.
        takes_bar = "show_progress_bar" in _parameters(self._call)
        self._kwargs: dict[str, Any] = {"show_progress_bar": False} if takes_bar else {}
        self.name = name or f"cross-encoder:{_model_name(model)}"

    def score(self, query: str, texts: Sequence[str]) -> np.ndarray:
        """The model's score of each ``(query, text)`` pair (higher is more relevant)."""
        if not texts:
            return np.zeros(0, dtype=np.float32)
        out = self._call([(query, t) for t in texts], **self._kwargs)
        if hasattr(out, "detach"):  # a torch tensor
            out = out.detach().float().cpu().numpy()
        return np.asarray(out, dtype=np.float32).reshape(len(texts), -1)[:, -1]


def _parameters(method: Callable[..., Any]) -> set[str]:
    try:
        return set(inspect.signature(method).parameters)
    except (TypeError, ValueError):
        return set()
