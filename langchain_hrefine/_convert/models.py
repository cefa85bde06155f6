"""LangChain models as core ones: ``Embeddings`` become a core :class:`~hrefine.models.Embedder`
(and a core embedder becomes LangChain ``Embeddings``, :class:`HrefineEmbeddings`), and chat
models, LLMs and Runnables become a core :class:`~hrefine.models.TextGenerator`, with the
settings of the method that calls them (LongRefiner, RAPTOR's summariser, GARLIC).
"""

from __future__ import annotations

from typing import Any

from hrefine.errors import InputTypeError
from hrefine.models import (
    CallableEmbedder,
    Embedder,
    TextGenerator,
    as_text_generator,
    get_embedder,
)
from hrefine.raptor import RaptorOptions
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.runnables import Runnable, RunnableLambda

__all__ = [
    "HrefineEmbeddings",
    "to_embedder",
    "to_garlic_llm",
    "to_refiner_llm",
    "to_summariser",
    "to_text_generator",
]


def to_embedder(embeddings: Embeddings | Embedder | None) -> Embedder | None:
    """Turn LangChain ``Embeddings`` into a core :class:`~hrefine.models.Embedder`.

    Parameters
    ----------
    embeddings:
        A LangChain ``Embeddings``, an object that already implements the core ``Embedder``
        protocol (through :func:`~hrefine.models.get_embedder`: hrefine's own as is), or None
        (returned as None: the core picks its default model).

    Returns
    -------
    Embedder or None
        An embedder whose rows are L2-normalised, whatever the LangChain model returns, that
        keeps vectors by text and awaits ``aembed_documents``/``aembed_query`` on the async
        path (:class:`~hrefine.models.CallableEmbedder`).
    """
    if embeddings is None:
        return None
    if isinstance(embeddings, HrefineEmbeddings):
        return embeddings.embedder
    if isinstance(embeddings, Embeddings):
        # Vectors are cached by text (a page asked again embeds only the query); the async
        # methods run on the caller's loop on the async path, when the class has its own
        # (the base class's only runs the sync method in a thread).
        cls = type(embeddings)
        own_async = cls.aembed_documents is not Embeddings.aembed_documents
        own_aquery = cls.aembed_query is not Embeddings.aembed_query
        return CallableEmbedder(
            embeddings.embed_documents,
            embeddings.embed_query,
            name=f"langchain:{cls.__name__}",
            aembed_documents=embeddings.aembed_documents if own_async else None,
            aembed_query=embeddings.aembed_query if own_aquery else None,
        )
    if hasattr(embeddings, "embed") and hasattr(embeddings, "embed_query"):
        # The core protocol, with or without its ``name``: hrefine's own as is, any other
        # named and with its vectors checked (see get_embedder).
        return get_embedder(embeddings)
    msg = (
        f"cannot use {type(embeddings).__name__} as embeddings: pass a LangChain Embeddings, "
        "an hrefine Embedder, or None for the embedded default model"
    )
    raise InputTypeError(msg)


