"""How often the event loop turned while a coroutine ran: the check that an async path does not
block the loop (a blocking path lets the counting task run not at all, or once)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable
from typing import TypeVar

_T = TypeVar("_T")


async def ticks_while(awaitable: Awaitable[_T], interval: float = 0.005) -> tuple[_T, int]:
    """Await ``awaitable`` while a task counts each ``interval`` seconds it got to sleep; give
    the result and the count."""
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(interval)
            ticks += 1

    task = asyncio.create_task(tick())
    try:
        result = await awaitable
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    return result, ticks
