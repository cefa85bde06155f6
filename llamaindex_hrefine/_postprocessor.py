"""The base of the hrefine LlamaIndex node postprocessors (HtmlRAG, LongRefiner).

A postprocessor validates the nodes, converts them for the core, runs one core job and converts
the outcomes back (``_convert``); what differs per method is the core object, the job and the
conversions. :class:`CorePostprocessor` holds the LlamaIndex side of that once.
"""

from __future__ import annotations

from typing import Any, Protocol, TypeVar

from hrefine.errors import EmptyInputError
from hrefine.results import ResultOptions
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle
from pydantic import ConfigDict, Field

from llamaindex_hrefine._convert import complete_state, node_list

__all__ = ["CoreJob", "CorePostprocessor", "budget_field", "embed_model_field"]

_P = TypeVar("_P", bound="CorePostprocessor")


def budget_field(default: int, description: str, *, minimum: int = 1) -> Any:
    """A token budget field: a strict int, at least ``minimum``."""
    return Field(default=default, ge=minimum, strict=True, description=description)


def embed_model_field() -> Any:
    """The ``embed_model`` field of a postprocessor whose ``"embedding"`` scorer embeds."""
    return Field(
        default=None,
        description=(
            "Embed model for the 'embedding' scorer (a LlamaIndex BaseEmbedding or an hrefine "
            "Embedder); None: hrefine's embedded all-MiniLM-L6-v2. Settings.embed_model is "
            "never read."
        ),
    )


class CoreJob(Protocol):
    """One call's work on the core: one outcome per input node, sync or async."""

    def run(self) -> list[Any]: ...

    async def arun(self) -> list[Any]: ...


class CorePostprocessor(BaseNodePostprocessor):
    """A LlamaIndex ``BaseNodePostprocessor`` over an hrefine method's core object.

    The core object is made from the fields (:meth:`_core`, made again when one changed), one
    core job runs per call (:meth:`_job`) and its outcomes become new nodes (:meth:`_finish`);
    the async call awaits the job's async path. The fields include the
    :class:`~hrefine.results.ResultOptions` settings (``top_n``, ``keep_input_order``,
    ``strict``). A call with no nodes returns ``[]``.
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    def __init__(self, **data: Any) -> None:
        super().__init__(**data)
        # Built now, with its token counter, so that a bad setting fails at construction.
        _ = self._core().counter
        ResultOptions.of(self)

    def warmup(self: _P) -> _P:
        """Load the models now (the budget tokenizer, the scorer's model, and the LM when
        there is one) and run one tiny call, so that the first real call is fast; see the
        core object's ``warmup``. Returns this component."""
        self._core().warmup()
        return self

    def __getstate__(self) -> dict[str, Any]:
        # Refuses, rather than let the copy be built without its embed model or LLM.
        return complete_state(self, super().__getstate__())

    def _core(self) -> Any:
        """The core object for the current fields (made again when one changed)."""
        raise NotImplementedError

    def _job(self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None) -> CoreJob:
        raise NotImplementedError

    def _finish(self, nodes: list[NodeWithScore], outcomes: list[Any]) -> list[NodeWithScore]:
        raise NotImplementedError

    def _query_of(self, query_bundle: QueryBundle | None) -> str:
        """The query text; EmptyInputError when the call gave none."""
        if query_bundle is None:
            msg = (
                f"{self.class_name()} needs the query: call postprocess_nodes(nodes, "
                "query_str=...) or pass a query_bundle (query engines do this for you)"
            )
            raise EmptyInputError(msg)
        return query_bundle.query_str

    def _postprocess_nodes(
        self,
        nodes: list[NodeWithScore],
        query_bundle: QueryBundle | None = None,
    ) -> list[NodeWithScore]:
        items = node_list(nodes)
        return self._finish(items, self._job(items, query_bundle).run()) if items else []

    async def _apostprocess_nodes(
        self,
        nodes: list[NodeWithScore],
        query_bundle: QueryBundle | None = None,
    ) -> list[NodeWithScore]:
        items = node_list(nodes)
        return self._finish(items, await self._job(items, query_bundle).arun()) if items else []