class HrefineEmbeddings(Embeddings):
    """A core :class:`~hrefine.models.Embedder` as LangChain ``Embeddings``.

    Lets a LangChain vector store use the same embedder as hrefine (by default the embedded
    all-MiniLM-L6-v2, offline). :func:`to_embedder` unwraps it again, so hrefine never embeds
    through the LangChain layer twice.

    Parameters
    ----------
    embedder:
        A core ``Embedder``; None uses :func:`hrefine.models.default_embedder`.
    """

    def __init__(self, embedder: Embedder | None = None) -> None:
        self.embedder = get_embedder(embedder)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed documents as lists of floats (unit length)."""
        return [[float(x) for x in row] for row in self.embedder.embed(texts)]

    def embed_query(self, text: str) -> list[float]:
        """Embed one query as a list of floats (unit length)."""
        return [float(x) for x in self.embedder.embed_query(text)]


class _ChainCall:
    """A Runnable's text answer to a prompt, sync or awaited (an object, not a closure, so that
    a component holding it pickles)."""

    def __init__(self, chain: Runnable[Any, Any]) -> None:
        self.chain = chain

    def __call__(self, prompt: str) -> str:
        return str(self.chain.invoke(prompt))

    async def ainvoke(self, prompt: str) -> str:
        return str(await self.chain.ainvoke(prompt))


def to_text_generator(llm: Any, **options: Any) -> TextGenerator:
    """Turn a LangChain chat model, LLM or Runnable into a core ``TextGenerator``.

    The model is called as ``llm | StrOutputParser()``: ``invoke`` on the sync path and
    ``ainvoke`` on the async path, so the event loop is never blocked by a model with native async.

    Parameters
    ----------
    llm:
        A ``BaseChatModel``, ``BaseLLM`` or any ``Runnable`` taking a string prompt; a core
        ``TextGenerator``, a ``LocalLM`` or a plain ``str -> str`` callable is accepted too.
    **options:
        Passed to :class:`~hrefine.models.TextGenerator` (``max_concurrency``, ``retries``,
        ``timeout``...).

    Returns
    -------
    TextGenerator
        The wrapped model.
    """
    if isinstance(llm, TextGenerator):
        return llm
    if isinstance(llm, Runnable):
        call = _ChainCall(llm | StrOutputParser())
        options.setdefault("name", f"langchain:{type(llm).__name__}")
        return TextGenerator(call, afn=call.ainvoke, **options)
    if callable(llm) or hasattr(llm, "session"):  # a str -> str callable, or a LocalLM
        return as_text_generator(llm, **options)
    msg = (
        f"cannot use {type(llm).__name__} as an LLM: pass a LangChain chat model, LLM or "
        "Runnable, or a str -> str callable"
    )
    raise InputTypeError(msg)


def to_refiner_llm(
    llm: Any, *, llm_concurrency: int, llm_retries: int, llm_timeout: float | None
) -> TextGenerator | Any:
    """The prompt-only LLM a :class:`~hrefine.longrefiner.LongRefiner` takes for ``llm``.

    A LangChain chat model, LLM or Runnable becomes a core ``TextGenerator``
    (:func:`to_text_generator`) with the given concurrency, retries and timeout (the options'
    ``llm_concurrency``, ``llm_retries``, ``llm_timeout``); anything else (None, a
    ``str -> str`` callable, a TextGenerator) goes to the core as it is, where a callable gets
    the same settings.

    Raises
    ------
    InputTypeError
        ``llm`` is none of these.
    """
    if llm is None or isinstance(llm, TextGenerator):
        return llm
    if isinstance(llm, Runnable):
        return to_text_generator(
            llm,
            max_concurrency=llm_concurrency,
            retries=llm_retries,
            timeout=llm_timeout,
            name=f"langchain:{type(llm).__name__}",
        )
    if callable(llm):
        return llm
    msg = (
        f"cannot use {type(llm).__name__} as LongRefiner's llm: pass a LangChain chat model, "
        "LLM or Runnable, or a str -> str callable (or lm= for a local model)"
    )
    raise InputTypeError(msg)


class _WithSystem:
    """A prompt as the messages of a chat: the system message, then the prompt (an object, not
    a closure, so that a component holding it pickles)."""

    def __init__(self, system: str) -> None:
        self.system = system

    def __call__(self, prompt: str) -> list[BaseMessage]:
        return [SystemMessage(content=self.system), HumanMessage(content=prompt)]


def to_summariser(llm: Any, options: RaptorOptions) -> Any:
    """The summariser a :class:`~hrefine.raptor.RaptorTree` takes for ``llm``.

    A LangChain chat model, LLM or Runnable becomes a core ``TextGenerator``
    (:func:`to_text_generator`: ``invoke`` on the sync path, ``ainvoke`` on the async one) with
    the options' ``llm_concurrency``, ``llm_retries`` and ``llm_timeout``; a chat model gets the
    options' ``system_prompt`` as a system message before the prompt (as the paper's
    summariser did). Anything else (None for the embedded model, a ``str -> str`` callable, a
    LocalLM, a TextGenerator) goes to the core as it is: there a callable's empty answers are
    retried and a LocalLM gets the system prompt and the summary length.
    """
    if not isinstance(llm, Runnable):
        return llm
    name = f"langchain:{type(llm).__name__}"
    system = options.system_prompt
    if isinstance(llm, BaseChatModel) and system:
        llm = RunnableLambda(_WithSystem(system)) | llm
    return to_text_generator(
        llm,
        max_concurrency=options.llm_concurrency,
        retries=options.llm_retries,
        timeout=options.llm_timeout,
        name=name,
    )


def to_garlic_llm(llm: Any, timeout: float | None) -> Any:
    """The LLM a :class:`~hrefine.garlic.GarlicGraph` and its searcher take for ``llm``.

    A LangChain chat model, LLM or Runnable becomes a core ``TextGenerator``
    (:func:`to_text_generator`) whose every try gives up after ``timeout`` seconds (the options'
    ``llm_timeout``; the core uses a TextGenerator's own settings, so it is set here): GARLIC
    runs in prompt-only mode with it (embedding edges, Yes/No read from text). Anything else goes
    to the core as it is: a ``LocalLM`` (attention edges and the KV-cached search), a
    ``str -> str`` callable (the core applies ``llm_timeout``), a TextGenerator, or None for the
    embedded SmolLM2.
    """
    if isinstance(llm, Runnable):
        return to_text_generator(llm, name=f"langchain:{type(llm).__name__}", timeout=timeout)
    return llm
