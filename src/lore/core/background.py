"""Work that runs after a reply without delaying it: extraction, consolidation, summaries.

Jobs run as asyncio tasks; a failure is logged and reported as a notice, never raised
into the chat. Jobs sharing a key (e.g. one session's consolidation) run one at a time.
A one-shot run calls `drain()` before it exits so no work is lost.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["Background"]

log = logging.getLogger(__name__)


class Background:
    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()
        self._locks: dict[str, asyncio.Lock] = {}

    def spawn(
        self,
        job: Callable[[], Awaitable[Any]],
        *,
        name: str,
        key: str | None = None,
        on_error: Callable[[BaseException], None] | None = None,
    ) -> asyncio.Task[Any]:
        async def run() -> None:
            lock = self._locks.setdefault(key, asyncio.Lock()) if key else None
            try:
                if lock is None:
                    await job()
                else:
                    async with lock:
                        await job()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a background failure never reaches the chat
                log.warning("background job %s failed: %s", name, exc, exc_info=True)
                if on_error is not None:
                    on_error(exc)

        task = asyncio.create_task(run(), name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def has(self, name: str) -> bool:
        """Is a job of this name waiting or running?"""
        return any(task.get_name() == name for task in self._tasks)

    @property
    def pending(self) -> int:
        return len(self._tasks)

    async def drain(self) -> None:
        """Wait for every job, including jobs spawned by jobs."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def cancel_all(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*list(self._tasks), return_exceptions=True)
