"""The base of the hrefine LangChain compressors (HtmlRAG, LongRefiner, GARLIC).

A compressor validates the Documents, converts them for the core, calls the core and converts
the outcomes back (``_convert``); what differs per method is the core call. :class:`CoreCompressor`
holds the LangChain side of that once, and :class:`JobCompressor` the shape HtmlRAG and
LongRefiner share: a core object rebuilt from the fields, and one core job per call.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Protocol, TypeVar

from hrefine.results import ResultOptions
from langchain_core.callbacks import Callbacks
from langchain_core.documents import BaseDocumentCompressor, Document
from pydantic import ConfigDict

from langchain_hrefine._convert import document_list
from langchain_hrefine._runs import arun_in, run_in

__all__ = ["CoreCompressor", "CoreJob", "JobCompressor"]

_J = TypeVar("_J", bound="JobCompressor")


class CoreJob(Protocol):
    """One call's work on the core: one outcome per input, sync or async."""

    def run(self) -> list[Any]: ...

    async def arun(self) -> list[Any]: ...


class CoreCompressor(BaseDocumentCompressor):
    """A LangChain ``BaseDocumentCompressor`` over an hrefine method.

    Subclasses implement :meth:`_compress` (the sync call); the async call runs it in the
    default executor unless the subclass has a native async path (:meth:`_acompress`).
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    def compress_documents(
        self,
        documents: Sequence[Document],
        query: str,
        callbacks: Callbacks | None = None,
    ) -> Sequence[Document]:
        """Compress ``documents`` to the budget, keeping what is relevant to ``query``.

        Parameters
        ----------
        documents:
            The retrieved Documents (what their ``page_content`` holds: see the class).
        query:
            The question the context is for.
        callbacks:
            The callbacks of the caller's run (``CompressionRetriever`` passes its run's
            children): the calls of an ``llm`` field report to them. None: those of the
            context the call runs in, if any.

        Returns
        -------
        Sequence[Document]
            New Documents with the kept text and the metadata described in the class
            docstring, in the order it gives; the input Documents are untouched.

        Raises
        ------
        InputTypeError
            ``documents`` is not a list of Documents, or the query is not a string.
        EmptyInputError
            The query is empty (or, with ``strict``, every document is).
        """
        return run_in(callbacks, self._compress, documents, query)

    async def acompress_documents(
        self,
        documents: Sequence[Document],
        query: str,
        callbacks: Callbacks | None = None,
    ) -> Sequence[Document]:
        """:meth:`compress_documents` without blocking the event loop; same parameters and
        result."""
        return await arun_in(callbacks, self._acompress(documents, query))

    def _compress(self, documents: Sequence[Document], query: str) -> list[Document]:
        raise NotImplementedError

    async def _acompress(self, documents: Sequence[Document], query: str) -> list[Document]:
        # No async path of its own: the sync call runs in the default executor.
        docs = document_list(documents)
        # to_thread carries the context over (the LLM calls' callbacks)
        return await asyncio.to_thread(self._compress, docs, query)


class JobCompressor(CoreCompressor):
    """A compressor over a core object made from its fields (:meth:`_core`), that runs one core
    job per call (:meth:`_job`) and turns its outcomes into Documents (:meth:`_finish`); the
    async call awaits the job's async path. Its fields include the
    :class:`~hrefine.results.ResultOptions` settings (``top_n``, ``keep_input_order``,
    ``strict``).
    """

    def model_post_init(self, context: Any, /) -> None:
        """Build the core object and its token counter now, so that a bad setting (an unknown
        scorer, a tokenizer that is not there) fails at construction."""
        _ = self._core().counter
        ResultOptions.of(self)

    def warmup(self: _J) -> _J:
        """Load the models now (the budget tokenizer, the scorer's model, and the LM when
        there is one) and run one tiny call, so that the first real call is fast; see the
        core object's ``warmup``. Returns this component."""
        self._core().warmup()
        return self

    def _core(self) -> Any:
        """The core object for the current fields (made again when one changed)."""
        raise NotImplementedError

    def _job(self, documents: list[Document], query: str) -> CoreJob:
        raise NotImplementedError

    def _finish(self, documents: list[Document], outcomes: list[Any]) -> list[Document]:
        raise NotImplementedError

    def _compress(self, documents: Sequence[Document], query: str) -> list[Document]:
        docs = document_list(documents)
        job = self._job(docs, query)
        return self._finish(docs, job.run()) if docs else []

    async def _acompress(self, documents: Sequence[Document], query: str) -> list[Document]:
        docs = document_list(documents)
        job = self._job(docs, query)
        return self._finish(docs, await job.arun()) if docs else []
