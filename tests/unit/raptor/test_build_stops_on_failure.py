"""A RAPTOR build whose LLM refuses one summary makes no summary call after that one.

Before, the sync build waited for every queued summary of the layer, and the async build
raised the error while the layer's other calls went on in the background.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest
from hrefine.errors import GenerationError
from hrefine.raptor import RaptorTree


class RefusesTheFirst:
    """An LLM whose first call fails and whose others take a while."""

    def __init__(self) -> None:
        self.calls = 0
        self._lock = threading.Lock()

    def _count(self) -> int:
        with self._lock:
            self.calls += 1
            return self.calls

    def __call__(self, prompt: str) -> str:
        if self._count() == 1:
            raise ValueError("quota exceeded")
        time.sleep(0.1)
        return "A summary."

    async def acall(self, prompt: str) -> str:
        if self._count() == 1:
            raise ValueError("quota exceeded")
        await asyncio.sleep(0.1)
        return "A summary."


def _layer_size(built: RaptorTree) -> int:
    return int(built.stats["nodes_per_layer"][1])


def test_sync_build_stops_after_a_failed_summary(
    qasper_doc: Any, embedder: Any, built: RaptorTree
) -> None:
    assert _layer_size(built) >= 6  # enough summaries in the first layer to see the difference
    llm = RefusesTheFirst()
    with pytest.raises(GenerationError, match="quota exceeded"):
        RaptorTree.build(
            [qasper_doc.document], llm=llm, embedder=embedder, llm_concurrency=1, llm_retries=0
        )
    assert llm.calls <= 2


def test_async_build_stops_after_a_failed_summary(
    qasper_doc: Any, embedder: Any, built: RaptorTree
) -> None:
    assert _layer_size(built) >= 6
    llm = RefusesTheFirst()

    async def main() -> int:
        with pytest.raises(GenerationError, match="quota exceeded"):
            await RaptorTree.abuild(
                [qasper_doc.document],
                llm=llm.acall,
                embedder=embedder,
                llm_concurrency=2,
                llm_retries=0,
            )
        made = llm.calls
        await asyncio.sleep(0.4)  # the loop lives on, as a server's does
        assert llm.calls == made
        return made

    assert asyncio.run(main()) <= 3
