"""run_to_end: a commit of several writes finishes even when its caller is cancelled."""

from __future__ import annotations

import asyncio

import pytest
from hrefine.models._loop import run_to_end


async def test_a_cancelled_caller_waits_for_the_commit_then_sees_its_cancellation() -> None:
    steps: list[str] = []

    async def commit() -> str:
        steps.append("first write")
        await asyncio.sleep(0.1)
        steps.append("second write")
        return "done"

    task = asyncio.ensure_future(run_to_end(commit()))
    await asyncio.sleep(0.02)
    task.cancel()
    await asyncio.sleep(0)
    task.cancel()  # a second cancel does not cut it short either
    with pytest.raises(asyncio.CancelledError):
        await task
    assert steps == ["first write", "second write"]


async def test_the_result_and_the_commits_own_error_pass_through() -> None:
    async def ok() -> int:
        return 7

    async def broken() -> int:
        raise KeyError("disk full")

    assert await run_to_end(ok()) == 7
    with pytest.raises(KeyError, match="disk full"):
        await run_to_end(broken())
