"""LlamaIndex models and the core's: embed models become a core
:class:`~hrefine.models.Embedder` (and a core embedder a LlamaIndex embed model,
:class:`HrefineEmbedding`), an explicitly given LlamaIndex LLM a core
:class:`~hrefine.models.TextGenerator` for each method, and the LLM a query engine answers with
is chosen without ever reading LlamaIndex's OpenAI default."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from hrefine.errors import ConfigError, InputTypeError
from hrefine.models import (
    CallableEmbedder,
    Embedder,
    TextGenerator,
    as_text_generator,
    get_embedder,
)
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.llms import LLM
from pydantic import PrivateAttr

if TYPE_CHECKING:
    from hrefine.raptor import RaptorOptions

__all__ = [
    "HrefineEmbedding",
    "answer_llm",
    "complete_state",
    "to_embedder",
    "to_garlic_llm",
    "to_raptor_llm",
    "to_refiner_llm",
    "to_text_generator",
]


def answer_llm(llm: Any, index_llm: Any, callback_manager: Any = None) -> LLM:
    """The LLM an index's query or chat engine answers with: ``llm``, else the index's own when
    it is a LlamaIndex LLM, else ``Settings.llm`` when the caller set one; never LlamaIndex's
    OpenAI default (it needs a key and the network).

    Raises
    ------
    ConfigError
        No LLM to answer with.
    """
    from llama_index.core.llms.utils import resolve_llm
    from llama_index.core.settings import Settings

    if llm is not None:
        return resolve_llm(llm, callback_manager=callback_manager)
    if isinstance(index_llm, LLM):
        return index_llm
    if getattr(Settings, "_llm", None) is not None:
        return Settings.llm
    msg = (
        "no LLM to answer with: pass llm= (a LlamaIndex LLM) to as_query_engine, or build "
        "the index with a LlamaIndex LLM (hrefine never falls back to the default "
        "Settings.llm, which needs an OpenAI key)"
    )
    raise ConfigError(msg)


def to_embedder(embed_model: BaseEmbedding | Embedder | None) -> Embedder | None:
    """Turn a LlamaIndex embed model into a core :class:`~hrefine.models.Embedder`.

    Parameters
    ----------
    embed_model:
        A LlamaIndex ``BaseEmbedding``, an object that already implements the core ``Embedder``
        protocol (through :func:`~hrefine.models.get_embedder`: hrefine's own as is), or None
        (returned as None: the core picks its default model).
        ``Settings.embed_model`` is never read.

    Returns
    -------
    Embedder or None
        An embedder whose rows are L2-normalised, that keeps vectors by text and awaits
        ``aget_text_embedding_batch``/``aget_query_embedding`` on the async path
        (:class:`~hrefine.models.CallableEmbedder`).
    """
    if embed_model is None:
        return None
    if isinstance(embed_model, HrefineEmbedding):
        return embed_model.embedder
    if isinstance(embed_model, BaseEmbedding):
        # Vectors are cached by text; the async methods run on the caller's loop on the async
        # path when the model has async code of its own (the base class's runs the sync code
        # on the loop, blocking it).
        cls = type(embed_model)
        own_async = cls._aget_text_embeddings is not BaseEmbedding._aget_text_embeddings
        own_aquery = cls._aget_query_embedding is not BaseEmbedding._aget_query_embedding
        return CallableEmbedder(
            embed_model.get_text_embedding_batch,
            embed_model.get_query_embedding,
            name=f"llamaindex:{embed_model.model_name}",
            aembed_documents=embed_model.aget_text_embedding_batch if own_async else None,
            aembed_query=embed_model.aget_query_embedding if own_aquery else None,
        )
    if hasattr(embed_model, "embed") and hasattr(embed_model, "embed_query"):
        # The core protocol, with or without its ``name``: hrefine's own as is, any other
        # named and with its vectors checked (see get_embedder).
        return get_embedder(embed_model)
    msg = (
        f"cannot use {type(embed_model).__name__} as an embed model: pass a LlamaIndex "
        "BaseEmbedding, an hrefine Embedder, or None for the embedded default model"
    )
    raise InputTypeError(msg)


def to_text_generator(llm: Any, **options: Any) -> TextGenerator:
    """Turn an explicitly given LlamaIndex LLM into a core :class:`~hrefine.models.TextGenerator`.

    ``Settings.llm`` is never read: its default is a hosted model that fails without an API key,
    so hrefine only uses the LLM it is handed.

    Parameters
    ----------
    llm:
        A LlamaIndex ``LLM`` (called with ``complete``/``acomplete``), a core
        ``TextGenerator``, a ``LocalLM`` or a ``str -> str`` callable.
    **options:
        Passed to :class:`~hrefine.models.TextGenerator`.

    Returns
    -------
    TextGenerator
        The wrapped model.
    """
    if llm is None:
        msg = (
            "no LLM given: pass llm= explicitly (hrefine never falls back to Settings.llm, "
            "whose default needs an OpenAI key)"
        )
        raise ConfigError(msg)
    if isinstance(llm, TextGenerator):
        return llm
    if isinstance(llm, LLM):
        model = llm

        def _complete(prompt: str) -> str:
            return str(model.complete(prompt).text)

        async def _acomplete(prompt: str) -> str:
            return str((await model.acomplete(prompt)).text)

        options.setdefault("name", f"llamaindex:{type(llm).__name__}")
        return TextGenerator(_complete, afn=_acomplete, **options)
    if callable(llm) or hasattr(llm, "session"):  # a str -> str callable, or a LocalLM
        return as_text_generator(llm, **options)
    msg = f"cannot use {type(llm).__name__} as an LLM: pass a LlamaIndex LLM or a callable"
    raise InputTypeError(msg)


def complete_state(component: Any, state: dict[str, Any]) -> dict[str, Any]:
    """``state`` from LlamaIndex's ``BaseComponent.__getstate__``, or TypeError when it left out a
    field that does not pickle: the copy would be rebuilt without it (another embed model, or
    an object missing the field) rather than fail."""
    lost = sorted(set(component.__dict__) - set(state["__dict__"]))
    if lost:
        msg = (
            f"cannot pickle this {type(component).__name__}: {', '.join(lost)} cannot be "
            "pickled (an embedding model or LLM holding a client, a lock or a local function)"
        )
        raise InputTypeError(msg)
    return state


class HrefineEmbedding(BaseEmbedding):
    """A core :class:`~hrefine.models.Embedder` as a LlamaIndex embed model.

    Lets an index use the same embedder as hrefine (by default the embedded all-MiniLM-L6-v2,
    offline), so a ``VectorStoreIndex`` needs no hosted embedding service.

    Parameters
    ----------
    embedder:
        A core ``Embedder`` (e.g. :func:`hrefine.models.default_embedder` or
        :class:`hrefine.testing.KeywordEmbedder`); None uses the embedded default.
    **kwargs:
        Passed to ``BaseEmbedding`` (``embed_batch_size``...).
    """

    _embedder: Embedder = PrivateAttr()

    def __init__(self, embedder: Embedder | None = None, **kwargs: Any) -> None:
        resolved = get_embedder(embedder)
        kwargs.setdefault("model_name", f"hrefine:{resolved.name}")
        super().__init__(**kwargs)
        self._embedder = resolved

    @classmethod
    def class_name(cls) -> str:
        """Stable name used by LlamaIndex serialisation."""
        return "HrefineEmbedding"

    def __getstate__(self) -> dict[str, Any]:
        # LlamaIndex leaves out what does not pickle and rebuilds from the fields, which would
        # put the default embedder in place of this one, under this one's name.
        state = complete_state(self, super().__getstate__())
        if "_embedder" not in (state.get("__pydantic_private__") or {}):
            msg = (
                f"cannot pickle this HrefineEmbedding: its embedder "
                f"({type(self._embedder).__name__}) cannot be pickled"
            )
            raise InputTypeError(msg)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(embedder=state["__pydantic_private__"]["_embedder"], **state["__dict__"])  # type: ignore[misc]

    @property
    def embedder(self) -> Embedder:
        """The wrapped core embedder."""
        return self._embedder

    def _get_query_embedding(self, query: str) -> list[float]:
        return [float(x) for x in self._embedder.embed_query(query)]

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return await asyncio.to_thread(self._get_query_embedding, query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._get_text_embeddings([text])[0]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return [[float(x) for x in row] for row in self._embedder.embed(texts)]

    async def _aget_text_embedding(self, text: str) -> list[float]:
        return await asyncio.to_thread(self._get_text_embedding, text)

    async def _aget_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return await asyncio.to_thread(self._get_text_embeddings, texts)


def to_refiner_llm(
    llm: Any, *, llm_concurrency: int, llm_retries: int, llm_timeout: float | None
) -> TextGenerator | Any:
    """The prompt-only LLM a :class:`~hrefine.longrefiner.LongRefiner` takes for ``llm``.

    A LlamaIndex ``LLM`` becomes a core ``TextGenerator`` (:func:`to_text_generator`) with the
    given concurrency, retries and timeout (the options' ``llm_concurrency``, ``llm_retries``,
    ``llm_timeout``); anything else (None, a ``str -> str`` callable, a TextGenerator) goes to
    the core as it is, where a callable gets the same settings. ``Settings.llm`` is never read.

    Raises
    ------
    InputTypeError
        ``llm`` is none of these.
    """
    if llm is None or isinstance(llm, TextGenerator):
        return llm
    if isinstance(llm, LLM):
        return to_text_generator(
            llm,
            max_concurrency=llm_concurrency,
            retries=llm_retries,
            timeout=llm_timeout,
        )
    if callable(llm):
        return llm
    msg = (
        f"cannot use {type(llm).__name__} as LongRefiner's llm: pass a LlamaIndex LLM or a "
        "str -> str callable (or lm= for a local model)"
    )
    raise InputTypeError(msg)


def to_raptor_llm(llm: Any, options: RaptorOptions) -> Any:
    """The summariser a RAPTOR tree takes for ``llm``.

    A LlamaIndex ``LLM`` becomes a :class:`~hrefine.models.TextGenerator` with the options'
    ``llm_concurrency``, ``llm_retries`` and ``llm_timeout``; anything else (a ``str -> str``
    callable, a LocalLM, a TextGenerator, or None for the no-model extracts) is returned as it is,
    for the core to check and wrap. ``Settings.llm`` is never read.
    """
    if isinstance(llm, LLM):
        return to_text_generator(
            llm,
            max_concurrency=options.llm_concurrency,
            retries=options.llm_retries,
            timeout=options.llm_timeout,
            retry_on=(Exception,),
        )
    return llm


def to_garlic_llm(llm: Any, timeout: float | None) -> Any:
    """The LLM a GARLIC graph and its searcher take for ``llm``.

    A LlamaIndex ``LLM`` becomes a :class:`~hrefine.models.TextGenerator` (prompt-only mode:
    embedding edges, Yes/No read from its text) whose every try gives up after ``timeout``
    seconds (the options' ``llm_timeout``; the core uses a TextGenerator's own settings, so it is
    set here); anything else (a ``LocalLM`` for attention edges and the KV-cached search, a
    ``str -> str`` callable, which the core gives ``llm_timeout``, a TextGenerator, or None for
    the no-model stand-in) is returned as it is. ``Settings.llm`` is never read.
    """
    if isinstance(llm, LLM):
        return to_text_generator(llm, timeout=timeout)
    return llm
